"""The offline analyst's reading in words of each report section, templated from the numbers.

Each function takes what the analysis tools returned (plain JSON, as a model would see it)
and says in one or a few sentences what the numbers mean: the shape of the table, skew and
outliers, strong correlations, the model family and its fit, and which predictors matter and
in which direction (what the diagnostics say: `agents.analysis.interpret_diagnostics`).
Every number quoted is a reported finding, rounded for reading. In model mode the analyst
writes these itself.
"""

from __future__ import annotations

import math
from typing import Any

from kimmy_swarm.agents.tools.conventions import CV_FOLDS
from kimmy_swarm.agents.tools.finding import BOOTSTRAP_LEVEL

__all__ = [
    "ALPHA",
    "FAMILY_NAMES",
    "MEASURE_NAMES",
    "PART_TITLES",
    "class_name",
    "correlations_text",
    "distributions_text",
    "model_text",
    "num",
    "profile_text",
    "pvalue_text",
    "two_part_text",
]

#: The significance level the readings use.
ALPHA = 0.05
#: |skew| above which a column is called skewed.
_SKEWED = 1.0
#: |r| above which two columns are called nearly collinear.
_STRONG_R = 0.9
FAMILY_NAMES = {
    "ols": "OLS",
    "logit": "logistic regression",
    "mnlogit": "multinomial logit",
    "poisson": "Poisson regression",
    "negbin": "negative binomial regression",
    "logit_l2": "L2-penalised logistic regression",
    "mnlogit_l2": "L2-penalised multinomial logit",
    "two_part": "two-part model",
}
#: What each part of a two-part model describes, of its target ({0}).
PART_TITLES = {"any": "Whether {0} > 0", "positive": "The amount where {0} > 0"}
#: How each kind of categorical column is read (`agents.tools.variables`).
_KIND_READINGS = {
    "nominal": "nominal codes, counted per level (as a predictor, each enters a model as "
    "dummies against its most frequent level)",
    "ordinal": "ordered levels, counted per level (as a predictor, each enters a model as an "
    "ordered score, one number)",
    "binary": "two values, counted per value",
}


def num(value: float) -> str:
    """A number for reading: 3 significant digits, integers as they are."""
    if float(value).is_integer() and abs(value) < 1e6:
        return str(int(value))
    return f"{value:.3g}"


def pvalue_text(p: float) -> str:
    """ "p = 0.012", or "p < 0.001" for smaller ones."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


def profile_text(prof: dict[str, Any], missing: dict[str, int]) -> str:
    """Rows, columns, how many numeric, and where values are missing."""
    n_num = len(prof["numeric_columns"])
    kind = "all numeric" if n_num == prof["columns"] else f"{n_num} numeric"
    text = f"{prof['rows']} rows and {prof['columns']} columns ({kind})"
    gaps = {c: n for c, n in missing.items() if n > 0}
    if not gaps:
        return text + "; no value is missing."
    worst = max(gaps, key=lambda c: gaps[c])
    return (
        f"{text}; {sum(gaps.values())} values are missing in {len(gaps)} column(s), most in "
        f"{worst} ({gaps[worst]} of {prof['rows']})."
    )


def _scale(c: str, d: dict[str, Any]) -> str:
    """An ordered column with its ends' meanings: "rate_marriage (1 = very poor … 5 = very
    good)"; the column alone where the source says nothing of its levels."""
    meanings, levels = d.get("meanings") or {}, list(d.get("levels") or {})
    if not levels or not meanings.get(levels[0]) or not meanings.get(levels[-1]):
        return c
    lo, hi = levels[0], levels[-1]
    return f"{c} ({lo} = {meanings[lo]} … {hi} = {meanings[hi]})"


def _categorical_text(described: dict[str, dict[str, Any]]) -> str | None:
    """Which described columns are categorical, by kind, and how they are read."""
    groups: dict[str, list[str]] = {}
    for c, d in described.items():
        if d.get("kind") in _KIND_READINGS:
            shown = _scale(c, d) if d["kind"] == "ordinal" else c
            groups.setdefault(d["kind"], []).append(shown)
    if not groups:
        return None
    said = [f"{', '.join(cols)}: {_KIND_READINGS[k]}" for k, cols in groups.items()]
    return "Categorical, so no mean, skew or outliers — " + "; ".join(said)


def distributions_text(described: dict[str, dict[str, Any]], outliers: dict[str, int]) -> str:
    """The skewed columns (|skew| > 1), those with values beyond the 1.5 IQR fences, and the
    categorical ones (`kind` in `described`: level counts instead of mean, skew, outliers)."""
    skewed = sorted(
        ((c, d["skew"]) for c, d in described.items() if d.get("skew") is not None
         and abs(d["skew"]) > _SKEWED),
        key=lambda t: -abs(t[1]),
    )  # fmt: skip
    parts = []
    if skewed:
        shown = ", ".join(
            f"{c} ({'right' if s > 0 else 'left'}-skewed, skew {num(s)})" for c, s in skewed[:3]
        )
        parts.append(f"Skewed: {shown}; their medians describe them better than their means")
    else:
        parts.append(f"No described column is strongly skewed (|skew| ≤ {num(_SKEWED)})")
    flagged = {c: n for c, n in outliers.items() if n > 0}
    if flagged:
        worst = max(flagged, key=lambda c: flagged[c])
        parts.append(
            f"{len(flagged)} column(s) have values beyond the 1.5 IQR fences, most in "
            f"{worst} ({flagged[worst]})"
        )
    else:
        parts.append("no value lies beyond the 1.5 IQR fences")
    text = "; ".join(parts) + "."
    for c, d in described.items():
        if d.get("zeros") is not None and d.get("count"):
            text += (
                f" {c} is 0 in {d['zeros']} of {num(d['count'])} rows "
                f"({num(100 * d['zeros'] / d['count'])}%): zero-heavy, so its outliers are not "
                "counted (fences from quartiles near 0 would flag every positive value)."
            )
    categorical = _categorical_text(described)
    return text + (f" {categorical}." if categorical else "")


#: How the report names a pair's measure (`top_correlations`' `method`).
MEASURE_NAMES = {"eta": "correlation ratio eta", "cramers_v": "Cramér's V"}


def _pair_value(p: dict[str, Any]) -> str:
    """A pair's value named by its measure: "r = 0.963", "correlation ratio eta = 0.97"."""
    return f"{MEASURE_NAMES.get(p['method'], 'r')} = {num(p['r'])}"


def correlations_text(pairs: list[dict[str, Any]], *, target: str | None = None) -> str:
    """The strongest pair, said with its measure (r; eta or Cramér's V where a column is
    nominal, whose codes have no r), and which of the top pairs are nearly collinear; a pair
    with the `target` is no collinearity (a strong one is what a model of it hopes for), so
    that reading never names the target, and a nominal pair is none either: its columns
    enter a model as dummies, not as one number each."""
    if not pairs:
        return "No pair of numeric columns has a defined correlation."
    top = pairs[0]
    if top["method"] in MEASURE_NAMES:
        how = (
            f"{top['a']} over the levels of the nominal {top['b']}"
            if top["method"] == "eta"
            else "both nominal"
        )
        text = (
            f"The strongest correlation is {top['a']} ~ {top['b']}, {_pair_value(top)} "
            f"({how}; it has no sign)"
        )
    else:
        sign = "positive" if top["r"] > 0 else "negative"
        text = f"The strongest correlation is {sign}: {top['a']} ~ {top['b']}, r = {num(top['r'])}"
    strong = [
        p for p in pairs
        if p["method"] not in MEASURE_NAMES and abs(p["r"]) > _STRONG_R
        and target not in (p["a"], p["b"])
    ]  # fmt: skip
    if strong:
        shown = ", ".join(f"{p['a']} ~ {p['b']} (r = {num(p['r'])})" for p in strong)
        text += (
            f"; nearly collinear (|r| > {_STRONG_R}): {shown}, so those columns carry nearly "
            "the same information: a model with both cannot tell their separate effects "
            "apart (the Diagnostics say how the model handles that)"
        )
    return text + "."


def _fit_measures(fit: dict[str, Any]) -> str:
    """The fit clause, "Fit (family)" and its measures with n; a classifier's are said to be in
    sample (on the rows it was fitted on), then its cross-validated accuracy (and AUC) out of
    sample."""
    m, n = fit["measures"], fit["nobs"]
    head = f"Fit ({FAMILY_NAMES[fit['family']]})"
    if fit["family"] == "ols":
        return f"{head}: R² = {num(m['r2'])} (adjusted {num(m['adj_r2'])}) (n = {n})"
    parts = [f"McFadden pseudo-R² = {num(m['pseudo_r2'])}"]
    if m.get("accuracy") is not None:
        parts.append(f"{num(100 * m['accuracy'])}% of the rows classified correctly")
    if m.get("aic") is not None:
        parts.append(f"AIC = {num(m['aic'])}")
    if m.get("accuracy") is None:
        return f"{head}: {', '.join(parts)} (n = {n})"
    text = f"{head} in sample, on the {n} rows it was fitted on: {', '.join(parts)}"
    if m.get("cv_accuracy") is not None:
        auc = f"; AUC {num(m['cv_auc'])}" if m.get("cv_auc") is not None else ""
        text += (
            f"; out of sample, {num(100 * m['cv_accuracy'])}% classified correctly "
            f"({CV_FOLDS}-fold cross-validation{auc})"
        )
    return text


def class_name(fit: dict[str, Any], level: str) -> str:
    """A class as the report names it: its code, and its label where the source has one."""
    labels = dict(zip(fit.get("classes") or [], fit.get("class_labels") or [], strict=False))
    label = labels.get(level)
    plain = not label or label in (level, f"class_{level}")  # sklearn's wine: "class_0"
    return level if plain else f"{level} ({label})"


#: The scale of a coefficient (and its effect per SD) where it is no change of the target.
_LOG_SCALES = {"logit": " log-odds", "mnlogit": " log-odds", "poisson": " log-rate",
               "negbin": " log-rate"}  # fmt: skip


def _effect(fit: dict[str, Any], c: dict[str, Any]) -> str:
    target, b, family, p = fit["target"], c["coef"], fit["family"], pvalue_text(c["pvalue"])
    if c.get("per_sd") is not None:  # the scale-free effect, on the coefficient's own scale
        sd, scale = c["per_sd"], _LOG_SCALES.get(family, "")
        p = f"{'+' if sd > 0 else ''}{num(sd)}{scale} per SD, {p}"
    up = "raises" if b > 0 else "lowers"
    dummy = any(c["term"].startswith(f"{n}=") for n in fit.get("nominal") or [])
    # both open with a word of ours: the sentence's capital never lands on a column's name
    unit = (
        f"level {c['term']} (against its reference level)" if dummy else f"each unit of {c['term']}"
    )
    if family == "ols":
        return f"{unit} {up} {target} by {num(abs(b))} ({p})"
    if family in ("poisson", "negbin"):  # the ratio is a checked finding, a percent is not
        return f"{unit} multiplies the expected {target} by {num(math.exp(b))} (rate ratio, {p})"
    if family == "logit":
        event = "> 0" if fit.get("part") == "any" else f"= {fit['classes'][-1]}"
        return f"{unit} {up} the odds of {target} {event} (odds ratio {num(math.exp(b))}, {p})"
    return (
        f"{unit} {up} the odds of class {class_name(fit, c['level'])} "
        f"against class {class_name(fit, fit['classes'][0])} "
        f"(odds ratio {num(math.exp(b))}, {p})"
    )


def _size(c: dict[str, Any]) -> float:
    """How a coefficient ranks: the size of its effect per SD (else of its p-value)."""
    return abs(c["per_sd"]) if c.get("per_sd") is not None else -c["pvalue"]


def _tested(fit: dict[str, Any]) -> str:
    """The significant effects, the largest per SD first, and the others' p-values."""
    terms = [c for c in fit["coefficients"] if c["term"] != "const" and c["pvalue"] is not None]
    significant = sorted((c for c in terms if c["pvalue"] < ALPHA), key=lambda c: -_size(c))
    weak = [c for c in terms if c["pvalue"] >= ALPHA]
    parts = [_effect(fit, c) for c in significant[:4]]
    text = "; ".join(parts) if parts else f"no predictor is significant at {ALPHA}"
    if len(significant) > len(parts):
        text += f"; {len(significant) - len(parts)} more significant coefficient(s) in the table"
    if weak:
        shown = ", ".join(
            f"{c['term']}"
            f"{' for class ' + class_name(fit, c['level']) if c['level'] else ''} "
            f"({pvalue_text(c['pvalue'])})"
            for c in weak[:3]
        )
        more = f" and {len(weak) - 3} more" if len(weak) > 3 else ""
        text += f"; not significant at {ALPHA}: {shown}{more}"
    return text


def _penalised(fit: dict[str, Any]) -> str:
    terms = [c for c in fit["coefficients"] if c["term"] != "const" and c["coef"] is not None]
    top = max(terms, key=lambda c: abs(c["coef"]))
    which = f" for class {class_name(fit, top['level'])}" if top["level"] else ""
    interval = ""
    if top.get("ci_low") is not None and top.get("ci_high") is not None:
        interval = (f", {100 * BOOTSTRAP_LEVEL:g}% bootstrap interval {num(top['ci_low'])} to "
                    f"{num(top['ci_high'])}")  # fmt: skip
    return (
        "the coefficients are penalised and on standardised predictors, so they rank the "
        f"predictors but have no p-values: the largest is {top['term']}{which} "
        f"({num(top['coef'])} per standard deviation{interval})"
    )


def model_text(fit: dict[str, Any]) -> str:
    """The family and why, the fit measures, and the significant effects with direction."""
    if fit.get("parts"):
        return two_part_text(fit)
    text = f"Model choice: {fit['reason']}. {_fit_measures(fit)}"
    if fit["family"].endswith("_l2"):
        text += (
            ". The unpenalised fit does not exist: its coefficients diverge, as they do when "
            f"the predictors (almost) perfectly separate the classes; {_penalised(fit)}"
        )
    else:
        effects = _tested(fit)
        text += f". {effects[0].upper()}{effects[1:]}"
    return text + "."


def two_part_text(fit: dict[str, Any]) -> str:
    """A two-part model: why (the share of zeros), then each part as `model_text` reads it,
    titled by what it describes (`PART_TITLES`)."""
    texts = [f"Model choice: {fit['reason']}."]
    for part in fit["parts"]:
        body = model_text(part).removeprefix("Model choice: ")
        texts.append(f"{PART_TITLES[part['part']].format(fit['target'])} — {body}")
    return " ".join(texts)
