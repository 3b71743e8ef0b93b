"""The literature review's roles: the built-ins with the review's tools, schemas, procedures
and meaning checks (so an invalid model answer gets the repair turn)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.review import briefs as role_briefs
from kimmy_swarm.agents.review import procedures as proc
from kimmy_swarm.agents.review._claimable import is_prose
from kimmy_swarm.agents.review._prose import attribution, unknown_citations, year_labels
from kimmy_swarm.agents.review.physics import research_physics
from kimmy_swarm.agents.review.schemas import (
    READ_PREFIX,
    WRITE_PREFIX,
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
)
from kimmy_swarm.agents.roles import RoleRegistry, builtin_roles
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


def _check_plan(plan: ReviewPlan, run: Attempt) -> None:
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


def _check_notes(notes: PaperNotes, run: Attempt) -> None:
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


def _check_section(section: Section, run: Attempt) -> None:
    allowed = set(run.inputs.get("doc_ids") or [])
    if not section.claims:  # a section without claims leaves the theme out of the review
        findings = sum(
            len(out.get("findings") or [])
            for key, out in run.upstream.items()
            if key.startswith(READ_PREFIX) and isinstance(out, dict)
        )
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


def _check_checks(result: SectionCheck, run: Attempt) -> None:
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
        if check.verdict != "supported" or not check.doc_id:
            continue
        found = _tool(run, "quote", doc_id=check.doc_id, text=check.passage)
        if found is None:
            raise ValueError(
                f"the passage for claim {check.claim_id!r} is not quoted word for word "
                f"from {check.doc_id!r}"
            )
        check.start, check.end = found["start"], found["end"]


def _check_prose(prose: ReviewProse, run: Attempt) -> None:
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


#: Tools of each review role (looked up in `agents.review.tools.build_toolbox`).
_READING = ("read_document", "document_sentences", "find_passages", "quote")
_SPECS: tuple[tuple[str, str, type, tuple[str, ...], Any, Any, Any], ...] = (
    # (role, built-in it derives from, output, tools, procedure, check, brief)
    ("planner", "planner", ReviewPlan, ("search_corpus", "find_themes", "read_document"),
     proc.plan_review, _check_plan, role_briefs.plan_brief),
    ("researcher", "researcher", PaperNotes, _READING, proc.research_paper, _check_notes,
     role_briefs.research_brief),
    ("physics_researcher", "physics_researcher", PaperNotes, _READING, research_physics,
     _check_notes, role_briefs.research_brief),
    ("writer", "writer", Section, (), proc.write_section, _check_section,
     role_briefs.write_brief),
    ("fact_checker", "fact_checker", SectionCheck,
     ("read_document", "check_claim", "quote", "find_passages"), proc.check_section,
     _check_checks, role_briefs.check_brief),
    ("synthesizer", "writer", ReviewProse, (), proc.synthesize, _check_prose,
     role_briefs.synthesis_brief),
)  # fmt: skip


#: What the review's writer is asked beyond the built-in writer's prompt: the theme's label
#: is only its key phrases, so the model names the theme from its papers.
WRITER_TITLE_PROMPT = (
    " Title the section with the name a person would give its theme, drawn from the titles "
    "and findings of its papers (a short noun phrase such as 'Policy gradient methods'), "
    "not a list of the theme's terms."
)


#: How the review's writer writes a theme's section: a synthesis, not a list of papers.
WRITER_SYNTHESIS_PROMPT = (
    " Write the section as a short synthesis, the way a review does: the summary says what "
    "the theme's papers have in common (the methods, data and questions they share) and how "
    "they differ (methods, results, with the numbers the papers give), citing the papers "
    "for each point. Each claim is one statement taken from one paper's findings, "
    "attributed as a review attributes it ('Zhang et al. (2017) show …', '… (Zhang et al., "
    "2017).', 'In contrast, Lee et al. (2017) …'), and cites that paper's doc_id; set "
    "`group` to the paragraph it belongs to (a shared line of work, 'Results', 'Open "
    "questions'). Never write 'X reports that' in front of a copied sentence, and quote no "
    "code, lists or boilerplate."
)
#: How the review's synthesizer writes the introduction, theme summaries and conclusion.
SYNTHESIZER_PROMPT = (
    " As the review's synthesizer, write an introduction that says what the review covers "
    "and how it is organised; one summary per theme (by theme id) that says what its papers "
    "share and where they differ, with citations such as '(Zhang et al., 2017)'; and a "
    "conclusion with substance: the largest and most cited themes, trends over the years "
    "the papers span, and the open questions and limitations the papers name. Use only the "
    "checked sections' claims and numbers, cite them, and add no new claims."
)


def review_roles(*, briefs: bool = True) -> RoleRegistry:
    """planner, researcher, physics_researcher, writer, fact_checker, synthesizer (`briefs`:
    each with its brief, `agents.review.briefs`; False: their models call the tools)."""
    base = builtin_roles()
    roles = RoleRegistry()
    for name, parent, output, tools, procedure, check, brief in _SPECS:
        brief = brief if briefs else None
        role = base.get_role(parent).derive(
            name=name, output=output, tools=tools, procedure=procedure, check=check, brief=brief
        )
        if name == "writer":
            role = role.derive(
                system_prompt=role.system_prompt + WRITER_SYNTHESIS_PROMPT + WRITER_TITLE_PROMPT
            )
        if name == "synthesizer":
            role = role.derive(system_prompt=role.system_prompt + SYNTHESIZER_PROMPT)
        roles.register(role)
    return roles


__all__ = ["SYNTHESIZER_PROMPT", "WRITER_SYNTHESIS_PROMPT", "WRITER_TITLE_PROMPT", "review_roles"]
