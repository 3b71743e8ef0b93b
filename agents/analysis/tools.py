"""The batch analysis's tools, bound to one run's `AnalysisBoard` (`agents.analysis.board`).

Both policies use them: a model through function calls, the offline procedures through
`run.call`. Every data access goes through a tool, and results are plain JSON (what a model
would see). The data, model and checking tools are here; the report tools
(`collect_results`, `render_report`) are the report roles' (`agents.analysis.report_roles`).
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING, Any, Literal

from kimmy_swarm.agents.analysis.questions import match_question
from kimmy_swarm.agents.analysis.report_roles import report_tools
from kimmy_swarm.agents.toolbox import ToolBox, make_tool
from kimmy_swarm.agents.tools import diagnostics, families, groups, models, stats, variables
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.recompute import verify
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from kimmy_swarm.agents.analysis.board import AnalysisBoard
    from kimmy_swarm.agents.tools.sandbox import Sandbox

#: At most this many characters of a sandbox run's stdout / stderr go back to the model.
MAX_OUTPUT_CHARS = 8_000
FigureKind = Literal["histogram", "scatter", "heatmap"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _figure_png(
    frame: pd.DataFrame, dataset: str, kind: str, columns: list[str], nominal: list[str]
) -> bytes:
    from kimmy_swarm.agents.tools import plots

    if kind == "heatmap":  # r of nominal codes means nothing: they stay out of the matrix
        kept = frame.drop(columns=nominal)
        shown = kept if len(stats.numeric_columns(kept)) >= 2 else frame
        return plots.corr_heatmap_png(shown, title=f"{dataset}: correlations")
    for c in columns:
        stats.describe(frame, [c])  # raises AnalysisError naming an unknown / text column
    if kind == "histogram":
        if len(columns) != 1:
            raise UserError(f"a histogram takes one column, got {columns}")
        col = columns[0]
        return plots.histogram_png(frame[col], title=f"{dataset}: {col}", xlabel=col)
    if len(columns) != 2:
        raise UserError(f"a scatter plot takes two columns [x, y], got {columns}")
    x, y = columns
    return plots.scatter_png(frame[x], frame[y], title=f"{dataset}: {y} vs {x}", xlabel=x, ylabel=y)


def _column_types(board: AnalysisBoard, dataset: str) -> dict[str, variables.ColumnType]:
    """The kind of each numeric column of a loaded dataset (`variables.column_types`)."""
    frame = board.frame(dataset)
    ds = board.datasets.get(dataset)
    if ds is None:
        return variables.column_types(frame)
    return variables.column_types(frame, codes=ds.codes, labels=ds.labels,
                                  descriptions=ds.descriptions, target=ds.target)  # fmt: skip


def _zeros(values: pd.Series) -> int | None:
    """The zeros of a zero-heavy column — non-negative, not all 0, at least
    `families.TWO_PART` of its values 0 — whose quartile fences would call every positive
    value an outlier (None: not zero-heavy)."""
    x = values.dropna().astype(float)
    zeros = int((x == 0).sum())
    heavy = len(x) > 0 and x.min() == 0 < x.max() and zeros >= families.TWO_PART * len(x)
    return zeros if heavy else None


def _described(frame: pd.DataFrame, col: str, stats_: dict[str, float],
               typed: variables.ColumnType | None) -> dict[str, Any]:  # fmt: skip
    """A column's describe statistics; a categorical one's kind and level counts in place of
    its mean, std and skew (and, nominal, of its median, min and max: codes, no numbers); a
    zero-heavy one's rows at 0 (`zeros`, and as its one level)."""
    out: dict[str, Any] = {k: _finite(v) for k, v in stats_.items()}
    if typed is None or not typed.categorical:
        zeros = _zeros(frame[col])
        if zeros is not None:
            out.update(zeros=zeros, levels={"0": zeros})
        return out
    dropped = ("mean", "std", "skew") + (("median", "min", "max") if typed.kind == "nominal"
                                         else ())  # fmt: skip
    out.update(dict.fromkeys(dropped))
    out.update(kind=typed.kind, why=typed.reason, levels=variables.level_counts(frame[col]),
               meanings=dict(typed.meanings))  # fmt: skip
    return out


def _target_values(values: pd.Series) -> dict[str, Any]:
    """What the choice of a model family said of its target: its distinct values, and the
    share of them at 0 where `families.ZERO_HEAVY` or more are (else None)."""
    x = values.dropna().astype(float)
    share = float((x == 0).mean()) if len(x) else 0.0
    zero = share if x.min() == 0 and share >= families.ZERO_HEAVY else None
    return {"distinct": int(x.nunique()), "zero_share": zero}


def _coefficient_json(fit: models.ModelFit, c: models.Coefficient) -> dict[str, Any]:
    """One coefficient as `fit_model` returns it: with its effect per standard deviation of
    its term (an unpenalised fit's: a penalised one's coefficients are per SD already) and
    its bootstrap interval (a penalised fit's)."""
    penalised = fit.family.endswith("_l2")
    sd = fit.sds.get(c.term) if not penalised else None
    interval = next((i for i in fit.intervals if (i.term, i.level) == (c.term, c.level)), None)
    return {
        "term": c.term,
        "level": c.level,
        "coef": _finite(c.coef),
        "se": _finite(c.se),
        "pvalue": _finite(c.pvalue),
        "per_sd": _finite(c.coef * sd) if sd is not None else None,
        "ci_low": _finite(interval.low) if interval is not None else None,
        "ci_high": _finite(interval.high) if interval is not None else None,
    }


def _fit_json(fit: models.ModelFit, labels: list[str]) -> dict[str, Any]:
    """A `ModelFit` as the `fit_model` tool returns it (a two-part model's `parts` alike)."""
    return {
        "target": fit.target,
        "predictors": fit.predictors,
        "kind": fit.kind,
        "family": fit.family,
        "reason": fit.reason,
        "classes": fit.classes,
        "class_labels": labels if fit.part != "any" else [],
        "coefficients": [_coefficient_json(fit, c) for c in fit.coefficients],
        "measures": {k: _finite(v) for k, v in fit.measures.items()},
        "nobs": fit.nobs,
        "poisson_dispersion": fit.poisson_dispersion,
        "cov_type": fit.cov_type,
        "nominal": fit.nominal,
        "part": fit.part,
        "parts": [_fit_json(p, labels) for p in fit.parts],
        "dropped": [{"column": c, "duplicates": k, "r": r} for c, k, r in fit.dropped],
        "ranked_by": dict(fit.ranked_by),
        "max_parameters": fit.max_parameters,
        "max_predictors": fit.max_predictors,
        "limited": fit.limited,
        "notes": fit.notes,
    }


def build_toolbox(board: AnalysisBoard, sandbox: Sandbox | None = None) -> ToolBox:
    """The analysis tools over `board` (`run_python` only when a sandbox is given)."""
    box = ToolBox(make_tool(fn) for fn in _data_tools(board))
    for fn in [*_model_tools(board), *_checking_tools(board)]:
        box.add(make_tool(fn))
    if sandbox is not None:
        box.add(make_tool(_python_tool(board, sandbox), name="run_python"))
    for fn in report_tools(board):
        box.add(make_tool(fn))
    return box


def _data_tools(board: AnalysisBoard) -> list[Any]:
    def list_datasets() -> dict[str, Any]:
        """The datasets this run loaded (name, rows, columns, target) and those that failed."""
        return {
            "datasets": [board.info(k).model_dump() for k in board.datasets],
            "errors": dict(board.load_errors),
        }

    def dataset_profile(dataset: str) -> dict[str, Any]:
        """Rows, columns, dtypes, numeric columns, missing cells, designated target, and what
        each column measures where the dataset's metadata says (`descriptions`)."""
        ds = board.datasets.get(dataset)
        out = stats.profile(board.frame(dataset))
        out.update(
            target=ds.target if ds else None,
            description=ds.description if ds else "",
            descriptions=dict(ds.descriptions) if ds else {},
        )
        return out

    def missing_values(dataset: str) -> dict[str, int]:
        """The number of missing values in each column."""
        return stats.missing(board.frame(dataset))

    def describe_columns(
        dataset: str, columns: list[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """count, mean, median, std (ddof=1), min, max, skew of numeric columns (null: none);
        a categorical column (coded levels, a class label, two values, or few integer values:
        `kind` binary / ordinal / nominal, `why`) has its rows per value in `levels`, what
        the source says each means in `meanings`, and null mean, std and skew (a nominal one
        also null median, min and max)."""
        frame = board.frame(dataset)
        described = stats.describe(frame, columns)
        kinds = _column_types(board, dataset)
        return {c: _described(frame, c, d, kinds.get(c)) for c, d in described.items()}

    def top_correlations(
        dataset: str, top: int = 5, method: Literal["pearson", "spearman", "kendall"] = "pearson"
    ) -> list[dict[str, Any]]:
        """The numeric column pairs most strongly associated (pairwise-complete rows): r by
        `method` where both columns have numeric meaning; where one is nominal (codes of
        categories, a class label) the correlation ratio eta of the other over its levels
        (`method` "eta", the nominal column is `b`); Cramér's V where both are nominal."""
        nominal = [c for c, t in _column_types(board, dataset).items() if t.kind == "nominal"]
        pairs = stats.associations(board.frame(dataset), top=top, nominal=nominal, method=method)
        return [{"a": a, "b": b, "r": r, "method": m} for a, b, r, m in pairs]

    return [list_datasets, dataset_profile, missing_values, describe_columns, top_correlations]


def _model_tools(board: AnalysisBoard) -> list[Any]:
    def question_columns(dataset: str, question: str) -> dict[str, Any]:
        """Which columns a question names (by name, word, synonym or a word of a column's
        description), the numeric target it points to (None: no numeric one; a question about
        "the outcome" in general terms: the designated target), how it was read where no
        column name said it (`readings`), the group column of a grouped comparison ("which
        species has the longest sepals") and the other loaded datasets it names columns of."""
        frame = board.frame(dataset)
        ds = board.datasets[dataset]
        asked = match_question(question, frame, ds.target, ds.labels, ds.descriptions)
        target = None
        if asked.values:
            target = stats.pick_target(frame[asked.values], question, ds.target)
        elsewhere = []
        for k, other in board.datasets.items():
            if k == dataset:
                continue
            there = match_question(
                question, other.frame, other.target, other.labels, other.descriptions
            )
            if there.values and not there.outcome:  # "the outcome" is no column of theirs
                elsewhere.append(k)
        return {
            "named": asked.named,
            "named_numeric": list(asked.values),
            "target": target,
            "readings": asked.readings,
            "outcome": asked.outcome,
            "group": asked.group,
            "comparison": asked.comparison,
            "applies_to": elsewhere,
        }

    def compare_groups(dataset: str, value: str, group: str) -> dict[str, Any]:
        """A numeric column across the groups of another: count, mean, median per group
        (by key, with its label), which group is highest/lowest, one-way ANOVA F and p,
        Kruskal-Wallis H and p, eta squared, and for two groups a Welch t-test."""
        ds = board.datasets.get(dataset)
        labels = ds.labels.get(group, {}) if ds is not None else {}
        cmp = groups.compare_groups(board.frame(dataset), value, group, labels=labels)
        welch = None
        if cmp.welch is not None:
            key, t, p = cmp.welch
            welch = {"group": key, "t": _finite(t), "pvalue": _finite(p)}
        return {
            "value": cmp.value,
            "group": cmp.group,
            "groups": [
                {
                    "key": g.key,
                    "label": g.label,
                    "count": g.count,
                    "mean": _finite(g.mean),
                    "median": _finite(g.median),
                }
                for g in cmp.groups.values()
            ],
            "highest": cmp.highest,
            "lowest": cmp.lowest,
            "anova_f": _finite(cmp.anova_f),
            "anova_pvalue": _finite(cmp.anova_pvalue),
            "kruskal_h": _finite(cmp.kruskal_h),
            "kruskal_pvalue": _finite(cmp.kruskal_pvalue),
            "eta_squared": _finite(cmp.eta_squared),
            "welch": welch,
        }

    def fit_model(
        dataset: str, target: str, predictors: list[str] | None = None,
        max_predictors: int | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """The model the target calls for (OLS, logit, multinomial logit, Poisson or negative
        binomial; `reason` says why) of target on predictors (default: the most associated,
        by |r|, or eta / Cramér's V where a column is nominal, as `ranked_by` says, as many
        as the data supports — `max_parameters`: one per 10 events of the rarer class, or
        15 rows, at least 5, a nominal predictor costing its levels - 1 — or instead at most
        `max_predictors` if given; those left out for that in `limited`, near-duplicates in
        `dropped`, class-code columns never), with a constant: coefficients (by term and,
        for a multinomial model, class `level`; `per_sd`: the effect of one SD of the term,
        unpenalised fits; `ci_low`/`ci_high`: a penalised fit's 95% bootstrap interval),
        fit measures, notes.
        Nominal predictors (`nominal`) enter as dummies, terms "occupation=2" against the
        most frequent level; OLS standard errors are HC3 robust (`cov_type`) when Breusch–Pagan
        rejects at 0.05; a zero-heavy target (family "two_part") has no coefficients of its
        own but two `parts`: the logit of target > 0 (`part` "any") and the OLS where
        target > 0 ("positive"). `target_values`: the target's distinct values and its
        share of zeros (null unless zero-heavy), the numbers `reason` may cite."""
        ds = board.datasets.get(dataset)
        labels = list((ds.labels.get(target) or {}).values()) if ds is not None else []
        coded = [c for c in (ds.labels if ds is not None else {}) if c != target]
        frame = board.frame(dataset)
        fit = models.fit_model(
            frame, target, predictors, max_predictors=max_predictors,
            labels=labels or None, exclude=coded, kinds=_column_types(board, dataset),
        )  # fmt: skip
        return {**_fit_json(fit, labels), "target_values": _target_values(frame[target])}

    def diagnose_model(
        dataset: str,
        target: str,
        predictors: list[str],
        ols: bool = True,
        nominal: list[str] | None = None,
        part: Literal["", "any", "positive"] = "",
        logit: bool = False,
    ) -> dict[str, Any]:
        """Diagnostics of target on predictors: VIF per predictor (per dummy of a `nominal`
        one), condition number, and for OLS (`ols`) Jarque-Bera residual normality,
        Breusch-Pagan heteroscedasticity and influence (`influence`: rows with Cook's
        distance > 4/n, the largest distance and its row, from 0, labelled in
        `cooks_max_label` where the table names its rows; `without_row`: the coefficients
        refitted without that row when its distance exceeds 1); for a maximum-likelihood
        binary logit (`logit`, with ols false) its influence alike and
        `without_influential`: term -> coef and pvalue refitted without the influential
        rows (or `refit_failed`: why not); `part` diagnoses a part of a two-part model."""
        dg = diagnostics.diagnose(board.frame(dataset), target, predictors, ols=ols,
                                  logit=logit, nominal=nominal or (), part=part)  # fmt: skip
        return {
            "target": dg.target,
            "predictors": dg.predictors,
            "residual": {k: _finite(v) for k, v in dg.residual.items()},
            "influence": {k: _finite(v) for k, v in dg.influence.items()},
            "cooks_max_label": dg.cooks_max_label,
            "without_row": {k: _finite(v) for k, v in dg.without_row.items()},
            "without_influential": {
                k: {"coef": _finite(b), "pvalue": _finite(p)}
                for k, (b, p) in dg.without_influential.items()
            },
            "refit_failed": dg.refit_failed,
            "vif": {k: _finite(v) for k, v in dg.vif.items()},
            "cond_number": _finite(dg.cond_number),
            "nominal": dg.nominal,
            "part": dg.part,
        }

    def count_outliers(dataset: str, columns: list[str]) -> dict[str, int]:
        """Values beyond the Tukey fences (1.5 IQR) in each numeric column; categorical ones
        (`describe_columns`' `kind`) are left out, their levels are no outliers, and so are
        zero-heavy ones (at least half 0: fences from quartiles of 0 flag every positive)."""
        frame = board.frame(dataset)
        kinds = _column_types(board, dataset)
        return {
            c: stats.outliers(frame, c)
            for c in columns
            if (c not in kinds or not kinds[c].categorical)
            and (c not in kinds or _zeros(frame[c]) is None)
        }

    def make_figure(dataset: str, kind: FigureKind, columns: list[str]) -> dict[str, Any]:
        """Draw a histogram [col], scatter [x, y] or correlation heatmap [] as a PNG (the
        heatmap leaves nominal columns out: the r of their codes means nothing)."""
        frame = board.frame(dataset)
        cols = [] if kind == "heatmap" else list(columns)
        nominal = [c for c, t in _column_types(board, dataset).items() if t.kind == "nominal"]
        png = _figure_png(frame, dataset, kind, cols, nominal)
        digest = hashlib.sha1(png).hexdigest()[:8]
        figure_id = f"{_slug(dataset)[:40]}-{kind}-{digest}"
        path = board.add_figure(figure_id, png)
        title = {"histogram": "Distribution of {0}", "scatter": "{1} against {0}"}.get(
            kind, "Correlation matrix"
        )
        return {
            "figure_id": figure_id,
            "kind": kind,
            "title": title.format(*cols),
            "columns": cols,
            "path": str(path),
        }

    return [question_columns, compare_groups, fit_model, diagnose_model, count_outliers,
            make_figure]  # fmt: skip


def _checking_tools(board: AnalysisBoard) -> list[Any]:
    def verify_finding(dataset: str, finding: NumericFinding) -> dict[str, Any]:
        """Recompute one reported number from the raw data and compare (verdict, reason)."""
        return verify(board.frame(dataset), finding).model_dump(mode="json")

    def analysis_findings(analysis: str) -> dict[str, Any]:
        """The dataset and reported findings of a finished analysis (by subtask id)."""
        found = board.analyses.get(analysis)
        if found is None:
            known = ", ".join(sorted(board.analyses)) or "(none)"
            raise UserError(f"no finished analysis {analysis!r}; finished: {known}")
        return {
            "dataset": found.dataset,
            "findings": [f.model_dump(mode="json") for f in found.findings],
        }

    def verify_analysis(analysis: str) -> list[dict[str, Any]]:
        """Recompute every finding of a finished analysis (by subtask id): the verdicts."""
        found = analysis_findings(analysis)
        frame = board.frame(found["dataset"])
        return [
            verify(frame, NumericFinding.model_validate(f)).model_dump(mode="json")
            for f in found["findings"]
        ]

    return [verify_finding, analysis_findings, verify_analysis]


def _python_tool(board: AnalysisBoard, sandbox: Sandbox) -> Any:
    def run_python(dataset: str, code: str) -> dict[str, Any]:
        """Run Python (pandas available) in a sandbox with the dataset as `data.csv`;
        print JSON to stdout to report results."""
        result = sandbox.run(code, files={"data.csv": board.csv_bytes(dataset)})
        return {
            "ok": result.ok,
            "stdout": result.stdout[:MAX_OUTPUT_CHARS],
            "stderr": result.stderr[-MAX_OUTPUT_CHARS:],
            "killed": result.killed,
            "violation": result.violation,
        }

    return run_python


__all__ = ["MAX_OUTPUT_CHARS", "build_toolbox"]
