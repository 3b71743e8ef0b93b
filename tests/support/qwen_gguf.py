"""The real Qwen2.5-Coder GGUF the llama.cpp reference tests check: `KIMMY_QWEN_GGUF` names a
file, else the installed `qwen2.5-coder-1.5b` (`kimmy models install`, as `make models` and
CI do); the test skips, saying which, when there is neither."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kimmy_swarm.model.errors import ModelNotFoundError
from kimmy_swarm.model.locate import resolve_model

__all__ = ["ENV", "MODEL", "qwen_gguf_or_skip"]

ENV = "KIMMY_QWEN_GGUF"
MODEL = "qwen2.5-coder-1.5b"  # the installed model checked when ENV is not set


def qwen_gguf_or_skip() -> Path:
    """The file to check, or `pytest.skip` naming what is missing."""
    if value := os.environ.get(ENV):
        if not Path(value).is_file():
            pytest.skip(f"{ENV}={value}: no such file")
        return Path(value)
    try:
        return resolve_model(MODEL)
    except ModelNotFoundError as e:
        pytest.skip(f"{ENV} is not set and {e}")
