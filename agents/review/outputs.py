"""The review's files: review.md, references.bib, report.html and claims.jsonl.

Assembled from the run's results, not from the synthesizer's prose alone: a claim appears in
the review only when its fact-check says `supported`; every other claim is listed under
"Flagged claims" with the reason, and every claim (kept or not) is a line of claims.jsonl
(its `fallbacks`: the researchers, writer and fact-checker behind it whose model failed, so
that their offline procedure did the work; review.md lists every such sub-agent).
Whatever part of the run failed, the files are written from what finished, and what is
missing is said in them.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.fallback import fallback_markdown, fallbacks
from agents.review._citations import (
    citation_links,
    cited_ids,
    kept_paragraphs,
    reference_order,
)
from agents.review._prose import split_attribution
from agents.review.procedures import compose_prose, upstream_checks
from agents.review.schemas import (
    PLAN_ID,
    SYNTHESIZE_ID,
    Claim,
    ClaimCheck,
    ReviewPlan,
    ReviewProse,
    Section,
    check_id,
    read_id,
    write_id,
)

if TYPE_CHECKING:
    from agents.tools.corpus import Corpus, Document
    from swarm import RunResult


@dataclass
class ReviewFiles:
    paths: dict[str, Path]
    claims: int
    supported: int
    flagged: int
    problems: list[str] = field(default_factory=list)


@dataclass
class _Parts:
    plan: ReviewPlan | None
    sections: list[Section]
    checks: dict[str, ClaimCheck]
    prose: ReviewProse
    problems: list[str]
    #: Subtasks the offline procedure did after the model failed them, with its error.
    fallbacks: dict[str, str] = field(default_factory=dict)


def _gather(result: RunResult, topic: str, corpus_size: int) -> _Parts:
    outputs = result.outputs
    problems = [
        f"{r.id} ({r.role}) {r.status.value}: {r.error.message if r.error else ''}".strip()
        for r in result.results.values()
        if r.status.value != "done"
    ]
    plan = ReviewPlan.model_validate(outputs[PLAN_ID]) if outputs.get(PLAN_ID) else None
    if plan is not None:
        problems.extend(plan.notes)
    order = [write_id(t.id) for t in plan.themes] if plan is not None else []
    sections = [Section.model_validate(outputs[w]) for w in order if outputs.get(w)]
    checks = {c.claim_id: c for c in upstream_checks(outputs)}
    if outputs.get(SYNTHESIZE_ID):
        prose = ReviewProse.model_validate(outputs[SYNTHESIZE_ID])
    else:
        prose = compose_prose(topic, corpus_size, sections, list(checks.values()))
    return _Parts(plan, sections, checks, prose, problems, fallbacks(outputs))


def _reference(doc: Document) -> str:
    authors = ", ".join(doc.authors) if doc.authors else "Anonymous"
    year = doc.year if doc.year is not None else "n.d."
    tail = "".join(f" {x}." for x in (doc.venue, doc.url) if x)
    return f"**[{doc.id}]** {authors} ({year}). *{doc.title}*.{tail}"


def _md_cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _md_claim(claim: Claim, corpus: Corpus) -> str:
    text, cites = citation_links(claim, corpus)
    named = bool(split_attribution(text)[0])
    if named and cites[0][1]:
        subject = cites[0][0]
        text = text.replace(subject, f"[{subject}]({cites[0][1]})", 1)
    extra = cites[1:] if named else cites
    if extra:
        shown = "; ".join(f"[{c}]({u})" if u else c for c, u in extra)
        end = text[-1] if text.endswith((".", "!")) else ""
        text = f"{text[: len(text) - len(end)]} ({shown}){end}"
    return text


def _section_md(section: Section, parts: _Parts, corpus: Corpus) -> list[str]:
    lines = [
        f"## {section.title}",
        "",
        parts.prose.section_summaries.get(section.theme_id) or section.summary,
        "",
    ]
    paragraphs = kept_paragraphs(section, parts.checks)
    for group, claims in paragraphs:
        text = " ".join(_md_claim(c, corpus) for c in claims)
        lines += [f"**{group}.** {text}" if group else text, ""]
    if not paragraphs:
        lines += ["_No claim of this section passed the fact-check._", ""]
    return lines


def _timeline(parts: _Parts) -> list[str]:
    by_year: dict[int, list[str]] = defaultdict(list)
    for section in parts.sections:
        for row in section.rows:
            if row.year is not None:
                by_year[row.year].append(row.doc_id)
    if not by_year:
        return []
    lines = ["## Timeline", ""]
    for year in sorted(by_year):
        ids = sorted(set(by_year[year]))
        lines.append(f"- **{year}** — {len(ids)} document(s): {', '.join(ids)}")
    return [*lines, ""]


def render_markdown(parts: _Parts, corpus: Corpus) -> str:
    """The review as Markdown."""
    lines = [f"# {parts.prose.title}", "", "## Introduction", "", parts.prose.introduction, ""]
    for section in parts.sections:
        lines += _section_md(section, parts, corpus)
    rows = [(s, r) for s in parts.sections for r in s.rows]
    if rows:
        lines += [
            "## Comparison",
            "",
            "| Document | Year | Theme | Approach | Key result |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {_md_cell(r.title)} [{r.doc_id}] | {_md_cell(r.year)} | {_md_cell(s.title)} "
            f"| {_md_cell(r.approach)} | {_md_cell(r.key_result)} |"
            for s, r in rows
        ]
        lines.append("")
    lines += _timeline(parts)
    if parts.prose.conclusion:
        lines += ["## Conclusion", "", parts.prose.conclusion, ""]
    flagged = [c for c in parts.checks.values() if c.verdict != "supported"]
    if flagged:
        lines += [
            "## Flagged claims",
            "",
            "These claims failed the fact-check against the passages they cite and are "
            "not part of the review above.",
            "",
        ]
        lines += [
            f"- ~~{c.claim}~~ [{', '.join(c.cited)}] — {c.reason or 'unsupported'}" for c in flagged
        ]
        lines.append("")
    if parts.problems:
        lines += ["## Problems during the run", ""] + [f"- {p}" for p in parts.problems] + [""]
    lines += fallback_markdown(parts.fallbacks)
    cited = cited_ids(parts.sections, corpus)
    lines += ["## References", ""]
    lines += [f"- {_reference(corpus.get(d))}" for d in reference_order(cited, corpus)]
    return "\n".join(lines) + "\n"


def _bib_escape(text: str) -> str:
    return re.sub(r"([{}\\])", r"\\\1", text)


def render_bibtex(doc_ids: list[str], corpus: Corpus) -> str:
    """references.bib: one entry per cited document."""
    entries = []
    for doc_id in doc_ids:
        doc = corpus.get(doc_id)
        fields = {
            "title": doc.title,
            "author": " and ".join(a.replace("*", "") for a in doc.authors),
        }
        if doc.year is not None:
            fields["year"] = str(doc.year)
        if doc.venue:
            fields["booktitle"] = doc.venue
        if doc.url:
            fields["url"] = doc.url
        body = ",\n".join(f"  {k} = {{{_bib_escape(v)}}}" for k, v in fields.items() if v)
        entries.append(f"@misc{{{doc_id},\n{body}\n}}")
    return "\n\n".join(entries) + ("\n" if entries else "")


def _claims_jsonl(parts: _Parts) -> str:
    theme_of = {c.id: s.theme_id for s in parts.sections for c in s.claims}
    group_of = {c.id: c.group for s in parts.sections for c in s.claims}
    lines = []
    for check in parts.checks.values():
        record = check.model_dump(mode="json")
        record["theme"] = theme_of.get(check.claim_id)
        record["group"] = group_of.get(check.claim_id, "")
        record["kept"] = check.verdict == "supported"
        # the sub-agents behind the claim that fell back to the offline procedure
        theme = record["theme"]
        behind = [read_id(d) for d in check.cited]
        behind += [write_id(theme), check_id(theme)] if theme is not None else []
        record["fallbacks"] = [sid for sid in behind if sid in parts.fallbacks]
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def review_markdown(result: RunResult, corpus: Corpus, *, topic: str) -> str:
    """The review of a run (its subtasks by the review's ids) as Markdown."""
    return render_markdown(_gather(result, topic, len(corpus)), corpus)


def write_review(out: Path, corpus: Corpus, result: RunResult, *, topic: str) -> ReviewFiles:
    """Write the four files into `out` (created); returns their paths and the claim counts."""
    from agents.review.report import render_review_html

    out.mkdir(parents=True, exist_ok=True)
    parts = _gather(result, topic, len(corpus))
    cited = cited_ids(parts.sections, corpus)
    paths = {
        "review.md": out / "review.md",
        "references.bib": out / "references.bib",
        "report.html": out / "report.html",
        "claims.jsonl": out / "claims.jsonl",
    }
    paths["review.md"].write_text(render_markdown(parts, corpus), encoding="utf-8")
    paths["references.bib"].write_text(render_bibtex(cited, corpus), encoding="utf-8")
    paths["claims.jsonl"].write_text(_claims_jsonl(parts), encoding="utf-8")
    paths["report.html"].write_text(render_review_html(parts, corpus), encoding="utf-8")
    supported = sum(c.verdict == "supported" for c in parts.checks.values())
    return ReviewFiles(
        paths=paths,
        claims=len(parts.checks),
        supported=supported,
        flagged=len(parts.checks) - supported,
        problems=parts.problems,
    )


__all__ = ["ReviewFiles", "render_bibtex", "render_markdown", "review_markdown", "write_review"]
