"""The number an analyst reports (`NumericFinding`) and the fact-checker's verdict on it
(`Verdict`): the schema both sides of the fact-check speak, and nothing that computes.

The analyst builds findings through the statistics tools (`agents.tools.stats`, `groups`,
`models`, `diagnostics`); the fact-checker recomputes each with `agents.tools.recompute`.
Keeping the schema apart from both lets each side import it without importing the other.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

from kimmy_swarm.agents.tools.families import ModelFamily

__all__ = [
    "BOOTSTRAP_LEVEL",
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "COLUMN_STATISTICS",
    "DIAGNOSTIC_STATISTICS",
    "FIT_STATISTICS",
    "GROUP_STATISTICS",
    "INFLUENCE_STATISTICS",
    "INTEGER_STATISTICS",
    "PAIR_STATISTICS",
    "STATISTICS",
    "CorrMethod",
    "NumericFinding",
    "Statistic",
    "Verdict",
]

Statistic = Literal[
    "count", "missing", "mean", "median", "std", "min", "max", "skew", "corr", "slope",
    "intercept", "se", "pvalue", "r2", "adj_r2", "nobs", "outliers",
    # grouped comparisons: columns [value, group] (`agents.tools.groups`)
    "group_count", "group_mean", "group_median", "welch_t", "welch_pvalue",
    "anova_f", "anova_pvalue", "kruskal_h", "kruskal_pvalue", "eta_squared",
    # model fit measures and diagnostics (`agents.tools.models`, `agents.tools.diagnostics`)
    "aic", "llf", "pseudo_r2", "accuracy", "dispersion", "alpha", "cv_accuracy", "cv_auc",
    "jb", "jb_pvalue", "bp", "bp_pvalue", "vif", "cond_number",
    # OLS influence: rows with Cook's distance > 4/n, the largest distance and its row
    "influential", "cooks_max", "cooks_max_row",
    # a categorical column: the rows at one of its levels (`level`), and their share
    "level_count", "level_share",
    # the distinct non-missing values of a column
    "distinct",
    # exp(coefficient): a logit's odds ratio, a count model's rate ratio
    "odds_ratio", "rate_ratio",
    # a coefficient times the standard deviation of its term: the effect of one SD
    "slope_per_sd",
    # a penalised coefficient's bootstrap percentile interval
    "ci_low", "ci_high",
]  # fmt: skip
#: How `corr` measures the association of two columns: a correlation of two numeric (or
#: ordered, or binary) columns; "eta", the correlation ratio of the numeric columns[0] over
#: the levels of the nominal columns[1]; "cramers_v", Cramér's V of two nominal columns.
CorrMethod = Literal["pearson", "spearman", "kendall", "eta", "cramers_v"]
#: The model a model statistic belongs to.
Model = ModelFamily
STATISTICS: tuple[str, ...] = get_args(Statistic)
#: Counts, compared exactly: a relative tolerance would accept a wrong row count.
INTEGER_STATISTICS = frozenset({
    "count", "missing", "nobs", "outliers", "group_count", "level_count", "influential",
    "cooks_max_row", "distinct",
})  # fmt: skip
#: Statistics of one column: columns [col].
COLUMN_STATISTICS = frozenset({"count", "missing", "mean", "median", "std", "min", "max", "skew"})
#: Statistics of two columns: [a, b] (corr) or [target, predictor].
PAIR_STATISTICS = frozenset({
    "corr", "slope", "se", "pvalue", "vif", "odds_ratio", "rate_ratio", "slope_per_sd",
    "ci_low", "ci_high",
})  # fmt: skip
#: A model's fit measures: columns [target].
FIT_STATISTICS = frozenset(
    {"aic", "llf", "pseudo_r2", "accuracy", "dispersion", "alpha", "cv_accuracy", "cv_auc"}
)
#: A model's diagnostics: columns [target], vif [target, predictor].
DIAGNOSTIC_STATISTICS = frozenset({
    "jb", "jb_pvalue", "bp", "bp_pvalue", "vif", "cond_number", "influential", "cooks_max",
    "cooks_max_row",
})  # fmt: skip
#: The influence diagnostics of an OLS or logit fit (Cook's distance): columns [target].
INFLUENCE_STATISTICS = frozenset({"influential", "cooks_max", "cooks_max_row"})
#: The coefficient statistics: a coefficient, or a number derived from one and its term.
_COEFFICIENT_STATS = frozenset({
    "slope", "intercept", "se", "pvalue", "odds_ratio", "slope_per_sd", "ci_low", "ci_high",
})  # fmt: skip
_MODEL_STATS = frozenset({
    "r2", "adj_r2", "nobs", "rate_ratio", *_COEFFICIENT_STATS,
    *FIT_STATISTICS,
    *DIAGNOSTIC_STATISTICS,
})  # fmt: skip
_WALD_MODELS = frozenset({"ols", "logit", "mnlogit", "poisson", "negbin"})  # not penalised
_GLMS = frozenset({"logit", "mnlogit", "poisson", "negbin", "logit_l2", "mnlogit_l2"})
_CLASSIFIERS = frozenset({"logit", "mnlogit", "logit_l2", "mnlogit_l2"})
_PENALISED = frozenset({"logit_l2", "mnlogit_l2"})
# Which models report which statistics (coefficients, nobs, llf, vif, cond_number: all).
_ONLY_FOR: dict[str, frozenset[str]] = {
    **dict.fromkeys(("r2", "adj_r2", "jb", "jb_pvalue", "bp", "bp_pvalue"), frozenset({"ols"})),
    **dict.fromkeys(INFLUENCE_STATISTICS, frozenset({"ols", "logit"})),
    **dict.fromkeys(("se", "pvalue", "aic", "slope_per_sd"), _WALD_MODELS),
    **dict.fromkeys(("ci_low", "ci_high"), _PENALISED),
    "pseudo_r2": _GLMS, "accuracy": _CLASSIFIERS,
    "dispersion": frozenset({"poisson"}), "alpha": frozenset({"negbin"}),
    "cv_accuracy": _CLASSIFIERS, "cv_auc": frozenset({"logit", "logit_l2"}),
    "odds_ratio": frozenset({"logit", "mnlogit"}), "rate_ratio": frozenset({"poisson", "negbin"}),
}  # fmt: skip
#: The parts of a two-part model ("any": target > 0, all rows; "positive": rows > 0), and
#: the families each is fitted with.
_PART_MODELS = {"any": frozenset({"logit", "logit_l2"}), "positive": frozenset({"ols"})}
_LEVELLED = frozenset({"mnlogit", "mnlogit_l2"})  # coefficients per class (`level`)
#: Statistics of one group (`group` names it; welch: that group against the other rows).
_PER_GROUP_STATS = frozenset(
    {"group_count", "group_mean", "group_median", "welch_t", "welch_pvalue"}
)
#: Grouped-comparison statistics: columns [value, group].
GROUP_STATISTICS = _PER_GROUP_STATS | {
    "anova_f", "anova_pvalue", "kruskal_h", "kruskal_pvalue", "eta_squared"
}  # fmt: skip
#: The bootstrap of a penalised fit's coefficients (`ci_low`, `ci_high`), which both sides
#: draw alike: `BOOTSTRAP_RESAMPLES` times N positions of the complete rows, each draw
#: `numpy.random.RandomState(BOOTSTRAP_SEED).randint(0, N, N)` from one generator in turn;
#: a resample that lacks a class of the target or holds a constant predictor is skipped (its
#: draw still taken), the others refitted (predictors standardised anew); the bounds are
#: the (1 - `BOOTSTRAP_LEVEL`)/2 and (1 + `BOOTSTRAP_LEVEL`)/2 percentiles (linear
#: interpolation, `numpy.percentile`) of each coefficient over the refits.
BOOTSTRAP_RESAMPLES = 200
BOOTSTRAP_SEED = 0
BOOTSTRAP_LEVEL = 0.95


class NumericFinding(BaseModel):
    """One reported number and what it is a statistic of.

    `columns`: [col] for count/missing/mean/median/std/min/max/skew/outliers; [a, b] for corr;
    [target, predictor] for slope/se/pvalue (predictor "const" means the intercept);
    [target] for intercept/r2/adj_r2/nobs. `predictors` is the fit's full predictor list for
    model statistics (default for slope/se/pvalue: the one predictor, a simple regression).
    `method` applies to corr only. `outliers` counts values beyond Tukey fences with k=1.5.
    Grouped comparisons (`agents.tools.groups`) take [value, group column]: group_count,
    group_mean, group_median, welch_t, welch_pvalue of the group `group` names (its
    `group_key`; welch: that group against the other rows), and anova_f, anova_pvalue,
    kruskal_h, kruskal_pvalue, eta_squared of all groups (`group` None). `note` may carry a
    group's display name (sklearn's class name of a target code).

    Model statistics also name their `model` (default "ols"; `agents.tools.models`): fit
    measures aic, llf, pseudo_r2 (McFadden), accuracy (in-sample share classified right),
    dispersion (Poisson Pearson chi²/df), alpha (NB2) take [target]; diagnostics jb,
    jb_pvalue, bp, bp_pvalue (OLS residuals) and cond_number take [target], vif
    [target, predictor]. A multinomial model's coefficients name their class in `level`
    (the class value, e.g. "2"; the base class has none, except in "mnlogit_l2").
    cv_accuracy of a classifier (logit, mnlogit and their penalised fits) and cv_auc of a
    binary one (logit, logit_l2) take [target]: the accuracy and AUC of its out-of-fold
    probabilities (`conventions.CV_FOLDS`).
    The influence diagnostics of an OLS (or logit) fit take [target]: `influential` counts the rows
    whose Cook's distance exceeds 4/n, `cooks_max` is the largest Cook's distance and
    `cooks_max_row` its row, counted from 0 by position in the table (its label, where the
    table has named rows, may be in `note`). An OLS slope or intercept with `without_row` is
    of the fit refitted without that row (counted alike), the influential row it rests on.

    A model statistic may name the `part` of a two-part model it belongs to: "any", the
    logit of target > 0 over all rows; "positive", the OLS of the target over the rows where
    it is > 0. `cov_type` "HC3" marks an OLS se / pvalue as heteroscedasticity-robust (HC3,
    p-values from the normal distribution). `nominal` lists the predictors entered as
    dummies, one per level but the most frequent (the reference), each named
    `conventions.dummy_term` ("occupation=2") where a statistic names a term.
    `level_count` takes [col] and counts its rows at `level` (the value, `level_name`);
    `level_share` is their share of its non-missing rows (0.678, said as 67.8%); `distinct`
    takes [col] and counts its distinct non-missing values. `odds_ratio` (logit, mnlogit) and
    `rate_ratio` (Poisson, NB2) take [target, predictor] like a slope: exp of its coefficient.
    `corr` with `method` "eta" is the correlation ratio of columns[0] over the levels of the
    nominal columns[1]; "cramers_v" is Cramér's V of two nominal columns (no correction).

    `slope_per_sd` (an unpenalised model) takes [target, term] like a slope: the coefficient
    times the standard deviation (ddof=1) of its term's column of the design over the rows
    fitted — the effect of one SD of the predictor, which unlike the per-unit slope does not
    depend on its scale. `ci_low` and `ci_high` (a penalised model) bound a coefficient's
    bootstrap percentile interval (`BOOTSTRAP_RESAMPLES`, `BOOTSTRAP_SEED`, `BOOTSTRAP_LEVEL`).
    A logit's influence diagnostics are those of its GLM form (Cook's distance from the
    Pearson residuals and the leverages of the weighted design), named as an OLS fit's; a
    logit slope, intercept, se or pvalue with `without_influential` is of the fit refitted
    without the rows whose Cook's distance exceeds 4/n, and without the rows of any level of
    a nominal predictor left with one outcome only (its coefficient has no finite estimate;
    the others' are their limit).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    statistic: Statistic
    columns: list[str]
    value: float
    predictors: list[str] | None = None
    note: str = ""
    method: CorrMethod = "pearson"
    group: str | None = None
    model: Model = "ols"
    level: str = ""
    part: Literal["", "any", "positive"] = ""
    cov_type: Literal["nonrobust", "HC3"] = "nonrobust"
    nominal: list[str] = []
    without_row: int | None = None
    without_influential: bool = False

    @model_validator(mode="after")
    def _check_shape(self) -> NumericFinding:
        if (self.group is not None) != (self.statistic in _PER_GROUP_STATS):
            raise ValueError(
                f"`group` names the group of {sorted(_PER_GROUP_STATS)} only; "
                f"statistic {self.statistic!r} got group={self.group!r}"
            )
        want = 2 if self.statistic in PAIR_STATISTICS | GROUP_STATISTICS else 1
        if len(self.columns) != want:
            raise ValueError(
                f"statistic {self.statistic!r} takes {want} column(s), got {self.columns}"
            )
        if self.predictors is not None:
            if self.statistic not in _MODEL_STATS:
                raise ValueError(
                    f"predictors apply to model statistics only, not {self.statistic!r}"
                )
            if not self.predictors or self.columns[0] in self.predictors:
                raise ValueError(
                    f"predictors must be non-empty and exclude the target {self.columns[0]!r}"
                )
            named = (*self.predictors, "const")
            dummy = any(self.columns[-1].startswith(f"{p}=") for p in self.nominal)
            if self.statistic in PAIR_STATISTICS and self.columns[1] not in named and not dummy:
                raise ValueError(
                    f"predictor {self.columns[1]!r} is not among the fit's predictors "
                    f"{self.predictors} (nor a dummy of its nominal ones {self.nominal})"
                )
        if self.nominal and not set(self.nominal) <= set(self.predictors or ()):
            raise ValueError(f"nominal {self.nominal} must be among the predictors")
        return self._check_model()

    def _check_model(self) -> NumericFinding:
        allowed = _ONLY_FOR.get(self.statistic)
        if allowed is not None and self.model not in allowed:
            raise ValueError(
                f"statistic {self.statistic!r} does not apply to model {self.model!r}; "
                f"it applies to {sorted(allowed)}"
            )
        if self.model != "ols" and self.statistic not in _MODEL_STATS:
            raise ValueError(f"model applies to model statistics only, not {self.statistic!r}")
        if self.model == "two_part":
            raise ValueError("a two-part model's statistics name their `part` and its family")
        coefficient = self.statistic in _COEFFICIENT_STATS
        if self.statistic in ("level_count", "level_share"):
            if not self.level:
                raise ValueError(f"{self.statistic} needs the `level` it counts")
        elif self.level and not (coefficient and self.model in _LEVELLED):
            raise ValueError(
                f"level applies to the coefficients of {sorted(_LEVELLED)} and to "
                f"level_count and level_share only, not {self.statistic!r} of {self.model!r}"
            )
        if self.part and not (
            self.statistic in _MODEL_STATS and self.model in _PART_MODELS[self.part]
        ):
            raise ValueError(
                f"part {self.part!r} applies to the model statistics of "
                f"{sorted(_PART_MODELS[self.part])}, not {self.statistic!r} of {self.model!r}"
            )
        if self.cov_type != "nonrobust" and not (
            self.statistic in ("se", "pvalue") and self.model == "ols"
        ):
            raise ValueError(f"cov_type {self.cov_type!r} applies to OLS se and pvalue only")
        if self.without_row is not None and not (
            self.statistic in ("slope", "intercept") and self.model == "ols"
            and self.predictors is not None and self.without_row >= 0
        ):  # fmt: skip
            raise ValueError(
                f"without_row applies to OLS slope and intercept findings with predictors, "
                f"and counts rows from 0; got {self.without_row!r} on {self.statistic!r} of "
                f"{self.model!r}"
            )
        if self.without_influential and not (
            self.statistic in ("slope", "intercept", "se", "pvalue") and self.model == "logit"
            and self.predictors is not None and self.without_row is None
        ):  # fmt: skip
            raise ValueError(
                f"without_influential applies to logit slope, intercept, se and pvalue "
                f"findings with predictors; got {self.statistic!r} of {self.model!r}"
            )
        return self


class Verdict(BaseModel):
    """The fact-checker's judgement of one finding."""

    model_config = ConfigDict(frozen=True)

    finding: NumericFinding
    recomputed: float | None
    verdict: Literal["verified", "mismatch", "unverifiable"]
    reason: str = ""
