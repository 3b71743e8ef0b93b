"""How an error is shown to a model and recorded: `Type: message`, cut to a bound."""

from __future__ import annotations

from kimmy_swarm.agents.loop import MAX_ERROR_CHARS, AgentStepLimitError, error_text
from kimmy_swarm.swarm.errors import LimitError


def test_error_text_names_the_type_and_is_cut() -> None:
    assert error_text(KeyError("no numbers under 'cubes'")) == (
        "KeyError: \"no numbers under 'cubes'\""
    )
    long = error_text(ValueError("x" * 2_000))
    assert len(long) == MAX_ERROR_CHARS and long.startswith("ValueError: xxx")


def test_the_step_limit_is_a_limit_error() -> None:
    assert issubclass(AgentStepLimitError, LimitError)
