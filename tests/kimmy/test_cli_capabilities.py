"""`kimmy analyze` / `kimmy review` probe their model server for what it honours, say what
they found, store it with the run, and adapt; `--structured-output/--no-structured-output`,
`--tools/--no-tools` and `--no-probe` skip probing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm.llm.capabilities import PROBE_PREFIX
from kimmy_swarm.swarm.store import RunStore
from tests.support.openai_server import OpenAIServer, ServerRequest, echo, probes_honoured, reply


@pytest.fixture(autouse=True)
def _no_env_server(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _analyze(tmp_path: Path, srv: OpenAIServer, *flags: str) -> int:
    """`kimmy analyze` against `srv`, without briefs: the roles' tools go to the model, in
    whichever form the server honours (what these tests are about)."""
    return main(["analyze", "statsmodels:longley", "--out", str(tmp_path / "out"),
                 "--base-url", srv.base_url, "--model", "test-model",
                 "--runs-dir", str(tmp_path / "runs"), "--no-briefs", *flags])  # fmt: skip


def _is_probe(request: ServerRequest) -> bool:
    return str(request.body["messages"][0].get("content") or "").startswith(PROBE_PREFIX)


def _stored_capabilities(runs: Path) -> Any:
    with RunStore(runs) as store:
        settings = store.load_run(store.list_runs()[0].run_id).settings
    return json.loads(json.dumps(settings))["pipeline"]["endpoint"]["capabilities"]


def test_a_server_that_honours_nothing_is_probed_said_stored_and_adapted_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer(default=reply("Let me think about it.")) as srv:
        code = _analyze(tmp_path, srv)
        requests = srv.chat_requests
    out = capsys.readouterr().out
    assert code == 0  # every sub-agent fell back to its procedure
    assert (
        "model capabilities: structured output no (probed), tools no (probed), "
        "parallel tool calls no (probed), logprobs no (probed)"
    ) in out
    probes = [r for r in requests if _is_probe(r)]
    work = [r.body for r in requests if not _is_probe(r)]
    # structured output in both formats, tools, logprobs: before any sub-agent's call
    assert len(probes) == 4 and requests[:4] == probes
    assert work, "the sub-agents called the model"
    for body in work:
        assert not {"tools", "tool_choice", "response_format"} & set(body)
        assert {m["role"] for m in body["messages"]} <= {"system", "user", "assistant"}
    assert any("# Tools" in b["messages"][0]["content"] for b in work)  # tools in text
    assert _stored_capabilities(tmp_path / "runs") == {
        "structured_output": False,
        "schema_format": "json_schema",
        "tools": False,
        "parallel_tool_calls": False,
        "logprobs": False,
    }


def test_flags_skip_probing_what_they_say(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer(default=probes_honoured(echo())) as srv:
        code = _analyze(tmp_path, srv, "--structured-output", "--no-tools")
        requests = srv.chat_requests
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert (
        "model capabilities: structured output yes (--structured-output), tools no (--no-tools), "
        "parallel tool calls no (--no-tools), logprobs yes (probed)"
    ) in out
    probes = [r.body for r in requests if _is_probe(r)]
    assert len(probes) == 1 and probes[0]["logprobs"] is True  # only what no flag says
    work = [r.body for r in requests if not _is_probe(r)]
    assert work and not any("tools" in b for b in work)
    assert any("response_format" in b for b in work)  # enforced: the answer turns ask for it
    assert _stored_capabilities(tmp_path / "runs")["tools"] is False


def test_no_probe_asks_nothing_and_takes_the_server_to_honour_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAIServer(default=echo()) as srv:
        code = _analyze(tmp_path, srv, "--no-probe")
        requests = srv.chat_requests
    assert code in (0, 1)
    assert "model capabilities" not in capsys.readouterr().out
    assert requests and not any(_is_probe(r) for r in requests)
    assert any("tools" in r.body for r in requests)  # native tools, as before probing
    assert _stored_capabilities(tmp_path / "runs") is None


def test_the_flags_are_documented_on_both_pipelines(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("analyze", "review"):
        assert main([command, "--help"]) == 0
        text = capsys.readouterr().out
        for flag in ("--no-structured-output", "--no-tools", "--no-probe"):
            assert flag in text, (command, flag)


def test_resume_adapts_as_the_run_found_without_probing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kimmy_swarm.agents import analysis

    seen: list[Any] = []
    real = analysis.resume_analysis

    def spy(run_id: str, **kwargs: Any) -> Any:
        seen.append(kwargs["model"].capabilities)
        return real(run_id, **kwargs)

    monkeypatch.setattr(analysis, "resume_analysis", spy)
    with OpenAIServer(default=reply("Let me think about it.")) as srv:
        assert _analyze(tmp_path, srv) == 0
        asked = len(srv.chat_requests)
        code = main(["resume", "latest", "--runs-dir", str(tmp_path / "runs")])
        after = srv.chat_requests[asked:]
    assert code == 0
    assert [c.model_dump() for c in seen] == [_stored_capabilities(tmp_path / "runs")]
    assert not seen[0].tools and not any(_is_probe(r) for r in after)
