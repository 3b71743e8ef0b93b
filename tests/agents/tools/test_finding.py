"""The schema of a reported number and its verdict: malformed findings are refused, and both
are frozen and round-trip through JSON."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding, Verdict
from kimmy_swarm.agents.tools.recompute import verify


@pytest.mark.parametrize(
    "payload",
    [
        {"statistic": "corr", "columns": ["a"], "value": 0.5},
        {"statistic": "mean", "columns": ["a", "b"], "value": 1.0},
        {"statistic": "median", "columns": ["a"], "value": 1.0, "predictors": ["b"]},
        {"statistic": "slope", "columns": ["y", "x"], "value": 1.0, "predictors": ["z"]},
        {"statistic": "r2", "columns": ["y"], "value": 0.5, "predictors": ["y", "x"]},
        {"statistic": "kurtosis", "columns": ["a"], "value": 1.0},
        {"statistic": "mean", "columns": ["a"], "value": 1.0, "unit": "kg"},
        # model statistics that do not apply to the named model
        {"statistic": "r2", "columns": ["y"], "value": 0.5, "predictors": ["x"], "model": "logit"},
        {"statistic": "accuracy", "columns": ["y"], "value": 0.5, "predictors": ["x"]},
        {"statistic": "se", "columns": ["y", "x"], "value": 0.1, "predictors": ["x"],
         "model": "logit_l2"},
        {"statistic": "alpha", "columns": ["y"], "value": 0.3, "predictors": ["x"],
         "model": "poisson"},
        {"statistic": "slope", "columns": ["y", "x"], "value": 1.0, "predictors": ["x"],
         "level": "1"},
        {"statistic": "mean", "columns": ["a"], "value": 1.0, "model": "logit"},
        {"statistic": "vif", "columns": ["y"], "value": 2.0, "predictors": ["x"]},
        {"statistic": "slope", "columns": ["y", "x"], "value": 1.0, "predictors": ["x"],
         "model": "probit"},
        # an effect per SD of an unpenalised fit; a bootstrap bound of a penalised one
        {"statistic": "slope_per_sd", "columns": ["y", "x"], "value": 1.0,
         "predictors": ["x"], "model": "logit_l2"},
        {"statistic": "ci_low", "columns": ["y", "x"], "value": 1.0, "predictors": ["x"],
         "model": "logit"},
        {"statistic": "ci_high", "columns": ["y"], "value": 1.0, "predictors": ["x"],
         "model": "mnlogit_l2"},
        # a refit without the influential rows is a logit's coefficient
        {"statistic": "slope", "columns": ["y", "x"], "value": 1.0, "predictors": ["x"],
         "without_influential": True},
        {"statistic": "aic", "columns": ["y"], "value": 1.0, "predictors": ["x"],
         "model": "logit", "without_influential": True},
    ],
)  # fmt: skip
def test_malformed_findings_are_rejected(payload: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        NumericFinding.model_validate(payload)


def test_findings_are_frozen_and_round_trip_json() -> None:
    df = load_dataset("statsmodels:longley").frame
    finding = NumericFinding(
        statistic="pvalue", columns=["TOTEMP", "GNP"], value=1e-9, predictors=["GNP", "UNEMP"]
    )
    with pytest.raises(ValidationError):
        finding.value = 2.0  # type: ignore[misc]
    verdict = verify(df, finding)
    assert Verdict.model_validate_json(verdict.model_dump_json()) == verdict
