"""Answering waiting calls from the dashboard: over loopback HTTP (the session token and the
machine rules) and in real headless Chromium (a run going in a thread, two sub-agents
waiting, one approved with edited arguments and one denied by the page's buttons, while the
rest of the swarm keeps working). Screenshots go to `artifact_dir`."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
import httpx

from kimmy_swarm.swarm import Plan, RunConfig, Subtask, Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.dashboard import BackgroundServer, create_app
from kimmy_swarm.swarm.store import RunStore
from tests.support.browser import artifact_dir, browser_page

RUN = "20250101-000000-approve"
WORKERS = [f"w{i}" for i in range(20)]


async def ask(ctx: SubtaskContext) -> dict[str, Any]:
    decision = await ctx.approval("delete_rows", {"table": ctx.inputs["table"]})
    return {"verdict": decision.verdict, "args": decision.arguments, "why": decision.reason}


async def work(ctx: SubtaskContext) -> str:
    return ctx.id


@pytest.fixture
def waiting_run(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    swarm = Swarm(runs_dir=tmp_path, roles={"ask": ask, "work": work},
                  config=RunConfig(max_concurrency=2))  # fmt: skip
    plan = Plan(
        goal="answer two calls",
        subtasks=[
            Subtask(id="drop-a", role="ask", inputs={"table": "users"}),
            Subtask(id="drop-b", role="ask", inputs={"table": "orders"}),
            *(Subtask(id=w, role="work") for w in WORKERS),
        ],
    )
    box: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: box.update(result=swarm.run_sync(plan, run_id=RUN)), daemon=True
    )
    runner.start()
    store_file = tmp_path / "kimmy.db"
    for _ in range(500):
        if store_file.is_file():
            with RunStore(tmp_path, create=False) as store:
                if RUN in store.run_ids() and len(store.approvals(RUN, pending=True)) == 2:
                    break
        threading.Event().wait(0.02)
    yield tmp_path, box
    if runner.is_alive():  # answer what the test left waiting, so the thread ends
        with RunStore(tmp_path, create=False) as store:
            for a in store.approvals(RUN, pending=True):
                Swarm(runs_dir=tmp_path).deny(RUN, a.call_id, "test over")
    runner.join(30)


def test_answers_need_the_pages_token(waiting_run: tuple[Path, dict[str, Any]]) -> None:
    runs, _ = waiting_run
    with BackgroundServer(create_app(runs, poll_s=0.1)) as srv:
        page = httpx.get(srv.url + "/").text
        token = re.search(r'name="kimmy-token" content="([^"]+)"', page).group(1)
        listed = httpx.get(srv.url + f"/api/runs/{RUN}/approvals").json()
        assert [(a["call_id"], a["status"]) for a in listed] == [("a1", "pending"),
                                                                ("a2", "pending")]  # fmt: skip
        url = srv.url + f"/api/runs/{RUN}/approvals/a1/approve"
        no_token = httpx.post(url, json={})
        assert no_token.status_code == 403 and "X-Kimmy-Token" in no_token.json()["detail"]
        wrong = httpx.post(url, json={}, headers={"X-Kimmy-Token": "guess"})
        assert wrong.status_code == 403
        foreign = httpx.post(url, json={}, headers={"X-Kimmy-Token": token,
                                                    "Origin": "http://evil.example"})  # fmt: skip
        assert foreign.status_code == 403  # a cross-site page may not answer
        ok = httpx.post(url, json={}, headers={"X-Kimmy-Token": token})
        assert ok.status_code == 200 and ok.json()["status"] == "approved"
        again = httpx.post(url, json={}, headers={"X-Kimmy-Token": token})
        assert again.status_code == 409 and "approved already" in again.json()["detail"]
        empty = httpx.post(srv.url + f"/api/runs/{RUN}/approvals/a2/deny", json={"reason": ""},
                           headers={"X-Kimmy-Token": token})  # fmt: skip
        assert empty.status_code == 422  # a denial says why


def test_approve_and_deny_from_the_page(
    waiting_run: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    runs, box = waiting_run
    out = artifact_dir(tmp_path)
    # while two calls wait, the two slots go to the workers: all of them finish
    with RunStore(runs, create=False) as store:
        for _ in range(500):
            if set(WORKERS) <= store.done_ids(RUN):
                break
            threading.Event().wait(0.02)
        assert set(WORKERS) <= store.done_ids(RUN)
    with browser_page() as page, BackgroundServer(create_app(runs, poll_s=0.1)) as srv:
        page.goto(srv.url + f"/#/run/{RUN}")
        cards = page.locator("#approvals .approval")
        cards.nth(1).wait_for()
        assert page.locator("#approvals h2").text_content() == "Waiting for you"
        page.screenshot(path=str(out / "dashboard-approvals.png"), full_page=True)
        first = page.locator('.approval[data-call="a1"]')
        assert '"table": "users"' in first.locator("textarea").input_value()
        first.locator("textarea").fill('{"table": "users_staging"}')
        first.locator("button.approve").click()
        second = page.locator('.approval[data-call="a2"]')
        second.locator("button.deny").click()  # no reason yet: the page asks for one
        second.locator(".err:text('give a reason')").wait_for()
        second.locator("input.approval-reason").fill("orders are kept for audits")
        second.locator("button.deny").click()
        page.locator("#approvals").wait_for(state="hidden")  # nothing waits any more
        page.wait_for_function(
            "document.getElementById('counter-status').textContent === 'completed'"
        )
    outputs = box["result"].outputs
    assert outputs["drop-a"] == {"verdict": "approve", "args": {"table": "users_staging"},
                                 "why": None}  # fmt: skip
    assert outputs["drop-b"] == {"verdict": "deny", "args": None,
                                 "why": "orders are kept for audits"}  # fmt: skip
    with RunStore(runs, create=False) as store:
        assert {a.decision.by for a in store.approvals(RUN)} == {"dashboard"}
