"""`kimmy demo`: the main job, offline, on what every machine has.

1. Batch data analysis of 14 datasets that ship inside statsmodels and scikit-learn: one
   analyst per dataset, all in parallel, every reported number recomputed by a
   fact-checker, report.md / report.html / findings.jsonl.
2. A literature review of the documentation installed with Python and its packages (module
   docstrings, read at run time into a Markdown corpus): themes, one researcher per
   relevant module, fact-checked claims, review.md / references.bib / report.html /
   claims.jsonl.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
#: What the demo's review is about: it matches a few hundred module docstrings.
DEMO_TOPIC = "parsing and encoding text, files and data formats"


@dataclass
class DemoOutcome:
    analysis: Any
    review: Any
    duration_s: float


def run_demo(
    out: Path,
    *,
    json_lines: bool = False,
    max_modules: int = 400,
    runs_dir: Path | None = None,
) -> DemoOutcome:
    """Run both pipelines offline into `out`; prints progress and where the files are."""
    from agents.analysis import AnalysisConfig, run_analysis
    from agents.cli import _quiet_readers, print_analysis, print_review
    from agents.review import ReviewConfig, run_review
    from agents.tools.docstring_corpus import write_docstring_corpus
    from swarm.progress import make_progress

    t0 = time.perf_counter()
    _quiet_readers()
    say = (lambda s: print(s, file=sys.stderr)) if json_lines else print
    say(f"[1/2] batch analysis of {len(DEMO_DATASETS)} bundled datasets → {out / 'analysis'}")
    with make_progress(json=json_lines) as sink:
        analysis = run_analysis(
            AnalysisConfig(datasets=list(DEMO_DATASETS), out=out / "analysis", runs_dir=runs_dir),
            sinks=[sink],
        )
    print_analysis(analysis, json_lines, stored=runs_dir is not None)
    corpus = out / "docs-corpus"
    written = write_docstring_corpus(corpus, limit=max_modules, packages=DEMO_PACKAGES)
    say(f"[2/2] literature review of {written} module docstrings → {out / 'review'}")
    with make_progress(json=json_lines) as sink:
        review = run_review(
            ReviewConfig(
                corpus=corpus,
                topic=DEMO_TOPIC,
                out=out / "review",
                max_papers=150,
                runs_dir=runs_dir,
            ),
            sinks=[sink],
        )
    print_review(review, json_lines, stored=runs_dir is not None)
    outcome = DemoOutcome(analysis, review, time.perf_counter() - t0)
    say(
        f"demo finished in {outcome.duration_s:.1f} s — open {out / 'review' / 'review.md'} "
        f"and {out / 'analysis' / 'report.html'}"
    )
    return outcome


__all__ = ["DEMO_DATASETS", "DEMO_PACKAGES", "DEMO_TOPIC", "DemoOutcome", "run_demo"]
