"""What counts as JSON output (checked for every sub-agent, so it has a fast path)."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

import pytest

from kimmy_swarm.swarm.schema import SubtaskStatus
from kimmy_swarm.swarm.subtask_runner import _is_json


@pytest.mark.parametrize(
    "value",
    [
        None, True, 0, -3, 1.5, "x", [], {},
        {"a": 1, "b": [1, 2.5, {"c": None}], "d": {"e": "f"}},
        [[[{"deep": [True]}]]],
        SubtaskStatus.DONE,  # a str subclass serializes as its value
        OrderedDict(a=1),
    ],
)  # fmt: skip
def test_json_data_is_accepted(value: Any) -> None:
    assert _is_json(value)
    json.dumps(value, allow_nan=False)  # and really is JSON


@pytest.mark.parametrize(
    "value",
    [
        float("nan"), float("inf"), {"x": float("-inf")}, {1: "int key"}, {"a": {(1, 2): 3}},
        {1, 2}, {"s": {1}}, [b"bytes"], object(), {"ok": [1, {"bad": object()}]},
    ],
)  # fmt: skip
def test_non_json_is_refused(value: Any) -> None:
    assert not _is_json(value)
