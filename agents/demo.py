"""`kimmy demo`: the main job, offline, on what every machine has.

1. Batch data analysis of 14 datasets that ship inside statsmodels and scikit-learn: one
   analyst per dataset, all in parallel, every reported number recomputed by a
   fact-checker, report.md / report.html / findings.jsonl.
2. A literature review of the documentation installed with Python and its packages (module
   docstrings, read at run time into a Markdown corpus): themes, one researcher per
   relevant module, fact-checked claims, review.md / references.bib / report.html /
   claims.jsonl.

`run_demo` runs both and returns their outcomes; a `DemoWatcher` (the `kimmy demo` command
is one) gets the progress sinks, a line per step and each outcome as it arrives.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis import AnalysisOutcome
    from kimmy_swarm.agents.review import ReviewOutcome
    from kimmy_swarm.swarm import EventSink

#: Bundled datasets the demo analyses (small to medium; load offline in well under a second).
DEMO_DATASETS: tuple[str, ...] = (
    "statsmodels:longley",
    "statsmodels:stackloss",
    "statsmodels:ccard",
    "statsmodels:cpunish",
    "statsmodels:scotland",
    "statsmodels:statecrime",
    "statsmodels:copper",
    "statsmodels:committee",
    "statsmodels:spector",
    "statsmodels:grunfeld",
    "statsmodels:fair",
    "sklearn:diabetes",
    "sklearn:iris",
    "sklearn:wine",
)
#: Installed packages whose documentation joins the standard library's in the demo corpus:
#: the project's own dependencies, so every installation reads the same packages.
DEMO_PACKAGES: tuple[str, ...] = (
    "numpy", "pandas", "scipy", "sklearn", "statsmodels", "matplotlib", "jinja2", "pydantic",
    "httpx", "networkx", "rich", "bm25s", "pypdf", "bibtexparser", "typer",
)  # fmt: skip
#: What the demo's review is about: about a hundred of the corpus's module docstrings match it.
DEMO_TOPIC = "parsing and encoding text, files and data formats"
#: Most papers (module docstrings) the demo's review reads.
DEMO_MAX_PAPERS = 150


@dataclass
class DemoOutcome:
    analysis: AnalysisOutcome
    review: ReviewOutcome
    duration_s: float


class DemoWatcher(Protocol):
    """Who watches a demo run: gets the event sinks of each pipeline run, a line per step,
    and each pipeline's outcome as soon as it finished."""

    def progress(self) -> AbstractContextManager[Sequence[EventSink]]:
        """The sinks of one pipeline run (e.g. a progress view), closed after it."""
        ...

    def step(self, text: str) -> None:
        """What the demo does next ("[1/2] batch analysis of …")."""
        ...

    def analysis_done(self, outcome: AnalysisOutcome) -> None: ...

    def review_done(self, outcome: ReviewOutcome) -> None: ...


class _Silent:
    """The default watcher: no sinks, nothing said."""

    @contextmanager
    def progress(self) -> Iterator[Sequence[EventSink]]:
        yield ()

    def step(self, text: str) -> None:
        pass

    def analysis_done(self, outcome: AnalysisOutcome) -> None:
        pass

    def review_done(self, outcome: ReviewOutcome) -> None:
        pass


def run_demo(
    out: Path,
    *,
    max_modules: int = 400,
    runs_dir: Path | None = None,
    watcher: DemoWatcher | None = None,
) -> DemoOutcome:
    """Run both pipelines offline into `out` and return their outcomes.

    Args:
        out: the demo's folder (`analysis/`, `docs-corpus/`, `review/` inside).
        max_modules: most module docstrings in the review's corpus.
        runs_dir: where both runs are stored (None: nowhere).
        watcher: told what happens (default: nobody).
    """
    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
    from kimmy_swarm.agents.review import ReviewConfig, run_review
    from kimmy_swarm.agents.tools.docstring_corpus import write_docstring_corpus
    from kimmy_swarm.swarm.errors import FilesNotWrittenError

    watch: DemoWatcher = watcher if watcher is not None else _Silent()
    t0 = time.perf_counter()
    # the review's corpus first (about a second): a demo stopped during its analysis can
    # then be finished by `kimmy review` on it, beside `kimmy resume` of the analysis
    corpus = out / "docs-corpus"
    try:
        written = write_docstring_corpus(corpus, limit=max_modules, packages=DEMO_PACKAGES)
    except OSError as exc:  # the folder went away or the disk filled after the analysis
        raise FilesNotWrittenError(f"the demo's corpus could not be written: {exc}") from exc
    watch.step(
        f"[1/2] batch analysis of {len(DEMO_DATASETS)} bundled datasets → {out / 'analysis'}"
    )
    with watch.progress() as sinks:
        analysis = run_analysis(
            AnalysisConfig(datasets=list(DEMO_DATASETS), out=out / "analysis", runs_dir=runs_dir),
            sinks=sinks,
        )
    watch.analysis_done(analysis)
    watch.step(f"[2/2] literature review of {written} module docstrings → {out / 'review'}")
    with watch.progress() as sinks:
        review = run_review(
            ReviewConfig(
                corpus=corpus,
                topic=DEMO_TOPIC,
                out=out / "review",
                max_papers=DEMO_MAX_PAPERS,
                runs_dir=runs_dir,
            ),
            sinks=sinks,
        )
    watch.review_done(review)
    return DemoOutcome(analysis, review, time.perf_counter() - t0)


__all__ = [
    "DEMO_DATASETS",
    "DEMO_MAX_PAPERS",
    "DEMO_PACKAGES",
    "DEMO_TOPIC",
    "DemoOutcome",
    "DemoWatcher",
    "run_demo",
]
