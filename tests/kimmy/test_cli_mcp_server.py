"""`kimmy mcp` as an MCP client (a desktop app) calls it: the SDK's own client starts it over
stdio, lists its tools, runs a swarm goal offline with progress notifications, reads the
run back (`runs`, `show_run`) and its files as resources; paths outside the server's root
and files outside a run's folder are refused."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="kimmy mcp needs the `mcp` extra")


async def _session_calls(root: Path) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "kimmy_swarm.cli",
            "mcp",
            "--root",
            str(root),
            "--runs-dir",
            str(root / "runs"),
        ],
        cwd=str(root),
    )
    seen: dict[str, Any] = {"progress": []}

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen["progress"].append((done, total, message))

    with (root / "server.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
            answer = await session.call_tool(
                "swarm", {"goal": "What drives employment?", "data": ["statsmodels:longley"]},
                progress_callback=progress,
            )  # fmt: skip
            seen["answer"] = answer.content[0].text
            seen["answer_error"] = answer.is_error
            run_id = seen["answer"].split(":")[0].removeprefix("run ")
            seen["runs"] = json.loads((await session.call_tool("runs", {})).content[0].text)
            seen["show"] = json.loads(
                (await session.call_tool("show_run", {"run_id": run_id})).content[0].text
            )
            file = await session.read_resource(f"kimmy://runs/{run_id}/files/answer.md")
            seen["file"] = file.contents[0].text
            outside = await session.call_tool("swarm", {"goal": "Review it", "corpus": "/etc"})
            seen["outside"] = (outside.is_error, outside.content[0].text)
            try:
                await session.read_resource(f"kimmy://runs/{run_id}/files/..%2Fserver.log")
                seen["escape"] = "read"
            except Exception as exc:  # noqa: BLE001  (the SDK's error type: any refusal)
                seen["escape"] = str(exc)
            seen["run_id"] = run_id
    return seen


def test_an_mcp_client_runs_a_goal_and_reads_it_back(tmp_path: Path) -> None:
    seen = asyncio.run(_session_calls(tmp_path))
    assert seen["tools"] == ["analyze", "resume", "review", "runs", "show_run", "swarm"]
    assert not seen["answer_error"], seen["answer"]
    assert seen["answer"].startswith(f"run {seen['run_id']}: completed")
    assert f"kimmy://runs/{seen['run_id']}/files/answer.md" in seen["answer"]
    progress = seen["progress"]
    assert progress and progress[-1][0] == progress[-1][1] > 1  # all sub-agents finished
    assert [p[0] for p in progress] == sorted(p[0] for p in progress)
    assert seen["runs"][0]["run_id"] == seen["run_id"]
    assert seen["show"]["status"] == "completed" and "answer.md" in seen["show"]["files"]
    assert seen["file"] and seen["file"] in seen["answer"]
    assert seen["outside"][0] and "outside the server's root" in seen["outside"][1]
    assert seen["escape"] != "read"


def test_over_http_the_server_wants_its_key(tmp_path: Path) -> None:
    import os
    import subprocess

    import httpx

    from kimmy_swarm.agents.tools.mcp import McpConfig, McpHost
    from tests.support.ports import free_port, wait_for_port

    port = free_port()
    env = {**os.environ, "KIMMY_MCP_API_KEY": "k-123"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kimmy_swarm.cli", "mcp", "--http", "--port", str(port),
         "--root", str(tmp_path), "--runs-dir", str(tmp_path / "runs")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}/mcp"
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401 and "Bearer" in refused.json()["error"]
        wrong = httpx.post(url, json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        server = {"url": url, "headers": {"Authorization": "Bearer k-123"}}
        with McpHost(McpConfig.from_json({"mcpServers": {"kimmy": server}})) as host:
            names = set(host.toolbox())
            assert {"kimmy.swarm", "kimmy.review", "kimmy.runs"} <= names
            assert host.call("kimmy", "runs") == "[]"
    finally:
        proc.terminate()
        proc.wait(15)


def test_http_on_another_host_without_a_key_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kimmy_swarm.cli.app import main

    monkeypatch.delenv("KIMMY_MCP_API_KEY", raising=False)
    code = main(["mcp", "--http", "--host", "0.0.0.0", "--root", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "--host 0.0.0.0 serves other machines: give a key" in err[0]
