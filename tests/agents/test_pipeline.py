"""`agents.pipeline`: the `Pipeline` protocol and the one run/resume path — the review, the
analysis and the orchestrated run (`run_solve`) are run, stored and resumed the same way
(`run_pipeline` / `resume_pipeline`), and runs stored by an earlier version are refused
with what changed."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import Pipeline, RunResources, resume_pipeline, run_pipeline
from kimmy_swarm.agents.analysis import AnalysisConfig
from kimmy_swarm.agents.analysis.pipeline import ANALYSIS
from kimmy_swarm.agents.orchestrator import SolveConfig
from kimmy_swarm.agents.orchestrator.solve import SOLVE, resume_solve
from kimmy_swarm.agents.pipeline_record import PIPELINE_KEY, PipelineRecord, record_kind
from kimmy_swarm.agents.pipelines import pipelines
from kimmy_swarm.agents.review import ReviewConfig, resume_review
from kimmy_swarm.agents.review.config import ReviewSettings
from kimmy_swarm.agents.review.pipeline import REVIEW
from kimmy_swarm.agents.toolbox import ToolBox, make_tool
from kimmy_swarm.agents.widesearch.pipeline import WIDESEARCH
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.schema import RunStatus
from kimmy_swarm.swarm.store import RunStore


def _notes(tmp_path: Path) -> Path:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for i, topic in enumerate(["linear attention kernels", "delta rule memory", "gating"]):
        (corpus / f"n{i}.md").write_text(
            f"# Note {i}\n\nThis note studies {topic}. Linear attention keeps a state of "
            f"fixed size; the delta rule updates it ({i + 1} experiments).\n"
        )
    return corpus


def _review(tmp_path: Path, runs: Path) -> ReviewConfig:
    return ReviewConfig(corpus=_notes(tmp_path), topic="linear attention",
                        out=tmp_path / "out", runs_dir=runs)  # fmt: skip


def _analysis(tmp_path: Path, runs: Path) -> AnalysisConfig:
    return AnalysisConfig(["statsmodels:longley"], out=tmp_path / "out", runs_dir=runs)


def _solve(tmp_path: Path, runs: Path) -> SolveConfig:
    return SolveConfig(goal="Review linear attention", corpus=_notes(tmp_path),
                       out=tmp_path / "out", runs_dir=runs)  # fmt: skip


def test_every_registered_pipeline_implements_the_protocol(tmp_path: Path) -> None:
    registered = pipelines()
    assert list(registered) == ["widesearch", "analysis", "review"]  # the order rules are tried
    for name, pipeline in {**registered, SOLVE.name: SOLVE}.items():
        assert isinstance(pipeline, Pipeline) and pipeline.name == name
        settings = pipeline.Settings
        assert settings is None or settings.model_fields["kind"].default == name
    assert WIDESEARCH.Settings is None  # it runs only under the orchestrator
    with pytest.raises(ConfigError, match="the widesearch pipeline runs only under the orch"):
        WIDESEARCH.load(_solve(tmp_path, tmp_path / "runs"), ThreadPoolExecutor(1))


@pytest.mark.parametrize(
    ("pipeline", "make"),
    [(REVIEW, _review), (ANALYSIS, _analysis), (SOLVE, _solve)],
    ids=["review", "analysis", "solve"],
)
def test_run_and_resume_through_one_path(
    pipeline: Pipeline[Any, Any], make: Callable[[Path, Path], Any], tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    config = make(tmp_path, runs)
    run = run_pipeline(pipeline, config)
    assert run.result.status is RunStatus.COMPLETED and run.config is config
    assert run.files.paths and all(p.is_file() for p in run.files.paths.values())
    with RunStore(runs, create=False) as store:
        stored = store.load_run(run.run_id)
    assert record_kind(stored.settings) == pipeline.name
    record = PipelineRecord.model_validate(
        {**stored.settings[PIPELINE_KEY], "settings": config.settings()}
    )
    assert record.model_dump(mode="json") == stored.settings[PIPELINE_KEY]
    for path in run.files.paths.values():
        path.unlink()
    again = resume_pipeline(pipeline, run.run_id, runs_dir=runs)
    assert again.run_id == run.run_id and again.result.status is RunStatus.COMPLETED
    assert again.result.outputs == run.result.outputs  # nothing ran again: all was done
    assert again.files.paths == run.files.paths and all(
        p.is_file() for p in again.files.paths.values()
    )  # the files are written as the unbroken run wrote them


def test_another_pipelines_run_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = run_pipeline(REVIEW, _review(tmp_path, runs))
    with pytest.raises(ConfigError, match="not made by the analysis pipeline but by the review"):
        resume_pipeline(ANALYSIS, run.run_id, runs_dir=runs)
    with pytest.raises(ConfigError, match="not made by the solve pipeline but by the review"):
        resume_solve(run.run_id, runs_dir=runs)


def _stored(runs: Path, role: str, settings: dict[str, Any]) -> str:
    async def work(ctx: SubtaskContext) -> str:
        raise RuntimeError("stopped")

    with Swarm(runs_dir=runs, roles={role: work}, max_retries=0) as swarm:
        swarm.settings = settings
        return swarm.run_sync({"subtasks": [{"id": "plan", "role": role}]}).run_id


def test_runs_of_an_earlier_version_are_refused_saying_what_changed(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    old_solve = _stored(runs, "orchestrator", {"solve": {"goal": "g", "out": "o"}})
    with pytest.raises(ConfigError, match=r"earlier version of `kimmy swarm`.*'solve'"):
        resume_solve(old_solve, runs_dir=runs)
    settings = ReviewSettings(corpus=_notes(tmp_path), topic="t", out=tmp_path / "o")
    record = PipelineRecord(settings=settings).model_dump(mode="json")
    old_review = _stored(runs, "orchestrator", {PIPELINE_KEY: record})
    with pytest.raises(ConfigError, match=r"planner role was named 'orchestrator'.*'planner'"):
        resume_review(old_review, runs_dir=runs)


def test_resources_keep_one_tool_per_name() -> None:
    def a() -> str:
        """A."""
        return "a"

    def b() -> str:
        """B."""
        return "b"

    resources = RunResources(tools=ToolBox([make_tool(a)]))
    first = resources.tools["a"]
    resources.add_tools(ToolBox([make_tool(a), make_tool(b)]))
    assert list(resources.tools) == ["a", "b"] and resources.tools["a"] is first
