"""`agents.review.markdown`: review.md keeps only supported claims and lists the rest as
flagged, references.bib has one entry per cited document, claims.jsonl one line per checked
claim; `outputs.write_review` writes them (and report.html) from one `ReviewContent`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimmy_swarm.agents.review._citations import cited_ids
from kimmy_swarm.agents.review.content import gather
from kimmy_swarm.agents.review.markdown import (
    claims_jsonl,
    render_bibtex,
    render_markdown,
    review_markdown,
)
from kimmy_swarm.agents.review.outputs import write_review
from kimmy_swarm.agents.review.schemas import ClaimCheck


def test_the_files_render_one_content(notes_review: Any, tmp_path: Path) -> None:
    review = notes_review
    corpus = review.resources.corpus
    content = gather(review.result, "linear attention", corpus)
    claim_id = next(iter(content.checks))
    flagged = content.checks[claim_id].model_copy(update={"verdict": "unsupported"})
    content.checks[claim_id] = ClaimCheck.model_validate(flagged.model_dump())
    markdown = render_markdown(content, corpus)
    assert markdown.startswith(f"# {content.prose.title}\n")
    assert "## Flagged claims" in markdown and f"~~{flagged.claim}~~" in markdown
    cited = cited_ids(content.sections, corpus)
    assert render_bibtex(cited, corpus).count("@misc{") == len(cited) > 0
    lines = [json.loads(line) for line in claims_jsonl(content).splitlines()]
    assert {r["claim_id"] for r in lines} == set(content.checks)
    assert [r["kept"] for r in lines if r["claim_id"] == claim_id] == [False]
    assert review_markdown(review.result, corpus, topic="linear attention") == render_markdown(
        gather(review.result, "linear attention", corpus), corpus
    )
    files = write_review(tmp_path, corpus, review.result, topic="linear attention")
    assert set(files.paths) == {"review.md", "references.bib", "report.html", "claims.jsonl"}
    assert files.claims == len(content.checks) and files.flagged == 0
    assert files.verbatim == files.claims  # the offline claims quote their passages
