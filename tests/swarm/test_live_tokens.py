"""Watching a streamed run from another process: the run's live files hold only the answer
being written (`swarm.live_tokens`), `kimmy show --agent ID --follow` prints it as it
arrives, and the dashboard's panel fills as the sub-agent writes (real headless Chromium).
The model is a real loopback HTTP server that streams its answer a word at a time."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.swarm import Plan, RunConfig, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm import events as ev
from kimmy_swarm.swarm.live_tokens import LiveTokens, live_file, read_live, want_file, watch_live
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.schema import SubtaskResult, SubtaskStatus
from kimmy_swarm.swarm.store import RunStore
from tests.support.browser import artifact_dir, browser_page
from tests.support.openai_behaviours import streamed_text
from tests.support.openai_server import OpenAIServer

WORDS = [f"word{i} " for i in range(24)]
RUN = "20250101-000000-stream"


def _event(cls: type[Any], **fields: Any) -> Any:
    return cls(run_id="r", ts=time.time(), **fields)


async def test_a_live_file_holds_only_the_answer_being_written(tmp_path: Path) -> None:
    sink = LiveTokens(tmp_path, "r", flush_s=3600)  # flushed by hand below
    sink.handle(_event(ev.TokenDelta, subtask_id="a:1", call=1, text="unwatched"))
    sink.flush()
    assert not live_file(tmp_path, "r").exists()  # nobody watches: nothing is written
    sink.handle(_event(ev.ModelCalled, subtask_id="a:1", latency_s=0.1))
    watch_live(tmp_path, "r", "a:1")
    watch_live(tmp_path, "r", "b")
    watch_live(tmp_path, "r", "b")  # once is enough
    assert want_file(tmp_path, "r").read_text().splitlines() == ["a:1", "b"]
    for text in ("Hel", "lo"):
        sink.handle(_event(ev.TokenDelta, subtask_id="a:1", call=2, text=text))
    assert read_live(tmp_path, "r", "a:1") == ""  # gathered, not written yet
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == "Hello"
    sink.handle(_event(ev.ModelCalled, subtask_id="a:1", latency_s=0.1))
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == ""  # the store has it whole now
    sink.handle(_event(ev.TokenDelta, subtask_id="a:1", call=3, text="search",
                       kind="tool_name"))  # fmt: skip
    sink.handle(_event(ev.TokenDelta, subtask_id="a:1", call=3, text='{"q": 1}',
                       kind="tool_arguments"))  # fmt: skip
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == '\n→ search({"q": 1}'
    done = SubtaskResult(id="a:1", role="x", status=SubtaskStatus.DONE)
    sink.handle(_event(ev.SubtaskFinished, result=done))
    sink.handle(_event(ev.TokenDelta, subtask_id="b", call=1, text="x"))
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == "" and read_live(tmp_path, "r", "b") == "x"
    # a call recorded before its pieces were written leaves nothing in the file
    sink.handle(_event(ev.TokenDelta, subtask_id="b", call=2, text="never written"))
    sink.handle(_event(ev.ModelCalled, subtask_id="b", latency_s=0.1))
    sink.handle(_event(ev.ModelCalled, subtask_id="b", latency_s=0.1))
    sink.flush()
    assert "never written" not in live_file(tmp_path, "r").read_text()
    sink.handle(_event(ev.RunFinished, status="completed"))
    assert not live_file(tmp_path, "r").exists() and not want_file(tmp_path, "r").exists()


async def test_a_watch_begun_mid_answer_gets_the_answer_so_far(tmp_path: Path) -> None:
    sink = LiveTokens(tmp_path, "r", flush_s=3600)
    for text in ("Once ", "upon "):
        sink.handle(_event(ev.TokenDelta, subtask_id="c", call=1, text=text))
    sink.flush()
    watch_live(tmp_path, "r", "c")
    sink.handle(_event(ev.TokenDelta, subtask_id="c", call=1, text="a time"))
    sink.flush()
    assert read_live(tmp_path, "r", "c") == "Once upon a time"


async def test_a_grown_live_file_is_replaced_by_the_answers_being_written(tmp_path: Path) -> None:
    sink = LiveTokens(tmp_path, "r", flush_s=3600, rotate_bytes=400)
    watch_live(tmp_path, "r", "a")
    watch_live(tmp_path, "r", "c")
    for n in range(1, 6):  # five answers written and recorded, one after another
        sink.handle(_event(ev.TokenDelta, subtask_id="a", call=n, text=f"answer {n} " * 3))
        sink.flush()
        sink.handle(_event(ev.ModelCalled, subtask_id="a", latency_s=0.1))
    sink.handle(_event(ev.TokenDelta, subtask_id="a", call=6, text="being written"))
    sink.handle(_event(ev.TokenDelta, subtask_id="c", call=1, text="also"))
    sink.flush()
    assert live_file(tmp_path, "r").stat().st_size < 400
    assert read_live(tmp_path, "r", "a") == "being written"
    assert read_live(tmp_path, "r", "c") == "also"


async def _write(ctx: SubtaskContext) -> str:
    answer = await ctx.model.chat([{"role": "user", "content": "write"}], max_tokens=64)
    return answer.content or ""


@pytest.fixture
def streaming_run(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A stored run streaming one sub-agent's answer, a word every 0.25 s, in a thread."""
    box: dict[str, Any] = {}
    with OpenAIServer([streamed_text(WORDS, delay_s=0.25)]) as srv:

        def run() -> None:
            async def go() -> None:
                async with OpenAIChat(srv.base_url, "m") as model:
                    swarm = Swarm(model=model, roles={"write": _write}, runs_dir=tmp_path,
                                  config=RunConfig(stream=True))  # fmt: skip
                    plan = Plan(goal="watch it write", subtasks=[Subtask(id="w0", role="write")])
                    box["result"] = await swarm.execute(plan, run_id=RUN)
                    swarm.close()

            asyncio.run(go())

        runner = threading.Thread(target=run, daemon=True)
        runner.start()
        for _ in range(500):  # until the sub-agent has started
            if (tmp_path / "kimmy.db").is_file():
                with RunStore(tmp_path, create=False) as store:
                    if RUN in store.run_ids() and store.attempt_counts(RUN).get("w0"):
                        break
            time.sleep(0.02)
        yield tmp_path, box
        runner.join(60)


def test_show_follow_prints_the_answer_as_it_is_written(
    streaming_run: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    runs, box = streaming_run
    assert main(["show", RUN, "--agent", "w0", "--follow", "--runs-dir", str(runs)]) == 0
    out = capsys.readouterr().out
    whole = "".join(WORDS)
    assert box["result"].results["w0"].output == whole
    _, _, rest = out.partition("writing: ")
    assert rest.startswith("word0 "), out  # it printed the answer while it was written …
    assert "model call 1" in rest  # … and then the call as the store holds it
    assert out.rstrip().endswith("(followed to the end: done)")
    assert not live_file(runs, RUN).exists()  # the run's live file went with it


def test_follow_needs_one_sub_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "latest", "--follow", "--runs-dir", str(tmp_path)]) == 2
    assert "--follow follows one sub-agent: give --agent ID" in capsys.readouterr().err


def test_the_dashboard_panel_fills_as_the_sub_agent_writes(
    streaming_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    from kimmy_swarm.swarm.dashboard import BackgroundServer, create_app

    runs, box = streaming_run
    out = artifact_dir(tmp_path)
    with browser_page() as page, BackgroundServer(create_app(runs, poll_s=0.1)) as srv:
        page.goto(srv.url + f"/#/run/{RUN}")
        page.locator('.node[data-id="w0"]').click()
        writing = page.locator("#writing")
        page.wait_for_function(
            "(document.getElementById('writing') || {}).textContent?.includes('word3')"
        )
        partial = writing.text_content() or ""
        assert partial.startswith("word0 ") and "word23" not in partial
        page.screenshot(path=str(out / "dashboard-writing.png"), full_page=True)
        # once the answer is stored, the panel shows the call and writes no more
        page.locator("#panel-body :text('word23')").first.wait_for(timeout=30_000)
        page.wait_for_function("!document.getElementById('writing')")
    assert box["result"].results["w0"].output == "".join(WORDS)
