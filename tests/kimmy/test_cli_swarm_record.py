"""`kimmy swarm` stores how its model was reached in the run's pipeline record (a
`ModelEndpoint`, never a secret), and `kimmy resume` opens the same model from it."""

from __future__ import annotations

from typing import Any

import pytest

from kimmy_swarm.cli.commands.solve import _endpoint_of, _source_of
from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint


@pytest.mark.parametrize(
    ("source", "endpoint"),
    [
        ({"kind": "offline"}, ModelEndpoint()),
        ({"kind": "tiny"}, ModelEndpoint(kind="local", local="tiny")),
        ({"kind": "local", "path": "smollm2"}, ModelEndpoint(kind="local", local="smollm2")),
        (
            {"kind": "http", "base_url": "http://***@h:8000/v1", "model": "m"},
            ModelEndpoint(kind="http", base_url="http://***@h:8000/v1", model="m"),
        ),
    ],
)
def test_a_model_source_round_trips_through_the_record(
    source: dict[str, Any], endpoint: ModelEndpoint
) -> None:
    assert _endpoint_of(source) == endpoint
    assert _source_of(endpoint) == source


def test_a_url_is_stored_without_its_credentials() -> None:
    stored = _endpoint_of({"kind": "http", "base_url": "http://u:pw@h/v1", "model": "m"})
    assert "pw" not in stored.model_dump_json()
    assert _source_of(ModelEndpoint(kind="other")) == {"kind": "offline"}  # a Python object
