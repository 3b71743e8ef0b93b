"""The literature review's offline procedures: real retrieval, extraction and checking.

Each is the offline policy of one role and calls the same tools a model would:
- `plan_review` (planner): the papers about the topic (`SearchIndex.relevant`: named in
  the title or where the paper speaks of its own work, or dense in the topic's vocabulary;
  never a passing mention), capped at `max_papers` keeping the most cited and accepted
  (`_selection`), then grouped into themes named by their key phrases.
- `research_paper` (researcher): the paper's contribution, result and limitation
  sentences (prose only: no code, lists or boilerplate) by each sentence's role
  (`_sentence_roles`: background is never a result), results with numbers first and with
  their caveats, quoted exactly and attributed (with the paper's standing: `_venue`).
- `write_section` (writer): one section per theme — a synthesis of what the papers share
  and where they differ, their claims in paragraphs (shared lines of work, results, open
  questions) each citing its paper, a comparison row per paper.
- `check_section` (fact_checker): every claim as written against the passages of the cited
  documents (numbers and names must appear, negations, hedges and caveats be kept), and its
  attribution against the document's metadata (`_factcheck`).
- `synthesize` (synthesizer): introduction, per-theme summaries and a conclusion (big
  themes, most cited work, trends over years, open questions) built from the run's counts
  and checked claims.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.review._claimable import is_prose
from kimmy_swarm.agents.review._conclusion import conclusion
from kimmy_swarm.agents.review._factcheck import (
    ATTRIBUTION,
    NUMBERS,
    POLARITY,
    WORDING,
    attribution_problem,
    is_verbatim,
)
from kimmy_swarm.agents.review._prose import (
    attribution,
    in_sentence,
    plain_tex,
    shorten,
    split_attribution,
    theme_title,
    third_person,
    year_labels,
)
from kimmy_swarm.agents.review._section_prose import theme_section
from kimmy_swarm.agents.review._selection import most_read, reviewable
from kimmy_swarm.agents.review._sentence_roles import (
    CONTRIBUTION_CUES,
    MEASURE,
    RESULT_CUES,
    RoledSentence,
    SentenceRole,
    caveat_follows,
    classify,
    own_voice,
    shorten_keeping_caveat,
)
from kimmy_swarm.agents.review.schemas import (
    READ_PREFIX,
    WRITE_PREFIX,
    Claim,
    ClaimCheck,
    ComparisonRow,
    Finding,
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
    ThemePlan,
    is_check_id,
)
from kimmy_swarm.agents.tools.search import tokenize_terms

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt

_NUMBER = re.compile(r"\d")
_SECONDARY = re.compile(
    r"\bwe (?:also|further|additionally)\b|^(?:Also|Further(?:more)?|Additionally|Moreover"
    r"|Finally|In addition)\b",
    re.IGNORECASE,
)


def _secondary(text: str) -> bool:
    return bool(_SECONDARY.search(text))


_EVERY = 1_000_000  # a `k` past any corpus: `search_corpus` returns every relevant document


def plan_review(run: Attempt) -> ReviewPlan:
    """Orchestrator: the papers relevant to the topic (`search_corpus` keeps only those its
    `Relevance` rule accepts, less those that name it only in passing: `reviewable`), the
    best `max_papers` of them, grouped into themes. The plan says how many matched
    (`matched`); the cap cut `matched - len(relevant)`."""
    topic = str(run.inputs.get("topic") or "").strip()
    limit = int(run.inputs.get("max_papers") or 200)
    notes: list[str] = []
    matched: int | None = None
    if topic:
        # Every relevant document (the tool caps k at the corpus size), then the cap.
        every = max(limit, int(run.inputs.get("corpus_size") or 0) or _EVERY)
        hits = reviewable(run.call("search_corpus", query=topic, k=every))
        # The cap keeps the most cited and accepted papers, never cuts by match score alone.
        matched, relevant = len(hits), [h["doc_id"] for h in most_read(hits, limit)]
        if not relevant:
            notes.append(f"no document of the corpus matches the topic {topic!r}")
        records = {h["doc_id"]: h for h in hits}
    else:
        relevant = list(run.inputs.get("doc_ids") or [])[:limit]
        records = {d: run.call("read_document", doc_id=d) for d in relevant}
    labels = year_labels(
        [(d, records[d].get("authors") or [], records[d].get("year"), records[d]["title"])
         for d in relevant]
    )  # fmt: skip
    themes: list[dict[str, Any]] = []
    if relevant:
        themes = run.call(
            "find_themes",
            doc_ids=relevant,
            k=run.inputs.get("themes"),
            exclude_terms=tokenize_terms(topic),
            topic=topic or None,
        )
    return ReviewPlan(
        topic=topic,
        relevant=relevant,
        themes=[ThemePlan.model_validate(t) for t in themes],
        corpus_size=int(run.inputs.get("corpus_size") or 0),
        matched=matched,
        notes=notes,
        year_labels=labels,
    )


def _prose_sentence(text: str) -> bool:
    """Whether a sentence reads as a statement: prose, not code, a list, boilerplate or a
    fragment (`agents.review._claimable.not_prose` says which rule fired)."""
    return is_prose(text)


def sentence_score(text: str, relevance: float) -> tuple[float, float]:
    """(result score, contribution score) of one sentence: its cues, a number, and its
    relevance to the topic. It ranks sentences within a role (`_sentence_roles`), never
    makes a sentence a result."""
    result = 2.0 * len(RESULT_CUES.findall(text)) + (1.0 if _NUMBER.search(text) else 0.0)
    result += 2.0 * len(MEASURE.findall(text))  # a headline number is what a reader wants
    contribution = 2.0 * len(CONTRIBUTION_CUES.findall(text))
    return result + relevance, contribution + relevance


#: Scores a sentence: (text, relevance to the topic) -> (result score, contribution score).
SentenceScore = Callable[[str, float], tuple[float, float]]
#: Whether a sentence of this role can be quoted as one of the paper's results.
ResultRule = Callable[[str, SentenceRole], bool]


def counts_as_result(text: str, role: SentenceRole) -> bool:
    """A result sentence, or a contribution sentence that carries a number."""
    return role == "result" or (role == "contribution" and bool(_NUMBER.search(text)))


def _contribution(roled: list[RoledSentence], ranks: list[float]) -> int | None:
    """The paper's contribution: its best contribution sentence, else its first sentence in
    its own voice that is no background or limitation, else its first sentence."""
    picks = [i for i, r in enumerate(roled) if r.role == "contribution"]
    if picks:  # "We also introduce …" adds to the contribution stated before it
        return max(picks, key=lambda i: (ranks[i] - 3.0 * _secondary(roled[i].text), -i))
    own = [i for i, r in enumerate(roled) if r.role in ("method", "result") and own_voice(r.text)]
    return own[0] if own else (0 if roled else None)


def _with_caveat(roled: list[RoledSentence], i: int) -> int:
    """The last sentence a result at `i` is quoted through: the sentence after it (or after
    the next result) when that one qualifies it ("These results, albeit …")."""
    for j in (i + 1, i + 2):
        if j >= len(roled):
            break
        if caveat_follows(roled[j].text):
            return j
        if roled[j].role != "result":
            break
    return i


def research_paper(
    run: Attempt, score: SentenceScore = sentence_score, is_result: ResultRule = counts_as_result
) -> PaperNotes:
    """Researcher: the contribution, key results and a limitation of one paper, quoted
    exactly. Each sentence gets its role first (`_sentence_roles.classify`); results come
    only from result sentences (`is_result`), those with numbers first, each with the
    caveat that follows it; the open question is a limitation sentence."""
    doc_id = str(run.inputs["doc_id"])
    query = " ".join([str(run.inputs.get("topic") or ""), *run.inputs.get("theme_terms", [])])
    doc = run.call("read_document", doc_id=doc_id)
    every = run.call("document_sentences", doc_id=doc_id)
    # Only statements become findings: a document of code, lists, boilerplate and
    # fragments alone gets none (its comparison row still says what it is).
    sents = [s for s in every if _prose_sentence(s["text"])]
    relevance: dict[int, float] = {}
    if query.strip():
        for rank, p in enumerate(run.call("find_passages", doc_id=doc_id, query=query, k=3)):
            for s in sents:
                if s["start"] < p["end"] and p["start"] < s["end"]:
                    relevance[s["start"]] = max(relevance.get(s["start"], 0.0), 1.5 - 0.5 * rank)
    roled = classify([s["text"] for s in sents])
    scores = [score(s["text"], relevance.get(s["start"], 0.0)) for s in sents]
    first = _contribution(roled, [c for _, c in scores])
    candidates = sorted(
        (i for i, r in enumerate(roled) if i != first and is_result(r.text, r.role)),
        key=lambda i: (-scores[i][0], i),
    )
    spans: list[tuple[int, int, str]] = [] if first is None else [(first, first, "contribution")]
    for i in candidates:
        last = _with_caveat(roled, i)
        if sum(k == "result" for *_, k in spans) < 2 and all(
            last < a or i > b for a, b, _ in spans
        ):
            spans.append((i, last, "result"))
    used = {j for a, b, _ in spans for j in range(a, b + 1)}
    limitation = next(
        (i for i, r in enumerate(roled) if r.role == "limitation" and i not in used), None
    )
    if limitation is not None:
        if len(spans) == 3:  # an open question says more than a second result
            spans.pop()
        spans.append((limitation, limitation, "open_question"))
    label = str(run.inputs.get("year_label") or "")
    subject = attribution(
        doc["authors"], doc["year"], doc["title"], doc.get("status", ""), label=label
    )
    findings = []
    for a, b, kind in spans:
        if sents[b]["end"] > len(doc["text"]):  # past what `read_document` shows: one sentence
            b = a
        start, end = sents[a]["start"], sents[b]["end"]
        passage = sents[a]["text"] if a == b else doc["text"][start:end]
        findings.append(
            Finding(
                text=third_person(passage, subject, doc["title"]),
                passage=passage,
                start=start,
                end=end,
                kind=kind,
            )
        )
    counts = Counter(tokenize_terms(doc["title"] + " " + doc["text"]))
    return PaperNotes(
        doc_id=doc_id,
        title=doc["title"],
        year=doc["year"],
        authors=doc["authors"],
        contribution=sents[first]["text"] if first is not None else "",
        findings=findings,
        terms=[t for t, _ in counts.most_common(6)],
        url=doc.get("url"),
        citations=doc.get("citations"),
        status=doc.get("status", ""),
        year_label=label,
    )


def _notes_of(run: Attempt) -> list[PaperNotes]:
    by_doc = {}
    for key, out in run.upstream.items():
        if key.startswith(READ_PREFIX) and out:
            notes = PaperNotes.model_validate(out)
            by_doc[notes.doc_id] = notes
    order = list(run.inputs.get("doc_ids") or by_doc)
    return [by_doc[d] for d in order if d in by_doc]


def write_section(run: Attempt) -> Section:
    """Writer: one theme's section — a synthesis of what its papers share and where they
    differ, their claims in paragraphs (shared lines of work, results, open questions), each
    citing its paper, and a comparison row per paper (`agents.review._section_prose`)."""
    theme_id = str(run.inputs["theme_id"])
    label = str(run.inputs.get("label") or "")
    papers = _notes_of(run)
    summary, claims = theme_section(
        theme_id,
        papers,
        topic=str(run.inputs.get("topic") or ""),
        terms=list(run.inputs.get("terms") or []),
        title=label,
    )
    rows: list[ComparisonRow] = []
    for notes in papers:
        # only a result is a key result (never the contribution or the background), and its
        # caveat is never cut off
        results = [f for f in notes.findings if f.kind == "result"]
        rows.append(
            ComparisonRow(
                doc_id=notes.doc_id,
                title=notes.title,
                year=notes.year,
                approach=shorten(plain_tex(notes.contribution), 22),
                key_result=(
                    shorten_keeping_caveat(plain_tex(results[0].passage), 22) if results else ""
                ),
                citations=notes.citations,
                status=notes.status,
            )
        )
    missing = len(run.inputs.get("doc_ids") or []) - len(papers)
    if missing > 0:
        summary += f" {missing} more could not be read and are left out."
    return Section(
        theme_id=theme_id, title=theme_title(label), summary=summary, claims=claims, rows=rows
    )


def check_as_written(
    call: Callable[..., Any], claim: Claim, year_labels: Mapping[str, str]
) -> ClaimCheck:
    """The claim as written against each cited document (`agents.review._factcheck`): its
    words, numbers, names and polarity against the best passage, its attribution against
    the record; the best verdict over the cited documents. `call(tool, **arguments)` calls
    the fact-checker's tools (`read_document`, `check_claim`); the offline fact-checker's
    verdict, and the check of a model's (`agents.review.roles`)."""
    subject, body = split_attribution(claim.text)
    best: ClaimCheck | None = None
    for doc_id in claim.cited:
        try:
            doc = call("read_document", doc_id=doc_id)
        except Exception as exc:  # noqa: BLE001  (an unknown id is a verdict, not a crash)
            reason = f"cited document {doc_id!r} cannot be read: {exc}"
            best = best or ClaimCheck(
                claim_id=claim.id,
                claim=claim.text,
                cited=claim.cited,
                verdict="unsupported",
                reason=reason,
            )
            continue
        support = call("check_claim", claim=body or claim.text, doc_id=doc_id)
        passage = support["passage"] or {}
        ok = bool(support["supported"])
        reason = "" if ok else f"best passage scores {support['score']:.2f}"
        polarity = list(support.get("polarity") or [])
        if polarity:
            reason = "changes the passage's polarity: " + ", ".join(polarity)
        if support["missing"]:
            reason = "not in the passage: " + ", ".join(support["missing"])
        label = str(year_labels.get(doc_id, ""))
        problem = attribution_problem(subject, doc, label=label) if subject else ""
        if ok and problem:
            ok, reason = False, f"attribution {subject!r} {problem}"
        verbatim = is_verbatim(claim.text, passage.get("text", ""))
        check = ClaimCheck(
            claim_id=claim.id,
            claim=claim.text,
            cited=claim.cited,
            verdict="supported" if ok else "unsupported",
            doc_id=doc_id,
            passage=passage.get("text", ""),
            start=passage.get("start"),
            end=passage.get("end"),
            score=float(support["score"]),
            missing=list(support["missing"]),
            reason=reason,
            polarity=polarity,
            verbatim=verbatim,
            checked=[ATTRIBUTION, NUMBERS, POLARITY] + ([] if verbatim else [WORDING]),
        )
        if best is None or _rank(check) > _rank(best):
            best = check
    assert best is not None  # a Claim cites at least one document
    return best


def _sections(run: Attempt) -> list[Section]:
    return [
        Section.model_validate(out)
        for key, out in _in_order(run.upstream)
        if key.startswith(WRITE_PREFIX) and out
    ]


def _rank(check: ClaimCheck) -> tuple[bool, float]:
    return check.verdict == "supported", check.score


def check_section(run: Attempt) -> SectionCheck:
    """Fact-checker: a verdict for every claim of the upstream section."""
    sections = _sections(run)
    labels = run.inputs.get("year_labels") or {}
    checks = [
        check_as_written(run.call, claim, labels)
        for section in sections
        for claim in section.claims
    ]
    return SectionCheck(theme_id=str(run.inputs.get("theme_id") or ""), checks=checks)


def _standings(rows: list[ComparisonRow]) -> str:
    """How the papers stand at their venue, when the records say: " By the records'
    decisions, 17 were accepted, 4 invited to the workshop track and 8 rejected …"."""
    counts = Counter(r.status for r in rows if r.status)
    if not counts or set(counts) == {"accepted"}:
        return ""
    said = {
        "accepted": "accepted",
        "workshop": "invited to the workshop track",
        "rejected": "rejected",
        "withdrawn": "withdrawn",
    }
    parts = [f"{counts[k]} {v}" for k, v in said.items() if counts.get(k)]
    parts[0] = parts[0].replace(" ", " were ", 1)  # "17 were accepted, 4 invited …"
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return (
        f" By the records' decisions, {joined}; a rejected or workshop paper is cited as one "
        "(“2017, rejected submission”), never as a published paper."
    )


def compose_prose(
    topic: str, corpus_size: int, sections: list[Section], checks: list[ClaimCheck]
) -> ReviewProse:
    """Introduction, theme summaries and conclusion (`agents.review._conclusion`: the big
    themes, the most cited work, trends over the years, the open questions the papers
    name), from the counts and the checked claims of the run."""
    supported = sum(c.verdict == "supported" for c in checks)
    papers = {r.doc_id: r for s in sections for r in s.rows}
    years = sorted({r.year for r in papers.values() if r.year is not None})
    intro = (
        f"This review covers {len(papers)} documents"
        + (f" of the {corpus_size} in the corpus" if corpus_size else "")
        + f" about “{topic}”"
        + (f", from {years[0]} to {years[-1]}" if len(years) > 1 else "")
        + f". They fall into {len(sections)} themes, grouped by the problems and methods "
        "their titles and contributions name: "
        + "; ".join(f"{in_sentence(s.title)} ({len(s.rows)})" for s in sections)
        + "."
        + _standings(list(papers.values()))
        + " Every statement below cites the document it comes from; a fact-checker checked "
        f"each of the {len(checks)} claims against the passage it rests on (the conclusion "
        "says what it checked). "
        + (
            f"The {len(checks) - supported} that failed are listed at the end, not used."
            if supported < len(checks)
            else "Claims that fail the check are listed at the end, not used."
        )
    )
    return ReviewProse(
        title=f"Literature review: {topic or 'the corpus'}",
        introduction=intro,
        section_summaries={s.theme_id: s.summary for s in sections},
        conclusion=conclusion(sections, checks),
    )


def _in_order(upstream: dict[str, Any]) -> list[tuple[str, Any]]:
    """Subtask outputs by id, numbers in ids read as numbers: "theme-2" before "theme-10"
    (the plan numbers its themes in their order)."""
    return sorted(upstream.items(), key=lambda kv: _id_key(kv[0]))


def _id_key(subtask_id: str) -> list[tuple[int, int, str]]:
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", subtask_id)]


def upstream_checks(upstream: dict[str, Any]) -> list[ClaimCheck]:
    """Every claim check in the outputs of `check:*` subtasks, in the plan's theme order."""
    return [
        c
        for key, out in _in_order(upstream)
        if is_check_id(key) and out
        for c in SectionCheck.model_validate(out).checks
    ]


def synthesize(run: Attempt) -> ReviewProse:
    """Synthesizer: introduction, theme summaries and conclusion from the run's results."""
    return compose_prose(
        str(run.inputs.get("topic") or ""),
        int(run.inputs.get("corpus_size") or 0),
        _sections(run),
        upstream_checks(run.upstream),
    )


__all__ = [
    "ResultRule",
    "SentenceScore",
    "check_as_written",
    "check_section",
    "compose_prose",
    "counts_as_result",
    "plan_review",
    "research_paper",
    "sentence_score",
    "synthesize",
    "upstream_checks",
    "write_section",
]
