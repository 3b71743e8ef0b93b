"""Small real runs for the export and CLI tests: a model-backed orchestrator that spawns three
workers and a join (one worker returns nothing), then tries a spawn that is refused.

Its PARL terms by hand (width 8): 4 sub-agents started (w:0, w:1, w:2, join) → r_inst 0.5;
3 of them valid and used (w:1's output is None) → r_comp 0.75; critical steps: plan (1 model
call) + the slowest worker (1) + join (1) = 3, serially 1 + 3 + 1 = 5.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import SpawnError
from kimmy_swarm.swarm.llm import ChatResponse, ScriptedChat, TokenLogprob
from kimmy_swarm.swarm.schema import Usage

ROOT = Path(__file__).resolve().parents[2]
ICLR_JSON = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"
GOAL = "sum three numbers"
#: The orchestrator's one model call: what its tokens record carries.
LOGPROBS = [TokenLogprob(token="spawn", logprob=-0.25), TokenLogprob(token=" 3", logprob=-1.5)]
USAGE = Usage(prompt_tokens=11, completion_tokens=2, total_tokens=13, model_calls=1)


async def lead(ctx: SubtaskContext) -> dict[str, Any]:
    await ctx.model.chat([{"role": "user", "content": "how many workers?"}])
    ctx.spawn(
        [
            {"id": "w:0", "role": "work", "instructions": "add 1", "inputs": {"x": 1}},
            {"id": "w:1", "role": "idle", "instructions": "add 2", "inputs": {"x": 2}},
            {"id": "w:2", "role": "work", "instructions": "add 3", "inputs": {"x": 3}},
            {"id": "join", "role": "join", "depends_on": ["w:0", "w:1", "w:2"]},
        ]
    )
    with contextlib.suppress(SpawnError):  # refused, and recorded as `spawn_refused`
        ctx.spawn([{"id": "ghost", "role": "nobody"}])
    return {"spawned": 4}


async def work(ctx: SubtaskContext) -> dict[str, int]:
    return {"x": ctx.inputs["x"]}


async def idle(ctx: SubtaskContext) -> None:
    return None


async def join(ctx: SubtaskContext) -> dict[str, int]:
    return {"sum": sum(v["x"] for v in ctx.upstream.values() if isinstance(v, dict))}


def run_small(runs_dir: Path) -> str:
    """Run the small swarm, stored under `runs_dir`; its run id."""
    answer = ChatResponse(content="spawn 3", usage=USAGE, logprobs=LOGPROBS, model="scripted")
    roles = {"orchestrator": lead, "work": work, "idle": idle, "join": join}
    plan = {
        "goal": GOAL,
        "subtasks": [{"id": "plan", "role": "orchestrator", "instructions": "decompose"}],
    }
    with Swarm(model=ScriptedChat([answer]), roles=roles, runs_dir=runs_dir) as swarm:
        return swarm.run_sync(plan).run_id


__all__ = ["GOAL", "ICLR_JSON", "LOGPROBS", "ROOT", "USAGE", "run_small"]
