"""Kernel tests run on CPU: Triton kernels run in its interpreter, which must be switched on
before triton is first imported (kernel modules decide at import time)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"
