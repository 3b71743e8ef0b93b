"""`kernels.lazy_exports`: names load from their modules on first access, once, and nothing
else does."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.kernels import lazy_exports as lazy_exports_module

lazy_exports = lazy_exports_module.lazy_exports


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A package `lazypkg` with a module `heavy` (counts its imports) and a subpackage `sub`."""
    root = tmp_path / "lazypkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "heavy.py").write_text(
        "import builtins\n"
        "builtins.lazypkg_imports = getattr(builtins, 'lazypkg_imports', 0) + 1\n"
        "VALUE = 42\n"
        "def double(x):\n    return 2 * x\n"
    )
    (root / "sub" / "__init__.py").write_text("NAME = 'sub'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "lazypkg"
    for name in [m for m in sys.modules if m == "lazypkg" or m.startswith("lazypkg.")]:
        del sys.modules[name]
    import builtins

    if hasattr(builtins, "lazypkg_imports"):
        del builtins.lazypkg_imports


def _install(lazy: Callable[..., Any], name: str) -> types.ModuleType:
    pkg = importlib.import_module(name)
    pkg.__all__, pkg.__getattr__, pkg.__dir__ = lazy(  # type: ignore[attr-defined]
        name, {".heavy": ["VALUE", "double"], ".": ["sub"]}
    )
    return pkg


def test_names_load_on_first_access_once(package: str) -> None:
    import builtins

    pkg = _install(lazy_exports, package)
    assert pkg.__all__ == ["VALUE", "double", "sub"]
    assert "lazypkg.heavy" not in sys.modules  # nothing imported yet
    assert set(dir(pkg)) >= {"VALUE", "double", "sub"}
    assert pkg.VALUE == 42 and pkg.double(2) == 4
    assert builtins.lazypkg_imports == 1  # type: ignore[attr-defined]
    assert "VALUE" in vars(pkg)  # kept: later accesses are plain lookups
    assert pkg.sub.NAME == "sub" and sys.modules["lazypkg.sub"] is pkg.sub
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nope'"):
        pkg.nope  # noqa: B018


def test_a_name_with_two_homes_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'x' is exported from both '\.a' and '\.b'"):
        lazy_exports("p", {".a": ["x"], ".b": ["x"]})

