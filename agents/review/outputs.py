"""The review's files: review.md, references.bib, report.html and claims.jsonl.

Assembled from the run's results (`content.gather`), not from the synthesizer's prose
alone, by the renderers (`markdown`, `report`). Whatever part of the run failed, the files
are written from what finished, and what is missing is said in them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kimmy_swarm.agents.pipeline import PipelineFiles
from kimmy_swarm.agents.review._citations import cited_ids
from kimmy_swarm.agents.review.content import gather
from kimmy_swarm.agents.review.markdown import claims_jsonl, render_bibtex, render_markdown
from kimmy_swarm.agents.review.report import render_review_html

if TYPE_CHECKING:
    from kimmy_swarm.agents.tools.corpus import Corpus
    from kimmy_swarm.swarm import RunResult


@dataclass
class ReviewFiles(PipelineFiles):
    """The four files by name, and the claim counts (`supported` of `claims` kept;
    `verbatim` of them quote their passage word for word, so that comparing them with it
    could not fail: a summary gives no share supported of those, `_factcheck`)."""

    claims: int
    supported: int
    flagged: int
    problems: list[str] = field(default_factory=list)
    verbatim: int = 0


def write_review(out: Path, corpus: Corpus, result: RunResult, *, topic: str) -> ReviewFiles:
    """Write the four files into `out` (created); returns their paths and the claim counts."""
    out.mkdir(parents=True, exist_ok=True)
    content = gather(result, topic, corpus)
    cited = cited_ids(content.sections, corpus)
    paths = {
        "review.md": out / "review.md",
        "references.bib": out / "references.bib",
        "report.html": out / "report.html",
        "claims.jsonl": out / "claims.jsonl",
    }
    paths["review.md"].write_text(render_markdown(content, corpus), encoding="utf-8")
    paths["references.bib"].write_text(render_bibtex(cited, corpus), encoding="utf-8")
    paths["claims.jsonl"].write_text(claims_jsonl(content), encoding="utf-8")
    paths["report.html"].write_text(render_review_html(content, corpus), encoding="utf-8")
    supported = sum(c.verdict == "supported" for c in content.checks.values())
    return ReviewFiles(
        paths=paths,
        claims=len(content.checks),
        supported=supported,
        flagged=len(content.checks) - supported,
        problems=content.problems,
        verbatim=sum(bool(c.verbatim) for c in content.checks.values()),
    )


__all__ = ["ReviewFiles", "write_review"]
