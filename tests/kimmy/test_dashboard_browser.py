"""`kimmy dashboard` in real headless Chromium: a run going in a background thread, the
dashboard on a free loopback port; the page lists the run, shows its counts change while it
runs, and shows a sub-agent's conversation on click. Screenshots go to `artifact_dir`."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
from kimmy_swarm.swarm import Plan, Subtask, Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.dashboard import BackgroundServer, create_app
from kimmy_swarm.swarm.llm.scripted import ScriptedChat
from tests.support.browser import artifact_dir, browser_page

RUN = "20250101-000000-browse"
WORKERS = [f"w{i}" for i in range(6)]
GATES = {w: threading.Event() for w in WORKERS}


async def boss(ctx: SubtaskContext) -> str:
    ctx.spawn([{"id": w, "role": "work", "instructions": f"summarize part {w}"} for w in WORKERS])
    ctx.record_turn([{"role": "assistant", "content": "six workers"}], spawned=WORKERS)
    await ctx.wait(WORKERS)
    return "done"


async def work(ctx: SubtaskContext) -> str:
    answer = await ctx.model.chat(
        [
            {"role": "system", "content": "You summarize."},
            {"role": "user", "content": f"please do {ctx.id}"},
        ]
    )
    await asyncio.to_thread(GATES[ctx.id].wait, 60)
    return answer.content or ""


async def write(ctx: SubtaskContext) -> int:
    return len(ctx.upstream)


def _answer(messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
    return f"summary of {messages[-1]['content'].rsplit(' ', 1)[-1]} <b>not bold</b>"


@pytest.fixture
def live_run(tmp_path: Path) -> Iterator[Path]:
    for gate in GATES.values():
        gate.clear()
    model = ScriptedChat([_answer] * len(WORKERS))
    swarm = Swarm(
        runs_dir=tmp_path, model=model, roles={"boss": boss, "work": work, "write": write}
    )
    plan = Plan(
        goal="watch a run live",
        subtasks=[
            Subtask(id="boss", role="boss"),
            Subtask(id="end", role="write", depends_on=["boss"]),
        ],
    )
    runner = threading.Thread(target=swarm.run_sync, args=(plan,), kwargs={"run_id": RUN})
    runner.start()
    try:
        yield tmp_path
    finally:
        for gate in GATES.values():
            gate.set()
        runner.join(60)


def _text(page: Any, selector: str) -> str:
    return page.locator(selector).text_content() or ""


def test_watch_a_run_live_then_read_a_sub_agent(live_run: Path, tmp_path: Path) -> None:
    out = artifact_dir(tmp_path)
    with browser_page() as page:
        page.wait_for_timeout(1)  # the browser is up before the store is polled
        while not (live_run / "kimmy.db").is_file():
            page.wait_for_timeout(20)
        with BackgroundServer(create_app(live_run, poll_s=0.1)) as srv:
            page.goto(srv.url + "/")
            link = page.locator(f'#runs a:text("{RUN}")')
            link.wait_for()
            page.screenshot(path=str(out / "dashboard-runs.png"))
            link.click()
            # the six workers and the orchestrator waiting for them are in flight, none done
            page.wait_for_function(
                "document.getElementById('counter-in_flight').textContent === '7'"
            )
            page.locator("#live:text('live')").wait_for()  # the stream is open
            assert _text(page, "#counter-done") == "0"
            for w in WORKERS[:2]:
                GATES[w].set()
            page.wait_for_function("document.getElementById('counter-done').textContent === '2'")
            page.locator('.node[data-id="w1"][data-status="done"]').wait_for()
            assert page.locator('.node[data-id="w4"]').get_attribute("data-status") == "running"
            page.screenshot(path=str(out / "dashboard-live.png"))
            for w in WORKERS[2:]:
                GATES[w].set()
            page.wait_for_function(
                "document.getElementById('counter-status').textContent === 'completed'"
            )
            assert _text(page, "#counter-done") == "8"
            page.locator("#live:text('idle')").wait_for()  # the stream ended with the run
            page.locator('.node[data-id="w3"]').click()
            page.locator("#agent-title:text('w3')").wait_for()
            panel = _text(page, "#panel-body")
            assert "summarize part w3" in panel  # the instructions
            assert "please do w3" in panel and "You summarize." in panel  # what it was sent
            assert "summary of w3 <b>not bold</b>" in panel  # the answer, as text, not HTML
            assert page.locator("#panel-body b").count() == 0
            page.screenshot(path=str(out / "dashboard-transcript.png"), full_page=True)
    assert all(
        (out / f"dashboard-{n}.png").stat().st_size > 0 for n in ("runs", "live", "transcript")
    )


BIG = 1000
BIG_RUN = "20250101-000000-thousand"
GO = threading.Event()


async def big_work(ctx: SubtaskContext) -> str:
    answer = await ctx.model.chat([{"role": "user", "content": f"please do {ctx.id}"}])
    while not GO.is_set():  # held until the page has seen them in flight
        await asyncio.sleep(0.02)
    await asyncio.sleep((int(ctx.id[1:]) % 7) * 0.08)  # about 2 s in all, 200 at a time
    return answer.content or ""


@pytest.fixture
def big_run(tmp_path: Path) -> Iterator[Path]:
    GO.clear()
    runs = tmp_path / "big"
    model = ScriptedChat.always(_answer)
    swarm = Swarm(
        runs_dir=runs, model=model, roles={"work": big_work, "write": write}, max_concurrency=200
    )
    ids = [f"w{i:04d}" for i in range(BIG)]
    plan = Plan(
        goal=f"watch {BIG:,} sub-agents live",
        subtasks=[Subtask(id=w, role="work") for w in ids]
        + [Subtask(id="end", role="write", depends_on=ids)],
    )
    runner = threading.Thread(target=swarm.run_sync, args=(plan,), kwargs={"run_id": BIG_RUN})
    runner.start()
    try:
        yield runs
    finally:
        GO.set()
        runner.join(120)


def _counter(page: Any, key: str) -> int:
    return int(_text(page, f"#counter-{key}").replace(",", "") or 0)


def test_watch_a_thousand_sub_agents_live_by_group_then_find_one(
    big_run: Path, tmp_path: Path
) -> None:
    out = artifact_dir(tmp_path)
    with browser_page() as page:
        while not (big_run / "kimmy.db").is_file():
            page.wait_for_timeout(20)
        with BackgroundServer(create_app(big_run, poll_s=0.1)) as srv:
            page.goto(f"{srv.url}/#/run/{BIG_RUN}")
            # 200 in flight (the limit), held: the graph is drawn by stage and role
            page.wait_for_function(
                "(document.getElementById('counter-in_flight') || {}).textContent === '200'"
            )
            page.locator("#graph-note:text('drawn as')").wait_for()
            assert "1,001 nodes in 2 stages, drawn as 2 groups" in _text(page, "#graph-note")
            group = page.locator('.node.group[data-id="s0:work"]')
            assert "0 done · 200 running" in (group.text_content() or "")
            # the in-flight list: 200 sub-agents, each with its age
            page.locator("#box-in_flight").click()
            page.locator("#list-title:text('In flight, longest first')").wait_for()
            assert page.locator("#members li").count() == 200
            assert page.locator("#members li[data-status='running'] .age").first.text_content()
            page.screenshot(path=str(out / "dashboard-1000-live.png"))
            GO.set()
            seen = set()
            while True:  # the counts move while it runs, then it completes
                seen.add(_counter(page, "done"))
                if _text(page, "#counter-status") == "completed":
                    break
                page.wait_for_timeout(50)
            assert {d for d in seen if 0 < d < BIG}, seen  # seen part-way
            assert _counter(page, "done") == BIG + 1
            page.wait_for_function(
                "document.querySelector('.node.group[data-id=\"s0:work\"] .tally')"
                ".textContent.startsWith('1000 done')"
            )
            # a group lists its members; past the first 200 the search box finds any one
            group.click()
            page.locator("#list-title:text('work (stage 0)') ~ #members").wait_for()
            assert "1,000 sub-agents (the first 200 shown" in _text(page, "#panel-body")
            page.fill("#find", "w0777")
            page.locator("#members li[data-member='w0777']").wait_for()
            assert page.locator("#members li").count() == 1
            page.locator("#members a:text('w0777')").click()
            page.locator("#agent-title:text('w0777')").wait_for()
            panel = _text(page, "#panel-body")
            assert "please do w0777" in panel and "summary of w0777" in panel
            page.screenshot(path=str(out / "dashboard-1000-done.png"), full_page=True)


def test_without_the_extra_the_command_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    from kimmy_swarm.cli.app import main

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "fastapi" else real(name, *a)
    )
    assert main(["dashboard", "--runs-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().out.strip().endswith("pip install 'kimmy-swarm[dashboard]'")


def test_a_folder_without_runs_is_one_error_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from kimmy_swarm.cli.app import main

    assert main(["dashboard", "--runs-dir", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kimmy: error: no runs stored in") and "\n" not in err
