"""What an orchestrating sub-agent needs from the runtime: waiting for the subtasks it
spawned, recording its turns (and finding them again on a retry or a resume), and roles
made at run time."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import SpawnError, WaitError
from kimmy_swarm.swarm.store import RunStore


def _plan() -> Plan:
    return Plan(goal="g", subtasks=[Subtask(id="boss", role="boss")])


async def test_a_parent_waits_for_its_children_even_holding_the_only_slot() -> None:
    swarm = Swarm(max_concurrency=1)
    seen: dict[str, Any] = {}

    @swarm.role("child")
    async def child(ctx: SubtaskContext) -> int:
        return int(ctx.inputs["n"]) ** 2

    @swarm.role("boss")
    async def boss(ctx: SubtaskContext) -> int:
        ctx.spawn([{"id": f"c{i}", "role": "child", "inputs": {"n": i}} for i in range(3)])
        results = await ctx.wait(["c0", "c1", "c2"])
        seen["statuses"] = {k: r.status.value for k, r in results.items()}
        return sum(r.output for r in results.values())

    result = await asyncio.wait_for(swarm.execute(_plan()), 5)
    assert result.results["boss"].output == 0 + 1 + 4
    assert seen["statuses"] == {"c0": "done", "c1": "done", "c2": "done"}


async def test_any_returns_the_first_and_a_timeout_returns_what_finished() -> None:
    swarm = Swarm(max_concurrency=8)
    release = asyncio.Event()
    seen: dict[str, Any] = {}

    @swarm.role("child")
    async def child(ctx: SubtaskContext) -> str:
        if ctx.id != "fast":
            await release.wait()
        return ctx.id

    @swarm.role("boss")
    async def boss(ctx: SubtaskContext) -> str:
        ctx.spawn([{"id": k, "role": "child"} for k in ("fast", "slow1", "slow2")])
        seen["any"] = sorted(await ctx.wait(["fast", "slow1", "slow2"], mode="any"))
        seen["timeout"] = sorted(await ctx.wait(["slow1", "slow2"], timeout_s=0.05))
        release.set()
        seen["all"] = sorted(await ctx.wait(["fast", "slow1", "slow2"]))
        return "ok"

    await asyncio.wait_for(swarm.execute(_plan()), 5)
    assert seen == {"any": ["fast"], "timeout": [], "all": ["fast", "slow1", "slow2"]}


@pytest.mark.parametrize(
    "ids, match",
    [(["nope"], "unknown subtasks"), (["other"], "only for subtasks it spawned"),
     (["after"], "depend on it")],
)  # fmt: skip
async def test_waits_that_could_never_end_are_refused(ids: list[str], match: str) -> None:
    swarm = Swarm()
    errors: list[WaitError] = []

    @swarm.role("w")
    async def work(ctx: SubtaskContext) -> None:
        return None

    @swarm.role("boss")
    async def boss(ctx: SubtaskContext) -> None:
        ctx.spawn([{"id": "after", "role": "w", "depends_on": ["boss"]}])
        try:
            await ctx.wait(ids)
        except WaitError as exc:
            errors.append(exc)

    plan = Plan(subtasks=[Subtask(id="boss", role="boss"), Subtask(id="other", role="w")])
    await asyncio.wait_for(swarm.execute(plan), 5)
    assert len(errors) == 1 and match in str(errors[0]) and errors[0].ids == tuple(ids)


async def test_turns_are_found_again_by_a_retry_and_by_a_resume(tmp_path: Path) -> None:
    seen: list[list[int]] = []

    def make(fail_first: bool) -> Swarm:
        swarm = Swarm(runs_dir=tmp_path, max_retries=1, backoff=_fast())

        @swarm.role("boss")
        async def boss(ctx: SubtaskContext) -> int:
            seen.append([t.step for t in ctx.history])
            step = len(ctx.history) + 1
            ctx.record_turn([{"role": "assistant", "content": f"turn {step}"}], state={"n": step})
            if fail_first and ctx.attempt == 1:
                from kimmy_swarm.swarm.errors import ModelServerError

                raise ModelServerError("502")  # retryable: attempt 2 continues
            if fail_first:
                raise ValueError("stop this session")
            return step

        return swarm

    first = make(fail_first=True)
    res = await first.execute(_plan(), run_id="r")
    first.close()
    assert res.results["boss"].status == "failed"
    with RunStore(tmp_path, create=False) as store:
        stored = store.load_run("r")
    assert [t.state for t in stored.turns["boss"]] == [{"n": 1}, {"n": 2}]
    again = make(fail_first=False)
    res = await again.resume("r")
    again.close()
    assert res.results["boss"].output == 3
    assert seen == [[], [1], [1, 2]]  # attempt 1, its retry, then the resumed session


def _fast():  # type: ignore[no-untyped-def]
    from kimmy_swarm.swarm.limits import Backoff

    return Backoff(0.001, 0.002)


def _echo_factory(st: Subtask) -> Any:
    spec = st.role_spec or {}
    if "prompt" not in spec:
        return None

    async def work(ctx: SubtaskContext) -> str:
        return f"{ctx.role}: {spec['prompt']}"

    return work


async def test_roles_made_at_run_time_come_from_the_role_factory(tmp_path: Path) -> None:
    swarm = Swarm(runs_dir=tmp_path)
    swarm.set_role_factory(_echo_factory)
    refused: list[str] = []

    @swarm.role("boss")
    async def boss(ctx: SubtaskContext) -> dict[str, Any]:
        ctx.spawn([{"id": "p", "role": "physicist", "role_spec": {"prompt": "mind units"}}])
        try:
            ctx.spawn([{"id": "q", "role": "ghost", "role_spec": {"nothing": 1}}])
        except SpawnError as exc:
            refused.append(str(exc))
        return {k: r.output for k, r in (await ctx.wait(["p"])).items()}

    result = await swarm.execute(_plan(), run_id="rt")
    assert result.results["boss"].output == {"p": "physicist: mind units"}
    assert refused and "unknown roles ['ghost']" in refused[0]
    swarm.close()
    with RunStore(tmp_path, create=False) as store:  # the spec is stored with the subtask
        stored = store.load_run("rt")
    assert stored.plan.by_id()["p"].role_spec == {"prompt": "mind units"}
    plain = Swarm(runs_dir=tmp_path)
    plain.add_role("boss", swarm.workers["boss"])
    with pytest.raises(Exception, match="physicist"):  # no factory: the role is unknown
        await plain.resume("rt")
    plain.close()


async def test_a_sub_agent_sees_its_model_s_context_length() -> None:
    from kimmy_swarm.swarm.llm.scripted import ScriptedChat

    inner = ScriptedChat.always("ok")
    inner.context_length = 8192  # type: ignore[attr-defined]
    swarm = Swarm(model=inner)
    seen: list[int | None] = []

    @swarm.role("w")
    async def work(ctx: SubtaskContext) -> None:
        seen.append(ctx.model.context_length)

    await swarm.execute(Plan(subtasks=[Subtask(id="a", role="w")]))
    assert seen == [8192]
