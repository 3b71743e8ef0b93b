"""Conditions on the corpus's record fields that the runtime checks itself (`where` of the
orchestrator's `search` and `fan_out`).

A small model judges "has an author at google.com" or "an oral paper" poorly from a
document's text, and the records already hold the answer (`emails`, `decision`). The
orchestrator states such a condition once, as data, and only the documents that meet it
are searched or fanned out; sub-agents are left the judgements only a reader can make.

    Condition(field="decision", op="contains", value="Oral").holds("Accept (Oral)")   # True
    Condition(field="rating", op=">=", value=7).holds("7.25")                         # True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

#: How a condition compares a field's value with its own.
Operator: TypeAlias = Literal["contains", "==", "!=", ">", ">=", "<", "<="]
_NUMERIC = frozenset({">", ">=", "<", "<="})


def as_number(value: Any) -> float | None:
    """`value` as a number (a number, or text that reads as one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).strip())
    except (TypeError, ValueError):
        return None


def field_text(value: Any) -> str:
    """A field's value as text: a list's items joined by ", "; None as ""."""
    if value is None:
        return ""
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


class Condition(BaseModel):
    """A condition on one field of a document's record, e.g. {"field": "emails", "op":
    "contains", "value": "google.com"} or {"field": "rating", "op": ">=", "value": 7}."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    field: str = Field(min_length=1, description="A field of the documents, e.g. decision.")
    op: Operator = Field(
        default="contains", description="contains (any case; a list: any item), ==, !=, >, …"
    )
    value: str | float = Field(description="What the field is compared with.")

    def holds(self, have: Any) -> bool:
        """Whether a record whose field is `have` meets the condition. `contains` and the
        equalities compare text without regard to case (a list: any of its items, or the
        whole list as text); the order comparisons compare numbers (a value that is not a
        number does not meet them)."""
        if self.op in _NUMERIC:
            mine, theirs = as_number(self.value), as_number(have)
            if mine is None or theirs is None:
                return False
            return {">": theirs > mine, ">=": theirs >= mine, "<": theirs < mine,
                    "<=": theirs <= mine}[self.op]  # fmt: skip
        wanted = field_text(self.value).strip().lower()
        listed = have if isinstance(have, list | tuple) else ()
        items = [field_text(v).strip().lower() for v in listed]
        whole = field_text(have).strip().lower()
        if self.op == "contains":
            return wanted in whole or any(wanted in item for item in items)
        mine, theirs = as_number(self.value), as_number(have)
        same = (mine == theirs) if mine is not None and theirs is not None else (
            whole == wanted or wanted in items
        )  # fmt: skip
        return same if self.op == "==" else not same

    def words(self) -> str:
        """The condition as a person reads it: `decision contains 'Oral'`."""
        return f"{self.field} {self.op} {self.value!r}"


@dataclass(frozen=True)
class GoalCondition:
    """A condition the goal's words set, as the offline goal reader reads it: in words, the
    `where` that states it (None when `where` cannot: "an author at cmu.edu or stanford.edu"),
    and the words of which a plan that keeps it names one (in its query, where, task or
    agent prompt)."""

    words: str
    where: list[Condition] | None
    keys: tuple[str, ...]

    def said_in(self, text: str) -> bool:
        """Whether `text` (lower case) names one of this condition's keys."""
        return any(key in text for key in self.keys)


#: Words of a decision that tell none apart ("Invite to Workshop Track": workshop).
_DECISION_FILLER = frozenset({"accept", "invite", "to", "track"})


def goal_conditions(goal: str) -> list[GoalCondition]:
    """The conditions on the records' fields that the offline goal reader finds in `goal`
    (authors' e-mail domains, a decision, numeric thresholds); [] for a goal it does not
    read whole. A small model drops one of them from its fan-out now and then ("an author at
    google.com" in the goal, nowhere in its plan), and the answer then lists papers the
    user did not ask for."""
    from kimmy_swarm.agents.widesearch.goal_reader import GoalNotUnderstood, read_wide_goal

    try:
        task = read_wide_goal(goal)
    except GoalNotUnderstood:
        return []
    found = []
    domains = task.email_domains
    if domains:
        where = [Condition(field="emails", op="contains", value=domains[0])]
        found.append(GoalCondition(
            "an author's e-mail at " + " or ".join(domains), where if len(domains) == 1 else None,
            tuple(d.split(".")[0].lower() for d in domains),
        ))  # fmt: skip
    if task.decision is not None:
        words = re.findall(r"[a-z]+", task.decision.lower())
        key = next((w for w in words if w not in _DECISION_FILLER), words[0] if words else "")
        decision = Condition(field="decision", op="contains", value=task.decision)
        found.append(GoalCondition(decision.words(), [decision], (key,)))
    for threshold in task.filters:
        value = threshold.value
        number = f"{int(value)}" if float(value).is_integer() else f"{value:g}"
        condition = Condition(field=threshold.field, op=threshold.op, value=value)
        found.append(GoalCondition(condition.words(), [condition], (number,)))
    return [c for c in found if all(c.keys)]


__all__ = ["Condition", "GoalCondition", "Operator", "as_number", "field_text", "goal_conditions"]
