"""Tiny real part wheels for the model installer's tests: a few KB of bytes split into parts,
each in a wheel of the real ones' layout (`PKG/__init__.py`, `PKG/data/partNN.bin`, and the
dist-info's METADATA, WHEEL, top_level.txt and RECORD with their sha256s), pip-installable
with `--no-index --find-links FOLDER`; and the catalog entry that names them.

Each part's `__init__.py` raises: the installer must find the file without importing it.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from kimmy_swarm.model.catalog import KnownModel, numbered_parts

__all__ = ["PACKAGE", "VERSION", "part_entry", "write_part_wheels"]

#: The part distributions are PACKAGE1, PACKAGE2, …: a name nothing else installs.
PACKAGE = "kimmy-test-model-part"
VERSION = "1.0.0"
_INIT = b'raise ImportError("a part package is data only: never imported")\n'


def _chunks(data: bytes, n_parts: int) -> list[bytes]:
    size = -(-len(data) // n_parts)
    return [data[i : i + size] for i in range(0, len(data), size)]


def part_entry(data: bytes, *, n_parts: int = 3, name: str = "test-model") -> KnownModel:
    """The catalog entry of `data` split into `n_parts` part packages."""
    chunks = _chunks(data, n_parts)
    return KnownModel(
        name=name,
        description="random bytes in part wheels (tests)",
        architecture="llama",
        file_name=f"{name}.gguf",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        parts=numbered_parts(
            PACKAGE,
            VERSION,
            part_size=len(chunks[0]),
            size=len(data),
            sha256s=[hashlib.sha256(c).hexdigest() for c in chunks],
        ),
        source="tests/support/part_wheels.py",
        licence="none: test bytes",
    )


def write_part_wheels(folder: Path, data: bytes, *, n_parts: int = 3) -> list[Path]:
    """The part wheels of `data` (as `part_entry` splits it) written to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for i, chunk in enumerate(_chunks(data, n_parts), start=1):
        module = f"{PACKAGE.replace('-', '_')}{i}"
        files = {f"{module}/__init__.py": _INIT, f"{module}/data/part{i:02d}.bin": chunk}
        wheels.append(_write_wheel(folder, f"{PACKAGE}{i}", module, files))
    return wheels


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _write_wheel(folder: Path, dist: str, module: str, files: dict[str, bytes]) -> Path:
    info = f"{module}-{VERSION}.dist-info"
    files = {
        **files,
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {VERSION}\n"
            "Summary: a model part (tests)\n"
        ).encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: kimmy-tests\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{info}/top_level.txt": f"{module}\n".encode(),
    }
    record = [f"{name},{_record_hash(data)},{len(data)}" for name, data in files.items()]
    record.append(f"{info}/RECORD,,")
    wheel = folder / f"{module}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel
