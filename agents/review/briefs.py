"""The literature review's briefs: what each role's model is given for one subtask, and the
answer schema made for that subtask (`agents.brief`).

- planner: the documents `search_corpus` finds on the topic (id and title) and the themes
  `find_themes` suggests for the best of them; each theme's `doc_ids` can only name those
  documents, and the plan's `relevant` documents are its themes' documents.
- researcher: the document's statements, one a line; its `doc_id` is pinned, each finding's
  `passage` is one of those statements (so it is quoted word for word), and its metadata
  (title, authors, year, URL, citations) is set by the runtime from the record.
- writer: the theme's papers and their findings; its `theme_id` is pinned, and a claim can
  cite only the theme's papers.
- fact-checker: each claim of the section with the passages of its cited papers that best
  match it; one verdict per claim, in order, pinned to the claim's id, and a supported
  verdict quotes one of those passages.
- synthesizer: each theme's checked claims; one summary per theme id.

Every answer still goes through the role's checks (`agents.review.roles`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.brief import (
    SubtaskBrief,
    answer_schema,
    bound,
    choose,
    named_texts,
    node,
    one_each,
    pin,
    string_schema,
    text,
)
from kimmy_swarm.agents.review._claimable import is_prose
from kimmy_swarm.agents.review._prose import attribution
from kimmy_swarm.agents.review._selection import most_read, reviewable
from kimmy_swarm.agents.review.schemas import (
    CHECK_PREFIX,
    PLAN_ID,
    READ_PREFIX,
    WRITE_PREFIX,
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
)
from kimmy_swarm.agents.tools.search import tokenize_terms
from kimmy_swarm.agents.tools.themes import default_k

if TYPE_CHECKING:
    from kimmy_swarm.agents.roles import AttemptView

#: The most statements of a document a researcher is shown (an abstract has about ten).
MAX_SENTENCES = 40
#: The most findings a researcher reports, and passages a fact-checker is shown per claim.
MAX_FINDINGS = 3
PASSAGES_PER_CLAIM = 3
#: Candidates a planner is shown, as a multiple of the papers it may pick.
CANDIDATES_PER_PAPER = 2
#: The longest short string the model may write (characters): a bound on a small model's
#: rambling; longer texts (summaries, the introduction) are bounded by max_tokens only.
SHORT_TEXT = 300


def plan_brief(run: AttemptView) -> SubtaskBrief:
    """The planner's candidates and suggested themes."""
    topic = str(run.inputs.get("topic") or "").strip()
    limit = int(run.inputs.get("max_papers") or 200)
    corpus_size = int(run.inputs.get("corpus_size") or 0)
    matched: int | None = None
    if topic:
        hits = reviewable(run.call("search_corpus", query=topic, k=max(limit, corpus_size, 1)))
        matched = len(hits)
        # The most cited and accepted of the papers about the topic, in the search's order.
        shown = most_read(hits, CANDIDATES_PER_PAPER * limit) if hits else []
        candidates = [(h["doc_id"], h["title"]) for h in shown]
        best_ids = {h["doc_id"] for h in most_read(shown, limit)} if shown else set()
    else:
        ids = [str(d) for d in run.inputs.get("doc_ids") or []][:limit]
        candidates = [(d, run.call("read_document", doc_id=d)["title"]) for d in ids]
        best_ids = {d for d, _ in candidates}
    filled = {"corpus_size": corpus_size, "matched": matched, "notes": []}
    if not candidates:
        return SubtaskBrief(
            text=f"No document of the corpus is about {topic!r}: answer with no themes.",
            schema=pin(answer_schema(ReviewPlan, keep=("topic",)), "topic", topic),
            filled={**filled, "relevant": [], "themes": []},
        )
    best = [d for d, _ in candidates if d in best_ids]
    themes = run.call(
        "find_themes",
        doc_ids=best,
        k=run.inputs.get("themes"),
        exclude_terms=tokenize_terms(topic),
        topic=topic or None,
    )
    ids = [d for d, _ in candidates]
    lines = [
        f"The documents search_corpus finds on {topic!r}, best first (id: title):"
        if topic
        else "The documents to review (id: title):",
        *(f"- {d}: {title}" for d, title in candidates),
        (
            f"Group the {min(limit, len(ids))} most relevant into themes (at most {limit} "
            "documents in all)"
            if topic
            else f"Group all {len(ids)} into themes"
        )
        + f", each labelled with the name of its line of research. find_themes suggests, for "
        f"the best {len(best)} (theme id (name): documents):",
        *(f"- {t['id']} ({t['label']}): {', '.join(t['doc_ids'])}" for t in themes),
    ]
    schema = answer_schema(ReviewPlan, keep=("topic", "themes"))
    pin(schema, "topic", topic)
    theme = node(schema, "themes.*")
    theme["properties"] = {k: theme["properties"][k] for k in ("id", "label", "doc_ids")}
    theme["required"] = ["id", "label", "doc_ids"]
    theme["additionalProperties"] = False
    text(schema, "themes.*.label", 80)
    choose(schema, "themes.*.doc_ids.*", ids)
    bound(schema, "themes.*.doc_ids", least=1)
    # As many themes as suggested, or as a set of this size usually holds (a suggestion
    # may put most papers under "other work").
    bound(schema, "themes", least=1, most=max(1, len(themes), default_k(len(best))))
    return SubtaskBrief(
        text="\n".join(lines), schema=schema, filled=filled, derived=_themes_documents
    )


def _themes_documents(answer: dict[str, Any]) -> dict[str, Any]:
    """A plan's relevant documents: its themes' documents, each once, in order (a theme
    that names a document twice names it once)."""
    themes = [
        {**t, "doc_ids": list(dict.fromkeys(map(str, t["doc_ids"])))} for t in answer["themes"]
    ]
    ids = [d for t in themes for d in t["doc_ids"]]
    return {"themes": themes, "relevant": list(dict.fromkeys(ids))}


def research_brief(run: AttemptView) -> SubtaskBrief:
    """The document's statements; findings quote one each."""
    doc_id = str(run.inputs["doc_id"])
    doc = run.call("read_document", doc_id=doc_id)
    every = run.call("document_sentences", doc_id=doc_id)
    stated = list(dict.fromkeys(s["text"] for s in every if is_prose(s["text"])))
    stated = stated[:MAX_SENTENCES]
    label = str(run.inputs.get("year_label") or "")
    who = attribution(doc["authors"], doc["year"], doc["title"], doc.get("status", ""), label=label)
    lines = [
        f"Document {doc_id}: {doc['title']!r} ({who}).",
        "Its statements, one a line (each finding's `passage` is one of them, copied whole; "
        "its `text` says the finding in your words, in the third person):",
        *(f"- {s}" for s in stated),
    ]
    schema = answer_schema(PaperNotes, keep=("doc_id", "contribution", "findings"))
    pin(schema, "doc_id", doc_id)
    text(schema, "contribution", SHORT_TEXT, least=0)
    finding = node(schema, "findings.*")
    finding["properties"] = {k: finding["properties"][k] for k in ("kind", "passage", "text")}
    finding["required"] = ["kind", "passage", "text"]
    finding["additionalProperties"] = False
    choose(schema, "findings.*.kind", ("contribution", "result", "open_question"))
    text(schema, "findings.*.text", SHORT_TEXT)
    if stated:
        choose(schema, "findings.*.passage", stated)
    bound(schema, "findings", least=1 if stated else 0, most=MAX_FINDINGS if stated else 0)
    filled = {
        "title": doc["title"],
        "year": doc["year"],
        "authors": doc["authors"],
        "url": doc.get("url"),
        "citations": doc.get("citations"),
        "status": doc.get("status", ""),
        "year_label": label,
    }
    return SubtaskBrief(text="\n".join(lines), schema=schema, filled=filled)


def _notes(run: AttemptView) -> list[PaperNotes]:
    notes = [
        PaperNotes.model_validate(out)
        for key, out in run.upstream.items()
        if key.startswith(READ_PREFIX) and out
    ]
    order = {d: i for i, d in enumerate(run.inputs.get("doc_ids") or [])}
    return sorted(notes, key=lambda n: order.get(n.doc_id, len(order)))


def write_brief(run: AttemptView) -> SubtaskBrief:
    """The theme's papers and their findings; claims cite only them."""
    theme_id = str(run.inputs["theme_id"])
    notes = _notes(run)
    lines = [f"Theme {run.inputs.get('label')!r}: its papers and their findings."]
    findings = 0
    for n in notes:
        who = attribution(n.authors, n.year, n.title, n.status, label=n.year_label)
        lines.append(f"[{n.doc_id}] {who}: {n.title!r}")
        for f in n.findings:
            findings += 1
            lines.append(f"  - ({f.kind or 'finding'}) {f.text}")
    allowed = [n.doc_id for n in notes] or [str(d) for d in run.inputs.get("doc_ids") or []]
    lines.append("Each claim cites the id in brackets of the paper it comes from.")
    schema = answer_schema(Section, keep=("theme_id", "title", "summary", "claims"))
    pin(schema, "theme_id", theme_id)
    text(schema, "title", 80)
    text(schema, "summary")
    claim = node(schema, "claims.*")
    claim["properties"] = {k: claim["properties"][k] for k in ("id", "text", "cited", "group")}
    claim["required"] = ["id", "text", "cited", "group"]
    claim["additionalProperties"] = False
    text(schema, "claims.*.id", 24)
    text(schema, "claims.*.text", SHORT_TEXT)
    text(schema, "claims.*.group", 60, least=0)
    choose(schema, "claims.*.cited.*", allowed)
    bound(schema, "claims.*.cited", least=1, most=2)
    # a claim per paper with findings at least (each paper's work is in the section)
    with_findings = sum(1 for n in notes if n.findings)
    bound(schema, "claims", least=with_findings, most=max(findings, 1) + 2)
    return SubtaskBrief(text="\n".join(lines), schema=schema)


def check_brief(run: AttemptView) -> SubtaskBrief:
    """Each claim with the best-matching passages of its cited papers; one verdict each."""
    theme_id = str(run.inputs["theme_id"])
    claims = [
        c
        for key, out in run.upstream.items()
        if key.startswith(WRITE_PREFIX) and out
        for c in out.get("claims", [])
    ]
    lines = ["The section's claims, each with the passages of its cited papers that match it:"]
    items: list[dict[str, Any]] = []
    schema = answer_schema(SectionCheck, keep=("theme_id", "checks"))
    pin(schema, "theme_id", theme_id)
    for c in claims:
        lines.append(f"Claim {c['id']}: {c['text']!r} (cites {', '.join(c['cited'])})")
        passages: list[str] = []
        for doc_id in c["cited"]:
            found = run.call("find_passages", doc_id=doc_id, query=c["text"], k=PASSAGES_PER_CLAIM)
            for p in found:
                passages.append(p["text"])
                lines.append(f"  - {doc_id}: {p['text']}")
        items.append(_verdict_item(c, passages))
    one_each(schema, "checks", items)
    lines.append(
        "A claim is supported when one passage states it, numbers and names included: then "
        "quote that passage whole, with its doc_id; otherwise say why it is unsupported."
    )
    return SubtaskBrief(text="\n".join(lines), schema=schema)


def _verdict_item(claim: dict[str, Any], passages: list[str]) -> dict[str, Any]:
    unsupported = {
        "type": "object",
        "properties": {
            "claim_id": {"const": claim["id"]},
            "verdict": {"const": "unsupported"},
            "reason": string_schema(SHORT_TEXT),
        },
        "required": ["claim_id", "verdict", "reason"],
        "additionalProperties": False,
    }
    if not passages:
        return unsupported
    supported = {
        "type": "object",
        "properties": {
            "claim_id": {"const": claim["id"]},
            "verdict": {"const": "supported"},
            "doc_id": {"type": "string", "enum": list(dict.fromkeys(claim["cited"]))},
            "passage": {"type": "string", "enum": list(dict.fromkeys(passages))},
        },
        "required": ["claim_id", "verdict", "doc_id", "passage"],
        "additionalProperties": False,
    }
    return {"anyOf": [supported, unsupported]}


def synthesis_brief(run: AttemptView) -> SubtaskBrief:
    """The checked sections; one summary per theme id."""
    supported = {
        c["claim_id"]
        for key, out in run.upstream.items()
        if key.startswith(CHECK_PREFIX) and out
        for c in out.get("checks", [])
        if c.get("verdict") == "supported"
    }
    plan = run.upstream.get(PLAN_ID) or {}
    lines = [f"The review is about {run.inputs.get('topic')!r}; its checked sections:"]
    theme_ids: list[str] = []
    for key, out in run.upstream.items():
        if not (key.startswith(WRITE_PREFIX) and out):
            continue
        theme_ids.append(str(out["theme_id"]))
        lines.append(f"Theme {out['theme_id']}: {out.get('title', '')}")
        for c in out.get("claims", []):
            if c["id"] in supported:
                lines.append(f"  - {c['text']}")
    if not theme_ids:
        theme_ids = [str(t["id"]) for t in plan.get("themes", [])]
    schema = answer_schema(ReviewProse)
    text(schema, "title", 120)
    text(schema, "introduction")
    text(schema, "conclusion")
    named_texts(schema, "section_summaries", theme_ids)
    return SubtaskBrief(text="\n".join(lines), schema=schema)


__all__ = [
    "MAX_FINDINGS",
    "MAX_SENTENCES",
    "check_brief",
    "plan_brief",
    "research_brief",
    "synthesis_brief",
    "write_brief",
]
