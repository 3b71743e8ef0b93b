"""`kimmy` with some sub-agents held forever: a pipeline run stopped mid-way on purpose.

Used by `tests/kimmy/test_cli_pipeline_resume.py` in a subprocess that it then interrupts
(SIGINT) or kills (SIGKILL):

    python -m tests.support.pipeline_hold LOG PATTERN kimmy-args...

Every `SubAgent` whose subtask id matches PATTERN (`fnmatch`) appends `<id>\\n` to LOG
(one O_APPEND write) and then waits until it is cancelled, so the run holds exactly the
work that does not depend on those subtasks, and nothing else, when it is stopped.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import sys
from typing import Any


def main(argv: list[str]) -> int:
    from kimmy_swarm.agents.subagent import SubAgent
    from kimmy_swarm.cli.app import main as kimmy

    log, pattern, *args = argv
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    run = SubAgent.__call__

    async def held(self: SubAgent, ctx: Any) -> Any:
        if fnmatch.fnmatchcase(ctx.id, pattern):
            os.write(fd, f"{ctx.id}\n".encode())
            await asyncio.Event().wait()  # until the run is cancelled
        return await run(self, ctx)

    SubAgent.__call__ = held  # type: ignore[method-assign]
    return kimmy(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
