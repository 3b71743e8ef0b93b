"""The model side's exceptions. `model/` never imports the swarm, so it has its own root
(the kernels below it have theirs: `kernels.errors.KernelError`).

    KimiModelError
    ├── ModelConfigError       a config value is unknown, missing or inconsistent (ValueError)
    │   └── TrainingCorpusError    `kimmy train lm`: no readable text in the corpus paths
    ├── CheckpointError        a checkpoint folder lacks files, or its tensors do not fit
    │   └── GGUFError              a GGUF file: unsupported architecture, missing key or tensor
    ├── GenerationError        bad arguments to `generate` (ValueError)
    ├── EngineOverloadedError  the serving engine's queue is full (HTTP 503, `retry_after`)
    └── VLLMNotAvailableError  `--engine vllm` without vLLM installed
"""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "EngineOverloadedError",
    "GGUFError",
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


class GGUFError(CheckpointError):
    """A GGUF file is unreadable, of an unsupported architecture or tokenizer, or lacks a
    metadata key or tensor; the message names the file and what is wrong."""


class GenerationError(KimiModelError, ValueError):
    """Bad arguments to `generate` (lengths, sampling parameters, padding side)."""


class EngineOverloadedError(KimiModelError):
    """The serving engine's queue is full; retry after `retry_after` seconds (HTTP 503)."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
