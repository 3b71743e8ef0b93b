"""The offline analyst's answer to "what predicts the target": the model's predictors ranked
by the strength of their evidence with their effect sizes (`answer_text`), and every column
of the table the model left out, with why (`left_out`, `left_out_text`).

The ranking is by |z| (|t| for OLS: coefficient over standard error), the significant
predictors first; a multinomial logit ranks a predictor by its largest |z| over the classes
and names that class; a penalised fit (no standard errors) by its largest |coefficient| on
the standardised predictors; a nominal predictor by its strongest dummy, which is named. A
two-part model answers for each part: whether the target is > 0, and its amount where it is.
Every number quoted is a reported finding (a coefficient, its p-value, the correlation behind
a near-duplicate), rounded for reading, so the fact-check vouches for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kimmy_swarm.agents.analysis.interpret import ALPHA, PART_TITLES, class_name, num, pvalue_text

__all__ = [
    "LeftOut",
    "Ranked",
    "answer_text",
    "left_out",
    "left_out_text",
    "ranked_by_text",
    "ranked_predictors",
]

#: Significant predictors named with their effect in the answer at most (the rest counted).
MAX_NAMED = 4
#: Predictors named as not significant at most (the rest counted).
MAX_WEAK = 6


@dataclass(frozen=True)
class Ranked:
    """A predictor's strongest coefficient: `term` is the predictor, or the dummy of one of
    its levels for a nominal one ("occupation=2"); `level` its class in a multinomial
    model."""

    predictor: str
    term: str
    coef: float
    pvalue: float | None
    #: coefficient / standard error; None where the fit has no standard errors.
    z: float | None
    level: str

    @property
    def significant(self) -> bool:
        return self.pvalue is not None and self.pvalue < ALPHA

    @property
    def strength(self) -> float:
        """|z|, or |coefficient| for a penalised fit (it has no standard errors)."""
        return abs(self.z) if self.z is not None else abs(self.coef)


def _penalised(fit: dict[str, Any]) -> bool:
    return str(fit["family"]).endswith("_l2")


def _predictor_of(term: str, predictors: list[str]) -> str:
    """The predictor a term belongs to: itself, or the nominal one it is a dummy of."""
    if term in predictors:
        return term
    owners = [p for p in predictors if term.startswith(f"{p}=")]
    return max(owners, key=len) if owners else term


def ranked_predictors(fit: dict[str, Any]) -> list[Ranked]:
    """The fit's predictors, significant ones first, each group by strength (strongest
    first); a predictor whose z is undefined in an unpenalised fit comes last. A predictor
    with several coefficients (per class, per dummy) is ranked by its strongest."""
    penalised = _penalised(fit)
    best: dict[str, Ranked] = {}
    for c in fit["coefficients"]:
        if c["term"] == "const" or c["coef"] is None:
            continue
        se = c["se"]
        z = c["coef"] / se if se else None
        if z is None and not penalised:
            z = 0.0  # no standard error: no evidence to rank by
        owner = _predictor_of(c["term"], list(fit["predictors"]))
        r = Ranked(owner, c["term"], c["coef"], c["pvalue"], z, c["level"])
        held = best.get(owner)
        if held is None or r.strength > held.strength:
            best[owner] = r
    return sorted(best.values(), key=lambda r: (not r.significant, -r.strength))


def _signed(value: float) -> str:
    return f"+{num(value)}" if value > 0 else num(value)


def _effect(fit: dict[str, Any], r: Ranked, *, first: bool) -> str:
    """The effect size of one predictor, as its reported coefficient (and p-value); the
    scale (log-odds, log of the expected count) is said with the `first` one."""
    b, family, target = _signed(r.coef), fit["family"], fit["target"]
    dummy = r.term != r.predictor
    if _penalised(fit):
        which = f" for class {class_name(fit, r.level)}" if r.level else ""
        unit = f"for {r.term}, standardised," if dummy else "per standard deviation"
        return f"{b} {unit}{which}"
    unit = f"for {r.term} against its reference level" if dummy else "per unit"
    p = pvalue_text(r.pvalue) if r.pvalue is not None else "p undefined"
    if family == "mnlogit":
        return (
            f"{b} log-odds of class {class_name(fit, r.level)} against class "
            f"{class_name(fit, fit['classes'][0])} {unit}, {p}"
        )
    scale = ""
    if first and family == "logit":
        event = "> 0" if fit.get("part") == "any" else f"= {fit['classes'][-1]}"
        scale = f" log-odds of {target} {event}"
    elif first and family in ("poisson", "negbin"):
        scale = f" in the log of the expected {target}"
    return f"{b}{scale} {unit}, {p}"


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


def answer_text(fit: dict[str, Any]) -> str:
    """One sentence: which predictors predict the target, ranked, with their effect sizes;
    which are not significant (at `ALPHA`); one per part of a two-part model (`parts`).
    No trailing full stop."""
    parts = fit.get("parts") or []
    if parts:
        return ". ".join(
            f"{PART_TITLES[p['part']].format(p['target'])}: {_answer(p, 'it')}" for p in parts
        )
    return _answer(fit, fit["target"])


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
    if len(rest) > MAX_NAMED - 1:
        text += f", and {len(rest) - MAX_NAMED + 1} more (see the model's table)"
    if weak:
        verb = "is" if len(weak) == 1 else "are"
        text += f"; {_weak(weak)} {verb} not significant at {ALPHA}"
    if _penalised(fit):
        text += (
            "; the coefficients are penalised and on standardised predictors: they rank the "
            "predictors but have no p-values"
        )
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
    max_predictors: int,
) -> list[LeftOut]:
    """Each column of the table that is neither the target nor a predictor of `fit`, with
    why the model left it out, in table order.

    Args:
        prof: `dataset_profile`'s answer (column names, numeric columns).
        fit: `fit_model`'s answer (predictors, `dropped` near-duplicates).
        described: `describe_columns`' answer for (at least) the left-out numeric columns.
        named: the predictors the question named (empty: the default choice).
        max_predictors: the most predictors the default choice takes.
    """
    target, used = fit["target"], set(fit["predictors"])
    twins = {d["column"]: d for d in fit.get("dropped") or []}
    numeric = set(prof["numeric_columns"])
    full = len(fit["predictors"]) >= max_predictors
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
        elif full:
            why = (
                f"the model takes at most {max_predictors} predictors, those most associated "
                f"with {target} {ranked_by_text(fit)}"
            )
        else:
            why = f"not a candidate predictor of {target} (a class code, or no defined r with it)"
        out.append(LeftOut(col, why))
    return out


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
