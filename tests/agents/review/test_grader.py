"""`ReviewGrader` on real review runs (offline and model mode): the same counts as the
pipeline's own files, and subtasks found by the pipeline's id helpers, not by a literal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.analysis.grader import AnalysisGrader
from kimmy_swarm.agents.graders import grader_for
from kimmy_swarm.agents.review import schemas
from kimmy_swarm.agents.review.grader import ReviewGrader, section_checks
from kimmy_swarm.agents.review.schemas import check_id, is_check_id, theme_of_check
from kimmy_swarm.rewards.graders import Grader, PipelineGrader
from kimmy_swarm.rewards.trajectory import Trajectory, load_trajectory
from tests.agents.review.conftest import ICLR_JSON


def _claims(out: Path) -> list[dict[str, Any]]:
    """The pipeline's own record of every fact-checked claim."""
    return [json.loads(x) for x in (out / "claims.jsonl").read_text().splitlines()]


def _coverage(claims: list[dict[str, Any]], themes: list[str]) -> float:
    covered = {c["theme"] for c in claims if c["verdict"] == "supported"}
    return len(covered & set(themes)) / len(themes)


@pytest.fixture
def review(iclr_attention_review: tuple[Trajectory, Any]) -> tuple[Trajectory, Any]:
    """A real offline review (20 papers on attention), run once per session."""
    return iclr_attention_review


def test_review_grader_matches_the_pipelines_own_counts(review: tuple[Trajectory, Any]) -> None:
    traj, out = review
    grader = grader_for(traj)
    assert isinstance(grader, ReviewGrader) and isinstance(grader, PipelineGrader)
    assert isinstance(grader, Grader) and not AnalysisGrader().applies(traj)
    parts = grader.parts(traj)
    assert (parts["claims"], parts["supported"]) == (out.files.claims, out.files.supported)
    assert parts["claims"] > 0 and parts["precision"] == out.pass_rate
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    assert parts["coverage"] == _coverage(_claims(out.out_dir), themes)
    assert grader(traj) == (parts["precision"] + parts["coverage"]) / 2


def test_review_grader_when_a_theme_loses_its_support(review: tuple[Trajectory, Any]) -> None:
    traj, out = review
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    lost = check_id(themes[0])
    section = traj.outputs[lost]
    flipped = {
        **section,
        "checks": [{**c, "verdict": "unsupported"} for c in section["checks"]],
    }
    n_lost = sum(c["verdict"] == "supported" for c in section["checks"])
    parts = ReviewGrader().parts(
        traj.model_copy(update={"outputs": {**traj.outputs, lost: flipped}})
    )
    assert parts["precision"] == (out.files.supported - n_lost) / out.files.claims
    assert parts["coverage"] == (len(themes) - 1) / len(themes)
    # a review whose fact-checks all failed has no claims: 0
    no_checks = {k: v for k, v in traj.outputs.items() if not is_check_id(k)}
    assert ReviewGrader()(traj.model_copy(update={"outputs": no_checks})) == 0.0


def test_the_grader_finds_the_pipelines_checks_by_its_id_helper(
    review: tuple[Trajectory, Any],
) -> None:
    """The fact-checkers the pipeline ran are exactly `check_id(theme)` for the plan's
    themes, and those are what the grader scores: renaming the ids in the pipeline without
    the helper fails here instead of zeroing the reward."""
    traj, out = review
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    checkers = {k for k, e in traj.episodes.items() if e.role == "fact_checker"}
    assert checkers == {check_id(t) for t in themes} and themes
    assert set(section_checks(traj)) == checkers
    assert ReviewGrader().parts(traj)["claims"] == out.files.claims > 0


def test_the_grader_follows_the_helper_not_a_literal(
    review: tuple[Trajectory, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    traj, _ = review
    before = ReviewGrader().parts(traj)
    renamed = {
        (f"verify:{theme_of_check(k)}" if is_check_id(k) else k): v for k, v in traj.outputs.items()
    }
    monkeypatch.setattr(schemas, "CHECK_PREFIX", "verify:")  # the pipeline renames its checks
    assert ReviewGrader().parts(traj.model_copy(update={"outputs": renamed})) == before
    assert ReviewGrader().parts(traj)["claims"] == 0  # the old ids are no checks any more


def test_review_grader_on_a_model_mode_review_with_flagged_claims(tmp_path: Path) -> None:
    """The scripted review model invents one claim per writer; the fact-checkers flag them."""
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    from kimmy_swarm.agents.review import ReviewConfig, run_review
    from kimmy_swarm.swarm.llm import OpenAIChat
    from tests.support.openai_server import OpenAIServer
    from tests.support.review_model import ReviewModel

    with OpenAIServer(default=ReviewModel()) as srv:
        out = run_review(
            ReviewConfig(
                corpus=ICLR_JSON,
                topic="question answering",
                out=tmp_path,
                runs_dir=tmp_path / "r",
                max_papers=12,
                model=OpenAIChat(srv.base_url, "test-model"),
            )
        )
    traj = load_trajectory(out.run_id, tmp_path / "r")
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    parts = ReviewGrader().parts(traj)
    assert out.files.flagged == len(themes) > 0  # one invented claim per theme, flagged
    assert parts["precision"] == out.files.supported / out.files.claims < 1.0
    assert parts["coverage"] == _coverage(_claims(tmp_path), themes)
    assert ReviewGrader()(traj) == (parts["precision"] + parts["coverage"]) / 2
    assert {e.policy for e in traj.episodes.values()} == {"model"}
    assert all(e.model_calls and e.usage.model_calls for e in traj.episodes.values())
