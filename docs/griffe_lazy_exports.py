"""A griffe extension for the API reference: the names a package loads on first access.

`model`, `model.train` and `kernels` export their public names through
`kernels.lazy_exports`: `__all__, __getattr__, __dir__ = _lazy_exports(__name__, {".mod":
[names], ".": [subpackages]})`, importing each name only when used, so
`import kimmy_swarm.model` does not
import torch. Reading the source alone, griffe finds none of those names. This extension reads
that map, adds each name as an alias of its definition and takes the names as `__all__`, so
`::: model` documents the package's public API without importing it. mkdocs.yml loads it; it
is not part of the site.
"""

from __future__ import annotations

import ast
from typing import Any

import griffe

#: The name the packages import `kernels.lazy_exports.lazy_exports` as.
CALL = "_lazy_exports"


def _exports_map(node: ast.Module, package: str) -> dict[str, str] | None:
    """Each name of the module's `_lazy_exports(__name__, {...})` call, with the dotted path
    of its definition; None when the module makes no such call."""
    for stmt in node.body:
        call = stmt.value if isinstance(stmt, ast.Assign) else None
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == CALL
            and len(call.args) == 2
        ):
            continue
        homes = ast.literal_eval(call.args[1])
        found: dict[str, str] = {}
        for module, names in homes.items():
            for name in names:
                found[name] = (
                    f"{package}.{name}" if module == "." else f"{package}{module}.{name}"
                    if module.startswith(".") else f"{module}.{name}"
                )
        return found
    return None


class LazyExports(griffe.Extension):
    """Aliases for the names a package's `_lazy_exports` call loads on first access."""

    def on_module_members(self, *, node: Any, mod: griffe.Module, **kwargs: Any) -> None:
        if not isinstance(node, ast.Module):  # inspected, not read: nothing to add
            return
        exports = _exports_map(node, mod.path)
        if exports is None:
            return
        for name, target in exports.items():
            if name not in mod.members:
                mod.set_member(name, griffe.Alias(name, target, parent=mod))
        mod.exports = sorted(exports)
