"""`--call-timeout`: a fixed limit per model call reaches the client `kimmy run` calls (the
client's adaptive and fixed limits are `swarm.llm`'s, tested in `tests/swarm/llm`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from tests.support.openai_server import OpenAIServer, delay, echo


def test_kimmy_run_calls_the_server_under_the_fixed_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"subtasks": [{"id": "a", "role": "writer"}]}))
    with OpenAIServer([delay(2.0, echo())]) as srv:
        code = main(
            ["run", str(plan), "--base-url", srv.base_url, "--call-timeout", "0.3",
             "--retries", "0", "--no-store"]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "within 0.3s (ReadTimeout; no HTTP status)" in " ".join(out.split())  # wrapped
