"""From a run's results to its artifacts: the findings joined with their verdicts, the digest
the report roles work from, and `findings.jsonl`.

`findings.jsonl` has one JSON object per reported number — dataset, question, statistic,
columns, predictors, model, level, group (and its label, `note`), value, verdict,
recomputed, reason — so anyone can recompute it with `agents.tools.recompute.recompute`;
`fallbacks` names the analyst and fact-checker behind it whose model failed, so that their
role's offline procedure did the work (`agents.fallback`).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.analysis.schemas import check_of
from agents.fallback import OFFLINE_FALLBACK

if TYPE_CHECKING:
    from agents.analysis.schemas import DatasetAnalysis, FindingChecks
    from agents.analysis.tools import AnalysisBoard
    from agents.tools.finding import NumericFinding, Verdict

#: The verdict of a finding whose fact-check did not run (its check subtask failed).
UNCHECKED = "unchecked"
VERDICTS = ("verified", "mismatch", "unverifiable", UNCHECKED)


def _key(finding: NumericFinding) -> str:
    return finding.model_dump_json()


def _clean(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _join(
    analysis: DatasetAnalysis, checks: FindingChecks | None, unchecked_reason: str
) -> list[dict[str, Any]]:
    """Each finding of an analysis with the verdict the fact-checker gave it."""
    by_key: dict[str, list[Verdict]] = defaultdict(list)
    for v in checks.verdicts if checks is not None else ():
        by_key[_key(v.finding)].append(v)
    rows = []
    for f in analysis.findings:
        found = by_key.get(_key(f))
        verdict = found.pop(0) if found else None
        rows.append(
            {
                "dataset": analysis.dataset,
                "question": analysis.question,
                "statistic": f.statistic,
                "columns": list(f.columns),
                "predictors": list(f.predictors) if f.predictors is not None else None,
                "method": f.method,
                "group": f.group,
                "note": f.note,
                "model": f.model,
                "level": f.level,
                "value": f.value,
                "verdict": verdict.verdict if verdict is not None else UNCHECKED,
                "recomputed": _clean(verdict.recomputed) if verdict is not None else None,
                "reason": verdict.reason if verdict is not None else unchecked_reason,
            }
        )
    return rows


def _ordered_ids(board: AnalysisBoard) -> list[str]:
    """Planned analyses in plan order, then any others the board saw (by id)."""
    ids = sorted(board.tasks, key=lambda i: board.tasks[i].n)
    seen = set(board.analyses) | {c.analysis for c in board.checks.values()}
    return ids + sorted(seen - set(ids))


def _model_fit(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The model's headline fit measure: R² for OLS, McFadden pseudo-R² otherwise."""
    for stat in ("r2", "pseudo_r2"):
        found = next((r for r in records if r["statistic"] == stat), None)
        if found is not None:
            return {"model": found["model"], "statistic": stat, "value": found["value"],
                    "verdict": found["verdict"]}  # fmt: skip
    return None


def _model_summary(records: list[dict[str, Any]]) -> tuple[float | None, dict[str, Any] | None]:
    r2 = next((r["value"] for r in records if r["statistic"] == "r2"), None)
    corrs = [r for r in records if r["statistic"] == "corr"]
    best = max(corrs, key=lambda r: abs(r["value"]), default=None)
    strongest = None
    if best is not None:
        a, b = best["columns"]
        strongest = {"a": a, "b": b, "r": best["value"], "verdict": best["verdict"]}
    return r2, strongest


def _entry(board: AnalysisBoard, aid: str) -> dict[str, Any]:
    task = board.tasks.get(aid)
    analysis = board.analyses.get(aid)
    checks = board.checks.get(check_of(aid))
    problems = list(checks.problems) if checks is not None else []
    fallback = analysis or (checks.dataset if checks is not None else None) or "?"
    base = {
        "id": aid,
        "dataset": task.dataset if task else getattr(fallback, "dataset", fallback),
        "question": task.question if task else getattr(fallback, "question", "?"),
    }
    if analysis is None:
        failed = [p for p in board.problems if p.startswith(f"{aid} ")]
        counts = dict.fromkeys(VERDICTS, 0)
        return {**base, "status": "failed", "answered": False, "applicable": True,
                "interpretation": {}, "reason": "", "model": None, "model_reason": "",
                "notes": [], "fit": None,
                "rows": None, "columns": None, "target": None, "predictors": [],
                "summary": "", "r2": None, "strongest_corr": None, "findings": [],
                "counts": counts, "total": 0, "figures": [], "fallbacks": [],
                "problems": list(dict.fromkeys([*failed, *problems]))}  # fmt: skip
    why = f"the fact-check {check_of(aid)} did not run" + (f": {problems[0]}" if problems else "")
    records = _join(analysis, checks, why)
    r2, strongest = _model_summary(records)
    counts = {v: sum(r["verdict"] == v for r in records) for v in VERDICTS}
    return {
        **base,
        "status": analysis.status,
        "answered": analysis.answered,
        "applicable": analysis.applicable,
        "interpretation": dict(analysis.interpretation),
        "model": analysis.model,
        "model_reason": analysis.model_reason,
        "notes": list(analysis.notes),
        "fit": _model_fit(records),
        "reason": analysis.reason,
        "rows": analysis.rows,
        "columns": analysis.columns,
        "target": analysis.target,
        "predictors": list(analysis.predictors),
        "summary": analysis.summary,
        "r2": r2,
        "strongest_corr": strongest,
        "findings": records,
        "counts": counts,
        "total": len(records),
        "figures": [
            {"figure_id": f.figure_id, "kind": f.kind, "title": f.title} for f in analysis.figures
        ],
        "problems": list(dict.fromkeys([*analysis.problems, *problems])),
        "fallbacks": [
            sid
            for sid, out in ((aid, analysis), (check_of(aid), checks))
            if out is not None and out.made_by == OFFLINE_FALLBACK
        ],
    }


def run_problems(board: AnalysisBoard) -> list[str]:
    """Problems of the whole run: datasets that did not load, subtasks that failed."""
    loads = [f"dataset {spec!r} was not loaded: {msg}" for spec, msg in board.load_errors.items()]
    return list(dict.fromkeys([*loads, *board.problems]))


def results_digest(board: AnalysisBoard) -> dict[str, Any]:
    """Everything the reports show: per analysis its findings with verdicts, and totals."""
    entries = [_entry(board, aid) for aid in _ordered_ids(board)]
    totals = {v: sum(e["counts"][v] for e in entries) for v in VERDICTS}
    totals.update(analyses=len(entries), findings=sum(e["total"] for e in entries))
    return {
        "datasets": list(board.datasets),
        "not_loaded": dict(board.load_errors),
        "problems": run_problems(board),
        "totals": totals,
        "analyses": entries,
    }


def finding_records(board: AnalysisBoard) -> list[dict[str, Any]]:
    """One record per reported number (the lines of findings.jsonl), in analysis order."""
    out = []
    for entry in results_digest(board)["analyses"]:
        out.extend(
            {"analysis": entry["id"], **r, "fallbacks": entry["fallbacks"]}
            for r in entry["findings"]
        )
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write records as JSON lines (strict JSON: no NaN)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
    return path


__all__ = [
    "UNCHECKED",
    "VERDICTS",
    "finding_records",
    "results_digest",
    "run_problems",
    "write_jsonl",
]
