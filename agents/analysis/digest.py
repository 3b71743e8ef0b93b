"""The analysis digest: every analysis of a run with its findings joined to their verdicts.

`analysis_digest(board)` builds an `AnalysisDigest` from the `AnalysisBoard`; everything
that shows a run's results reads it: report.md (`agents.analysis.report_text`), report.html
(`agents.analysis.report_html`), findings.jsonl (`agents.analysis.outputs`), the pipeline's
outcome, and the report roles' `collect_results` tool, which gives a model the digest's JSON
(`model_dump()`; the field order is the order a model reads). A finding whose fact-check did
not run has the verdict `unchecked`, with the reason.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from kimmy_swarm.agents.analysis.schemas import check_of
from kimmy_swarm.agents.fallback import OFFLINE_FALLBACK
from kimmy_swarm.agents.tools.families import ModelFamily
from kimmy_swarm.agents.tools.finding import CorrMethod, Statistic

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis.board import AnalysisBoard
    from kimmy_swarm.agents.analysis.schemas import DatasetAnalysis, FindingChecks
    from kimmy_swarm.agents.tools.finding import NumericFinding, Verdict

__all__ = [
    "UNCHECKED",
    "VERDICTS",
    "AnalysisDigest",
    "AnalysisEntry",
    "DigestTotals",
    "FigureRef",
    "FindingRecord",
    "HeadlineFit",
    "StrongestCorrelation",
    "VerdictCounts",
    "VerdictLabel",
    "analysis_digest",
    "run_problems",
]

#: The verdict of a finding whose fact-check did not run (its check subtask failed).
UNCHECKED = "unchecked"
VERDICTS = ("verified", "mismatch", "unverifiable", UNCHECKED)
VerdictLabel = Literal["verified", "mismatch", "unverifiable", "unchecked"]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FindingRecord(_Part):
    """One reported number with its verdict: what it is a statistic of (the fields of
    `NumericFinding`), the value reported, and what the fact-checker recomputed and said."""

    dataset: str
    question: str
    statistic: Statistic
    columns: list[str]
    predictors: list[str] | None
    method: CorrMethod
    group: str | None
    note: str
    model: ModelFamily
    level: str
    part: Literal["", "any", "positive"] = ""
    cov_type: Literal["nonrobust", "HC3"] = "nonrobust"
    nominal: list[str] = []
    without_row: int | None = None
    without_influential: bool = False
    value: float
    verdict: VerdictLabel
    #: The recomputed value (None: not recomputed, or not finite).
    recomputed: float | None
    reason: str


class HeadlineFit(_Part):
    """A model's headline fit measure: R² for OLS, McFadden pseudo-R² otherwise."""

    model: ModelFamily
    statistic: Literal["r2", "pseudo_r2"]
    value: float
    verdict: VerdictLabel


class StrongestCorrelation(_Part):
    """The reported correlation with the largest |r|."""

    a: str
    b: str
    r: float
    verdict: VerdictLabel


class FigureRef(_Part):
    """A figure of an analysis (its PNG is `figures/<figure_id>.png`)."""

    figure_id: str
    kind: Literal["histogram", "scatter", "heatmap"]
    title: str


class VerdictCounts(_Part):
    """How many findings got each verdict (`VERDICTS`)."""

    verified: int
    mismatch: int
    unverifiable: int
    unchecked: int


class DigestTotals(VerdictCounts):
    """The verdict counts of the whole run, with its numbers of analyses and findings."""

    analyses: int
    findings: int


class AnalysisEntry(_Part):
    """One planned analysis (dataset, question): its answer, findings, verdicts, figures.

    A failed analysis (`status` "failed") has no findings and None for what it would have
    measured (`rows`, `columns`); its `problems` say why it failed.
    """

    id: str
    dataset: str
    question: str
    status: Literal["complete", "partial", "failed"]
    answered: bool
    applicable: bool
    interpretation: dict[str, str]
    model: str | None
    model_reason: str
    notes: list[str]
    fit: HeadlineFit | None
    reason: str
    rows: int | None
    columns: int | None
    target: str | None
    predictors: list[str]
    summary: str
    r2: float | None
    strongest_corr: StrongestCorrelation | None
    findings: list[FindingRecord]
    counts: VerdictCounts
    total: int
    figures: list[FigureRef]
    problems: list[str]
    #: The sub-agents behind this entry (analyst, fact-checker) whose model failed, so that
    #: their role's offline procedure did the work (`agents.fallback`).
    fallbacks: list[str]


class AnalysisDigest(_Part):
    """Everything the reports show: the datasets, the run's problems, the verdict totals and
    every analysis in plan order."""

    datasets: list[str]
    not_loaded: dict[str, str]
    problems: list[str]
    totals: DigestTotals
    analyses: list[AnalysisEntry]


def _key(finding: NumericFinding) -> str:
    return finding.model_dump_json()


def _clean(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _join(
    analysis: DatasetAnalysis, checks: FindingChecks | None, unchecked_reason: str
) -> list[FindingRecord]:
    """Each finding of an analysis with the verdict the fact-checker gave it."""
    by_key: dict[str, list[Verdict]] = defaultdict(list)
    for v in checks.verdicts if checks is not None else ():
        by_key[_key(v.finding)].append(v)
    rows = []
    for f in analysis.findings:
        found = by_key.get(_key(f))
        verdict = found.pop(0) if found else None
        rows.append(
            FindingRecord(
                dataset=analysis.dataset,
                question=analysis.question,
                statistic=f.statistic,
                columns=list(f.columns),
                predictors=list(f.predictors) if f.predictors is not None else None,
                method=f.method,
                group=f.group,
                note=f.note,
                model=f.model,
                level=f.level,
                part=f.part,
                cov_type=f.cov_type,
                nominal=list(f.nominal),
                without_row=f.without_row,
                without_influential=f.without_influential,
                value=f.value,
                verdict=verdict.verdict if verdict is not None else UNCHECKED,
                recomputed=_clean(verdict.recomputed) if verdict is not None else None,
                reason=verdict.reason if verdict is not None else unchecked_reason,
            )
        )
    return rows


def _ordered_ids(board: AnalysisBoard) -> list[str]:
    """Planned analyses in plan order, then any others the board saw (by id)."""
    ids = sorted(board.tasks, key=lambda i: board.tasks[i].n)
    seen = set(board.analyses) | {c.analysis for c in board.checks.values()}
    return ids + sorted(seen - set(ids))


def _headline_fit(records: list[FindingRecord]) -> HeadlineFit | None:
    for stat in ("r2", "pseudo_r2"):
        found = next((r for r in records if r.statistic == stat), None)
        if found is not None:
            return HeadlineFit(model=found.model, statistic=stat, value=found.value,
                               verdict=found.verdict)  # fmt: skip
    return None


def _strongest(records: list[FindingRecord]) -> StrongestCorrelation | None:
    corrs = [r for r in records if r.statistic == "corr"]
    best = max(corrs, key=lambda r: abs(r.value), default=None)
    if best is None:
        return None
    a, b = best.columns
    return StrongestCorrelation(a=a, b=b, r=best.value, verdict=best.verdict)


def _counts(records: list[FindingRecord]) -> VerdictCounts:
    return VerdictCounts(**{v: sum(r.verdict == v for r in records) for v in VERDICTS})


def _failed_entry(board: AnalysisBoard, aid: str, dataset: str, question: str,
                  problems: list[str]) -> AnalysisEntry:  # fmt: skip
    failed = [p for p in board.problems if p.startswith(f"{aid} ")]
    return AnalysisEntry(
        id=aid, dataset=dataset, question=question, status="failed", answered=False,
        applicable=True, interpretation={}, model=None, model_reason="", notes=[], fit=None,
        reason="", rows=None, columns=None, target=None, predictors=[], summary="", r2=None,
        strongest_corr=None, findings=[], counts=_counts([]), total=0, figures=[],
        problems=list(dict.fromkeys([*failed, *problems])), fallbacks=[],
    )  # fmt: skip


def _entry(board: AnalysisBoard, aid: str) -> AnalysisEntry:
    task = board.tasks.get(aid)
    analysis = board.analyses.get(aid)
    checks = board.checks.get(check_of(aid))
    problems = list(checks.problems) if checks is not None else []
    fallback = analysis or (checks.dataset if checks is not None else None) or "?"
    dataset = task.dataset if task else getattr(fallback, "dataset", fallback)
    question = task.question if task else getattr(fallback, "question", "?")
    if analysis is None:
        return _failed_entry(board, aid, dataset, question, problems)
    why = f"the fact-check {check_of(aid)} did not run" + (f": {problems[0]}" if problems else "")
    records = _join(analysis, checks, why)
    return AnalysisEntry(
        id=aid,
        dataset=dataset,
        question=question,
        status=analysis.status,
        answered=analysis.answered,
        applicable=analysis.applicable,
        interpretation=dict(analysis.interpretation),
        model=analysis.model,
        model_reason=analysis.model_reason,
        notes=list(analysis.notes),
        fit=_headline_fit(records),
        reason=analysis.reason,
        rows=analysis.rows,
        columns=analysis.columns,
        target=analysis.target,
        predictors=list(analysis.predictors),
        summary=analysis.summary,
        r2=next((r.value for r in records if r.statistic == "r2"), None),
        strongest_corr=_strongest(records),
        findings=records,
        counts=_counts(records),
        total=len(records),
        figures=[
            FigureRef(figure_id=f.figure_id, kind=f.kind, title=f.title) for f in analysis.figures
        ],
        problems=list(dict.fromkeys([*analysis.problems, *problems])),
        fallbacks=[
            sid
            for sid, out in ((aid, analysis), (check_of(aid), checks))
            if out is not None and out.made_by == OFFLINE_FALLBACK
        ],
    )


def run_problems(board: AnalysisBoard) -> list[str]:
    """Problems of the whole run: datasets that did not load, subtasks that failed."""
    loads = [f"dataset {spec!r} was not loaded: {msg}" for spec, msg in board.load_errors.items()]
    return list(dict.fromkeys([*loads, *board.problems]))


def analysis_digest(board: AnalysisBoard) -> AnalysisDigest:
    """The digest of the run on `board`: per analysis its findings with verdicts, and totals."""
    entries = [_entry(board, aid) for aid in _ordered_ids(board)]
    totals = {v: sum(getattr(e.counts, v) for e in entries) for v in VERDICTS}
    return AnalysisDigest(
        datasets=list(board.datasets),
        not_loaded=dict(board.load_errors),
        problems=run_problems(board),
        totals=DigestTotals(
            **totals, analyses=len(entries), findings=sum(e.total for e in entries)
        ),
        analyses=entries,
    )
