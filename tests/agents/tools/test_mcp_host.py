"""`McpHost` against real MCP servers run as subprocesses: one written here with the SDK
(`tests/support/mcp_test_server.py`, over stdio and streamable HTTP) and the reference
servers from PyPI (`mcp-server-time`, `mcp-server-git` on a repository the test makes,
`mcp-server-fetch` on a page served on loopback).
A server that fails a call, hangs, or crashes mid-call gives its caller a tool error and is
started again; many callers share one session under its `max_in_flight`."""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.toolbox import ToolError
from kimmy_swarm.agents.tools.mcp import MAX_RESULT_CHARS, McpConfig, McpHost
from kimmy_swarm.swarm.errors import ConfigError
from tests.support.mcp_processes import serving_http

pytest.importorskip("mcp", reason="the MCP client needs the `mcp` extra")

SERVER = Path(__file__).parents[2] / "support" / "mcp_test_server.py"


def _config(state: Path, **settings: Any) -> McpConfig:
    entry = {"command": sys.executable, "args": [str(SERVER), str(state)], **settings}
    return McpConfig.from_json({"mcpServers": {"t": entry}})


def test_a_config_file_in_the_desktop_format_is_read_and_bad_ones_are_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "git": {"command": "mcp-server-git", "args": ["--repository", "."],
                "env": {"A": "1"}, "max_in_flight": 2},
        "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}, "type": "http"},
        "off": {"command": "x", "disabled": True},
    }}))  # fmt: skip
    config = McpConfig.load(path)
    assert list(config.servers) == ["git", "web"]  # the disabled one left out
    git = config.servers["git"]
    assert (git.max_in_flight, git.timeout_s, git.env) == (2, 60.0, {"A": "1"})

    def problem(data: Any) -> str:
        with pytest.raises(ConfigError) as caught:
            McpConfig.from_json(data, source="m.json")
        return str(caught.value)

    assert problem({"servers": {}}).startswith('m.json: expected {"mcpServers": {name:')
    assert "needs exactly one of 'command'" in problem({"mcpServers": {"a": {"args": []}}})
    both = problem({"mcpServers": {"a": {"command": "x", "url": "http://h"}}})
    assert both.endswith("it has 'command' and 'url'")
    dotted = problem({"mcpServers": {"a.b": {"command": "x"}}})
    assert "server name 'a.b' must be 1-32 letters" in dotted
    bad = problem({"mcpServers": {"a": {"command": "x", "timeout_s": -1}}})
    assert bad == "m.json: server 'a': timeout_s: Input should be greater than 0 (got -1)"
    assert "'ftp://h' is not an http:// or https:// URL" in problem(
        {"mcpServers": {"a": {"url": "ftp://h"}}}
    )
    with pytest.raises(ConfigError, match="is not JSON"):
        (tmp_path / "bad.json").write_text("{")
        McpConfig.load(tmp_path / "bad.json")
    with pytest.raises(ConfigError, match="No such file"):
        McpConfig.load(tmp_path / "missing.json")


def test_tools_join_a_toolbox_as_server_dot_tool_with_the_servers_schemas(tmp_path: Path) -> None:
    with McpHost(_config(tmp_path)) as host:
        box = host.toolbox()
        assert {"t.add", "t.echo_slow", "t.fail", "t.hang", "t.crash_once"} <= set(box)
        spec = box["t.add"].spec()["function"]
        assert spec["description"] == "Add two integers."
        assert spec["parameters"]["required"] == ["a", "b"]
        assert spec["parameters"]["properties"]["a"]["type"] == "integer"
        assert box["t.add"]('{"a": 2, "b": 3}') == "5"  # the model's JSON, as a sub-agent calls
        with pytest.raises(ToolError, match=r"^t\.fail: .*no disk$"):
            box["t.fail"](reason="no disk")
        with pytest.raises(ToolError, match=r"t\.add: .*"):  # the server checks its arguments
            box["t.add"](a="x", b=1)
        text = box["t.big"](chars=MAX_RESULT_CHARS + 500)
        assert text.endswith("… (500 more characters)")
        assert host.stats("t").calls == 4 and host.stats("t").errors == 2


def test_a_hung_call_is_cancelled_at_its_limit_and_the_session_goes_on(tmp_path: Path) -> None:
    with McpHost(_config(tmp_path, timeout_s=1)) as host:
        t0 = time.perf_counter()
        with pytest.raises(ToolError, match=r"t\.hang: no answer within 1 s"):
            host.call("t", "hang")
        assert time.perf_counter() - t0 < 15  # the limit, not the default 60 s
        assert host.call("t", "add", {"a": 1, "b": 1}) == "2"
        assert host.stats("t").timeouts == 1 and host.stats("t").restarts == 0
        # three in a row: taken for hung, started again
        for _ in range(3):
            with pytest.raises(ToolError):
                host.call("t", "hang")
        assert host.call("t", "starts") == "2"
        assert host.stats("t").restarts == 1


def test_a_server_that_crashes_mid_call_fails_that_call_and_is_started_again(
    tmp_path: Path,
) -> None:
    with McpHost(_config(tmp_path)) as host:
        with pytest.raises(ToolError, match=r"t\.crash_once: the MCP server 't' closed"):
            host.call("t", "crash_once")
        assert host.call("t", "crash_once") == "alive"  # waits for the restart
        assert host.call("t", "starts") == "2"
        assert host.stats("t").restarts == 1


def test_two_hundred_callers_share_one_session_under_its_cap(tmp_path: Path) -> None:
    with McpHost(_config(tmp_path, max_in_flight=8)) as host:
        with ThreadPoolExecutor(64) as pool:
            answers = list(pool.map(
                lambda i: host.call("t", "echo_slow", {"text": f"call-{i}", "seconds": 0.02}),
                range(200),
            ))  # fmt: skip
        stats = host.stats("t")
    texts = [a.split(" (peak")[0] for a in answers]
    assert texts == [f"call-{i}" for i in range(200)]  # none lost, none answered twice
    peaks = {int(a.split("peak ")[1].rstrip(")")) for a in answers}
    assert max(peaks) <= 8 and stats.peak_in_flight == 8  # the cap held, and was reached
    assert stats.calls == 200 and stats.errors == 0


def test_a_server_that_does_not_start_is_named_with_its_stderr(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text(
        "import sys\nprint('cannot open the database', file=sys.stderr)\nsys.exit(2)\n"
    )
    config = McpConfig.from_json({"mcpServers": {"db": {"command": sys.executable,
                                                        "args": [str(script)]}}})  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        McpHost(config, start_timeout_s=10).start()
    message = str(caught.value)
    assert message.startswith("MCP server 'db' did not start:")
    assert "its stderr ended: cannot open the database" in message


def test_a_server_over_streamable_http(tmp_path: Path) -> None:
    with serving_http(tmp_path) as url:
        config = McpConfig.from_json({"mcpServers": {"h": {"url": url}}})
        with McpHost(config) as host:
            assert "h.add" in host.toolbox()
            assert host.call("h", "add", {"a": 20, "b": 22}) == "42"


def _reference(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not Path(found).exists():
        pytest.skip(f"{name} is not installed (the dev extra installs it)")
    return found


def test_the_reference_time_server(tmp_path: Path) -> None:
    time_server = {"command": _reference("mcp-server-time"), "args": ["--local-timezone", "UTC"]}
    config = McpConfig.from_json({"mcpServers": {"time": time_server}})
    with McpHost(config) as host:
        assert {"time.get_current_time", "time.convert_time"} <= set(host.toolbox())
        now = json.loads(host.call("time", "get_current_time", {"timezone": "Europe/Paris"}))
        assert now["timezone"] == "Europe/Paris" and now["datetime"].startswith("20")
        with pytest.raises(ToolError, match=r"time\.get_current_time"):
            host.call("time", "get_current_time", {"timezone": "Mars/Olympus"})


def test_the_reference_git_server_on_a_repository_made_here(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "notes.md").write_text("hello\n")
    subprocess.run([*git, "add", "notes.md"], check=True)
    subprocess.run([*git, "commit", "-qm", "First notes"], check=True)
    (repo / "todo.md").write_text("later\n")
    git_server = {"command": _reference("mcp-server-git"), "args": ["--repository", str(repo)]}
    config = McpConfig.from_json({"mcpServers": {"git": git_server}})
    with McpHost(config) as host:
        assert {"git.git_status", "git.git_log"} <= set(host.toolbox())
        assert "todo.md" in host.call("git", "git_status", {"repo_path": str(repo)})
        assert "First notes" in host.call("git", "git_log", {"repo_path": str(repo)})
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        with pytest.raises(ToolError, match=r"git\.git_status"):
            host.call("git", "git_status", {"repo_path": str(outside)})


def test_the_reference_fetch_server_on_a_loopback_page(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_text(
        "<html><head><title>Notes</title></head><body><h1>Kimmy notes</h1>"
        "<p>Swarm runs keep whole answers.</p></body></html>"
    )
    (tmp_path / "robots.txt").write_text("User-agent: *\nAllow: /\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as web:
        threading.Thread(target=web.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{web.server_address[1]}"
        # the server refuses private addresses unless told (its own guard against SSRF)
        fetch = {"command": _reference("mcp-server-fetch"), "args": ["--allow-private-ips"]}
        with McpHost(McpConfig.from_json({"mcpServers": {"fetch": fetch}})) as host:
            assert "fetch.fetch" in host.toolbox()
            page = host.call("fetch", "fetch", {"url": f"{url}/page.html"})
            assert "Swarm runs keep whole answers." in page  # the page, as Markdown
            with pytest.raises(ToolError, match=r"fetch\.fetch"):
                host.call("fetch", "fetch", {"url": f"{url}/missing.html"})
        web.shutdown()


def test_a_call_waiting_when_the_host_closes_is_told(tmp_path: Path) -> None:
    host = McpHost(_config(tmp_path, timeout_s=120)).start()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(host.call, "t", "hang")
        time.sleep(1.0)
        t0 = time.perf_counter()
        host.close()
        with pytest.raises(ToolError, match=r"t\.hang: the run's MCP servers were closed"):
            waiting.result(timeout=30)
    assert time.perf_counter() - t0 < 20
