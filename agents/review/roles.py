"""The literature review's roles: the built-ins with the review's tools, schemas, procedures
and meaning checks (`agents.review.checks`: an invalid model answer gets the repair turn)."""

from __future__ import annotations

from typing import Any

from kimmy_swarm.agents.review import briefs as role_briefs
from kimmy_swarm.agents.review import checks
from kimmy_swarm.agents.review import procedures as proc
from kimmy_swarm.agents.review.physics import research_physics
from kimmy_swarm.agents.review.schemas import (
    PaperNotes,
    ReviewPlan,
    ReviewProse,
    Section,
    SectionCheck,
)
from kimmy_swarm.agents.roles import RoleRegistry, builtin_roles

#: Tools of each review role (looked up in `agents.review.tools.build_toolbox`).
_READING = ("read_document", "document_sentences", "find_passages", "quote")
_SPECS: tuple[tuple[str, str, type, tuple[str, ...], Any, Any, Any], ...] = (
    # (role, built-in it derives from, output, tools, procedure, check, brief)
    ("planner", "planner", ReviewPlan, ("search_corpus", "find_themes", "read_document"),
     proc.plan_review, checks.check_plan, role_briefs.plan_brief),
    ("researcher", "researcher", PaperNotes, _READING, proc.research_paper, checks.check_notes,
     role_briefs.research_brief),
    ("physics_researcher", "physics_researcher", PaperNotes, _READING, research_physics,
     checks.check_notes, role_briefs.research_brief),
    ("writer", "writer", Section, (), proc.write_section, checks.check_section,
     role_briefs.write_brief),
    ("fact_checker", "fact_checker", SectionCheck,
     ("read_document", "check_claim", "quote", "find_passages"), proc.check_section,
     checks.check_checks, role_briefs.check_brief),
    ("synthesizer", "writer", ReviewProse, (), proc.synthesize, checks.check_prose,
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
