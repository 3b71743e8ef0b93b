"""The resources of an orchestrated run — a corpus, datasets — loaded once by the registered
pipelines (each takes its part of the inputs, with its tools), and what the orchestrator is
told about them (`brief`)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from pathlib import Path

from kimmy_swarm.agents.orchestrator.corpus_view import CorpusView
from kimmy_swarm.agents.orchestrator.prompts import ResourceBrief
from kimmy_swarm.agents.pipeline import RunInputs, RunResources


def load_resources(inputs: RunInputs, executor: Executor) -> RunResources:
    """Everything the registered pipelines work on among `inputs`, with their tools (the
    corpus, its search and reading tools, `read_metadata`; the datasets' board and the
    analysis tools), in registration order.

    Raises:
        CorpusError, EmptyCorpusError: the corpus is missing or has no readable document.
    """
    from kimmy_swarm.agents.pipelines import pipelines

    resources = RunResources()
    for pipeline in pipelines().values():
        pipeline.load_inputs(inputs, resources, executor)
    return resources


def corpus_view(resources: RunResources) -> CorpusView | None:
    """The corpus and its index for the orchestrator's `search` and `fan_out` (None: no
    corpus)."""
    if resources.corpus is None:
        return None
    return CorpusView(resources.corpus, resources.search_index())


def corpus_fields(resources: RunResources) -> list[str]:
    """The fields the corpus's records have, each with what its values look like
    (`CorpusView.field_hints`: `decision (one of: Accept (Oral), …)`)."""
    view = corpus_view(resources)
    return [] if view is None else view.field_hints()


def brief(
    resources: RunResources, roles: Mapping[str, str], corpus_path: Path | None
) -> ResourceBrief:
    """The resources as the orchestrator is told about them (`roles`: the roles it may assign
    to, with a one-line charge each)."""
    return ResourceBrief(
        tools={name: tool.description for name, tool in resources.tools.items()},
        roles=dict(roles),
        documents=resources.corpus.ids if resources.corpus is not None else (),
        corpus=str(corpus_path) if corpus_path is not None else None,
        fields=corpus_fields(resources),
        datasets=list(resources.datasets),
    )


__all__ = ["brief", "corpus_fields", "corpus_view", "load_resources"]
