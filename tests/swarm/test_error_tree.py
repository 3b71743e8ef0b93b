"""The swarm side's error tree: four families under one root, retryability by type."""

from __future__ import annotations

import pytest

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm import errors as E


@pytest.mark.parametrize(
    "cls, family",
    [(E.ConfigError, E.UserError), (E.CycleError, E.UserError),
     (E.ModelTimeoutError, E.ModelError), (E.ModelRequestError, E.ModelError),
     (E.OutputValidationError, E.OutputError), (E.ModelBehaviourError, E.OutputError),
     (E.SubtaskTimeoutError, E.LimitError), (E.SpawnError, E.LimitError)],
)  # fmt: skip
def test_every_error_is_in_one_family(cls: type[E.SwarmError], family: type) -> None:
    families = (E.UserError, E.ModelError, E.OutputError, E.LimitError, E.StoreError)
    assert issubclass(cls, family)
    assert [f for f in families if issubclass(cls, f)] == [family]


def test_an_invalid_answer_is_an_output_error_not_a_server_failure() -> None:
    assert not issubclass(E.ModelBehaviourError, E.ModelError)


def test_retryable_is_decided_by_type() -> None:
    assert E.is_retryable(E.ModelServerError("502"))
    assert E.is_retryable(E.SubtaskTimeoutError("a", 1))
    assert not E.is_retryable(E.ModelRequestError("400"))
    foreign = ValueError("looks transient")
    foreign.retryable = True  # type: ignore[attr-defined]
    assert not E.is_retryable(foreign)


async def test_a_foreign_error_with_a_retryable_attribute_is_not_retried() -> None:
    """Before, any exception with `retryable = True` was retried (`getattr`)."""
    swarm = Swarm(max_retries=3, backoff=_fast_backoff())
    attempts: list[int] = []

    class Flaky(Exception):
        retryable = True

    @swarm.role("w")
    async def work(ctx: SubtaskContext) -> None:
        attempts.append(ctx.attempt)
        raise Flaky("transient?")

    result = await swarm.execute(Plan(subtasks=[Subtask(id="a", role="w")]))
    assert attempts == [1]
    error = result.results["a"].error
    assert error is not None and error.type == "Flaky" and not error.retryable


def _fast_backoff():  # type: ignore[no-untyped-def]
    from kimmy_swarm.swarm.limits import Backoff

    return Backoff(0.001, 0.002)
