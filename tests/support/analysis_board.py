"""A small `AnalysisBoard` in every state the reports must show, built without a swarm.

Three planned analyses of statsmodels' longley:

- `analyze:1` complete, made by the offline fallback, with four findings: the GNP mean
  (verified), a wrong TOTEMP mean (mismatch), an R² (verified) and a correlation the
  fact-checker did not return (unchecked); one heatmap figure;
- `analyze:2` failed: no analysis, its check records a problem, the run a failure line;
- `analyze:3` partial (its question could not be modelled), its check never ran.
"""

from __future__ import annotations

from pathlib import Path

from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.schemas import (
    AnalysisTask,
    DatasetAnalysis,
    FigureOut,
    FindingChecks,
)
from kimmy_swarm.agents.tools.datasets import load_dataset
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.agents.tools.recompute import verify

__all__ = ["DATASET", "FAILURE", "PNG", "checked_board"]

DATASET = "statsmodels:longley"
#: The run's problem line of the failed analysis.
FAILURE = "analyze:2 failed (RuntimeError: boom)"
PNG = b"\x89PNG\r\n\x1a\nfake"


def checked_board(out_dir: Path) -> AnalysisBoard:
    """The board described in the module docstring, writing into `out_dir`."""
    ds = load_dataset(DATASET)
    board = AnalysisBoard({DATASET: ds}, out_dir=out_dir, load_errors={"nope.csv": "no file"})
    for n in (1, 2, 3):
        board.record_task(f"analyze:{n}", AnalysisTask(n=n, dataset=DATASET, question=f"q{n}"))
    findings = [
        NumericFinding(statistic="mean", columns=["GNP"], value=387698.4375),
        NumericFinding(statistic="mean", columns=["TOTEMP"], value=1.0),
        NumericFinding(statistic="r2", columns=["TOTEMP"], value=0.9674, predictors=["GNP"]),
        NumericFinding(statistic="corr", columns=["GNP", "TOTEMP"], value=0.99),
    ]
    board.add_figure("longley-heatmap", PNG)
    analysis = DatasetAnalysis(
        dataset=DATASET, question="q1", findings=findings, rows=16, columns=7, target="TOTEMP",
        predictors=["GNP"], model="ols", model_reason="TOTEMP is continuous",
        interpretation={"model": "GNP explains TOTEMP", "question": "GNP"},
        figures=[FigureOut(figure_id="longley-heatmap", kind="heatmap", title="Correlations")],
        made_by="offline_fallback",
    )  # fmt: skip
    board.record_analysis("analyze:1", analysis)
    verdicts = [verify(ds.frame, f) for f in findings[:3]]
    board.record_checks("check:1", FindingChecks(analysis="analyze:1", dataset=DATASET,
                                                 verdicts=verdicts))  # fmt: skip
    board.record_checks("check:2", FindingChecks(analysis="analyze:2", dataset=DATASET,
                                                 problems=["no analysis to check"]))  # fmt: skip
    board.add_problem(FAILURE)
    partial = analysis.model_copy(
        update={"question": "q3", "status": "partial", "reason": "no model", "made_by": "offline"}
    )
    board.record_analysis("analyze:3", partial)
    return board
