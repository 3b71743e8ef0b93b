"""The resources of an orchestrated run — a corpus, datasets — loaded once, with the
toolbox sub-agents may use on them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.orchestrator.prompts import Resources
from agents.toolbox import ToolBox

if TYPE_CHECKING:
    from agents.analysis.board import AnalysisBoard
    from agents.tools.corpus import Corpus


@dataclass
class Loaded:
    """What a run works on: the corpus and the analysis board, and their tools."""

    corpus: Corpus | None
    board: AnalysisBoard | None
    tools: ToolBox

    def describe(self, roles: Mapping[str, str], corpus_path: Path | None) -> Resources:
        """The resources as the orchestrator is told about them."""
        return Resources(
            tools={name: tool.description for name, tool in self.tools.items()},
            roles=dict(roles),
            documents=self.corpus.ids if self.corpus is not None else (),
            corpus=str(corpus_path) if corpus_path is not None else None,
            datasets=list(self.board.datasets) if self.board is not None else (),
        )


def load_resources(
    *,
    corpus: Path | None,
    datasets: Sequence[str],
    out: Path,
    executor: Executor,
    defaults: Mapping[str, Any] | None = None,
    root: Path | None = None,
    python: bool = False,
) -> Loaded:
    """Load the corpus (review tools + paper metadata) and the datasets (analysis tools).

    Raises:
        CorpusError, EmptyCorpusError: the corpus is missing or has no readable document.
    """
    tools = ToolBox()
    loaded_corpus = None
    board = None
    if corpus is not None:
        from agents.review.pipeline import ReviewConfig, load_review_corpus
        from agents.widesearch.extract import wide_toolbox

        where = ReviewConfig(corpus=corpus, topic="", out=out, defaults=defaults)
        loaded_corpus = load_review_corpus(where)
        for tool in wide_toolbox(loaded_corpus).values():
            tools.add(tool)
    if datasets:
        from agents.analysis.board import AnalysisBoard
        from agents.analysis.pipeline import _sandbox, load_datasets
        from agents.analysis.tools import build_toolbox

        found, errors = load_datasets(
            datasets, root=(root or Path.cwd()).expanduser().resolve(), executor=executor
        )
        board = AnalysisBoard(found, out_dir=out / "analysis", load_errors=errors)
        board.out_dir.mkdir(parents=True, exist_ok=True)
        for tool in build_toolbox(board, _sandbox(board) if python else None).values():
            tools.add(tool)
    return Loaded(loaded_corpus, board, tools)


__all__ = ["Loaded", "load_resources"]
