"""Where sub-agents run: `local` (the driver's asyncio loop, default) or `ray` (host actors
spread over a Ray cluster; see `swarm.executors.ray`).

Importing this package never imports Ray: `make_executor` does, on first use.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from swarm.errors import ConfigError
from swarm.executors._errors import HostLostError, RemoteWorkerError

if TYPE_CHECKING:
    from swarm.context import Worker
    from swarm.executors.ray import RayExecutor

#: The executors a swarm may use.
EXECUTORS = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'kimmy-swarm[ray]'"


def check_executor(name: object) -> str:
    """The executor name, checked: it is known, and Ray is installed for `ray`.

    Raises:
        ConfigError: an unknown name, or `ray` without Ray installed.
    """
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")
    if name == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(f"executor 'ray' needs Ray, which is not installed: {RAY_INSTALL_HINT}")
    return str(name)


def make_executor(
    workers: Mapping[str, Worker],
    model: Any | None,
    *,
    address: str | None = None,
    hosts: int | None = None,
) -> RayExecutor:
    """A `RayExecutor` for these workers and model (imports Ray)."""
    check_executor("ray")
    from swarm.executors.ray import RayExecutor

    return RayExecutor(workers, model, address=address, hosts=hosts)


__all__ = [
    "EXECUTORS",
    "RAY_INSTALL_HINT",
    "HostLostError",
    "RemoteWorkerError",
    "check_executor",
    "make_executor",
]
