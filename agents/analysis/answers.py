"""The offline analyst's answer to "what predicts the target": the model's predictors ranked
by the size of their effects, each with its effect sizes and evidence (`answer_text`), and
every column of the table the model left out, with why (`left_out`, `left_out_text`).

The ranking is scale-free: by the effect of one standard deviation of each predictor (the
coefficient times the SD of its term over the rows fitted, `slope_per_sd`), the significant
predictors first; per-unit effects are on each predictor's own scale and do not compare. A
multinomial logit ranks a predictor by its largest effect over the classes and names that
class; a penalised fit by its largest |coefficient|, already per SD of the standardised
predictors, with its bootstrap interval; a nominal predictor by its strongest dummy (a
significant one first), which is named. A two-part model answers for each part: whether the
target is > 0, and its amount where it is. Every number quoted is a reported finding (a
coefficient, its effect per SD, its p-value or interval, the correlation behind a
near-duplicate), rounded for reading, so the fact-check vouches for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kimmy_swarm.agents.analysis.interpret import ALPHA, PART_TITLES, class_name, num, pvalue_text
from kimmy_swarm.agents.tools.finding import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES
from kimmy_swarm.agents.tools.models import (
    EVENTS_PER_PARAMETER,
    MIN_PARAMETERS,
    ROWS_PER_PARAMETER,
)

__all__ = [
    "RANKED_BY_SD",
    "LeftOut",
    "Ranked",
    "answer_text",
    "bootstrap_text",
    "left_out",
    "left_out_text",
    "ranked_by_text",
    "ranked_predictors",
    "size_limit_text",
]

#: Significant predictors named with their effect in the answer at most (the rest counted).
MAX_NAMED = 4
#: Predictors named as not significant at most (the rest counted).
MAX_WEAK = 6
#: What an unpenalised answer's ranking is by, said after it.
RANKED_BY_SD = (
    "The predictors are ranked by their effect per standard deviation (SD), which unlike "
    "the effect per unit does not depend on each predictor's scale"
)


@dataclass(frozen=True)
class Ranked:
    """A predictor's strongest coefficient: `term` is the predictor, or the dummy of one of
    its levels for a nominal one ("occupation=2"); `level` its class in a multinomial
    model; `per_sd` the effect of one SD of the term (None in a penalised fit, whose
    coefficients are per SD already); `low`, `high` a penalised one's bootstrap interval."""

    predictor: str
    term: str
    coef: float
    pvalue: float | None
    per_sd: float | None
    level: str
    low: float | None = None
    high: float | None = None

    @property
    def significant(self) -> bool:
        return self.pvalue is not None and self.pvalue < ALPHA

    @property
    def strength(self) -> float:
        """|effect of one SD|: of `per_sd`, else of the coefficient of a penalised fit."""
        return abs(self.per_sd) if self.per_sd is not None else abs(self.coef)


def _penalised(fit: dict[str, Any]) -> bool:
    return str(fit["family"]).endswith("_l2")


def _predictor_of(term: str, predictors: list[str]) -> str:
    """The predictor a term belongs to: itself, or the nominal one it is a dummy of."""
    if term in predictors:
        return term
    owners = [p for p in predictors if term.startswith(f"{p}=")]
    return max(owners, key=len) if owners else term


def ranked_predictors(fit: dict[str, Any]) -> list[Ranked]:
    """The fit's predictors, significant ones first, each group by the size of its effect
    per SD (largest first); a predictor with several coefficients (per class, per dummy) is
    ranked by its strongest, a significant one before any other."""
    best: dict[str, Ranked] = {}
    for c in fit["coefficients"]:
        if c["term"] == "const" or c["coef"] is None:
            continue
        owner = _predictor_of(c["term"], list(fit["predictors"]))
        r = Ranked(owner, c["term"], c["coef"], c["pvalue"], c.get("per_sd"), c["level"],
                   c.get("ci_low"), c.get("ci_high"))  # fmt: skip
        held = best.get(owner)
        if held is None or (r.significant, r.strength) > (held.significant, held.strength):
            best[owner] = r
    return sorted(best.values(), key=lambda r: (not r.significant, -r.strength))


def _signed(value: float) -> str:
    return f"+{num(value)}" if value > 0 else num(value)


def _interval(r: Ranked) -> str:
    if r.low is None or r.high is None:
        return ""
    return f", bootstrap interval {num(r.low)} to {num(r.high)}"


def _effect(fit: dict[str, Any], r: Ranked, *, first: bool) -> str:
    """The effect sizes of one predictor: per SD of it and per unit (or, for a dummy, against
    its reference level), and its p-value; a penalised one's coefficient per SD and its
    bootstrap interval. The scale (log-odds, log of the expected count) is said with the
    `first` one."""
    b, family, target = _signed(r.coef), fit["family"], fit["target"]
    dummy = r.term != r.predictor
    if _penalised(fit):
        which = f" for class {class_name(fit, r.level)}" if r.level else ""
        unit = f"for {r.term}, standardised," if dummy else "per standard deviation"
        return f"{b} {unit}{which}{_interval(r)}"
    unit = f"for {r.term} against its reference level" if dummy else "per unit"
    p = pvalue_text(r.pvalue) if r.pvalue is not None else "p undefined"
    scale = ""
    if family == "mnlogit":
        scale = (f" log-odds of class {class_name(fit, r.level)} against class "
                 f"{class_name(fit, fit['classes'][0])}")  # fmt: skip
    elif first and family == "logit":
        event = "> 0" if fit.get("part") == "any" else f"= {fit['classes'][-1]}"
        scale = f" log-odds of {target} {event}"
    elif first and family in ("poisson", "negbin"):
        scale = f" in the log of the expected {target}"
    of = f" of {r.term}" if dummy else ""
    per_sd = f"{_signed(r.per_sd)}{scale} per SD{of}, " if r.per_sd is not None else ""
    return f"{per_sd}{b}{'' if per_sd else scale} {unit}, {p}"


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _weak(weak: list[Ranked]) -> str:
    shown = [
        f"{r.predictor} ({pvalue_text(r.pvalue) if r.pvalue is not None else 'p undefined'})"
        for r in weak[:MAX_WEAK]
    ]
    if len(weak) > MAX_WEAK:
        shown.append(f"{len(weak) - MAX_WEAK} more")
    return _and(shown)


def bootstrap_text() -> str:
    """What a penalised fit's intervals are."""
    return (
        f"the intervals are {100 * BOOTSTRAP_LEVEL:g}% bootstrap percentile intervals over "
        f"{BOOTSTRAP_RESAMPLES} resamples of the rows (seeded, so a run reproduces them)"
    )


def answer_text(fit: dict[str, Any]) -> str:
    """Which predictors predict the target, ranked, with their effect sizes; which are not
    significant (at `ALPHA`); one sentence per part of a two-part model (`parts`), then what
    the ranking is by where it ranks several. No trailing full stop."""
    parts = fit.get("parts") or [fit]
    if fit.get("parts"):
        text = ". ".join(
            f"{PART_TITLES[p['part']].format(p['target'])}: {_answer(p, 'it')}" for p in parts
        )
    else:
        text = _answer(fit, fit["target"])
    several = any(
        sum(r.significant for r in ranked_predictors(p)) > 1 for p in parts if not _penalised(p)
    )
    return f"{text}. {RANKED_BY_SD}" if several else text


def _answer(fit: dict[str, Any], target: str) -> str:
    """The ranked predictors of `target` (the target's name, or "it" after a subject)."""
    ranked = ranked_predictors(fit)
    if not ranked:
        return f"the model of {target} has no predictor coefficients"
    if _penalised(fit):
        strong, weak = ranked, []
    else:
        strong = [r for r in ranked if r.significant]
        weak = [r for r in ranked if not r.significant]
    if not strong:
        of = "" if target == "it" else f" of {target}"
        return f"no predictor{of} is significant at {ALPHA}: {_weak(weak)}"
    head, *rest = strong
    most = " most" if len(ranked) > 1 else ""
    text = f"{head.predictor} predicts {target}{most} ({_effect(fit, head, first=True)})"
    text += "".join(
        f", then {r.predictor} ({_effect(fit, r, first=False)})" for r in rest[: MAX_NAMED - 1]
    )
    if len(rest) > MAX_NAMED - 1:  # named, not counted: "and 1 more" hid occupation (fair)
        more = [r.predictor for r in rest[MAX_NAMED - 1 :]]
        effects = "a smaller effect" if len(more) == 1 else "smaller effects"
        text += f", and {_and(more)} ({effects}: see the model's table)"
    if weak:
        verb = "is" if len(weak) == 1 else "are"
        text += f"; {_weak(weak)} {verb} not significant at {ALPHA}"
    if _penalised(fit):
        text += (
            "; the coefficients are penalised and on standardised predictors: they rank the "
            "predictors but have no p-values"
        )
        if head.low is not None:
            text += f"; {bootstrap_text()}"
    return text


@dataclass(frozen=True)
class LeftOut:
    """A column of the table the model left out, and why (`r`: the correlation with the
    chosen predictor it nearly duplicates, a reported finding)."""

    column: str
    reason: str
    r: float | None = None


def left_out(
    prof: dict[str, Any],
    fit: dict[str, Any],
    described: dict[str, dict[str, Any]],
    *,
    named: list[str],
) -> list[LeftOut]:
    """Each column of the table that is neither the target nor a predictor of `fit`, with
    why the model left it out, in table order.

    Args:
        prof: `dataset_profile`'s answer (column names, numeric columns).
        fit: `fit_model`'s answer (predictors, `dropped` near-duplicates, `limited`: those
            left out for the model's size).
        described: `describe_columns`' answer for (at least) the left-out numeric columns.
        named: the predictors the question named (empty: the default choice).
    """
    target, used = fit["target"], set(fit["predictors"])
    twins = {d["column"]: d for d in fit.get("dropped") or []}
    numeric = set(prof["numeric_columns"])
    limited = set(fit.get("limited") or [])
    out = []
    for col in prof["column_names"]:
        if col == target or col in used:
            continue
        stats = described.get(col) or {}
        if col in twins:
            out.append(LeftOut(col, f"near-duplicate of {twins[col]['duplicates']}",
                               twins[col]["r"]))  # fmt: skip
            continue
        if col not in numeric:
            why = "not numeric"
        elif named:
            why = "not named in the question"
        elif col in described and not stats.get("count"):
            why = "no values"
        elif col in described and not stats.get("std") and not stats.get("levels"):
            # std 0, or None: a single value (a categorical column has levels, no std)
            why = "constant"
        elif col in limited:
            why = size_limit_text(fit)
        else:
            why = f"not a candidate predictor of {target} (a class code, or no defined r with it)"
        out.append(LeftOut(col, why))
    return out


def size_limit_text(fit: dict[str, Any]) -> str:
    """Why candidates were left out for the model's size: the cap a caller set, or the
    parameters the data supports (`models.parameter_budget`), in the rule's own words."""
    target, cap = fit["target"], fit.get("max_predictors")
    taken = f"those most associated with {target} {ranked_by_text(fit)}"
    if cap is not None and len(fit["predictors"]) >= cap:
        return f"the model takes at most {cap} predictors, {taken}"
    events = f"per {EVENTS_PER_PARAMETER} rows of the {{}} class of {target}"
    rule = {
        "two_part": f"per {EVENTS_PER_PARAMETER} rows of the rarer of {target} > 0 and "
        f"{target} = 0, and per {ROWS_PER_PARAMETER} rows where {target} > 0",
        "logit": events.format("rarer"), "logit_l2": events.format("rarer"),
        "mnlogit": events.format("rarest"), "mnlogit_l2": events.format("rarest"),
    }.get(fit["family"], f"per {ROWS_PER_PARAMETER} rows")  # fmt: skip
    return (
        f"the model's size follows the data: one parameter {rule}, at least "
        f"{MIN_PARAMETERS} parameters, a nominal predictor costing its levels - 1; it takes "
        f"{taken} first"
    )


def ranked_by_text(fit: dict[str, Any]) -> str:
    """Which measure ranked the candidate predictors (`fit_model`'s `ranked_by`): |r|, and
    the correlation ratio eta or Cramér's V where a column is nominal."""
    by: dict[str, list[str]] = {}
    for column, measure in (fit.get("ranked_by") or {}).items():
        by.setdefault(measure, []).append(column)
    parts = ["by |r|"] if "pearson" in by or not by else []
    if "eta_target" in by:
        parts.append(f"by the correlation ratio eta of each over the classes of {fit['target']}")
    if "eta" in by:
        parts.append(f"for the nominal {_and(by['eta'])} by the correlation ratio eta")
    if "cramers_v" in by:
        parts.append(f"for the nominal {_and(by['cramers_v'])} by Cramér's V")
    return ", or ".join(parts)


def left_out_text(columns: list[LeftOut]) -> str:
    """The left-out columns grouped by reason: "a and b (near-duplicates of c, r = 0.99 and
    0.98); d (not numeric)"."""
    by_reason: dict[str, list[LeftOut]] = {}
    for x in columns:
        by_reason.setdefault(x.reason, []).append(x)
    parts = []
    for why, group in by_reason.items():
        rs = [num(x.r) for x in group if x.r is not None]
        if len(group) > 1:
            why = why.replace("near-duplicate of", "near-duplicates of")
        shown = f"{why}, r = {_and(rs)}" if rs else why
        parts.append(f"{_and([x.column for x in group])} ({shown})")
    return "; ".join(parts)
