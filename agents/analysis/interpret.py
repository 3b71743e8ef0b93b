"""The offline analyst's reading in words of each report section, templated from the numbers.

Each function takes what the analysis tools returned (plain JSON, as a model would see it)
and says in one or a few sentences what the numbers mean: the shape of the table, skew and
outliers, strong correlations, the model family and its fit, which predictors matter and in
which direction, and what the diagnostics say about trusting the model. Every number quoted
is a reported finding, rounded for reading. In model mode the analyst writes these itself.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "ALPHA",
    "FAMILY_NAMES",
    "class_name",
    "correlations_text",
    "diagnostics_text",
    "distributions_text",
    "model_text",
    "num",
    "profile_text",
    "pvalue_text",
]

#: The significance level the readings use.
ALPHA = 0.05
#: |skew| above which a column is called skewed.
_SKEWED = 1.0
#: |r| above which two columns are called nearly collinear.
_STRONG_R = 0.9
_VIF_HIGH = 10.0
FAMILY_NAMES = {
    "ols": "OLS",
    "logit": "logistic regression",
    "mnlogit": "multinomial logit",
    "poisson": "Poisson regression",
    "negbin": "negative binomial regression",
    "logit_l2": "L2-penalised logistic regression",
    "mnlogit_l2": "L2-penalised multinomial logit",
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


def distributions_text(described: dict[str, dict[str, Any]], outliers: dict[str, int]) -> str:
    """The skewed columns (|skew| > 1) and those with values beyond the 1.5 IQR fences."""
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
    return "; ".join(parts) + "."


def correlations_text(pairs: list[dict[str, Any]]) -> str:
    """The strongest pair, and how many of the top pairs are nearly collinear."""
    if not pairs:
        return "No pair of numeric columns has a defined correlation."
    top = pairs[0]
    sign = "positive" if top["r"] > 0 else "negative"
    text = f"The strongest correlation is {sign}: {top['a']} ~ {top['b']}, r = {num(top['r'])}"
    strong = [p for p in pairs if abs(p["r"]) > _STRONG_R]
    if len(strong) > 1:
        text += (
            f"; {len(strong)} of the top {len(pairs)} pairs have |r| > {_STRONG_R}, so those "
            "columns carry nearly the same information and should not all enter one model"
        )
    return text + "."


def _fit_measures(fit: dict[str, Any]) -> str:
    m = fit["measures"]
    if fit["family"] == "ols":
        return f"R² = {num(m['r2'])} (adjusted {num(m['adj_r2'])})"
    parts = [f"McFadden pseudo-R² = {num(m['pseudo_r2'])}"]
    if m.get("accuracy") is not None:
        parts.append(f"{num(100 * m['accuracy'])}% of the rows classified correctly")
    if m.get("aic") is not None:
        parts.append(f"AIC = {num(m['aic'])}")
    return ", ".join(parts)


def class_name(fit: dict[str, Any], level: str) -> str:
    """A class as the report names it: its code, and its label where the source has one."""
    labels = dict(zip(fit.get("classes") or [], fit.get("class_labels") or [], strict=False))
    label = labels.get(level)
    plain = not label or label in (level, f"class_{level}")  # sklearn's wine: "class_0"
    return level if plain else f"{level} ({label})"


def _effect(fit: dict[str, Any], c: dict[str, Any]) -> str:
    target, b, family, p = fit["target"], c["coef"], fit["family"], pvalue_text(c["pvalue"])
    up = "raises" if b > 0 else "lowers"
    if family == "ols":
        return f"each unit of {c['term']} {up} {target} by {num(abs(b))} ({p})"
    if family in ("poisson", "negbin"):
        ratio = math.exp(b)
        if 0.01 <= ratio <= 10:  # a percent change reads well
            return (
                f"each unit of {c['term']} {up} the expected {target} by "
                f"{num(abs(100 * math.expm1(b)))}% ({p})"
            )
        return f"each unit of {c['term']} multiplies the expected {target} by {num(ratio)} ({p})"
    if family == "logit":
        event = fit["classes"][-1]
        return (
            f"each unit of {c['term']} {up} the odds of {target} = {event} "
            f"(odds ratio {num(math.exp(b))}, {p})"
        )
    return (
        f"each unit of {c['term']} {up} the odds of class {class_name(fit, c['level'])} "
        f"against class {class_name(fit, fit['classes'][0])} "
        f"(odds ratio {num(math.exp(b))}, {p})"
    )


def _tested(fit: dict[str, Any]) -> str:
    terms = [c for c in fit["coefficients"] if c["term"] != "const" and c["pvalue"] is not None]
    significant = sorted((c for c in terms if c["pvalue"] < ALPHA), key=lambda c: c["pvalue"])
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
    return (
        "the coefficients are penalised and on standardised predictors, so they rank the "
        f"predictors but have no p-values: the largest is {top['term']}{which} "
        f"({num(top['coef'])} per standard deviation)"
    )


def model_text(fit: dict[str, Any]) -> str:
    """The family and why, the fit measures, and the significant effects with direction."""
    name = FAMILY_NAMES[fit["family"]]
    text = f"Model choice: {fit['reason']}. Fit ({name}): {_fit_measures(fit)} (n = {fit['nobs']})"
    if fit["family"].endswith("_l2"):
        text += (
            ". The unpenalised fit does not exist: its coefficients diverge, as they do when "
            f"the predictors (almost) perfectly separate the classes; {_penalised(fit)}"
        )
    else:
        effects = _tested(fit)
        text += f". {effects[0].upper()}{effects[1:]}"
    return text + "."


def diagnostics_text(fit: dict[str, Any], diag: dict[str, Any] | None) -> str:
    """What the residual, dispersion and collinearity checks say about trusting the model."""
    parts = []
    family = fit["family"]
    res = (diag or {}).get("residual") or {}
    if res.get("bp_pvalue") is not None:
        if res["bp_pvalue"] < ALPHA:
            parts.append(
                f"Breusch–Pagan {pvalue_text(res['bp_pvalue'])}: the residual variance is not "
                "constant, so the OLS standard errors are unreliable (use robust ones)"
            )
        else:
            parts.append(
                f"Breusch–Pagan {pvalue_text(res['bp_pvalue'])}: no evidence that the residual "
                "variance changes with the predictors"
            )
    if res.get("jb_pvalue") is not None:
        verdict = (
            "the residuals are not normal (the p-values rest on the large-sample approximation)"
            if res["jb_pvalue"] < ALPHA
            else "no evidence against normal residuals"
        )
        parts.append(f"Jarque–Bera {pvalue_text(res['jb_pvalue'])}: {verdict}")
    disp = fit.get("poisson_dispersion")
    if disp is not None:
        how = "overdispersed" if family == "negbin" else "not overdispersed"
        parts.append(f"The Poisson fit's Pearson chi²/df is {num(disp)}: {how}")
    parts.extend(_collinearity(fit, diag))
    if family != "ols":
        parts.append("Residual normality and Breusch–Pagan are OLS checks, not run for this model")
    return ". ".join(parts) + "." if parts else ""


def _collinearity(fit: dict[str, Any], diag: dict[str, Any] | None) -> list[str]:
    out = []
    vif = {k: v for k, v in ((diag or {}).get("vif") or {}).items() if v is not None}
    high = sorted((k for k in vif if vif[k] > _VIF_HIGH), key=lambda k: -vif[k])
    if high:
        shown = ", ".join(f"{k} ({num(vif[k])})" for k in high)
        out.append(
            f"VIF above {num(_VIF_HIGH)}: {shown}; the other predictors explain most of each, "
            "so their coefficients are imprecise"
        )
    elif vif:
        worst = max(vif, key=lambda k: vif[k])
        out.append(f"All VIFs ≤ {num(_VIF_HIGH)} (largest {worst}, {num(vif[worst])})")
    dropped = fit.get("dropped") or []
    if dropped:
        shown = ", ".join(
            f"{d['column']} (duplicates {d['duplicates']}, r = {num(d['r'])})" for d in dropped
        )
        out.append(f"Left out of the model as near-duplicates (|r| > 0.98): {shown}")
    return out
