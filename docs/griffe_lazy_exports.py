"""A griffe extension for the API reference: the names a package loads on first access.

`model/__init__.py` maps each public name to the module that defines it (`_EXPORTS`) and
imports it only when used, so `import model` does not import torch. Reading the source alone,
griffe finds none of those names. This extension adds each one as an alias of its definition
and takes the map's keys as `__all__`, so `::: model` documents the package's public API
without importing it. mkdocs.yml loads it; it is not part of the site.
"""

from __future__ import annotations

import ast
from typing import Any

import griffe

MAP = "_EXPORTS"


def _exports_map(node: ast.Module) -> dict[str, str] | None:
    """The literal `_EXPORTS = {name: module, ...}` at the top of a module, if any."""
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == MAP for t in targets):
            value = ast.literal_eval(stmt.value)  # type: ignore[union-attr]
            if isinstance(value, dict):
                return {str(k): str(v) for k, v in value.items()}
    return None


class LazyExports(griffe.Extension):
    """Aliases for the names a module's `_EXPORTS` map loads lazily."""

    def on_module_members(self, *, node: Any, mod: griffe.Module, **kwargs: Any) -> None:
        if not isinstance(node, ast.Module):  # inspected, not read: nothing to add
            return
        exports = _exports_map(node)
        if exports is None:
            return
        for name, module in exports.items():
            if name not in mod.members:
                mod.set_member(name, griffe.Alias(name, f"{module}.{name}", parent=mod))
        mod.exports = sorted(exports)
