"""A run to kill: a layered 1,000-subtask plan whose workers log each execution.

Used by `tests/swarm/test_resume.py` in a subprocess:

    python crash_driver.py RUNS_DIR LOG start RUN_ID   # a new run with a fixed id
    python crash_driver.py RUNS_DIR LOG resume RUN_ID  # continue it

Each worker appends `<subtask id>\\n` to LOG (one O_APPEND write, so lines from a killed
process are whole) as soon as it starts, sleeps a seeded random time, and returns
`{"v": value}`, where value is derived from the subtask's own index and its upstream values;
`expected_values` computes the same numbers without running anything, so an upstream output
lost or passed wrongly across a crash shows up as a wrong value.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
from pathlib import Path

LAYERS = 10
WIDTH = 100
MODULUS = 1_000_003
SLEEP_S = (0.02, 0.08)


def subtask_id(layer: int, i: int) -> str:
    return f"L{layer}-{i:02d}"


def deps_of(layer: int, i: int) -> list[str]:
    """Two upstream subtasks from the previous layer (fan-in); none in layer 0."""
    if layer == 0:
        return []
    return sorted({subtask_id(layer - 1, i), subtask_id(layer - 1, (i * 7 + 3) % WIDTH)})


def plan_dict() -> dict[str, object]:
    return {
        "goal": "crash and resume",
        "subtasks": [
            {
                "id": subtask_id(layer, i),
                "role": "work",
                "inputs": {"base": layer * WIDTH + i + 1},
                "depends_on": deps_of(layer, i),
            }
            for layer in range(LAYERS)
            for i in range(WIDTH)
        ],
    }


def expected_values() -> dict[str, int]:
    out: dict[str, int] = {}
    for layer in range(LAYERS):
        for i in range(WIDTH):
            up = sum(out[d] for d in deps_of(layer, i))
            out[subtask_id(layer, i)] = (layer * WIDTH + i + 1 + 3 * up) % MODULUS
    return out


def main(argv: list[str]) -> int:
    from kimmy_swarm.swarm import Swarm

    runs_dir, log_path, mode, run_id = argv
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    async def work(ctx: object) -> dict[str, int]:
        sid = ctx.id  # type: ignore[attr-defined]
        os.write(fd, f"{sid}\n".encode())
        await asyncio.sleep(random.Random(sid).uniform(*SLEEP_S))
        up = sum(v["v"] for v in ctx.upstream.values())  # type: ignore[attr-defined]
        return {"v": (ctx.inputs["base"] + 3 * up) % MODULUS}  # type: ignore[attr-defined]

    swarm = Swarm(runs_dir=Path(runs_dir), max_concurrency=50, roles={"work": work}, seed=0)
    try:
        if mode == "start":
            result = asyncio.run(swarm.execute(plan_dict(), run_id=run_id))
        else:
            result = asyncio.run(swarm.resume(run_id))
    except KeyboardInterrupt:
        return 130
    finally:
        os.close(fd)
    print(result.status.value, flush=True)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
