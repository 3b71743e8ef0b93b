"""The registry of pipelines: the ones the orchestrator plans with and the graders know.

    from kimmy_swarm.agents.pipelines import pipelines, register_pipeline
    register_pipeline(MyPipeline())          # found by `run_solve`'s offline planner, by name,
                                             # and by `agents.graders.grader_for`

The built-in pipelines are registered on first use (they import pandas, scikit-learn and
statsmodels), in this order: the wide search, the batch analysis, the literature review. A
pipeline registered here comes after them. The order is the order their offline rules are
tried in — the first that plans a goal plans it: a wide task's goal is the most specific,
and the analysis refuses a corpus beside its datasets before the review would plan the
corpus alone — the order their resources are loaded in, and their graders'.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field

from kimmy_swarm.agents.pipeline_record import parse_record
from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from kimmy_swarm.agents.pipeline import Pipeline
    from kimmy_swarm.agents.pipeline_record import PipelineRecord

_builtin: dict[str, Pipeline[Any, Any]] = {}
_registered: dict[str, Pipeline[Any, Any]] = {}


def _builtins() -> dict[str, Pipeline[Any, Any]]:
    if not _builtin:
        from kimmy_swarm.agents.analysis.pipeline import ANALYSIS
        from kimmy_swarm.agents.review.pipeline import REVIEW
        from kimmy_swarm.agents.widesearch.pipeline import WIDESEARCH

        _builtin.update((p.name, p) for p in (WIDESEARCH, ANALYSIS, REVIEW))
    return _builtin


def pipelines() -> dict[str, Pipeline[Any, Any]]:
    """The registered pipelines by name, the built-ins first (a new dict each call)."""
    return {**_builtins(), **_registered}


def register_pipeline(pipeline: Pipeline[Any, Any]) -> Pipeline[Any, Any]:
    """Register `pipeline` under its name (again: no change); returns it.

    Raises:
        ConfigError: not a `Pipeline`, a name that is not role-like, another pipeline's
            name, or `Settings` whose kind is not the name.
    """
    from kimmy_swarm.agents.pipeline import Pipeline

    if not isinstance(pipeline, Pipeline):
        raise ConfigError(
            f"{pipeline!r} is not a pipeline: subclass agents.Pipeline (its methods without a "
            "body are the ones to write)"
        )
    name = pipeline.name
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]*", name):
        raise ConfigError(
            f"bad pipeline name {name!r}: start with a letter; letters, digits, _ . - only"
        )
    settings = pipeline.Settings
    if settings is not None and settings.model_fields["kind"].default != name:
        raise ConfigError(
            f"pipeline {name!r}: its Settings' kind must default to {name!r} (it tells its "
            f"stored runs from others), got {settings.model_fields['kind'].default!r}"
        )
    known = pipelines().get(name)
    if known is not None and known is not pipeline:
        raise ConfigError(f"a pipeline named {name!r} is already registered: {known!r}")
    _registered[name] = pipeline
    return pipeline


def unregister_pipeline(name: str) -> None:
    """Remove a pipeline `register_pipeline` added (the built-ins stay)."""
    _registered.pop(name, None)


def pipeline_named(name: str) -> Pipeline[Any, Any]:
    """The pipeline registered as `name`.

    Raises:
        ConfigError: none is (the message lists the registered ones).
    """
    found = pipelines().get(name)
    if found is None:
        raise ConfigError(f"no pipeline named {name!r}; registered: {', '.join(pipelines())}")
    return found


def settings_union() -> Any:
    """The settings of every registered pipeline that stores its runs, as one pydantic
    discriminated union on `kind`."""
    kinds = tuple(p.Settings for p in pipelines().values() if p.Settings is not None)
    if len(kinds) == 1:
        return kinds[0]
    return Annotated[Union[kinds], Field(discriminator="kind")]  # noqa: UP007


def pipeline_record(settings: Mapping[str, Any]) -> PipelineRecord | None:
    """The record in a run's settings, read as the registered pipeline its kind names;
    None for a run no pipeline made.

    Raises:
        ConfigError: the record is not valid, or names no registered pipeline.
    """
    return parse_record(settings, settings_union())


__all__ = [
    "pipeline_named",
    "pipeline_record",
    "pipelines",
    "register_pipeline",
    "settings_union",
    "unregister_pipeline",
]
