"""The meaning checks of the review's roles: what makes a model's answer invalid (the
repair turn, then the role's offline procedure) although it fits the role's schema.

- `check_plan`: each relevant document once, within the cap, themes of listed documents,
  no theme labelled with a list of terms; the letters of papers cited alike set here.
- `check_notes`: passages quoted word for word; no empty notes for a paper that states
  something.
- `check_section`: claims cite the theme's papers and say more than a title; a model's
  claims cite every paper with findings, its title is a name, not a list of terms, and its
  summary says only what the papers say (`_grounding`).
- `check_checks`: a verdict for every claim; a "supported" passage quoted word for word;
  a model's verdict agrees with the check of the claim as written
  (`procedures.check_as_written`) where that check is certain.
- `check_prose`: the synthesizer cites only the reviewed papers and says only what they say.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.review import procedures as proc
from kimmy_swarm.agents.review._claimable import is_prose
from kimmy_swarm.agents.review._grounding import ungrounded
from kimmy_swarm.agents.review._prose import attribution, unknown_citations, year_labels
from kimmy_swarm.agents.review.schemas import (
    READ_PREFIX,
    WRITE_PREFIX,
    Claim,
    ClaimCheck,
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
)
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt


def _tool(run: Attempt, name: str, **kwargs: Any) -> Any:
    """Call a tool for a check (not recorded as a step of the agent).

    Raises:
        ValueError: the tool refused the answer's arguments (an unknown document id, say):
            the answer is invalid, so the model gets the repair turn, then the fallback.
    """
    if name not in run.tools:
        return None
    try:
        return run.tools[name](kwargs)
    except UserError as exc:
        raise ValueError(str(exc)) from exc


def check_plan(plan: ReviewPlan, run: Attempt) -> None:
    relevant = set(plan.relevant)
    twice = sorted(d for d in relevant if plan.relevant.count(d) > 1)
    if twice:  # each relevant document is read by one researcher
        raise ValueError(f"`relevant` lists documents more than once: {twice}")
    limit = run.inputs.get("max_papers")
    if isinstance(limit, int) and len(relevant) > limit:
        raise ValueError(f"the plan reviews {len(relevant)} documents; at most {limit} may be")
    given = [str(d) for d in run.inputs.get("doc_ids") or []]
    left_out = [d for d in given if d not in relevant]
    if left_out and not str(run.inputs.get("topic") or "").strip():  # review these, all
        raise ValueError(f"the plan leaves out documents it was given to review: {left_out}")
    for theme in plan.themes:
        if run.policy != "offline" and _term_list(theme.label):
            raise ValueError(
                f"theme {theme.id!r} is labelled with a list of terms ({theme.label!r}): "
                "label it with the name of its line of research, as find_themes names them"
            )
        if len(set(theme.doc_ids)) < len(theme.doc_ids):
            raise ValueError(f"theme {theme.id!r} lists a document more than once")
        outside = [d for d in theme.doc_ids if d not in relevant]
        if outside:
            raise ValueError(f"theme {theme.id!r} lists documents not in `relevant`: {outside}")
    records = [_tool(run, "read_document", doc_id=d) for d in plan.relevant]  # raises if unknown
    if all(records):  # the letters of papers cited alike are the runtime's, not the model's
        plan.year_labels = year_labels(
            [(r["doc_id"], r.get("authors") or [], r.get("year"), r["title"]) for r in records]
        )
    topic = str(run.inputs.get("topic") or "").strip()
    if not plan.relevant and topic:
        hits = _tool(run, "search_corpus", query=topic, k=1) or []
        if hits:  # an empty plan would end the review with nothing to read
            raise ValueError(
                f"`relevant` is empty, but search_corpus finds documents on {topic!r} "
                f"(e.g. {hits[0]['doc_id']!r}): list the relevant documents and their themes"
            )


def check_notes(notes: PaperNotes, run: Attempt) -> None:
    if notes.doc_id != run.inputs.get("doc_id"):
        raise ValueError(f"doc_id must be {run.inputs.get('doc_id')!r}, not {notes.doc_id!r}")
    if not notes.findings:  # notes with nothing in them leave the paper out of the review
        sentences = _tool(run, "document_sentences", doc_id=notes.doc_id) or []
        stated = [s for s in sentences if is_prose(s["text"])]
        if stated:
            raise ValueError(
                f"`findings` is empty, but {notes.doc_id!r} has {len(stated)} sentences that "
                "state something: quote its contribution and key results word for word"
            )
    for i, finding in enumerate(notes.findings):
        found = _tool(run, "quote", doc_id=notes.doc_id, text=finding.passage)
        if found is None:
            raise ValueError(
                f"findings[{i}].passage is not quoted word for word from {notes.doc_id!r}"
            )
        finding.start, finding.end = found["start"], found["end"]


def check_section(section: Section, run: Attempt) -> None:
    allowed = set(run.inputs.get("doc_ids") or [])
    papers = {
        str(out.get("doc_id")): out
        for key, out in run.upstream.items()
        if key.startswith(READ_PREFIX) and isinstance(out, dict)
    }
    if not section.claims:  # a section without claims leaves the theme out of the review
        findings = sum(len(notes.get("findings") or []) for notes in papers.values())
        if findings:
            raise ValueError(
                f"the section makes no claim, but its papers' notes have {findings} findings: "
                "make one claim per finding, citing its paper"
            )
    for claim in section.claims:
        unknown = [d for d in claim.cited if d not in allowed]
        if unknown:
            raise ValueError(
                f"claim {claim.id!r} cites {unknown}, which are not among this theme's "
                f"documents {sorted(allowed)}"
            )
        if any(_only_title(claim.text, papers[d]) for d in claim.cited if d in papers):
            raise ValueError(  # a 1.5B model's claim "Metz et al. (2017): 'Unrolled …'"
                f"claim {claim.id!r} is the title of the paper it cites, which states "
                "nothing: make the claim one of the paper's findings, as its notes give it"
            )
    if run.policy == "offline":
        return  # the procedure's title and summary are made from the notes
    cited = {d for claim in section.claims for d in claim.cited}
    left_out = sorted(
        d
        for d, notes in papers.items()
        if d in allowed and notes.get("findings") and d not in cited
    )
    if left_out:  # a paper no claim cites is not in the review (nor in references.bib)
        raise ValueError(
            f"no claim cites {left_out}, whose notes have findings: make a claim from each "
            "paper's findings, citing it"
        )
    if _term_list(section.title):
        raise ValueError(
            f"the title {section.title!r} is a list of terms: title the section with the "
            "name a person would give its theme, a short noun phrase"
        )
    _check_grounded({"summary": section.summary}, run)


def _term_list(name: str) -> bool:
    """Whether a theme's name lists terms ("Map samples, generation, mutual, employs")."""
    return name.count(",") >= 2


def _check_grounded(texts: dict[str, str], run: Attempt) -> None:
    """A model's prose says only what the run's papers say (`_grounding.ungrounded`: a
    1.5B model's summary of GAN papers presented "Reverse Artificial Intelligence, which
    transforms the input data into advertisements"): its sources are the upstream notes and
    sections, the topic and the theme's label."""
    sources = [str(run.inputs.get(k) or "") for k in ("topic", "label")]
    for key, out in run.upstream.items():
        if key.startswith(READ_PREFIX) and out:
            notes = PaperNotes.model_validate(out)
            sources += [notes.title, notes.contribution, *notes.authors]
            sources.append(attribution(notes.authors, notes.year, notes.title))
            sources += [x for f in notes.findings for x in (f.text, f.passage)]
        elif key.startswith(WRITE_PREFIX) and out:
            section = Section.model_validate(out)
            sources += [section.title, *(c.text for c in section.claims)]
    for where, text in texts.items():
        wrong = ungrounded(text, sources)
        if wrong:
            raise ValueError(
                f"the {where} says what none of its papers says: {'; '.join(wrong)}; write "
                "only what the papers' notes and claims say, in their words"
            )


def _only_title(text: str, notes: dict[str, Any]) -> bool:
    """Whether `text` says no more than its paper's title and authors do: it holds the
    title's words (case, quotes and punctuation aside), and the rest is names and years
    ("Metz et al. (2017): 'Unrolled Generative Adversarial Networks'")."""
    named = re.findall(r"\w+", str(notes.get("title") or "").lower())
    words, n = re.findall(r"\w+", text.lower()), len(named)
    authors = {w for a in notes.get("authors") or [] for w in re.findall(r"\w+", str(a).lower())}
    for i in range(len(words) - n + 1) if named else ():
        if words[i : i + n] == named:
            rest = words[:i] + words[i + n :]
            return all(w.isdigit() or w in authors or w in _ATTRIBUTING for w in rest)
    return False


#: Words of an attribution besides names and years ("Zhang et al.", "Lee and Kim").
_ATTRIBUTING = frozenset({"et", "al", "and", "in", "by", "the", "paper", "authors"})


def check_checks(result: SectionCheck, run: Attempt) -> None:
    wanted = {
        c["id"]: c
        for k, o in run.upstream.items()
        if k.startswith(WRITE_PREFIX) and o
        for c in o.get("claims", [])
    }
    missing = set(wanted) - {c.claim_id for c in result.checks}
    if missing:
        raise ValueError(f"no verdict for claims {sorted(missing)}")
    for check in result.checks:
        claim = wanted.get(check.claim_id)
        if claim is not None:  # a verdict names its claim by id; the text is the section's
            check.claim = check.claim or str(claim.get("text") or "")
            check.cited = check.cited or list(claim.get("cited") or [])
        if claim is not None:
            _check_verdict(check, Claim.model_validate(claim), run)
        if check.verdict != "supported" or not check.doc_id:
            continue
        found = _tool(run, "quote", doc_id=check.doc_id, text=check.passage)
        if found is None:
            raise ValueError(
                f"the passage for claim {check.claim_id!r} is not quoted word for word "
                f"from {check.doc_id!r}"
            )
        check.start, check.end = found["start"], found["end"]


def _check_verdict(check: ClaimCheck, claim: Claim, run: Attempt) -> None:
    """A model's verdict against the offline fact-checker's on the claim as written
    (`procedures.check_as_written`: numbers, names, polarity, attribution): "supported"
    where that check finds a defect, or "unsupported" for a claim that restates its passage
    word for word, is wrong (a 1.5B model marked a bare title supported and rejected abstract
    sentences its writer had quoted). An "unsupported" for a reworded claim the check
    accepts stands: the model may see a change of meaning the check cannot."""
    if run.policy == "offline" or "check_claim" not in run.tools:
        return  # the offline procedure's verdicts are that check's
    own = proc.check_as_written(
        lambda name, **kw: _tool(run, name, **kw),
        claim,
        run.inputs.get("year_labels") or {},
    )
    if check.verdict == "supported" and own.verdict == "unsupported":
        raise ValueError(
            f"claim {claim.id!r} is marked supported, but the check of it as written finds: "
            f"{own.reason}; mark it unsupported with that reason"
        )
    if check.verdict == "unsupported" and own.verdict == "supported" and own.verbatim:
        raise ValueError(
            f"claim {claim.id!r} is marked unsupported, but it restates {own.doc_id!r} word "
            f"for word: {own.passage!r}; mark it supported, quoting that passage"
        )


def check_prose(prose: ReviewProse, run: Attempt) -> None:
    """The synthesizer cites only the reviewed papers, as their notes name them (a 1.5B
    model's introduction cited "Von Santaana et al. (2017)", who wrote none of them)."""
    notes = [
        PaperNotes.model_validate(out)
        for key, out in run.upstream.items()
        if key.startswith(READ_PREFIX) and out
    ]
    if not notes:  # nothing to check the names against
        return
    known = [attribution(n.authors, n.year, n.title, label=n.year_label) for n in notes]
    texts = {"introduction": prose.introduction, "conclusion": prose.conclusion}
    texts |= {f"summary of theme {t!r}": x for t, x in prose.section_summaries.items()}
    for where, text in texts.items():
        unknown = unknown_citations(text, known)
        if unknown:
            raise ValueError(
                f"the {where} cites {', '.join(unknown)}, which is none of the reviewed "
                f"papers: cite only these, as written here: {'; '.join(sorted(set(known)))}"
            )
    if run.policy != "offline":
        _check_grounded(texts, run)


__all__ = ["check_checks", "check_notes", "check_plan", "check_prose", "check_section"]
