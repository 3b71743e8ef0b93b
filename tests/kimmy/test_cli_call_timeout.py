"""`--call-timeout`: a fixed limit per model call; without it, limits that scale with each
request and the server's observed speed (`swarm.llm.call_timeout`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy.app import main
from kimmy.options import model_client
from swarm.llm import OpenAIChat
from tests.support.openai_server import OpenAIServer, delay, echo


def test_the_model_client_is_adaptive_unless_the_flag_fixes_the_limit() -> None:
    with OpenAIServer() as srv:
        adaptive = model_client(srv.base_url, None, None, required=True)
        fixed = model_client(srv.base_url, None, None, required=True, call_timeout=7.5)
    assert isinstance(adaptive, OpenAIChat) and isinstance(fixed, OpenAIChat)
    assert adaptive.timeout_s is None and adaptive.call_timeouts is not None
    assert fixed.timeout_s == 7.5 and fixed.call_timeouts is None


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
