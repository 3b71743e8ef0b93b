"""`AnalysisGrader` on a real offline analysis: the same counts as the pipeline's outcome,
and subtasks found by the pipeline's id helpers, not by a literal."""

from __future__ import annotations

from typing import Any

import pytest

from kimmy_swarm.agents.analysis import schemas
from kimmy_swarm.agents.analysis.grader import AnalysisGrader, analyses, finding_checks
from kimmy_swarm.agents.analysis.schemas import analyze_id, check_id, is_analyze_id, is_check_id
from kimmy_swarm.agents.graders import grader_for
from kimmy_swarm.agents.review.grader import ReviewGrader
from kimmy_swarm.rewards.graders import PipelineGrader
from kimmy_swarm.rewards.trajectory import Trajectory, load_trajectory


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trajectory, Any]:
    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis

    tmp = tmp_path_factory.mktemp("analysis")
    out = run_analysis(
        AnalysisConfig(
            datasets=["statsmodels:longley", "sklearn:iris"], out=tmp, runs_dir=tmp / "r"
        )
    )
    return load_trajectory(out.run_id, tmp / "r"), out


def test_analysis_grader_offline_verifies_every_number(analysis: tuple[Trajectory, Any]) -> None:
    traj, out = analysis
    grader = grader_for(traj)
    assert isinstance(grader, AnalysisGrader) and isinstance(grader, PipelineGrader)
    assert not ReviewGrader().applies(traj)
    parts = grader.parts(traj)
    assert parts["numbers"] == out.findings > 0
    assert parts["verified_numbers"] == out.verified
    assert (parts["verified"], parts["answered"], grader(traj)) == (1.0, 1.0, 1.0)

    # check 2 never ran and analysis 2 could not answer: its numbers count unverified
    a2, c2 = analyze_id(2), check_id(2)
    n2 = len(traj.outputs[a2]["findings"])
    outputs = {k: v for k, v in traj.outputs.items() if k != c2}
    outputs[a2] = {**outputs[a2], "answered": False}
    parts = grader.parts(traj.model_copy(update={"outputs": outputs}))
    assert parts["verified"] == (out.findings - n2) / out.findings
    assert parts["answered"] == 0.5
    # a question about another dataset of the run is no unanswered question
    outputs[a2] = {**outputs[a2], "answered": False, "applicable": False}
    assert grader.parts(traj.model_copy(update={"outputs": outputs}))["answered"] == 1.0


def test_the_grader_finds_the_pipelines_subtasks_by_its_id_helpers(
    analysis: tuple[Trajectory, Any],
) -> None:
    """The analysts and fact-checkers the pipeline ran are exactly `analyze_id(n)` and
    `check_id(n)` for the plan's tasks, and those are what the grader scores: renaming the
    ids in the pipeline without the helpers fails here instead of zeroing the reward."""
    traj, out = analysis
    ns = [t["n"] for t in traj.outputs["plan"]["tasks"]]
    by_role = {
        role: {k for k, e in traj.episodes.items() if e.role == role}
        for role in ("data_analyst", "fact_checker")
    }
    assert by_role["data_analyst"] == {analyze_id(n) for n in ns} and ns
    assert by_role["fact_checker"] == {check_id(n) for n in ns}
    assert set(analyses(traj)) == by_role["data_analyst"]
    assert set(finding_checks(traj)) == by_role["fact_checker"]
    assert AnalysisGrader().parts(traj)["verified_numbers"] == out.verified > 0


def test_the_grader_follows_the_helpers_not_a_literal(
    analysis: tuple[Trajectory, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    traj, _ = analysis
    before = AnalysisGrader().parts(traj)

    def rename(k: str) -> str:
        if is_analyze_id(k):
            return "study:" + k.removeprefix(schemas.ANALYZE_PREFIX)
        return "recompute:" + k.removeprefix(schemas.CHECK_PREFIX) if is_check_id(k) else k

    renamed = traj.model_copy(
        update={
            "outputs": {rename(k): v for k, v in traj.outputs.items()},
            "episodes": {rename(k): e for k, e in traj.episodes.items()},
        }
    )
    monkeypatch.setattr(schemas, "ANALYZE_PREFIX", "study:")  # the pipeline renames its ids
    monkeypatch.setattr(schemas, "CHECK_PREFIX", "recompute:")
    assert AnalysisGrader().parts(renamed) == before
    assert AnalysisGrader().parts(traj)["numbers"] == 0  # the old ids are not the pipeline's
