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
from kimmy_swarm.swarm.delta_batcher import DeltaBatcher
from kimmy_swarm.swarm.live_tokens import LiveTokens, live_file, read_live, want_file, watch_live
from kimmy_swarm.swarm.llm import OpenAIChat
from kimmy_swarm.swarm.llm.stream_chunks import Delta
from kimmy_swarm.swarm.store import RunStore
from tests.support.browser import artifact_dir, browser_page
from tests.support.openai_behaviours import streamed_text
from tests.support.openai_server import OpenAIServer

WORDS = [f"word{i} " for i in range(24)]
RUN = "20250101-000000-stream"


class _NoSinks:
    """The journal of a run whose only reader of streamed pieces is the live file."""

    def wants(self, cls: type[Any]) -> bool:
        return False


def _live(tmp_path: Path, **options: Any) -> tuple[LiveTokens, DeltaBatcher]:
    """A live file reading a run's streamed calls, flushed by hand (never `start`ed)."""
    answers = DeltaBatcher(_NoSinks())  # type: ignore[arg-type]
    return LiveTokens(tmp_path, "r", answers, **options), answers


async def test_a_live_file_holds_only_the_answer_being_written(tmp_path: Path) -> None:
    sink, answers = _live(tmp_path)
    answers.open("a:1", 1)(Delta("unwatched"))
    sink.flush()
    assert not live_file(tmp_path, "r").exists()  # nobody watches: nothing is written
    answers.end("a:1", 1)
    watch_live(tmp_path, "r", "a:1")
    watch_live(tmp_path, "r", "b")
    watch_live(tmp_path, "r", "b")  # once is enough
    assert want_file(tmp_path, "r").read_text().splitlines() == ["a:1", "b"]
    to_a = answers.open("a:1", 2)
    for text in ("Hel", "lo"):
        to_a(Delta(text))
    assert read_live(tmp_path, "r", "a:1") == ""  # gathered, not written yet
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == "Hello"
    to_a(Delta(" there"))
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == "Hello there"  # only the new piece appended
    assert live_file(tmp_path, "r").read_text().count("Hel") == 1
    answers.end("a:1", 2)
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == ""  # the call ended: the store has it whole
    to_a = answers.open("a:1", 3)
    to_a(Delta("search", "tool_name"))
    to_a(Delta('{"q": 1}', "tool_arguments"))
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == '\n→ search({"q": 1}'
    answers.end("a:1", 3)  # its sub-agent gave up the call (a timeout, say)
    answers.open("b", 1)(Delta("x"))
    sink.flush()
    assert read_live(tmp_path, "r", "a:1") == "" and read_live(tmp_path, "r", "b") == "x"
    # a call that ended before its pieces were written leaves nothing in the file
    answers.end("b", 1)
    answers.open("b", 2)(Delta("never written"))
    answers.end("b", 2)
    sink.flush()
    assert "never written" not in live_file(tmp_path, "r").read_text()
    assert read_live(tmp_path, "r", "b") == ""
    sink.close()  # the run ended
    assert not live_file(tmp_path, "r").exists() and not want_file(tmp_path, "r").exists()


async def test_a_watch_begun_mid_answer_gets_the_answer_so_far(tmp_path: Path) -> None:
    sink, answers = _live(tmp_path)
    to_c = answers.open("c", 1)
    for text in ("Once ", "upon "):
        to_c(Delta(text))
    sink.flush()
    watch_live(tmp_path, "r", "c")
    to_c(Delta("a time"))
    sink.flush()
    assert read_live(tmp_path, "r", "c") == "Once upon a time"


async def test_a_new_attempts_first_call_replaces_the_last_attempts(tmp_path: Path) -> None:
    """A new attempt numbers its calls from 1 again: its call 1 is another call than the
    last attempt's call 1, even when it began before the file saw that one end."""
    sink, answers = _live(tmp_path)
    watch_live(tmp_path, "r", "a")
    answers.open("a", 1)(Delta("first attempt, a long answer"))
    sink.flush()
    answers.end("a", 1)  # timed out; the retry begins before the next flush
    answers.open("a", 1)(Delta("retry"))
    sink.flush()
    assert read_live(tmp_path, "r", "a") == "retry"


async def test_a_grown_live_file_is_replaced_by_the_answers_being_written(tmp_path: Path) -> None:
    sink, answers = _live(tmp_path, rotate_bytes=400)
    watch_live(tmp_path, "r", "a")
    watch_live(tmp_path, "r", "c")
    for n in range(1, 6):  # five answers written and recorded, one after another
        answers.open("a", n)(Delta(f"answer {n} " * 3))
        sink.flush()
        answers.end("a", n)
    answers.open("a", 6)(Delta("being written"))
    answers.open("c", 1)(Delta("also"))
    sink.flush()
    assert live_file(tmp_path, "r").stat().st_size < 400
    assert read_live(tmp_path, "r", "a") == "being written"
    assert read_live(tmp_path, "r", "c") == "also"


async def test_a_run_whose_sinks_take_no_token_deltas_builds_none() -> None:
    """Without a sink that handles `TokenDelta` (the live file reads the batcher itself),
    the pieces are held, not published, and no timer runs; a sink that handles them gets
    them."""
    published: list[str] = []

    class Journal:
        def __init__(self, wanted: bool) -> None:
            self.wanted = wanted

        def wants(self, cls: type[Any]) -> bool:
            return self.wanted and cls is ev.TokenDelta

        def publish(self, cls: type[Any], **f: Any) -> None:
            published.append(f["text"])

    quiet = DeltaBatcher(Journal(False))  # type: ignore[arg-type]
    quiet.open("a", 1)(Delta("held"))
    assert quiet.answer("a") is not None and quiet._timer is None
    quiet.end("a", 1)
    assert published == [] and quiet.answer("a") is None
    heard = DeltaBatcher(Journal(True))  # type: ignore[arg-type]
    heard.open("a", 1)(Delta("heard"))
    heard.end("a", 1)
    assert published == ["heard"]
    heard.close()


def test_only_sinks_that_handle_token_deltas_ask_for_them(tmp_path: Path) -> None:
    from kimmy_swarm.swarm.event_fold import EventFold
    from kimmy_swarm.swarm.journal import Journal
    from kimmy_swarm.swarm.progress import EventStream, LineSink

    class Folds(EventFold):
        def on_token_delta(self, e: ev.TokenDelta) -> None: ...

    def journal(*sinks: Any) -> Journal:
        return Journal("r", store=None, sinks=sinks, seq_start=0, on_fatal=print)

    assert not journal().wants(ev.TokenDelta)
    assert not journal(LineSink()).wants(ev.TokenDelta)
    assert journal(LineSink()).wants(ev.RunFinished)
    assert journal(Folds()).wants(ev.TokenDelta)
    assert journal(EventStream()).wants(ev.TokenDelta)  # `Swarm.stream` yields them

    class Bare:
        def handle(self, event: Any) -> None: ...

    assert journal(Bare()).wants(ev.TokenDelta)  # a sink that says nothing wants all


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
