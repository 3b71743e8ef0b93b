"""Batch parallel data analysis: one analyst per (dataset, question), a fact-checker that
recomputes every reported number, report.html, report.md and findings.jsonl.

    from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
    outcome = run_analysis(AnalysisConfig(["statsmodels:longley"], out=Path("out")))

`resume_analysis` continues a stored run; `AnalysisGrader` scores a stored analysis run
(verified numbers and answered questions).
"""

from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.config import AnalysisConfig
from kimmy_swarm.agents.analysis.digest import AnalysisDigest, AnalysisEntry, analysis_digest
from kimmy_swarm.agents.analysis.grader import AnalysisGrader
from kimmy_swarm.agents.analysis.pipeline import (
    AnalysisOutcome,
    DatasetLoadError,
    resume_analysis,
    run_analysis,
)
from kimmy_swarm.agents.analysis.roles import analysis_roles
from kimmy_swarm.agents.analysis.schemas import (
    GENERAL_QUESTION,
    AnalysisPlan,
    AnalysisTask,
    DatasetAnalysis,
    FindingChecks,
    ReportPage,
    ReportText,
)
from kimmy_swarm.agents.analysis.tools import build_toolbox

__all__ = [
    "GENERAL_QUESTION",
    "AnalysisBoard",
    "AnalysisConfig",
    "AnalysisDigest",
    "AnalysisEntry",
    "AnalysisGrader",
    "AnalysisOutcome",
    "AnalysisPlan",
    "AnalysisTask",
    "DatasetAnalysis",
    "DatasetLoadError",
    "FindingChecks",
    "ReportPage",
    "ReportText",
    "analysis_digest",
    "analysis_roles",
    "build_toolbox",
    "resume_analysis",
    "run_analysis",
]
