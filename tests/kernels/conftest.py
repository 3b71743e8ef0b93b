"""Kernel tests run on CPU: Triton kernels run in its interpreter, which must be switched on
before triton is first imported (kernel modules decide at import time). Every test starts
from the same torch seed, so what it draws does not depend on which tests ran before."""

from __future__ import annotations

import importlib.util
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"


@pytest.fixture(autouse=True)
def _seeded_torch() -> None:
    if importlib.util.find_spec("torch") is not None:
        import torch

        torch.manual_seed(0)
