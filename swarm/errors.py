"""The exception tree of the swarm side (`swarm`, `agents`, `rewards`): one root, four
families, and the store.

    SwarmError
    ├── UserError          bad input (plan, flag, path, configuration): the message names
    │                      the bad value and what is allowed; the CLI prints it as one line
    ├── ModelError         the model *server* failed: transport, HTTP status, a body that is
    │   └── RetryableModelError   no completion; timeouts, 429, 5xx, connection errors and
    │                      2xx bodies that are truncated or not a completion retry
    ├── OutputError        an output is unusable: a worker's does not fit its subtask's
    │                      schema (`OutputValidationError`), a model's answer stayed invalid
    │                      after the repair turn (`ModelBehaviourError`)
    ├── LimitError         a budget, timeout, step or spawn limit was reached
    └── StoreError         the run store could not write
        └── FilesNotWrittenError  nor could a finished run's files (its output folder)

Whether the scheduler retries a failed attempt is decided by type (`is_retryable`): the
classes whose `retryable` is true (`RetryableModelError`, `SubtaskTimeoutError`, a remote
error that was retryable where it was raised), never by an attribute of a foreign exception.
The model side (`model/`, `kernels/`) has its own roots: `model.errors.KimiModelError`
and `kernels.errors.KernelError`.
"""

from __future__ import annotations

from collections.abc import Sequence


class SwarmError(Exception):
    """Root of every error the swarm side raises on purpose.

    `retryable` is a property of the type (set on the class), except for errors that stand
    for an exception raised elsewhere (`RemoteWorkerError`), which carry the original's.
    """

    retryable: bool = False


def is_retryable(exc: BaseException) -> bool:
    """Whether the scheduler may retry an attempt that raised `exc` (by its type)."""
    return isinstance(exc, SwarmError) and exc.retryable


# --- user errors -----------------------------------------------------------------------


class UserError(SwarmError):
    """Bad input from the user: the message says what was wrong and what is allowed."""


class ConfigError(UserError):
    """A bad option value, environment variable or runs directory."""


class RunNotFoundError(UserError):
    """No stored run has the requested id."""

    def __init__(self, run_id: str, known: Sequence[str] = ()) -> None:
        hint = f"; known runs: {', '.join(known[:5])}" if known else "; `kimmy runs` lists them"
        super().__init__(f"no run with id {run_id!r}{hint}")
        self.run_id = run_id


class AmbiguousRunIdError(RunNotFoundError):
    """A run id prefix matches more than one stored run; `matches` lists them, newest first."""

    def __init__(self, run_id: str, matches: Sequence[str], *, shown: int = 5) -> None:
        more = f", … ({len(matches) - shown} more)" if len(matches) > shown else ""
        UserError.__init__(
            self,
            f"run id prefix {run_id!r} is ambiguous: it matches {len(matches)} runs "
            f"({', '.join(matches[:shown])}{more}); give more of the id, or `latest` for "
            "the newest run",
        )
        self.run_id = run_id
        self.matches: tuple[str, ...] = tuple(matches)


class PlanValidationError(UserError):
    """A plan is not a valid DAG. `ids` names the offending subtasks."""

    def __init__(self, message: str, ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.ids: tuple[str, ...] = tuple(ids)


class EmptyPlanError(PlanValidationError):
    """The plan has no subtasks."""


class DuplicateIdError(PlanValidationError):
    """Two subtasks share an id."""


class UnknownDependencyError(PlanValidationError):
    """A subtask depends on an id that is not in the plan."""


class UnknownRoleError(PlanValidationError):
    """A subtask names a role that no worker is registered for."""


class UnknownSchemaError(PlanValidationError):
    """A subtask names an output schema that is not registered."""


class CycleError(PlanValidationError):
    """The dependencies form a cycle; `cycle` lists one, in order."""

    def __init__(self, cycle: Sequence[str]) -> None:
        path = " -> ".join([*cycle, cycle[0]]) if cycle else "?"
        super().__init__(f"plan has a dependency cycle: {path}", ids=cycle)
        self.cycle: tuple[str, ...] = tuple(cycle)


class PlanLimitError(PlanValidationError):
    """The plan is larger than an allowed limit."""


class WaitError(UserError):
    """A sub-agent asked to wait for subtasks it may not wait for (unknown, not spawned by
    it, or depending on it: waiting would never end). `ids` names them."""

    def __init__(self, message: str, ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.ids: tuple[str, ...] = tuple(ids)


# --- model errors ----------------------------------------------------------------------


class ModelError(SwarmError):
    """A model call failed. `status` is the HTTP status when there was one."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RetryableModelError(ModelError):
    """A transient failure: timeout, 429, 5xx, a connection error or a malformed 2xx body."""

    retryable = True


class ModelRateLimitedError(RetryableModelError):
    """The server answered 429 (or 503): it is overloaded; back off."""


class ModelTimeoutError(RetryableModelError):
    """The server did not answer within the client's timeout."""


class ModelConnectionError(RetryableModelError):
    """The server could not be reached (refused, reset, DNS)."""


class ModelUnreachableError(ModelConnectionError):
    """The model server has refused connections for longer than its circuit breaker waits
    (`swarm.llm.circuit`): the run stops, resumable, instead of failing its sub-agents one
    by one."""

    retryable = False


class ModelServerError(RetryableModelError):
    """The server answered 5xx."""


class ModelRequestError(ModelError):
    """The server rejected the request (4xx other than 429): retrying will not help."""


class ModelResponseError(RetryableModelError):
    """The server answered 2xx with a body that is not a chat completion: truncated, not
    JSON, or JSON without the fields of one. Retried: the request was fine (the server
    accepted it), so the fault is the server's or the network's — an overloaded server or
    proxy cuts bodies short, and the next answer is usually whole. A server that always
    answers so fails each subtask after its retries, with this error."""


# --- limits ----------------------------------------------------------------------------


class LimitError(SwarmError):
    """A budget, timeout or spawn limit was reached."""


class SubtaskTimeoutError(LimitError):
    """One attempt of a subtask ran past its timeout."""

    retryable = True

    def __init__(self, subtask_id: str, timeout_s: float) -> None:
        super().__init__(f"subtask {subtask_id!r} ran past its timeout of {timeout_s:g}s")
        self.subtask_id = subtask_id
        self.timeout_s = timeout_s


class BudgetExceededError(LimitError):
    """A run budget (sub-agents, tokens, deadline) is spent."""


class SpawnError(LimitError):
    """A dynamic spawn was refused (cycle, unknown dependency, depth or count limit)."""

    def __init__(self, message: str, ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.ids: tuple[str, ...] = tuple(ids)


class ContextOverflowError(LimitError):
    """A prompt could not be made to fit the model's context (after splits and retries)."""


class StoreError(SwarmError):
    """The run store could not write: the run stops, and nothing unstored was acknowledged."""


class FilesNotWrittenError(StoreError):
    """A finished run's files could not be written into its output folder (the disk is
    full, the folder was removed or made read-only): the run is stored as `failed`, not
    `completed`, and a resume writes them."""


# --- unusable outputs ------------------------------------------------------------------


class OutputError(SwarmError):
    """An output is unusable; retrying the same input is not expected to help."""


class OutputValidationError(OutputError):
    """A worker's output does not match its subtask's output schema (or is not JSON)."""


class ModelBehaviourError(OutputError):
    """The model's answer stayed invalid (schema, meaning check) after the repair turn."""


def validation_problems(
    exc: Exception,
    *,
    limit: int = 5,
    root: str = "(value)",
    show_input: bool = False,
    count_rest: bool = False,
) -> str:
    """A pydantic `ValidationError` as one line: `loc: message; loc: message`.

    Args:
        exc: the error (anything else: its `str`).
        limit: how many of its errors to name.
        root: what to call a location at the top level.
        show_input: add ` (got <value>)`, the offending input, cut to 60 characters.
        count_rest: end with `; and N more` when errors were left out.
    """
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    found = errors()
    parts = []
    for err in found[:limit]:
        text = f"{'.'.join(str(p) for p in err['loc']) or root}: {err['msg']}"
        if show_input:
            shown = repr(err.get("input"))
            text += f" (got {shown[:57] + '...' if len(shown) > 60 else shown})"
        parts.append(text)
    more = len(found) - limit
    return "; ".join(parts) + (f"; and {more} more" if count_rest and more > 0 else "")


__all__ = [
    "AmbiguousRunIdError",
    "BudgetExceededError",
    "ConfigError",
    "ContextOverflowError",
    "CycleError",
    "DuplicateIdError",
    "EmptyPlanError",
    "FilesNotWrittenError",
    "LimitError",
    "ModelBehaviourError",
    "ModelConnectionError",
    "ModelError",
    "ModelRateLimitedError",
    "ModelRequestError",
    "ModelResponseError",
    "ModelServerError",
    "ModelTimeoutError",
    "ModelUnreachableError",
    "OutputError",
    "OutputValidationError",
    "PlanLimitError",
    "PlanValidationError",
    "RetryableModelError",
    "RunNotFoundError",
    "SpawnError",
    "StoreError",
    "SubtaskTimeoutError",
    "SwarmError",
    "UnknownDependencyError",
    "UnknownRoleError",
    "UnknownSchemaError",
    "UserError",
    "WaitError",
    "is_retryable",
    "validation_problems",
]
