"""Where sub-agents run: `local` (the driver's asyncio loop, default) or `ray` (host actors
spread over a Ray cluster; see `swarm.executors.ray`).

Importing this package never imports Ray: `make_executor` does, on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.config import check_executor
from kimmy_swarm.swarm.executors._errors import HostLostError, RemoteWorkerError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.executors.ray import RayExecutor
    from kimmy_swarm.swarm.worker import Worker

def make_executor(
    workers: Mapping[str, Worker],
    model: Any | None,
    *,
    address: str | None = None,
    hosts: int | None = None,
) -> RayExecutor:
    """A `RayExecutor` for these workers and model (imports Ray)."""
    check_executor("ray")
    from kimmy_swarm.swarm.executors.ray import RayExecutor

    return RayExecutor(workers, model, address=address, hosts=hosts)


__all__ = ["HostLostError", "RemoteWorkerError", "make_executor"]
