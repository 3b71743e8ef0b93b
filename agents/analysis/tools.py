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
from kimmy_swarm.agents.tools import diagnostics, groups, models, stats
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


def _figure_png(frame: pd.DataFrame, dataset: str, kind: str, columns: list[str]) -> bytes:
    from kimmy_swarm.agents.tools import plots

    if kind == "heatmap":
        return plots.corr_heatmap_png(frame, title=f"{dataset}: correlations")
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
    ) -> dict[str, dict[str, float | None]]:
        """count, mean, median, std (ddof=1), min, max, skew of numeric columns (null: none)."""
        described = stats.describe(board.frame(dataset), columns)
        return {c: {k: _finite(v) for k, v in d.items()} for c, d in described.items()}

    def top_correlations(
        dataset: str, top: int = 5, method: Literal["pearson", "spearman", "kendall"] = "pearson"
    ) -> list[dict[str, Any]]:
        """The numeric column pairs with the largest |r| (pairwise-complete rows)."""
        pairs = stats.correlations(board.frame(dataset), top=top, method=method)
        return [{"a": a, "b": b, "r": r, "method": method} for a, b, r in pairs]

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
        dataset: str, target: str, predictors: list[str] | None = None, max_predictors: int = 5
    ) -> dict[str, Any]:
        """The model the target calls for (OLS, logit, multinomial logit, Poisson or negative
        binomial; `reason` says why) of target on predictors (default: the most correlated,
        near-duplicates left out and listed in `dropped`, class-code columns never), with a
        constant: coefficients
        (by term and, for a multinomial model, class `level`), fit measures, notes."""
        ds = board.datasets.get(dataset)
        labels = list((ds.labels.get(target) or {}).values()) if ds is not None else []
        coded = [c for c in (ds.labels if ds is not None else {}) if c != target]
        fit = models.fit_model(
            board.frame(dataset), target, predictors, max_predictors=max_predictors,
            labels=labels or None, exclude=coded,
        )  # fmt: skip
        return {
            "target": fit.target,
            "predictors": fit.predictors,
            "kind": fit.kind,
            "family": fit.family,
            "reason": fit.reason,
            "classes": fit.classes,
            "class_labels": labels,
            "coefficients": [
                {
                    "term": c.term,
                    "level": c.level,
                    "coef": _finite(c.coef),
                    "se": _finite(c.se),
                    "pvalue": _finite(c.pvalue),
                }
                for c in fit.coefficients
            ],
            "measures": {k: _finite(v) for k, v in fit.measures.items()},
            "nobs": fit.nobs,
            "poisson_dispersion": fit.poisson_dispersion,
            "dropped": [{"column": c, "duplicates": k, "r": r} for c, k, r in fit.dropped],
            "notes": fit.notes,
        }

    def diagnose_model(
        dataset: str, target: str, predictors: list[str], ols: bool = True
    ) -> dict[str, Any]:
        """Diagnostics of target on predictors: VIF per predictor, condition number, and for
        OLS (`ols`) Jarque-Bera residual normality and Breusch-Pagan heteroscedasticity."""
        dg = diagnostics.diagnose(board.frame(dataset), target, predictors, ols=ols)
        return {
            "target": dg.target,
            "predictors": dg.predictors,
            "residual": {k: _finite(v) for k, v in dg.residual.items()},
            "vif": {k: _finite(v) for k, v in dg.vif.items()},
            "cond_number": _finite(dg.cond_number),
        }

    def count_outliers(dataset: str, columns: list[str]) -> dict[str, int]:
        """Values beyond the Tukey fences (1.5 IQR) in each column."""
        frame = board.frame(dataset)
        return {c: stats.outliers(frame, c) for c in columns}

    def make_figure(dataset: str, kind: FigureKind, columns: list[str]) -> dict[str, Any]:
        """Draw a histogram [col], scatter [x, y] or correlation heatmap [] as a PNG."""
        frame = board.frame(dataset)
        cols = [] if kind == "heatmap" else list(columns)
        png = _figure_png(frame, dataset, kind, cols)
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
