"""The model side's exceptions: one root, user errors (bad config, bad checkpoint folder)
and misuse of generation. The model never imports the swarm, so it has its own root."""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "EngineOverloadedError",
    "GenerationError",
    "KimiModelError",
    "ModelConfigError",
]


class KimiModelError(Exception):
    """Root of every error raised by `model/`."""


class ModelConfigError(KimiModelError, ValueError):
    """A config value is unknown, missing or inconsistent; the message names it."""


class CheckpointError(KimiModelError):
    """A checkpoint folder is missing files, or its tensors do not fit the config."""


class GenerationError(KimiModelError, ValueError):
    """Bad arguments to `generate` (lengths, sampling parameters, padding side)."""


class EngineOverloadedError(KimiModelError):
    """The serving engine's queue is full; retry after `retry_after` seconds (HTTP 503)."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
