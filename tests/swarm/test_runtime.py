"""`Swarm.run_sync` / `Swarm.resume_sync`: the runtime's entry points for synchronous callers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.schema import RunStatus


def test_resume_sync_continues_a_stored_run(tmp_path: Path) -> None:
    calls: Counter[str] = Counter()
    broken = {"b"}

    async def work(ctx: SubtaskContext) -> str:
        calls[ctx.id] += 1
        if ctx.id in broken:
            raise RuntimeError("not yet")
        return ctx.id

    plan = {"subtasks": [{"id": "a", "role": "w"}, {"id": "b", "role": "w", "depends_on": ["a"]}]}
    seen: list[object] = []
    with Swarm(runs_dir=tmp_path, roles={"w": work}, max_retries=0) as swarm:
        first = swarm.run_sync(plan, run_id="r")
        broken.clear()
        again = swarm.resume_sync("r", sinks=[type("S", (), {"handle": seen.append})()])
    assert first.status is not RunStatus.COMPLETED
    assert again.status is RunStatus.COMPLETED and again.outputs == {"a": "a", "b": "b"}
    assert calls == {"a": 1, "b": 2}  # `a` was done: not run again
    assert seen  # the sinks given saw the resumed session's events
