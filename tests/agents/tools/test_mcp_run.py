"""MCP tools in a run: a swarm whose orchestrator creates a sub-agent with an MCP server's
tool (`--mcp-config` / `SolveConfig.mcp`), the sub-agent's call reaching the real server
and its result recorded in the transcript like any tool's; the stored settings keep no
secret of the config; the CLI names a bad config file in one line."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator import SolveConfig, resume_solve, run_solve
from kimmy_swarm.agents.pipeline_record import PIPELINE_KEY
from kimmy_swarm.agents.tools.mcp import NOT_STORED, McpConfig, McpHost
from kimmy_swarm.swarm import ApprovalPolicy, Swarm
from kimmy_swarm.swarm.errors import ConfigError, RunNotFoundError
from kimmy_swarm.swarm.llm.scripted import ScriptedChat
from kimmy_swarm.swarm.llm.types import ChatResponse, FunctionCall, ToolCall
from kimmy_swarm.swarm.schema import Usage
from kimmy_swarm.swarm.store import RunStore
from tests.support.orchestration import is_orchestrator

pytest.importorskip("mcp", reason="the MCP client needs the `mcp` extra")

SERVER = Path(__file__).parents[2] / "support" / "mcp_test_server.py"
USAGE = Usage(prompt_tokens=20, completion_tokens=5, total_tokens=25, model_calls=1)


def _mcp_file(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), str(tmp_path)],
             "env": {"SECRET_TOKEN": "s3cr3t"}}  # fmt: skip
    path.write_text(json.dumps({"mcpServers": {"calc": entry}}))
    return path


def _calls(*calls: tuple[str, dict[str, Any]]) -> ChatResponse:
    made = [ToolCall(id=f"c{i}", function=FunctionCall(name=n, arguments=json.dumps(a)))
            for i, (n, a) in enumerate(calls)]  # fmt: skip
    return ChatResponse(tool_calls=made, finish_reason="tool_calls", usage=USAGE)


def _adder(answer: str, offered: list[list[str]] | None = None) -> Any:
    """The scripted model of a run that adds 20 and 22: the orchestrator creates an `adder`
    with `calc.add` and finishes with `answer`; the adder calls `calc.add` and answers with
    its result (`offered` keeps the tools each of its calls was offered)."""

    def step(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
        if is_orchestrator(options):
            if not any(m["role"] == "tool" for m in messages):
                brief = messages[-1]["content"]
                assert "- calc.add: Add two integers." in brief  # told of the MCP tool
                return _calls(
                    ("create_subagent", {"name": "adder", "system_prompt": "Add with calc.add.",
                                         "tools": ["calc.add"]}),
                    ("assign_task", {"agent": "adder", "task": "What is 20 + 22?"}),
                    ("wait", {"ids": "all"}),
                )  # fmt: skip
            return _calls(("finish", {"answer": answer}))
        if offered is not None:
            offered.append([t["function"]["name"] for t in options.get("tools") or ()])
        results = [m for m in messages if m["role"] == "tool"]
        if not results:
            return _calls(("calc.add", {"a": 20, "b": 22}))
        return ChatResponse(content=json.dumps({"answer": results[-1]["content"], "sources": []}),
                            finish_reason="stop", usage=USAGE)  # fmt: skip

    return step


def test_a_created_sub_agent_calls_an_mcp_servers_tool(tmp_path: Path) -> None:
    offered: list[list[str]] = []
    step = _adder("20 + 22 = 42 (by calc.add)", offered)

    config = SolveConfig(goal="Add 20 and 22 with the calculator", out=tmp_path / "out",
                         model=ScriptedChat.always(step), runs_dir=tmp_path / "runs",
                         mcp=_mcp_file(tmp_path))  # fmt: skip
    out = run_solve(config)
    assert out.status == "completed" and out.answer == "20 + 22 = 42 (by calc.add)"
    assert offered and all(tools == ["calc.add"] for tools in offered)
    with RunStore(tmp_path / "runs", create=False) as store:
        run = store.load_run(out.run_id)
        calls = [e for e in store.events(out.run_id, types=["tool_called"]) if e.tool == "calc.add"]
    assert len(calls) == 1 and calls[0].ok and calls[0].result == "42"
    stored = run.settings[PIPELINE_KEY]["settings"]["mcp"]
    assert stored["servers"]["calc"]["env"] == {"SECRET_TOKEN": NOT_STORED}
    assert "s3cr3t" not in json.dumps(run.settings)
    assert (tmp_path / "out" / "mcp-logs" / "mcp-calc.log").exists()
    # the stored config cannot start a server whose secrets it lacks, and says so; a resume
    # given the file again starts it
    with pytest.raises(ConfigError, match="server 'calc': env SECRET_TOKEN; give the MCP config"):
        McpHost(McpConfig.model_validate(stored)).start()
    model = ScriptedChat.always(step)
    with pytest.raises(ConfigError, match="kimmy resume RUN --mcp-config FILE"):
        resume_solve(out.run_id, runs_dir=tmp_path / "runs", model=model)
    again = resume_solve(out.run_id, runs_dir=tmp_path / "runs", model=model,
                         mcp=_mcp_file(tmp_path))  # fmt: skip
    assert again.status == "completed" and again.answer == out.answer


@pytest.mark.parametrize("command", [["swarm", "Add 2 and 3"], ["analyze", "statsmodels:fair"],
                                     ["review", "{corpus}", "--topic", "x"]])  # fmt: skip
def test_the_cli_names_a_bad_mcp_config_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    from kimmy_swarm.cli.app import main

    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "title": "T", "abstract": "A."}) + "\n")
    bad = tmp_path / "mcp.json"
    bad.write_text(json.dumps({"mcpServers": {"calc": {"args": ["x"]}}}))
    argv = [a.replace("{corpus}", str(corpus)) for a in command]
    code = main([*argv, "--mcp-config", str(bad), "--out", str(tmp_path / "o"),
                 "--runs-dir", str(tmp_path / "r")])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("kimmy: error: MCP config ")
    assert "server 'calc' needs exactly one of 'command'" in err[0]


def test_an_mcp_servers_tool_waits_for_a_person_and_runs_the_edit(tmp_path: Path) -> None:
    step = _adder("done")
    runs = tmp_path / "runs"
    config = SolveConfig(goal="Add 20 and 22 with the calculator", out=tmp_path / "out",
                         model=ScriptedChat.always(step), runs_dir=runs,
                         mcp=_mcp_file(tmp_path),
                         approvals=ApprovalPolicy(tools=("calc.*",)))  # fmt: skip
    box: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: box.update(out=run_solve(config)))
    runner.start()
    person = Swarm(runs_dir=runs)
    try:
        for _ in range(1500):
            with contextlib.suppress(RunNotFoundError, ConfigError):
                waiting = person.approvals("latest", pending=True)
                if waiting:
                    break
            time.sleep(0.02)
        (call,) = waiting
        assert (call.tool, call.arguments) == ("calc.add", {"a": 20, "b": 22})
        person.approve(call.run_id, call.call_id, arguments={"a": 1, "b": 2})
    finally:
        runner.join(120)
    assert box["out"].status == "completed"
    with RunStore(runs, create=False) as store:
        (called,) = [e for e in store.events(call.run_id, types=["tool_called"])
                     if e.tool == "calc.add"]  # fmt: skip
    assert called.ok and called.result == "3"  # the edited call reached the server


def test_kimmy_run_gives_a_plans_sub_agent_an_mcp_servers_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kimmy_swarm.cli.app import main
    from tests.support.openai_server import OpenAIServer, probes_honoured, reply, tool_call

    spec = {"name": "adder", "system_prompt": "Add with calc.add.", "tools": ["calc.add"]}
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "goal": "add",
                "subtasks": [
                    {
                        "id": "sum",
                        "role": "adder",
                        "instructions": "What is 20 + 22?",
                        "role_spec": spec,
                    }
                ],
            }
        )
    )
    answer = json.dumps({"answer": "42", "sources": []})
    runs = tmp_path / "runs"
    with OpenAIServer([probes_honoured(tool_call("calc.add", {"a": 20, "b": 22})),
                       probes_honoured(reply(answer))], default=probes_honoured(reply(answer))
                      ) as srv:  # fmt: skip
        mcp = str(_mcp_file(tmp_path))
        code = main(["run", str(plan), "--base-url", srv.base_url, "--model", "m",
                     "--runs-dir", str(runs), "--mcp-config", mcp, "--json"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    with RunStore(runs, create=False) as store:
        (called,) = [e for e in store.events("latest", types=["tool_called"])]
        result = store.load_run("latest").results["sum"]
    assert (called.tool, called.ok, called.result) == ("calc.add", True, "42")
    assert result.output["answer"] == "42"
    assert (runs / "mcp-logs" / "mcp-calc.log").exists()
