"""Hugging Face-format checkpoint folders: `config.json` + safetensors weights (+ index).

The layout is the HF convention, so published Kimi Linear weights load as they are and our
folders load in `transformers`/vLLM:

    config.json
    model.safetensors                        all weights, when they fit one shard; else
    model-00001-of-0000N.safetensors …       shards, filled in `state_dict` order, and
    model.safetensors.index.json             {"metadata": {"total_size": bytes},
                                              "weight_map": {tensor name: shard file}}

Crash safety: `save_checkpoint` writes everything into a hidden folder beside the target
(`.NAME.tmp-XXXX`; shards first, then the index, then config.json), fsyncs it and renames it
into place, so at no moment is there a folder at the target path that loads with weights
missing. An existing folder is replaced by a second rename; files in it that the new save does
not write (optimizer state, notes, a tokenizer saved earlier) are moved into the new folder,
old weight files are dropped. Between the two renames the old folder sits at `.NAME.old-XXXX`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from kimmy_swarm.model.errors import CheckpointError

__all__ = [
    "DEFAULT_MAX_SHARD_BYTES",
    "INDEX_FILE",
    "SINGLE_FILE",
    "LoadResult",
    "load_into",
    "load_state_dict",
    "save_checkpoint",
]

# 2 GB (decimal) per shard: files stay under common upload and filesystem limits, and a save
# holds at most one shard of converted (cpu/dtype-cast) copies in host memory at a time.
DEFAULT_MAX_SHARD_BYTES = 2_000_000_000
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
CONFIG_FILE = "config.json"
TIED_HEAD = "lm_head.weight"
EMBEDDINGS = "model.embed_tokens.weight"
_SHARD_NAME = re.compile(r"model-\d{5}-of-\d{5}\.safetensors")
_SHOWN = 10  # names listed per kind of problem in a CheckpointError


class _SavesItself(Protocol):
    def save(self, path: str | Path) -> Any: ...


@dataclass(frozen=True)
class LoadResult:
    """What `load_into(..., strict=False)` left alone: model keys the state lacked, and
    state keys the model does not have."""

    missing: tuple[str, ...]
    unexpected: tuple[str, ...]


# ---- save ---------------------------------------------------------------------------------
def save_checkpoint(
    model: nn.Module,
    path: str | Path,
    *,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    tokenizer: _SavesItself | None = None,
    dtype: torch.dtype | None = None,
) -> Path:
    """Write `model` (with a `.config`: KimiLinearConfig or LlamaConfig) as an HF folder.

    Args:
        model: the module to save; its `state_dict` names are written as they are.
        path: the folder; created, or replaced when it exists (other files in it stay).
        max_shard_bytes: most tensor bytes per safetensors file (default 2 GB); a tensor
            larger than this gets a shard of its own.
        tokenizer: saved into the same folder by its `save(path)` when given.
        dtype: cast floating-point tensors to this dtype (config `torch_dtype` follows);
            integer buffers keep theirs. None keeps every tensor's dtype.

    Returns:
        The checkpoint folder (absolute).

    Raises:
        CheckpointError: `model` has neither config, `path` is a file, a tensor is
            sparse, or `max_shard_bytes` < 1.
    """
    config = getattr(model, "config", None)
    if not all(hasattr(config, a) for a in ("save_pretrained", "replace", "tie_word_embeddings")):
        raise CheckpointError(
            f"model {type(model).__name__} has no .config KimiLinearConfig or LlamaConfig (got "
            f"{type(config).__name__}); save_checkpoint writes config.json from it"
        )
    if max_shard_bytes < 1:
        raise CheckpointError(f"max_shard_bytes must be ≥ 1; got {max_shard_bytes}")
    target = Path(path).resolve()
    if target.exists() and not target.is_dir():
        raise CheckpointError(f"{target} exists and is not a folder; pass a folder path")
    if dtype is not None:
        config = config.replace(torch_dtype=str(dtype).removeprefix("torch."))
    state = {k: v for k, v in model.state_dict().items() if isinstance(v, torch.Tensor)}
    if config.tie_word_embeddings:
        state.pop(TIED_HEAD, None)  # the head is the embedding matrix; HF files omit it
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{uuid.uuid4().hex[:12]}")
    tmp.mkdir()
    try:
        _write_weights(state, tmp, max_shard_bytes=max_shard_bytes, dtype=dtype)
        if tokenizer is not None:
            tokenizer.save(tmp)
        config.save_pretrained(tmp)  # last: a folder without config.json is no checkpoint
        _fsync(tmp)  # data on disk before the rename, so a power loss cannot truncate it
        _swap_into_place(tmp, target)
    finally:
        if tmp.exists():  # the save failed before the rename: nothing half-written stays
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _plan_shards(
    state: Mapping[str, torch.Tensor], max_bytes: int, dtype: torch.dtype | None
) -> list[list[str]]:
    """Greedy fill in state_dict order (keeps a layer's tensors together, like HF)."""
    sparse = [f"{k} ({t.layout})" for k, t in state.items() if t.layout != torch.strided]
    if sparse:  # found before anything is written
        raise CheckpointError(
            f"safetensors stores dense tensors only; convert with .to_dense(): {_first(sparse)}"
        )
    shards: list[list[str]] = [[]]
    size = 0
    for name, t in state.items():
        nbytes = t.numel() * _out_dtype(t, dtype).itemsize
        if shards[-1] and size + nbytes > max_bytes:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    return shards


def _out_dtype(t: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    return dtype if dtype is not None and t.is_floating_point() else t.dtype


def _shard_tensors(
    state: Mapping[str, torch.Tensor], names: Iterable[str], dtype: torch.dtype | None
) -> dict[str, torch.Tensor]:
    """Detached, contiguous cpu copies; safetensors refuses two tensors of one file sharing
    storage (tied or aliased parameters), so a repeat is cloned."""
    out: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name in names:
        t = state[name].detach().to(device="cpu", dtype=_out_dtype(state[name], dtype))
        t = t.contiguous()
        ptr = t.untyped_storage().data_ptr()
        if ptr in seen:
            t = t.clone()
        seen.add(ptr)
        out[name] = t
    return out


def _write_weights(
    state: Mapping[str, torch.Tensor],
    folder: Path,
    *,
    max_shard_bytes: int,
    dtype: torch.dtype | None,
) -> None:
    shards = _plan_shards(state, max_shard_bytes, dtype)
    n = len(shards)
    files = [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    if n == 1:
        files = [SINGLE_FILE]
    weight_map: dict[str, str] = {}
    total = 0
    for file, names in zip(files, shards, strict=True):
        tensors = _shard_tensors(state, names, dtype)
        save_file(tensors, str(folder / file), metadata={"format": "pt"})
        total += sum(t.numel() * t.element_size() for t in tensors.values())
        weight_map.update(dict.fromkeys(names, file))
        del tensors  # one shard of copies at a time
    if n > 1:  # written after every shard: an index never points at a file not yet there
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (folder / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")


def _fsync(folder: Path) -> None:
    for path in [*folder.iterdir(), folder]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _is_weight_file(name: str) -> bool:
    return name in (SINGLE_FILE, INDEX_FILE) or _SHARD_NAME.fullmatch(name) is not None


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished folder to `target`, replacing an existing one."""
    if not target.exists():
        os.replace(tmp, target)
        return
    old = target.with_name(f".{target.name}.old-{uuid.uuid4().hex[:12]}")
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except OSError:
        os.replace(old, target)  # put the previous checkpoint back
        raise
    for entry in old.iterdir():  # what the new save does not own stays in the folder
        if not _is_weight_file(entry.name) and not (target / entry.name).exists():
            os.replace(entry, target / entry.name)
    shutil.rmtree(old)


# ---- load ---------------------------------------------------------------------------------
def load_state_dict(
    path: str | Path, *, device: str | torch.device = "cpu"
) -> dict[str, torch.Tensor]:
    """Read every tensor of a checkpoint folder (index + shards, or `model.safetensors`).

    Returns:
        `{name: tensor}` on `device`, dtypes as stored.

    Raises:
        CheckpointError: the folder is missing, has no weights, its index is malformed, a
            shard it lists is missing or unreadable, or a shard lacks a tensor the index
            maps to it. The message names the folder and the file.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint folder {folder} does not exist or is not a folder")
    if (folder / INDEX_FILE).is_file():
        weight_map = _read_index(folder)
        files = sorted(set(weight_map.values()))
        absent = [f for f in files if not (folder / f).is_file()]
        if absent:
            raise CheckpointError(
                f"{folder}: {INDEX_FILE} lists {len(absent)} missing shard(s): "
                f"{_first(absent)} (of {len(files)} shards)"
            )
        state: dict[str, torch.Tensor] = {}
        for file in files:
            state.update(_load_file(folder / file, device))
        lost = [name for name in weight_map if name not in state]
        if lost:
            raise CheckpointError(
                f"{folder}: {len(lost)} tensor(s) that {INDEX_FILE} maps to a shard are not in "
                f"it: {_first([f'{n} ({weight_map[n]})' for n in lost])}"
            )
        return state
    if (folder / SINGLE_FILE).is_file():
        return _load_file(folder / SINGLE_FILE, device)
    raise CheckpointError(f"{folder} holds no weights: looked for {INDEX_FILE} and {SINGLE_FILE}")


def _read_index(folder: Path) -> dict[str, str]:
    file = folder / INDEX_FILE
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{file}: malformed index, not readable JSON ({e})") from e
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(
            f"{file}: malformed index; expected an object with a non-empty "
            f'"weight_map": {{tensor name: shard file}}'
        )
    for name, shard in weight_map.items():
        # A shard must be a plain file name in this folder (no "../", no sub-folders).
        if not isinstance(shard, str) or not shard or Path(shard).name != shard:
            raise CheckpointError(
                f"{file}: malformed index; weight_map[{name!r}] = {shard!r} is not a file name "
                "in the checkpoint folder"
            )
    return weight_map


def _load_file(file: Path, device: str | torch.device) -> dict[str, torch.Tensor]:
    try:
        return load_file(str(file), device=str(device))
    except (SafetensorError, OSError, RuntimeError) as e:
        raise CheckpointError(f"{file}: not a readable safetensors file ({e})") from e


def load_into(
    model: nn.Module, state: Mapping[str, torch.Tensor], *, strict: bool = True
) -> LoadResult:
    """Copy `state` into `model`'s parameters and buffers (casting to their dtypes).

    With `config.tie_word_embeddings` the head is taken from `model.embed_tokens.weight`
    (tied checkpoints have no `lm_head.weight`; when one is present the embeddings win, as
    in HF). Shape mismatches always raise; missing/unexpected keys raise when `strict`.

    Returns:
        The keys left alone (empty tuples when strict).

    Raises:
        CheckpointError: listing missing keys, unexpected keys and shape mismatches (name,
            the model's shape vs the checkpoint's; the first 10 of each, then a count).
    """
    expected = model.state_dict()
    state = dict(state)
    config = getattr(model, "config", None)
    if getattr(config, "tie_word_embeddings", False):
        state.pop(TIED_HEAD, None)
        if TIED_HEAD in expected and EMBEDDINGS in state:
            state[TIED_HEAD] = state[EMBEDDINGS]
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    mismatched = [
        f"{k}: model {tuple(expected[k].shape)} vs checkpoint {tuple(state[k].shape)}"
        for k in state
        if k in expected and tuple(expected[k].shape) != tuple(state[k].shape)
    ]
    problems = []
    if strict and missing:
        problems.append(f"{len(missing)} missing key(s): {_first(missing)}")
    if strict and unexpected:
        problems.append(f"{len(unexpected)} unexpected key(s): {_first(unexpected)}")
    if mismatched:
        problems.append(f"{len(mismatched)} shape mismatch(es): {_first(mismatched)}")
    if problems:
        raise CheckpointError(
            f"checkpoint does not fit {type(model).__name__}: " + "; ".join(problems)
        )
    with torch.no_grad():
        model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    return LoadResult(missing=tuple(missing), unexpected=tuple(unexpected))


def load_pretrained_weights(
    model: nn.Module,
    path: str | Path,
    *,
    dtype: torch.dtype | None = None,
    device: str | torch.device = "cpu",
    rename: Callable[[dict[str, torch.Tensor], Mapping[str, torch.Tensor]], dict[str, torch.Tensor]]
    | None = None,
) -> nn.Module:
    """The common tail of every architecture's `from_pretrained`: read the folder's weights,
    let `rename(state, model.state_dict())` map foreign names, `load_into` (strict), then cast
    to `dtype`, move to `device` and switch to eval mode.

    Raises:
        CheckpointError: as `load_state_dict` and `load_into`.
    """
    state = load_state_dict(path, device="cpu")
    if rename is not None:
        state = rename(state, model.state_dict())
    load_into(model, state)
    if dtype is not None:
        model = model.to(dtype)
    return model.to(device).eval()


def _first(items: list[str]) -> str:
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" … and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")
