"""A training run's folder: checkpoints with trainer state, exact resume, metrics upkeep.

Both trainers (`model.train.loop` for the language model, `model.train.grpo` for GRPO)
keep their runs the same way; each passes its own config and the fields of it a resume may
change.

A complete checkpoint is a `checkpoint-{step:06d}/` folder holding `config.json` (written
last by `save_pretrained`) and `trainer_state.pt` (written before the folder is renamed into
place); anything else — a hidden `.checkpoint-*.partial` staging folder left by a crash — is
ignored and cleaned up by the next run. `metrics.jsonl` holds one JSON row a line; a resumed
run keeps the rows up to its checkpoint (`kept_metrics`).

    ckpt = open_run(out_dir, resume)  # None: a fresh run
    if ckpt is not None:  # cfg may differ from the checkpoint's in `steps` only
        state = restore(ckpt, model, cfg, frozenset({"steps"}), optimizer=opt)
    ...
    save_checkpoint(out_dir, trainer_state(step, cfg, optimizer=opt), model, tokenizer, keep=2)
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import re
import shutil
from pathlib import Path
from typing import Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from kimmy_swarm.model.checkpoint import load_into, load_state_dict
from kimmy_swarm.model.errors import CheckpointError, ModelConfigError

METRICS_FILE = "metrics.jsonl"
TRAINER_STATE = "trainer_state.pt"
_CHECKPOINT = re.compile(r"checkpoint-(\d{6,})")


def list_checkpoints(out_dir: Path) -> list[tuple[int, Path]]:
    """Complete checkpoints (config.json and trainer state present), oldest first."""
    found = []
    for entry in out_dir.iterdir() if out_dir.is_dir() else []:
        m = _CHECKPOINT.fullmatch(entry.name)
        if m and (entry / TRAINER_STATE).is_file() and (entry / "config.json").is_file():
            found.append((int(m.group(1)), entry))
    return sorted(found)


def latest_checkpoint(out_dir: Path) -> Path | None:
    """The newest complete `checkpoint-*` folder in `out_dir`, or None."""
    found = list_checkpoints(Path(out_dir))
    return found[-1][1] if found else None


def open_run(out_dir: Path | None, resume: bool) -> Path | None:
    """Check `out_dir` for a fresh or a resumed run; drop staging folders of a crash.

    Returns:
        The checkpoint to resume from; None for a fresh run (or no `out_dir`).

    Raises:
        ModelConfigError: `resume` without `out_dir`, or a fresh run into a folder that
            already holds one.
        CheckpointError: `resume`, but no complete checkpoint in `out_dir`.
    """
    if out_dir is None:
        if resume:
            raise ModelConfigError("resume=True needs out_dir (where the checkpoints are)")
        return None
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob(".*checkpoint-*.partial*"):  # staging (and its temp) folders
        shutil.rmtree(stale, ignore_errors=True)
    ckpt = latest_checkpoint(out_dir)
    if resume and ckpt is None:
        raise CheckpointError(f"nothing to resume: no complete checkpoint-* folder in {out_dir}")
    if not resume and (ckpt is not None or (out_dir / METRICS_FILE).exists()):
        raise ModelConfigError(
            f"{out_dir} already holds a training run; resume it or pick another output folder"
        )
    return ckpt


def trainer_state(
    step: int,
    config: Any,
    *,
    optimizer: torch.optim.Optimizer,
    tokens: int = 0,
    elapsed_s: float = 0.0,
    scheduler: LRScheduler | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, Any]:
    """Everything besides the weights that a resumed run needs to replay the same steps.

    Args:
        step: optimizer steps done.
        config: the trainer's config (a dataclass; `restore` compares it field by field).
        optimizer, scheduler, generator: saved when given (the batch generator's state
            lets a resumed run draw the same batches).
        tokens, elapsed_s: the counters a resumed run continues.
    """
    state: dict[str, Any] = {
        "step": step,
        "tokens": tokens,
        "elapsed_s": elapsed_s,
        "config": dataclasses.asdict(config),
        "optimizer": optimizer.state_dict(),
    }
    if scheduler is not None:
        state["scheduler"] = scheduler.state_dict()
    if generator is not None:
        state["generator"] = generator.get_state()
    state["torch_rng"] = torch.get_rng_state()
    state["cuda_rng"] = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []
    return state


def save_checkpoint(
    out_dir: Path, state: dict[str, Any], model: Any, tokenizer: Any, keep: int
) -> Path:
    """Write `checkpoint-{step}`: staged in a hidden folder, renamed into place once the
    weights (`model.save_pretrained`), tokenizer and trainer state are all on disk; then
    keep only the `keep` newest."""
    name = f"checkpoint-{state['step']:06d}"
    stage = out_dir / f".{name}.partial"
    shutil.rmtree(stage, ignore_errors=True)
    model.save_pretrained(stage, tokenizer=tokenizer)
    torch.save(state, stage / TRAINER_STATE)
    final = out_dir / name
    if final.exists():  # only when a step is saved twice; the staged copy is complete
        shutil.rmtree(final)
    os.replace(stage, final)
    for _, old in list_checkpoints(out_dir)[:-keep]:
        shutil.rmtree(old)
    return final


def restore(
    ckpt: Path,
    model: torch.nn.Module,
    config: Any,
    resumable: frozenset[str],
    *,
    optimizer: torch.optim.Optimizer,
    scheduler: LRScheduler | None = None,
    generator: torch.Generator | None = None,
) -> dict[str, Any]:
    """Load weights, optimizer (scheduler, generator when given) and RNG states from `ckpt`.

    Args:
        config: the config the run goes on with; it must equal the checkpoint's except in
            the fields named in `resumable` (how long to train, how often to save, …).

    Returns:
        The checkpoint's trainer state (`trainer_state`).

    Raises:
        CheckpointError: the trainer state is not readable.
        ModelConfigError: `config` differs from the checkpoint's outside `resumable`.
    """
    try:
        state = torch.load(ckpt / TRAINER_STATE, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError, pickle.UnpicklingError) as e:  # missing, cut, corrupt
        raise CheckpointError(f"{ckpt / TRAINER_STATE}: not readable ({e})") from e
    saved = state["config"]
    changed = sorted(
        k for k, v in dataclasses.asdict(config).items() if k not in resumable and saved.get(k) != v
    )
    if changed:
        diff = ", ".join(f"{k}: {saved.get(k)!r} → {getattr(config, k)!r}" for k in changed)
        raise ModelConfigError(
            f"cannot resume {ckpt} with a different config ({diff}); "
            f"only {', '.join(sorted(resumable))} may change"
        )
    device = next(model.parameters()).device
    load_into(model, load_state_dict(ckpt, device=device))
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    if generator is not None:
        generator.set_state(state["generator"])
    torch.set_rng_state(state["torch_rng"])
    if state.get("cuda_rng") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    return state


def kept_metrics(file: Path, step: int) -> list[dict[str, Any]]:
    """Rows up to `step` (later ones were not checkpointed and will be redone); the file is
    rewritten with only those, so a resumed run leaves no duplicates."""
    rows = []
    lines = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
    for line in lines:
        try:
            row = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a crash
            continue
        if isinstance(row, dict) and isinstance(row.get("step"), int) and row["step"] <= step:
            rows.append(row)
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    os.replace(tmp, file)
    return rows


__all__ = [
    "METRICS_FILE",
    "TRAINER_STATE",
    "kept_metrics",
    "latest_checkpoint",
    "list_checkpoints",
    "open_run",
    "restore",
    "save_checkpoint",
    "trainer_state",
]
