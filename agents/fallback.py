"""Falling back to the offline procedure: when a sub-agent's model fails its subtask, the
role's procedure does it instead, and the output says so.

    agent = SubAgent(role, tools, fallback=True)

A model that fails *by its answers* — still invalid after the repair turn
(`OutputError`), no valid answer within the role's `max_steps` (`AgentStepLimitError`), a
task too long for its context (`ContextOverflowError`) — hands the subtask to the role's
procedure. A model *server* that answers but fails this subtask's request (`ModelError`:
an HTTP error such as a chat template's 500, a malformed completion, no answer in time)
hands it over too, once no retry is left (`falls_back_on_server_error`: a retryable error
on the subtask's last attempt, a non-retryable one at once). A server that cannot be
reached (`ModelConnectionError`) never does: the subtask fails loudly, so a dead server
never turns a model run into a silent offline run of 1,000 sub-agents. Budgets, the
subtask's own deadline and cancellation are not fallbacks either.

The fallback is recorded twice: an `AgentStep` with `outcome="fallback"` and the model's
error (the run's events, `kimmy show --events`, the trajectory), and on the output, when
its schema is `Provenance`: `made_by="offline_fallback"` and `fallback_error`. Every output
a `SubAgent` returns through a `Provenance` schema says who made it (`model`, `offline`,
`offline_fallback`), whatever the model wrote there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.json_schema import SkipJsonSchema

from kimmy_swarm.agents.loop.errors import AgentStepLimitError
from kimmy_swarm.swarm.errors import (
    ContextOverflowError,
    ModelConnectionError,
    ModelError,
    OutputError,
)

#: Who made an output: the model policy, the offline policy, or the offline procedure
#: after the model failed the subtask.
MadeBy = Literal["model", "offline", "offline_fallback"]
MADE_BY: tuple[str, ...] = ("model", "offline", "offline_fallback")
OFFLINE_FALLBACK: MadeBy = "offline_fallback"

#: The model-policy errors that hand a subtask to the offline procedure.
FALLBACK_ERRORS: tuple[type[Exception], ...] = (
    OutputError,
    AgentStepLimitError,
    ContextOverflowError,
)


def falls_back(exc: BaseException) -> bool:
    """Whether the model policy's `exc` is the model failing its subtask (not its server,
    a budget or a cancellation), so that the offline procedure may take over."""
    return isinstance(exc, FALLBACK_ERRORS)


def falls_back_on_server_error(exc: BaseException, retries_left: int) -> bool:
    """Whether a model server's error `exc` hands the subtask to the offline procedure:
    the server answered (or took too long) but failed this request, and no retry is left
    for it (`retries_left`: `SubtaskContext.retries_left`); never an unreachable server."""
    if not isinstance(exc, ModelError) or isinstance(exc, ModelConnectionError):
        return False
    return not exc.retryable or retries_left <= 0


class Provenance(BaseModel):
    """A mixin for output schemas: who made the output (set by `SubAgent`, never by the
    model; hidden from the JSON schema the model is shown)."""

    made_by: SkipJsonSchema[MadeBy | None] = None
    #: The model's error when `made_by` is `offline_fallback` (`Type: message`).
    fallback_error: SkipJsonSchema[str | None] = None


def fallbacks(outputs: Mapping[str, Any]) -> dict[str, str]:
    """The subtasks whose output the offline procedure made after the model failed, with
    the model's error, in the order of `outputs` (JSON outputs or `Provenance` models)."""
    found: dict[str, str] = {}
    for sid, output in outputs.items():
        data = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
        if isinstance(data, Mapping) and data.get("made_by") == OFFLINE_FALLBACK:
            found[sid] = str(data.get("fallback_error") or "")
    return found


def made_by_counts(outputs: Mapping[str, Any]) -> dict[str, int]:
    """How many of `outputs` each maker made (`MADE_BY`, every maker named, 0 included);
    outputs that say no maker are not counted."""
    counts = dict.fromkeys(MADE_BY, 0)
    for output in outputs.values():
        data = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
        if isinstance(data, Mapping) and data.get("made_by") in counts:
            counts[data["made_by"]] += 1
    return counts


def fallback_markdown(fell_back: Mapping[str, str]) -> list[str]:
    """The Markdown section (lines) of a report naming the sub-agents the offline procedure
    stood in for, with the model's error; no lines when there were none."""
    if not fell_back:
        return []
    why = "The model failed these sub-agents' tasks; their roles' offline procedures did them."
    return ["## Made by the offline procedure", "", why, "",
            *(f"- {sid}: {error}" for sid, error in fell_back.items()), ""]  # fmt: skip


__all__ = [
    "FALLBACK_ERRORS",
    "MADE_BY",
    "OFFLINE_FALLBACK",
    "MadeBy",
    "Provenance",
    "fallback_markdown",
    "fallbacks",
    "falls_back",
    "falls_back_on_server_error",
    "made_by_counts",
]
