"""Compact views of task results for the orchestrator: a token-budgeted digest per task
(status, the start of its output or its error), and pages of a full output."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from kimmy_swarm.swarm.schema import SubtaskResult

#: A digest never cuts an output shorter than this many characters.
MIN_ITEM_CHARS = 120


def output_text(output: Any) -> str:
    """A task's output as text: strings as they are, anything else as compact JSON."""
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, separators=(",", ":"), default=str)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f" … [{len(text) - limit} more characters: read_result]"


def digest(
    results: Mapping[str, SubtaskResult],
    agents: Mapping[str, str],
    *,
    budget_chars: int,
    pending: Sequence[str] = (),
) -> str:
    """The `wait` tool's answer: one entry per result, all within `budget_chars`.

    Each output gets an equal share of the budget (at least `MIN_ITEM_CHARS`); what is cut
    says how much more there is, to be read with `read_result`.
    """
    share = max(MIN_ITEM_CHARS, budget_chars // max(1, len(results)))
    entries = []
    for key, res in results.items():
        entry: dict[str, Any] = {
            "id": key,
            "agent": agents.get(key, res.role),
            "status": res.status.value,
        }
        if res.error is not None:
            entry["error"] = _cut(f"{res.error.type}: {res.error.message}", share)
        elif res.output is not None:
            entry["output"] = _cut(output_text(res.output), share)
        entries.append(entry)
    return json.dumps({"results": entries, "pending": list(pending)}, ensure_ascii=False)


def page(result: SubtaskResult, offset: int, limit: int) -> str:
    """The `read_result` tool's answer: `limit` characters of the output from `offset`."""
    text = output_text(result.output) if result.error is None else str(result.error.message)
    chunk = text[offset : offset + limit]
    end = offset + len(chunk)
    return json.dumps(
        {
            "id": result.id,
            "text": chunk,
            "offset": offset,
            "next_offset": end if end < len(text) else None,
            "total_chars": len(text),
        },
        ensure_ascii=False,
    )


__all__ = ["MIN_ITEM_CHARS", "digest", "output_text", "page"]
