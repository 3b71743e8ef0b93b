"""`validation_problems`: one line for a pydantic ValidationError, shared by every layer."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from kimmy_swarm.swarm.errors import validation_problems


class Point(BaseModel):
    x: int
    y: int
    z: int


def _error(data: object) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        Point.model_validate(data)
    return info.value


def test_names_locations_and_messages_up_to_the_limit() -> None:
    exc = _error({"x": "a", "y": "b", "z": "c"})
    assert validation_problems(exc, limit=2) == (
        "x: Input should be a valid integer, unable to parse string as an integer; "
        "y: Input should be a valid integer, unable to parse string as an integer"
    )
    counted = validation_problems(exc, limit=1, show_input=True, count_rest=True)
    assert counted.endswith("(got 'a'); and 2 more")


def test_root_location_long_inputs_and_other_exceptions() -> None:
    exc = _error("x" * 100)
    text = validation_problems(exc, root="(point)", show_input=True)
    assert text.startswith("(point): Input should be a valid dictionary")
    assert text.endswith("...)") and len(text) < 140
    assert validation_problems(ValueError("not JSON")) == "not JSON"
