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

from kimmy_swarm.agents.analysis.interpret import FAMILY_NAMES, diagnostics_text, model_text, num
from kimmy_swarm.agents.tools.conventions import AnalysisError
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


def _coefficient_findings(step: ModelStep, fit: dict[str, Any]) -> None:
    target, model = fit["target"], {"predictors": fit["predictors"], "model": fit["family"]}
    labels = dict(zip(fit["classes"], fit["class_labels"], strict=False))
    for c in fit["coefficients"]:
        level = {"level": c["level"], "note": labels.get(c["level"], "")} if c["level"] else {}
        if c["term"] == "const":
            step.add("intercept", [target], c["coef"], **model, **level)
        else:
            step.add("slope", [target, c["term"]], c["coef"], **model, **level)
        step.add("se", [target, c["term"]], c["se"], **model, **level)
        step.add("pvalue", [target, c["term"]], c["pvalue"], **model, **level)


def _fit_findings(step: ModelStep, fit: dict[str, Any]) -> None:
    target, preds = fit["target"], fit["predictors"]
    model = {"predictors": preds, "model": fit["family"]}
    _coefficient_findings(step, fit)
    for stat, value in fit["measures"].items():
        step.add(stat, [target], value, **model)
    step.add("nobs", [target], fit["nobs"], **model)
    if fit["family"] == "negbin":  # the reason for the switch, checkable on its own
        step.add("dispersion", [target], fit["poisson_dispersion"], predictors=preds,
                 model="poisson")  # fmt: skip
    for d in fit["dropped"]:
        step.add("corr", [d["column"], d["duplicates"]], d["r"], note=LEFT_OUT)
        step.notes.append(
            f"{d['column']} was left out of the model of {target}: it duplicates the chosen "
            f"predictor {d['duplicates']} (r = {num(d['r'])}, |r| > 0.98)"
        )
    step.notes.extend(fit["notes"])


def _diagnostic_findings(step: ModelStep, fit: dict[str, Any], diag: dict[str, Any]) -> None:
    target, model = fit["target"], {"predictors": fit["predictors"], "model": fit["family"]}
    for stat, value in diag["residual"].items():
        step.add(stat, [target], value, **model)
    for pred, value in diag["vif"].items():
        step.add("vif", [target, pred], value, **model)
    step.add("cond_number", [target], diag["cond_number"], **model)


def model_step(
    run: Attempt, dataset: str, target: str, predictors: list[str], *, max_predictors: int
) -> ModelStep:
    """Fit, diagnose and read the model of `target` (predictors: default when empty)."""
    step = ModelStep()
    try:
        fit = run.call("fit_model", dataset=dataset, target=target,
                       predictors=predictors or None, max_predictors=max_predictors)  # fmt: skip
    except AnalysisError as exc:
        step.problems.append(f"no model of {target!r}: {exc}")
        return step
    step.fit = fit
    _fit_findings(step, fit)
    step.interpretation["model"] = model_text(fit)
    try:
        diag = run.call("diagnose_model", dataset=dataset, target=target,
                        predictors=fit["predictors"], ols=fit["family"] == "ols")  # fmt: skip
    except AnalysisError as exc:
        step.problems.append(f"no diagnostics of the model of {target!r}: {exc}")
        diag = None
    if diag is not None:
        step.diagnostics = diag
        _diagnostic_findings(step, fit, diag)
    step.interpretation["diagnostics"] = diagnostics_text(fit, diag)
    return step


def fit_summary(fit: dict[str, Any]) -> str:
    """One clause for the analysis summary: family, target, predictors and the main measure."""
    m, name = fit["measures"], FAMILY_NAMES[fit["family"]]
    if fit["family"] == "ols":
        r2 = m.get("r2")
        measure = f"R² = {'undefined' if r2 is None else f'{r2:.3f}'}"
    else:
        measure = f"McFadden pseudo-R² = {m['pseudo_r2']:.3f}"
        if m.get("accuracy") is not None:
            measure += f", accuracy {m['accuracy']:.3f}"
    head = name[0].upper() + name[1:] if name[0].islower() else name
    return (
        f"{head} of {fit['target']} on {', '.join(fit['predictors'])}: {measure} "
        f"(n = {fit['nobs']})"
    )
