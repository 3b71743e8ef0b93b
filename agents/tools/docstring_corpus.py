"""A corpus every machine has offline: the module docstrings of the installed Python.

Sources are read, never imported (importing `antigravity` opens a browser; importing
site-packages runs arbitrary code). Only the lines up to the end of the docstring are
tokenized, which keeps a scan of the whole standard library well under a second.
"""

from __future__ import annotations

import ast
import io
import sysconfig
import tokenize
from collections.abc import Collection
from pathlib import Path

__all__ = ["write_docstring_corpus"]

_SKIP_DIRS = frozenset(
    {"test", "tests", "idlelib", "lib2to3", "site-packages", "dist-packages", "__pycache__"}
)
_SKIP_MODULES = frozenset({"this", "antigravity"})
_PREAMBLE = frozenset(
    {tokenize.ENCODING, tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT}
)


def _docstring(path: Path) -> str | None:
    """The module docstring of a Python source file, or None (none, or unparsable)."""
    try:
        with path.open("rb") as fh:
            lines: list[bytes] = []

            def readline() -> bytes:
                line = fh.readline()
                lines.append(line)
                return line

            end_line = 0
            for tok in tokenize.tokenize(readline):
                if tok.type in _PREAMBLE and end_line == 0:
                    continue
                if end_line == 0 and tok.type != tokenize.STRING:
                    return None
                end_line = tok.end[0]
                if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                    break
        source = b"".join(lines[:end_line])
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        tree = ast.parse(source.decode(encoding))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError, tokenize.TokenError):
        return None
    return ast.get_docstring(tree, clean=True)


def _is_public_name(name: str) -> bool:
    return name.isidentifier() and not name.startswith("_") and name not in _SKIP_MODULES


def _stdlib_modules(stdlib: Path) -> dict[str, Path]:
    """Public standard-library modules (dotted name -> source file)."""
    found: dict[str, Path] = {}
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if any(p in _SKIP_DIRS for p in parts[:-1]):
            continue
        names = [*parts[:-1], path.stem] if path.stem != "__init__" else list(parts[:-1])
        if names and all(_is_public_name(n) for n in names):
            found[".".join(names)] = path
    return found


#: How deep into an installed package its public submodules are read.
SITE_DEPTH = 3


def _package_modules(package: Path, depth: int) -> dict[str, Path]:
    """A package's public modules down to `depth` levels (dotted name -> source file)."""
    found: dict[str, Path] = {}
    init = package / "__init__.py"
    if not init.is_file():
        return found
    found[package.name] = init
    if depth <= 1:
        return found
    for entry in sorted(package.iterdir()):
        if entry.name in _SKIP_DIRS or not _is_public_name(entry.stem):
            continue
        if entry.is_file() and entry.suffix == ".py" and entry.stem != "__init__":
            found[f"{package.name}.{entry.stem}"] = entry
        elif entry.is_dir():
            for name, path in _package_modules(entry, depth - 1).items():
                found[f"{package.name}.{name}"] = path
    return found


def _site_modules(site: Path, depth: int = SITE_DEPTH) -> dict[str, Path]:
    """Public modules of one site-packages folder: top-level modules, and packages with
    their submodules down to `depth` levels (tests skipped)."""
    found: dict[str, Path] = {}
    if not site.is_dir():
        return found
    for entry in sorted(site.iterdir()):
        if entry.is_file() and entry.suffix == ".py" and _is_public_name(entry.stem):
            found[entry.stem] = entry
        elif entry.is_dir() and _is_public_name(entry.name):
            found.update(_package_modules(entry, depth))
    return found


def write_docstring_corpus(
    out_dir: str | Path,
    *,
    min_chars: int = 300,
    limit: int | None = 400,
    include_site_packages: bool = True,
    packages: Collection[str] | None = None,
) -> int:
    """Write one Markdown file per module docstring: `# <module>` then the docstring.

    Reads the standard library (skipping tests, idlelib, lib2to3, private modules, `this`
    and `antigravity`) and, if asked, the public modules of site-packages (packages down to
    `SITE_DEPTH` levels).
    Nothing is imported. Files already in `out_dir` are overwritten, never deleted.

    Args:
        out_dir: the folder to write to (created if missing).
        min_chars: only docstrings at least this long are kept.
        limit: keep the modules with the longest docstrings, at most this many (None: all).
        include_site_packages: also read the installed third-party packages.
        packages: only these installed packages (top-level import names; None: all).

    Returns:
        The number of .md files written.

    Raises:
        ValueError: `min_chars` or `limit` is negative.
    """
    if min_chars < 0 or (limit is not None and limit < 0):
        raise ValueError(f"min_chars and limit must be >= 0, got {min_chars!r} and {limit!r}")
    paths = sysconfig.get_paths()
    modules = _stdlib_modules(Path(paths["stdlib"]))
    if include_site_packages:
        for key in ("purelib", "platlib"):
            for name, path in _site_modules(Path(paths[key])).items():
                if packages is not None and name.split(".", 1)[0] not in packages:
                    continue
                modules.setdefault(name, path)  # the standard library wins a name clash
    docs: dict[str, str] = {}
    for name, path in sorted(modules.items()):
        doc = _docstring(path)
        if doc is not None and len(doc.strip()) >= min_chars:
            docs[name] = doc.strip()
    chosen = sorted(docs, key=lambda name: (-len(docs[name]), name))
    if limit is not None:
        chosen = chosen[:limit]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name in sorted(chosen):
        (out / f"{name}.md").write_text(f"# {name}\n\n{docs[name]}\n", encoding="utf-8")
    return len(chosen)
