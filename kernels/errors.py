"""The kernels' exceptions. `kernels/` depends on torch and Triton only, so it has its own
root: `KernelError`. `KDAInputError` is also a `ValueError` (bad arguments), so callers that
catch `ValueError` keep working.

    KernelError
    └── KDAInputError      a KDA input has the wrong shape, dtype, device or option
"""

from __future__ import annotations

__all__ = ["KDAInputError", "KernelError"]


class KernelError(Exception):
    """Root of every error raised by `kernels/`."""


class KDAInputError(KernelError, ValueError):
    """A KDA input has the wrong shape, dtype or device; the message names it."""
