"""What a stored pipeline run keeps so that `resume_analysis` / `resume_review` (and
`kimmy resume`) can rebuild the same roles and continue it.

A pipeline run records, under `PIPELINE_KEY` of its settings, a `PipelineRecord`: the
pipeline's own settings (`AnalysisSettings` or `ReviewSettings`, told apart by `kind`) and
the `ModelEndpoint` its sub-agents called. No secret is ever stored: the API key is not part
of the record, and the base URL keeps no credentials (`swarm.llm.redact_url`), so a run
whose URL held some is resumed with `--base-url` given again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.tools.search import Relevance
from swarm.errors import ConfigError
from swarm.llm.endpoint import ModelEndpoint

if TYPE_CHECKING:
    from swarm import EventSink, RunResult, Swarm
    from swarm.store import StoredRun

#: The key of a run's settings that holds its `PipelineRecord`.
PIPELINE_KEY = "pipeline"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AnalysisSettings(_Frozen):
    """`AnalysisConfig` as stored (paths absolute: a resume may run from elsewhere)."""

    kind: Literal["analysis"] = "analysis"
    datasets: tuple[str, ...]
    out: Path
    questions: tuple[str, ...] = ()
    max_concurrency: int = 64
    root: Path
    threads: int = 16
    fallback: bool = True


class ReviewSettings(_Frozen):
    """`ReviewConfig` as stored (paths absolute: a resume may run from elsewhere)."""

    kind: Literal["review"] = "review"
    corpus: Path
    topic: str
    out: Path
    max_papers: int = 200
    themes: int | None = None
    max_concurrency: int = 64
    threads: int = 8
    defaults: dict[str, Any] | None = None
    researcher: str = "researcher"
    relevance: Relevance = Relevance()
    fallback: bool = True


PipelineSettings = Annotated[AnalysisSettings | ReviewSettings, Field(discriminator="kind")]


class PipelineRecord(_Frozen):
    """Everything a stored pipeline run needs to be resumed (kept under `PIPELINE_KEY`)."""

    settings: PipelineSettings
    endpoint: ModelEndpoint = ModelEndpoint()


def pipeline_record(settings: Mapping[str, Any]) -> PipelineRecord | None:
    """The record in a run's settings; None for a run no pipeline made.

    Raises:
        ConfigError: the record is there but not valid (stored by another version).
    """
    raw = settings.get(PIPELINE_KEY)
    if raw is None:
        return None
    try:
        return PipelineRecord.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"the run's stored pipeline settings are not valid: {exc}") from None


def load_pipeline_run(
    run_id: str, runs_dir: Path, kind: Literal["analysis", "review"]
) -> tuple[StoredRun, PipelineRecord]:
    """The stored run and its record, checked to be a `kind` pipeline's.

    Raises:
        ConfigError: no runs stored there, or the run is not a `kind` run.
        RunNotFoundError: no such run.
    """
    from swarm.store import RunStore

    with RunStore(runs_dir, create=False) as store:
        stored = store.load_run(run_id)
    record = pipeline_record(stored.settings)
    if record is None or record.settings.kind != kind:
        other = f" but by the {record.settings.kind} pipeline" if record is not None else ""
        raise ConfigError(
            f"run {stored.run_id} was not made by the {kind} pipeline{other}; "
            "`kimmy resume RUN` continues any stored run"
        )
    return stored, record


def resume_sync(swarm: Swarm, run_id: str, *, sinks: Sequence[EventSink] = ()) -> RunResult:
    """`swarm.resume` for synchronous callers (starts and closes an event loop)."""
    box: list[RunResult] = []

    async def main() -> None:
        # Not returned from the main task: see `Swarm.run_sync`.
        box.append(await swarm.resume(run_id, sinks=sinks))

    asyncio.run(main())
    return box[0]


__all__ = [
    "PIPELINE_KEY",
    "AnalysisSettings",
    "PipelineRecord",
    "PipelineSettings",
    "ReviewSettings",
    "load_pipeline_run",
    "pipeline_record",
    "resume_sync",
]
