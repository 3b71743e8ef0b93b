"""`Worker`: what a role runs — an async function from a subtask's context to its output.

The type of everything that registers, holds or runs workers (`Swarm`, the workforce, the
executors, the roles of `agents`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kimmy_swarm.swarm.context import SubtaskContext

#: A worker runs one subtask and returns its output (JSON-compatible, or a pydantic model).
Worker = Callable[[SubtaskContext], Awaitable[Any]]

__all__ = ["Worker"]
