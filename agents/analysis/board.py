"""What one analysis run shares between its sub-agents and tools: `AnalysisBoard`.

The board holds the loaded datasets, the datasets that failed to load, the figures drawn,
each planned task, and each analysis and fact-check once it is done (the pipeline's workers
record them). The tools read and write it (`agents.analysis.tools`), and the reports are
built from it (`agents.analysis.digest`). It is state only: it computes nothing, so every
module of the pipeline can depend on it, and it depends on the schemas alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kimmy_swarm.agents.analysis.schemas import (
    AnalysisTask,
    DatasetAnalysis,
    DatasetInfo,
    FindingChecks,
)
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    import pandas as pd

    from kimmy_swarm.agents.tools.datasets import Dataset

__all__ = ["AnalysisBoard", "UnknownAnalysisDatasetError"]


class UnknownAnalysisDatasetError(UserError):
    """A tool was asked about a dataset this run did not load."""


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
        """The dataset as CSV, kept once per dataset: every caller gets the same bytes.

        Two first callers may both render it (outside the lock: it is slow); the first
        stored is kept and handed to both.
        """
        with self._lock:
            cached = self._csv.get(dataset)
        if cached is None:
            made = self.frame(dataset).to_csv(index=False).encode()
            with self._lock:
                cached = self._csv.setdefault(dataset, made)
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
