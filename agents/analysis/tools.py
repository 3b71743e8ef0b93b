"""The batch analysis's tools, bound to one run's `AnalysisBoard`.

Both policies use them: a model through function calls, the offline procedures through
`run.call`. Every data access goes through a tool, and results are plain JSON (what a model
would see). The board holds what the run shares: the loaded datasets, the datasets that
failed to load, the figures drawn, and each analysis and fact-check once it is done (the
pipeline's workers record them), so the report tools can build the pages from them.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agents.analysis.procedures_report import report_tools
from agents.analysis.questions import match_question, named_columns
from agents.analysis.schemas import AnalysisTask, DatasetAnalysis, DatasetInfo, FindingChecks
from agents.toolbox import ToolBox, make_tool
from agents.tools import diagnostics, groups, models, stats
from agents.tools.finding import NumericFinding
from agents.tools.recompute import verify
from swarm.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from agents.tools.datasets import Dataset
    from agents.tools.sandbox import Sandbox

#: At most this many characters of a sandbox run's stdout / stderr go back to the model.
MAX_OUTPUT_CHARS = 8_000
FigureKind = Literal["histogram", "scatter", "heatmap"]


class UnknownAnalysisDatasetError(UserError):
    """A tool was asked about a dataset this run did not load."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower() or "x"


class AnalysisBoard:
    """What one analysis run shares between its sub-agents and tools.

    Args:
        datasets: the loaded datasets by key (the spec as the user gave it).
        out_dir: where figures and reports are written.
        load_errors: specs that failed to load -> the error message.
    """

    def __init__(
        self,
        datasets: Mapping[str, Dataset],
        *,
        out_dir: str | Path,
        load_errors: Mapping[str, str] | None = None,
    ) -> None:
        self.datasets = dict(datasets)
        self.out_dir = Path(out_dir)
        self.load_errors = dict(load_errors or {})
        self.figures: dict[str, bytes] = {}
        self.tasks: dict[str, AnalysisTask] = {}
        self.analyses: dict[str, DatasetAnalysis] = {}
        self.checks: dict[str, FindingChecks] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()
        self._csv: dict[str, bytes] = {}

    def frame(self, dataset: str) -> pd.DataFrame:
        """The table of a loaded dataset (raises `UnknownAnalysisDatasetError`)."""
        found = self.datasets.get(dataset)
        if found is None:
            known = ", ".join(sorted(self.datasets)) or "(none)"
            raise UnknownAnalysisDatasetError(
                f"dataset {dataset!r} is not loaded in this run; loaded datasets: {known}"
            )
        return found.frame

    def csv_bytes(self, dataset: str) -> bytes:
        """The dataset as CSV (made once per dataset)."""
        with self._lock:
            cached = self._csv.get(dataset)
        if cached is None:
            cached = self.frame(dataset).to_csv(index=False).encode()
            with self._lock:
                self._csv[dataset] = cached
        return cached

    def info(self, dataset: str) -> DatasetInfo:
        """Name, shape, designated target and title of a loaded dataset."""
        ds = self.datasets[dataset]
        rows, cols = ds.frame.shape
        return DatasetInfo(
            name=dataset, rows=rows, columns=cols, target=ds.target, description=ds.description
        )

    def add_figure(self, figure_id: str, png: bytes) -> Path:
        """Keep a figure and write it to `out_dir/figures/<id>.png` (atomically)."""
        with self._lock:
            self.figures[figure_id] = png
        path = self.out_dir / "figures" / f"{figure_id}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{threading.get_ident()}.tmp")
        tmp.write_bytes(png)
        os.replace(tmp, path)
        return path

    def record_task(self, subtask_id: str, task: AnalysisTask) -> None:
        """Remember the planned task of an `analyze:<n>` subtask."""
        with self._lock:
            self.tasks[subtask_id] = task

    def record_analysis(self, subtask_id: str, analysis: DatasetAnalysis) -> None:
        """Keep a finished analysis (the report tools and the fact-checker's tools read it)."""
        with self._lock:
            self.analyses[subtask_id] = analysis

    def record_checks(self, subtask_id: str, checks: FindingChecks) -> None:
        """Keep a finished fact-check."""
        with self._lock:
            self.checks[subtask_id] = checks

    def add_problem(self, message: str) -> None:
        """Record a problem of the run once (repeats are ignored)."""
        with self._lock:
            if message not in self.problems:
                self.problems.append(message)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _figure_png(frame: pd.DataFrame, dataset: str, kind: str, columns: list[str]) -> bytes:
    from agents.tools import plots

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
        """Rows, columns, dtypes, numeric columns, missing cells and designated target."""
        ds = board.datasets.get(dataset)
        out = stats.profile(board.frame(dataset))
        out.update(target=ds.target if ds else None, description=ds.description if ds else "")
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
        """Which columns a question names (by name, word or synonym), the numeric target it
        points to (None: no numeric one), the group column of a grouped comparison ("which
        species has the longest sepals") and the other loaded datasets it names columns of."""
        frame = board.frame(dataset)
        ds = board.datasets[dataset]
        asked = match_question(question, frame, ds.target, ds.labels)
        target = None
        if asked.values:
            target = stats.pick_target(frame[asked.values], question, ds.target)
        elsewhere = [
            k for k, other in board.datasets.items()
            if k != dataset
            and match_question(question, other.frame, other.target, other.labels).values
        ]  # fmt: skip
        return {
            "named": asked.named,
            "named_numeric": list(asked.values),
            "target": target,
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
                {"key": g.key, "label": g.label, "count": g.count, "mean": _finite(g.mean),
                 "median": _finite(g.median)}
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
                {"term": c.term, "level": c.level, "coef": _finite(c.coef),
                 "se": _finite(c.se), "pvalue": _finite(c.pvalue)}
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


__all__ = [
    "MAX_OUTPUT_CHARS",
    "AnalysisBoard",
    "UnknownAnalysisDatasetError",
    "build_toolbox",
    "named_columns",
]
