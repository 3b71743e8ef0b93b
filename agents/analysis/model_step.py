"""The analyst's modelling step: fit the model the target calls for, diagnose it, and turn
both into findings, notes and a reading in words.

Run by the offline procedure (`agents.analysis.procedures.analyze_dataset`) through the
run's tools (`fit_model`, `diagnose_model`), as a model policy would call them. Every number
becomes a `NumericFinding` naming its model, so the fact-checker recomputes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.interpret import FAMILY_NAMES, PART_TITLES, model_text, num
from kimmy_swarm.agents.analysis.interpret_diagnostics import diagnostics_text
from kimmy_swarm.agents.tools.conventions import CV_FOLDS, AnalysisError
from kimmy_swarm.agents.tools.finding import NumericFinding

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt

__all__ = ["LEFT_OUT", "ModelStep", "fit_summary", "model_step"]

#: The note of a correlation reported as the reason a predictor was left out of the model.
LEFT_OUT = "left out of the model: near-duplicate of a chosen predictor"


@dataclass
class ModelStep:
    """What the modelling step adds to an analysis (`fit` None: no model could be fitted)."""

    fit: dict[str, Any] | None = None
    diagnostics: dict[str, Any] | None = None
    findings: list[NumericFinding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    interpretation: dict[str, str] = field(default_factory=dict)

    def add(self, statistic: str, columns: list[str], value: float | None, **extra: Any) -> None:
        if value is None or not math.isfinite(value):
            return
        self.findings.append(
            NumericFinding(statistic=statistic, columns=columns, value=float(value), **extra)
        )


def _model_fields(fit: dict[str, Any]) -> dict[str, Any]:
    """What every finding of a fit names: its predictors and family, and where they apply
    the part of a two-part model and the predictors entered as dummies."""
    out: dict[str, Any] = {"predictors": fit["predictors"], "model": fit["family"]}
    if fit.get("part"):
        out["part"] = fit["part"]
    if fit.get("nominal"):
        out["nominal"] = fit["nominal"]
    return out


#: The ratio exp(coefficient) the reading states, by model family.
_RATIOS = {"logit": "odds_ratio", "mnlogit": "odds_ratio", "poisson": "rate_ratio",
           "negbin": "rate_ratio"}  # fmt: skip


def _coefficient_findings(step: ModelStep, fit: dict[str, Any]) -> None:
    target, model = fit["target"], _model_fields(fit)
    labels = dict(zip(fit["classes"], fit["class_labels"], strict=False))
    robust = {"cov_type": "HC3"} if fit.get("cov_type") == "HC3" else {}
    ratio = _RATIOS.get(fit["family"])
    for c in fit["coefficients"]:
        level = {"level": c["level"], "note": labels.get(c["level"], "")} if c["level"] else {}
        if c["term"] == "const":
            step.add("intercept", [target], c["coef"], **model, **level)
        else:
            step.add("slope", [target, c["term"]], c["coef"], **model, **level)
            if ratio is not None and c["coef"] is not None and abs(c["coef"]) < 700:
                step.add(ratio, [target, c["term"]], math.exp(c["coef"]), **model, **level)
            for stat in ("per_sd", "ci_low", "ci_high"):  # its effect per SD, its interval
                name = "slope_per_sd" if stat == "per_sd" else stat
                step.add(name, [target, c["term"]], c.get(stat), **model, **level)
        step.add("se", [target, c["term"]], c["se"], **model, **level, **robust)
        step.add("pvalue", [target, c["term"]], c["pvalue"], **model, **level, **robust)


def _one_fit_findings(step: ModelStep, fit: dict[str, Any]) -> None:
    target, preds, model = fit["target"], fit["predictors"], _model_fields(fit)
    _coefficient_findings(step, fit)
    for stat, value in fit["measures"].items():
        step.add(stat, [target], value, **model)
    step.add("nobs", [target], fit["nobs"], **model)
    if fit["family"] == "negbin":  # the reason for the switch, checkable on its own
        step.add("dispersion", [target], fit["poisson_dispersion"], predictors=preds,
                 model="poisson", nominal=fit.get("nominal") or [])  # fmt: skip


def _fit_findings(step: ModelStep, fit: dict[str, Any]) -> None:
    target = fit["target"]
    seen = fit.get("target_values") or {}  # the numbers the family's reason cites
    step.add("distinct", [target], seen.get("distinct"))
    if fit["kind"] == "continuous":  # only a continuous target's reason cites its zeros
        step.add("level_share", [target], seen.get("zero_share"), level="0")
    for one in fit.get("parts") or [fit]:  # a two-part model: each part's own numbers
        _one_fit_findings(step, one)
    for d in fit["dropped"]:
        step.add("corr", [d["column"], d["duplicates"]], d["r"], note=LEFT_OUT)
        step.notes.append(
            f"{d['column']} was left out of the model of {target}: it duplicates the chosen "
            f"predictor {d['duplicates']} (r = {num(d['r'])}, |r| > 0.98)"
        )
    step.notes.extend(fit["notes"])


def _diagnostic_findings(step: ModelStep, fit: dict[str, Any], diag: dict[str, Any]) -> None:
    target, model = fit["target"], _model_fields(fit)
    for stat, value in diag["residual"].items():
        step.add(stat, [target], value, **model)
    label = {"note": diag["cooks_max_label"]} if diag.get("cooks_max_label") else {}
    for stat, value in (diag.get("influence") or {}).items():
        step.add(stat, [target], value, **model, **(label if stat == "cooks_max_row" else {}))
    row = (diag.get("influence") or {}).get("cooks_max_row")
    for term, value in (diag.get("without_row") or {}).items():  # the refit without that row
        where = {"without_row": int(row), **label}
        if term == "const":
            step.add("intercept", [target], value, **model, **where)
        else:
            step.add("slope", [target, term], value, **model, **where)
    for term, refit in (diag.get("without_influential") or {}).items():  # a logit's
        if term != "const":  # refitted without its influential rows
            for stat, value in (("slope", refit["coef"]), ("pvalue", refit["pvalue"])):
                step.add(stat, [target, term], value, **model, without_influential=True)
    for pred, value in diag["vif"].items():
        step.add("vif", [target, pred], value, **model)
    step.add("cond_number", [target], diag["cond_number"], **model)


def model_step(run: Attempt, dataset: str, target: str, predictors: list[str]) -> ModelStep:
    """Fit, diagnose and read the model of `target` (predictors: default when empty, as many
    as the data supports)."""
    step = ModelStep()
    try:
        fit = run.call("fit_model", dataset=dataset, target=target,
                       predictors=predictors or None)  # fmt: skip
    except AnalysisError as exc:
        step.problems.append(f"no model of {target!r}: {exc}")
        return step
    step.fit = fit
    _fit_findings(step, fit)
    step.interpretation["model"] = model_text(fit)
    parts = fit.get("parts") or []
    readings = []
    for one in parts or [fit]:
        diag = _diagnose(run, step, dataset, one)
        reading = diagnostics_text(one, diag)
        if parts and reading:
            reading = f"{PART_TITLES[one['part']].format(target)}: {reading}"
        readings.append(reading)
    step.interpretation["diagnostics"] = " ".join(r for r in readings if r)
    return step


def _diagnose(run: Attempt, step: ModelStep, dataset: str, fit: dict[str, Any]) -> dict | None:
    """The diagnostics of one fit (a part of a two-part model alike), as findings."""
    target = fit["target"]
    try:
        diag = run.call("diagnose_model", dataset=dataset, target=target,
                        predictors=fit["predictors"], ols=fit["family"] == "ols",
                        logit=fit["family"] == "logit", nominal=fit.get("nominal") or None,
                        part=fit.get("part") or "")  # fmt: skip
    except AnalysisError as exc:
        step.problems.append(f"no diagnostics of the model of {target!r}: {exc}")
        return None
    step.diagnostics = diag if step.diagnostics is None else step.diagnostics
    _diagnostic_findings(step, fit, diag)
    return diag


def fit_summary(fit: dict[str, Any]) -> str:
    """One clause for the analysis summary: family, target, predictors and the main measure
    (of each part of a two-part model)."""
    parts = fit.get("parts") or []
    if parts:
        shown = "; ".join(
            f"{PART_TITLES[p['part']].format(fit['target']).lower()}: "
            f"{fit_summary(p).split(': ', 1)[1]}"
            for p in parts
        )
        return f"Two-part model of {fit['target']} on {', '.join(fit['predictors'])} ({shown})"
    m, name = fit["measures"], FAMILY_NAMES[fit["family"]]
    if fit["family"] == "ols":
        r2 = m.get("r2")
        measure = f"R² = {'undefined' if r2 is None else f'{r2:.3f}'}"
    else:
        measure = f"McFadden pseudo-R² = {m['pseudo_r2']:.3f}"
        if m.get("accuracy") is not None:
            measure += f", accuracy {m['accuracy']:.3f} in sample"
        if m.get("cv_accuracy") is not None:
            measure += f" and {m['cv_accuracy']:.3f} in {CV_FOLDS}-fold cross-validation"
    head = name[0].upper() + name[1:] if name[0].islower() else name
    return (
        f"{head} of {fit['target']} on {', '.join(fit['predictors'])}: {measure} "
        f"(n = {fit['nobs']})"
    )
