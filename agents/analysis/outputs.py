"""findings.jsonl: one JSON object per reported number, from the run's `AnalysisDigest`.

Each line holds the analysis id, then what the number is a statistic of — dataset, question,
statistic, columns, predictors, method, group (and its label, `note`), model, level — the
value, verdict, recomputed value and reason, so anyone can recompute it with
`agents.tools.recompute.recompute`; `fallbacks` names the analyst and fact-checker behind
it whose model failed, so that their role's offline procedure did the work
(`agents.fallback`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.digest import analysis_digest

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis.board import AnalysisBoard

__all__ = ["finding_records", "write_jsonl"]


def finding_records(board: AnalysisBoard) -> list[dict[str, Any]]:
    """One record per reported number (the lines of findings.jsonl), in analysis order."""
    out = []
    for entry in analysis_digest(board).analyses:
        out.extend(
            {"analysis": entry.id, **r.model_dump(), "fallbacks": list(entry.fallbacks)}
            for r in entry.findings
        )
    return out


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    """Write records as JSON lines (strict JSON: no NaN)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n")
    return path
