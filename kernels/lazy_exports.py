"""`lazy_exports`: a package's public names, each imported from its module on first access.

A package whose modules import torch (anything slow) still imports fast:

    __all__, __getattr__, __dir__ = lazy_exports(__name__, {
        ".config": ["KimiLinearConfig"],  # from .config import KimiLinearConfig, on first use
        ".": ["kda"],  # from . import kda (a subpackage), on first use
    })

Each name is written once: `__all__` is built from the map. A name, once loaded, is kept in
the package's namespace, so later accesses are plain attribute lookups. `kernels` and `model`
use it (the model side may import `kernels`); the swarm side, which the import contract keeps
off the model side, has one lazy package (`swarm.llm`, two names) and spells its
`__getattr__` out.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(
    package: str, homes: Mapping[str, Iterable[str]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`(__all__, __getattr__, __dir__)` for `package` (pass `__name__`).

    Args:
        package: the package's name.
        homes: module → the names it exports, relative (`.errors`) or absolute; the names
            of `"."` are the package's own submodules.

    Raises:
        ValueError: a name is given two homes.
    """
    home_of: dict[str, str] = {}
    for module, names in homes.items():
        for name in names:
            if name in home_of:
                raise ValueError(f"{package}: {name!r} is exported from both "
                                 f"{home_of[name]!r} and {module!r}")  # fmt: skip
            home_of[name] = module

    def __getattr__(name: str) -> Any:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if module == ".":
            value: Any = importlib.import_module(f"{package}.{name}")
        else:
            value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(home_of))

    return sorted(home_of), __getattr__, __dir__


__all__ = ["lazy_exports"]
