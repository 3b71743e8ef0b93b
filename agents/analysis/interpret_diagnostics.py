"""The offline analyst's reading in words of a model's diagnostics, templated from the
numbers: residual normality and constant variance (and the robust standard errors used),
the influential rows by Cook's distance and what was done about them (an OLS fit run again
without a dominant row, a logit without all its influential rows), the Poisson dispersion,
and collinearity (VIFs, near-duplicates left out). Every number quoted is a reported
finding, rounded for reading.
"""

from __future__ import annotations

from typing import Any

from kimmy_swarm.agents.analysis.interpret import ALPHA, num, pvalue_text

__all__ = ["diagnostics_text"]

_VIF_HIGH = 10.0
#: Cook's distance above which one row alone moves the coefficients past their 50%
#: confidence region (D is compared with the median of F(P, N - P), about 1).
_COOKS_LARGE = 1.0
#: Coefficients whose change without a dominant row is said in words at most.
_MAX_CHANGES = 4


def diagnostics_text(fit: dict[str, Any], diag: dict[str, Any] | None) -> str:
    """What the residual, influence, dispersion and collinearity checks say about trusting
    the model."""
    parts = []
    family = fit["family"]
    res = (diag or {}).get("residual") or {}
    if res.get("bp_pvalue") is not None:
        if res["bp_pvalue"] < ALPHA:
            robust = (
                "HC3 robust standard errors are reported"
                if fit.get("cov_type") == "HC3"
                else "the OLS standard errors are unreliable (use robust ones)"
            )
            parts.append(
                f"Breusch–Pagan {pvalue_text(res['bp_pvalue'])}: the residual variance is not "
                f"constant, so {robust}"
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
    parts.extend(_influence(fit, diag))
    disp = fit.get("poisson_dispersion")
    if disp is not None:
        how = "overdispersed" if family == "negbin" else "not overdispersed"
        parts.append(f"The Poisson fit's Pearson chi²/df is {num(disp)}: {how}")
    parts.extend(_collinearity(fit, diag))
    if family != "ols":
        parts.append("Residual normality and Breusch–Pagan are OLS checks, not run for this model")
    return ". ".join(parts) + "." if parts else ""


def _influence(fit: dict[str, Any], diag: dict[str, Any] | None) -> list[str]:
    """How many rows are influential by Cook's distance (> 4/n), the largest, whether one
    row alone dominates the fit (D > 1), and for a logit whether its predictors' signs and
    significance hold without the influential rows."""
    found = (diag or {}).get("influence") or {}
    if any(found.get(k) is None for k in ("influential", "cooks_max", "cooks_max_row")):
        return []
    count, d = int(found["influential"]), found["cooks_max"]
    label = (diag or {}).get("cooks_max_label")
    row = f"row {int(found['cooks_max_row'])} ({f'{label}; ' if label else ''}rows counted from 0)"
    cut = f"Cook's distance > 4/n, n = {fit['nobs']}"
    if count == 1:
        text = f"1 row is influential ({cut}): {row}, D = {num(d)}"
    else:
        many = f"{count} rows are" if count else "No row is"
        text = f"{many} influential ({cut}); the largest, {row}, has D = {num(d)}"
    logit = fit["family"] == "logit"
    if d > _COOKS_LARGE:
        text += (
            f". Its D > {num(_COOKS_LARGE)}: dropping that row alone would move the "
            "coefficients past their 50% confidence region, so they rest heavily on it"
            f"{'' if logit else _without_row(fit, (diag or {}).get('without_row') or {})}"
        )
    else:
        text += f"; none has D > {num(_COOKS_LARGE)}, so no single row dominates the fit"
        text += "" if logit else " and all are kept"
    return [f"{text}. {_without_influential(fit, diag or {}, count)}" if logit and count
            else text]  # fmt: skip


def _without_influential(fit: dict[str, Any], diag: dict[str, Any], count: int) -> str:
    """What refitting a logit without its `count` influential rows does to its predictors:
    which change sign or significance at `ALPHA` (the significant ones first), or none."""
    rows = "that row" if count == 1 else f"those {count} rows"
    if diag.get("refit_failed"):
        return (
            f"A refit without {rows} fails: {diag['refit_failed']}; so the estimates rest on "
            "those rows, which the reported fit keeps"
        )
    refit = diag.get("without_influential") or {}
    terms = [c for c in fit["coefficients"] if c["term"] != "const" and c["pvalue"] is not None]
    gone = [c["term"] for c in terms if c["term"] not in refit]
    also = (f" (and without the rows of {', '.join(gone)}, left with one outcome: no finite "
            "estimate)" if gone else "")  # fmt: skip
    held = [c for c in terms if c["term"] in refit]
    strong = [t for c in held if c["pvalue"] < ALPHA for t in _changes(c, refit[c["term"]])]
    other = [t for c in held if c["pvalue"] >= ALPHA for t in _changes(c, refit[c["term"]])]
    if not strong and not other:
        return (
            f"Refitted without {rows}{also}, no predictor changes sign or significance at "
            f"{ALPHA}, so the conclusions do not rest on them and all are kept"
        )
    changes = [*strong, *other]
    extra = len(changes) - _MAX_CHANGES
    more = f"; {extra} more change(s) in the table" if extra > 0 else ""
    kept = "" if strong else (
        f"every predictor significant at {ALPHA} keeps its sign and significance; among the "
        "others, "
    )  # fmt: skip
    return (
        f"Refitted without {rows}{also}: {kept}{'; '.join(changes[:_MAX_CHANGES])}{more}. "
        "The reported fit keeps them: read those predictors with care"
    )


def _changes(c: dict[str, Any], refit: dict[str, Any]) -> list[str]:
    """How one coefficient changes in the refit: its sign, its significance at `ALPHA`."""
    b, w, p, q = c["coef"], refit["coef"], c["pvalue"], refit["pvalue"]
    out = []
    if w is not None and b * w < 0:
        out.append(f"{c['term']}'s coefficient changes sign (from {num(b)} to {num(w)})")
    if q is not None and (p < ALPHA) != (q < ALPHA):
        how = "loses its significance" if p < ALPHA else "becomes significant"
        out.append(f"{c['term']} {how} ({pvalue_text(p)} before, {pvalue_text(q)} without them)")
    return out


def _without_row(fit: dict[str, Any], without: dict[str, float | None]) -> str:
    """How the coefficients change when the fit is run again without its dominant row (the
    largest relative changes first), or only that the row is kept where it was not."""
    kept = " (the fit keeps it; check it for an error)"
    reported = {c["term"]: c["coef"] for c in fit["coefficients"] if c["term"] != "const"}
    pairs = [(t, b, without[t]) for t, b in reported.items() if without.get(t) is not None]
    if not pairs:
        return kept
    pairs.sort(key=lambda p: -abs(p[2] - p[1]) / max(abs(p[1]), 1e-300))
    shown = ", ".join(
        f"{t}'s{' coefficient goes' if i == 0 else ''} from {num(b)} to {num(w)}"
        f"{' (its sign flips)' if b * w < 0 else ''}"
        for i, (t, b, w) in enumerate(pairs[:_MAX_CHANGES])
    )
    more = f", {len(pairs) - _MAX_CHANGES} more in the table" if len(pairs) > _MAX_CHANGES else ""
    return (
        f". The fit was also run without that row: {shown}{more}; the reported fit keeps the "
        "row (check it for an error)"
    )


def _collinearity(fit: dict[str, Any], diag: dict[str, Any] | None) -> list[str]:
    """VIF and near-duplicate advice over the predictors; the target is never named."""
    out, target = [], fit["target"]
    vif = {
        k: v for k, v in ((diag or {}).get("vif") or {}).items() if v is not None and k != target
    }  # fmt: skip
    high = sorted((k for k in vif if vif[k] > _VIF_HIGH), key=lambda k: -vif[k])
    if high and fit["family"].endswith("_l2"):
        shown = ", ".join(f"{k} ({num(vif[k])})" for k in high)
        out.append(
            f"VIF above {num(_VIF_HIGH)}: {shown}; the other predictors explain most of each. "
            "They stay in the model: its L2 penalty is what handles the collinearity (it keeps "
            "their coefficients finite and stable where unpenalised ones would be imprecise), "
            "but it shares their common effect between them, so read those coefficients "
            "together, not as separate effects"
        )
    elif high:
        shown = ", ".join(f"{k} ({num(vif[k])})" for k in high)
        out.append(
            f"VIF above {num(_VIF_HIGH)}: {shown}; the other predictors explain most of each, "
            "so their coefficients are imprecise (wide standard errors): each says little on "
            "its own, though the fit as a whole is unaffected"
        )
    elif vif:
        worst = max(vif, key=lambda k: vif[k])
        out.append(f"All VIFs ≤ {num(_VIF_HIGH)} (largest {worst}, {num(vif[worst])})")
    dropped = [d for d in fit.get("dropped") or [] if target not in (d["column"], d["duplicates"])]
    if dropped:
        shown = ", ".join(
            f"{d['column']} (duplicates {d['duplicates']}, r = {num(d['r'])})" for d in dropped
        )
        out.append(f"Left out of the model as near-duplicates (|r| > 0.98): {shown}")
    return out
