"""The review as text: review.md (`render_markdown`), references.bib (`render_bibtex`) and
claims.jsonl (`claims_jsonl`), rendered from its `ReviewContent`.

review.md keeps a claim only when its fact-check says `supported`; every other claim is
listed under "Flagged claims" with the reason, and every claim (kept or not) is a line of
claims.jsonl (its `fallbacks`: the researchers, writer and fact-checker behind it whose model
failed, so that their offline procedure did the work; review.md lists every such sub-agent).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.fallback import fallback_markdown
from kimmy_swarm.agents.review._citations import (
    citation_links,
    cited_ids,
    kept_paragraphs,
    reference_order,
)
from kimmy_swarm.agents.review._prose import split_attribution
from kimmy_swarm.agents.review._venue import in_text_status, standing_of, venue_note
from kimmy_swarm.agents.review.content import ReviewContent, gather
from kimmy_swarm.agents.review.schemas import Claim, Section, check_id, read_id, write_id
from kimmy_swarm.agents.tools.authors import name_parts

if TYPE_CHECKING:
    from kimmy_swarm.agents.tools.corpus import Corpus, Document
    from kimmy_swarm.swarm import RunResult


def _reference(doc: Document, label: str = "") -> str:
    """One reference: authors (year). *Title*. Where it stands ("ICLR 2017", "Submitted to
    ICLR 2017; rejected": `_venue.venue_note`). URL."""
    authors = ", ".join(doc.authors) if doc.authors else "Anonymous"
    year = f"{doc.year if doc.year is not None else 'n.d.'}{label}"
    where = venue_note(doc.venue, doc.meta.get("decision"))
    tail = "".join(f" {x}." for x in (where, doc.url) if x)
    return f"**[{doc.id}]** {authors} ({year}). *{doc.title}*.{tail}"


def _md_cell(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def _md_claim(claim: Claim, corpus: Corpus, labels: dict[str, str]) -> str:
    text, cites = citation_links(claim, corpus, labels)
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


def _section_md(section: Section, content: ReviewContent, corpus: Corpus) -> list[str]:
    lines = [
        f"## {section.title}",
        "",
        content.prose.section_summaries.get(section.theme_id) or section.summary,
        "",
    ]
    paragraphs = kept_paragraphs(section, content.checks)
    for group, claims in paragraphs:
        text = " ".join(_md_claim(c, corpus, content.year_labels) for c in claims)
        lines += [f"**{group}.** {text}" if group else text, ""]
    if not paragraphs:
        lines += ["_No claim of this section passed the fact-check._", ""]
    return lines


def _standing_mark(doc_id: str, corpus: Corpus) -> str:
    """ " *(rejected submission)*" after a comparison row's title, "" for a published paper."""
    if doc_id not in corpus:
        return ""
    label = in_text_status(standing_of(corpus.get(doc_id).meta))
    return f" *({label})*" if label else ""


def _timeline(content: ReviewContent) -> list[str]:
    by_year: dict[int, list[str]] = defaultdict(list)
    for section in content.sections:
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


def render_markdown(content: ReviewContent, corpus: Corpus) -> str:
    """The review as Markdown."""
    lines = [f"# {content.prose.title}", "", "## Introduction", "", content.prose.introduction, ""]
    for section in content.sections:
        lines += _section_md(section, content, corpus)
    rows = [(s, r) for s in content.sections for r in s.rows]
    if rows:
        lines += [
            "## Comparison",
            "",
            "| Document | Year | Theme | Approach | Key result |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| {_md_cell(r.title)} [{r.doc_id}]{_standing_mark(r.doc_id, corpus)} "
            f"| {_md_cell(r.year)} | {_md_cell(s.title)} "
            f"| {_md_cell(r.approach)} | {_md_cell(r.key_result or '—')} |"
            for s, r in rows
        ]
        lines.append("")
    lines += _timeline(content)
    if content.prose.conclusion:
        lines += ["## Conclusion", "", content.prose.conclusion, ""]
    flagged = [c for c in content.checks.values() if c.verdict != "supported"]
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
    if content.problems:
        lines += ["## Problems during the run", ""] + [f"- {p}" for p in content.problems] + [""]
    lines += fallback_markdown(content.fallbacks)
    cited = cited_ids(content.sections, corpus)
    lines += ["## References", ""]
    labels = content.year_labels
    lines += [
        f"- {_reference(corpus.get(d), labels.get(d, ''))}" for d in reference_order(cited, corpus)
    ]
    return "\n".join(lines) + "\n"


def _bib_escape(text: str) -> str:
    return re.sub(r"([{}\\])", r"\\\1", text)


def render_bibtex(doc_ids: list[str], corpus: Corpus) -> str:
    """references.bib: one entry per cited document. Authors in the form BibTeX reads
    particles and suffixes from ("van de Panne, Michiel"); a rejected or withdrawn
    submission has no `booktitle`, its `note` says where it was submitted and what became
    of it ("Submitted to ICLR 2017; rejected"), and a workshop paper's `booktitle` is the
    workshop track's."""
    entries = []
    for doc_id in doc_ids:
        doc = corpus.get(doc_id)
        fields = {
            "title": doc.title,
            "author": " and ".join(name_parts(a).bibtex() for a in doc.authors),
        }
        if doc.year is not None:
            fields["year"] = str(doc.year)
        status = standing_of(doc.meta)
        where = venue_note(doc.venue, doc.meta.get("decision"))
        if status in ("rejected", "withdrawn"):
            fields["note"] = where
        elif status == "workshop":
            fields["booktitle"] = where
        elif doc.venue:
            fields["booktitle"] = doc.venue
        if doc.url:
            fields["url"] = doc.url
        body = ",\n".join(f"  {k} = {{{_bib_escape(v)}}}" for k, v in fields.items() if v)
        entries.append(f"@misc{{{doc_id},\n{body}\n}}")
    return "\n\n".join(entries) + ("\n" if entries else "")


def claims_jsonl(content: ReviewContent) -> str:
    theme_of = {c.id: s.theme_id for s in content.sections for c in s.claims}
    group_of = {c.id: c.group for s in content.sections for c in s.claims}
    lines = []
    for check in content.checks.values():
        record = check.model_dump(mode="json")
        record["theme"] = theme_of.get(check.claim_id)
        record["group"] = group_of.get(check.claim_id, "")
        record["kept"] = check.verdict == "supported"
        # the sub-agents behind the claim that fell back to the offline procedure
        theme = record["theme"]
        behind = [read_id(d) for d in check.cited]
        behind += [write_id(theme), check_id(theme)] if theme is not None else []
        record["fallbacks"] = [sid for sid in behind if sid in content.fallbacks]
        lines.append(json.dumps(record, ensure_ascii=False))
    return "\n".join(lines) + ("\n" if lines else "")


def review_markdown(result: RunResult, corpus: Corpus, *, topic: str) -> str:
    """The review of a run (its subtasks by the review's ids) as Markdown."""
    return render_markdown(gather(result, topic, corpus), corpus)


__all__ = ["claims_jsonl", "render_bibtex", "render_markdown", "review_markdown"]
