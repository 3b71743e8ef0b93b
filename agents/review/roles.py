"""The literature review's roles: the built-ins with the review's tools, schemas, procedures
and meaning checks (so an invalid model answer gets the repair turn)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agents.review import procedures as proc
from agents.review.physics import research_physics
from agents.review.schemas import (
    WRITE_PREFIX,
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
)
from agents.roles import RoleRegistry, builtin_roles

if TYPE_CHECKING:
    from agents.subagent import AgentRun


def _tool(run: AgentRun, name: str, **kwargs: Any) -> Any:
    """Call a tool for a check (not recorded as a step of the agent)."""
    return run.tools[name](kwargs) if name in run.tools else None


def _check_plan(plan: ReviewPlan, run: AgentRun) -> None:
    relevant = set(plan.relevant)
    for theme in plan.themes:
        outside = [d for d in theme.doc_ids if d not in relevant]
        if outside:
            raise ValueError(f"theme {theme.id!r} lists documents not in `relevant`: {outside}")
    for doc_id in plan.relevant:
        _tool(run, "read_document", doc_id=doc_id)  # raises for an unknown id


def _check_notes(notes: PaperNotes, run: AgentRun) -> None:
    if notes.doc_id != run.inputs.get("doc_id"):
        raise ValueError(f"doc_id must be {run.inputs.get('doc_id')!r}, not {notes.doc_id!r}")
    for i, finding in enumerate(notes.findings):
        found = _tool(run, "quote", doc_id=notes.doc_id, text=finding.passage)
        if found is None:
            raise ValueError(
                f"findings[{i}].passage is not quoted word for word from {notes.doc_id!r}"
            )
        finding.start, finding.end = found["start"], found["end"]


def _check_section(section: Section, run: AgentRun) -> None:
    allowed = set(run.inputs.get("doc_ids") or [])
    for claim in section.claims:
        unknown = [d for d in claim.cited if d not in allowed]
        if unknown:
            raise ValueError(
                f"claim {claim.id!r} cites {unknown}, which are not among this theme's "
                f"documents {sorted(allowed)}"
            )


def _check_checks(result: SectionCheck, run: AgentRun) -> None:
    wanted = {
        c["id"]
        for k, o in run.upstream.items()
        if k.startswith(WRITE_PREFIX) and o
        for c in o.get("claims", [])
    }
    missing = wanted - {c.claim_id for c in result.checks}
    if missing:
        raise ValueError(f"no verdict for claims {sorted(missing)}")
    for check in result.checks:
        if check.verdict != "supported" or not check.doc_id:
            continue
        found = _tool(run, "quote", doc_id=check.doc_id, text=check.passage)
        if found is None:
            raise ValueError(
                f"the passage for claim {check.claim_id!r} is not quoted word for word "
                f"from {check.doc_id!r}"
            )
        check.start, check.end = found["start"], found["end"]


#: Tools of each review role (looked up in `agents.review.tools.build_toolbox`).
_READING = ("read_document", "document_sentences", "find_passages", "quote")
_SPECS: tuple[tuple[str, str, type, tuple[str, ...], Any, Any], ...] = (
    # (role, built-in it derives from, output, tools, procedure, check)
    ("orchestrator", "orchestrator", ReviewPlan, ("search_corpus", "find_themes", "read_document"),
     proc.plan_review, _check_plan),
    ("researcher", "researcher", PaperNotes, _READING, proc.research_paper, _check_notes),
    ("physics_researcher", "physics_researcher", PaperNotes, _READING, research_physics,
     _check_notes),
    ("writer", "writer", Section, (), proc.write_section, _check_section),
    ("fact_checker", "fact_checker", SectionCheck, ("read_document", "check_claim", "quote"),
     proc.check_section, _check_checks),
    ("synthesizer", "writer", ReviewProse, (), proc.synthesize, None),
)  # fmt: skip


def review_roles() -> RoleRegistry:
    """orchestrator, researcher, physics_researcher, writer, fact_checker, synthesizer."""
    base = builtin_roles()
    roles = RoleRegistry()
    for name, parent, output, tools, procedure, check in _SPECS:
        roles.register(
            base.get_role(parent).derive(
                name=name, output=output, tools=tools, procedure=procedure, check=check
            )
        )
    return roles


__all__ = ["review_roles"]
