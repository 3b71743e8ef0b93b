"""GPU kernels with PyTorch references: `kernels.kda` (Kimi Delta Attention).

Subpackages load on first attribute access, so `import kernels` alone does not import torch.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["kda"]


def __getattr__(name: str) -> ModuleType:
    if name in __all__:
        return importlib.import_module(f"kernels.{name}")
    raise AttributeError(f"module 'kernels' has no attribute {name!r}")
