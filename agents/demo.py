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

A demo stopped during its analysis is finished by `kimmy resume` of that run: the demo's
folder says (`DEMO_STATE`) whether its review has started, and `review_left` tells the
resume that the review is still to run (`run_demo_review` runs it as the demo would).
"""

from __future__ import annotations

import json
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
#: The file in a demo's folder that says how far its review got: "not started", "started"
#: or "done" (`{"review": …}`).
DEMO_STATE = ".kimmy-demo.json"


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
    from kimmy_swarm.agents.tools.docstring_corpus import write_docstring_corpus
    from kimmy_swarm.swarm.errors import FilesNotWrittenError

    watch: DemoWatcher = watcher if watcher is not None else _Silent()
    t0 = time.perf_counter()
    # the review's corpus first (about a second): a demo stopped during its analysis is
    # finished by `kimmy resume` of the analysis, which then reviews this corpus
    try:
        written = write_docstring_corpus(
            out / "docs-corpus", limit=max_modules, packages=DEMO_PACKAGES
        )
    except OSError as exc:  # the folder went away or the disk filled after the analysis
        raise FilesNotWrittenError(f"the demo's corpus could not be written: {exc}") from exc
    _set_review(out, "not started")
    watch.step(
        f"[1/2] batch analysis of {len(DEMO_DATASETS)} bundled datasets → {out / 'analysis'}"
    )
    with watch.progress() as sinks:
        analysis = run_analysis(
            AnalysisConfig(datasets=list(DEMO_DATASETS), out=out / "analysis", runs_dir=runs_dir),
            sinks=sinks,
        )
    watch.analysis_done(analysis)
    review = run_demo_review(out, runs_dir=runs_dir, watcher=watch, documents=written)
    return DemoOutcome(analysis, review, time.perf_counter() - t0)


def run_demo_review(
    out: Path,
    *,
    runs_dir: Path | None = None,
    watcher: DemoWatcher | None = None,
    documents: int | None = None,
) -> ReviewOutcome:
    """The demo's second half, its literature review of the corpus in `out/docs-corpus`
    (written by `run_demo` before its analysis), into `out/review`.

    Args:
        documents: how many module docstrings the corpus holds (said in the step line;
            None: counted).
    """
    from kimmy_swarm.agents.review import ReviewConfig, run_review

    watch: DemoWatcher = watcher if watcher is not None else _Silent()
    corpus = out / "docs-corpus"
    if documents is None:
        documents = sum(1 for _ in corpus.glob("*.md"))
    watch.step(f"[2/2] literature review of {documents} module docstrings → {out / 'review'}")
    _set_review(out, "started")
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
    _set_review(out, "done")
    watch.review_done(review)
    return review


def review_left(analysis_out: Path) -> Path | None:
    """The demo folder whose analysis writes into `analysis_out`, when that demo's review
    has not started (a demo stopped during its analysis); None for any other folder."""
    folder = analysis_out.parent
    if analysis_out.name != "analysis":
        return None
    try:
        state = json.loads((folder / DEMO_STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    left = isinstance(state, dict) and state.get("review") == "not started"
    return folder if left and (folder / "docs-corpus").is_dir() else None


def _set_review(out: Path, state: str) -> None:
    """Say in the demo's folder how far its review got (`DEMO_STATE`)."""
    from kimmy_swarm.swarm.errors import FilesNotWrittenError

    try:
        (out / DEMO_STATE).write_text(json.dumps({"review": state}) + "\n", encoding="utf-8")
    except OSError as exc:
        raise FilesNotWrittenError(f"the demo's state could not be written: {exc}") from exc


__all__ = [
    "DEMO_DATASETS",
    "DEMO_MAX_PAPERS",
    "DEMO_PACKAGES",
    "DEMO_STATE",
    "DEMO_TOPIC",
    "DemoOutcome",
    "DemoWatcher",
    "review_left",
    "run_demo",
    "run_demo_review",
]
