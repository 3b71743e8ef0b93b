"""Run folders of `train`: checkpoint folders with trainer state, resume, metrics upkeep.

A complete checkpoint is a `checkpoint-{step:06d}/` folder holding `config.json` (written
last by `save_pretrained`) and `trainer_state.pt` (written before the folder is renamed into
place); anything else — a hidden `.checkpoint-*.partial` staging folder left by a crash — is
ignored and cleaned up by the next run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch.optim.lr_scheduler import LambdaLR

from model.checkpoint import load_into, load_state_dict
from model.errors import CheckpointError, ModelConfigError
from model.modeling import KimiLinearForCausalLM

if TYPE_CHECKING:
    from model.train.loop import TrainConfig

__all__ = [
    "METRICS_FILE",
    "TRAINER_STATE",
    "RunLog",
    "kept_metrics",
    "latest_checkpoint",
    "list_checkpoints",
    "open_run",
    "restore",
    "save_run_checkpoint",
    "trainer_state",
]

METRICS_FILE = "metrics.jsonl"
TRAINER_STATE = "trainer_state.pt"
_CHECKPOINT = re.compile(r"checkpoint-(\d{6,})")
#: Fields a resume may change: how long to train and how often to log, evaluate and save —
#: not the math of a step (changing `steps` re-shapes the rest of the lr schedule).
_RESUMABLE = frozenset(
    {"steps", "eval_every", "eval_batches", "checkpoint_every", "keep_checkpoints", "log_every"}
)


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


def save_run_checkpoint(
    out_dir: Path, state: dict[str, Any], model: KimiLinearForCausalLM, tokenizer: Any, keep: int
) -> Path:
    """Write `checkpoint-{step}`: staged in a hidden folder, renamed into place once the
    weights, tokenizer and trainer state are all on disk; then keep only the `keep` newest."""
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


def trainer_state(
    step: int,
    tokens: int,
    elapsed: float,
    cfg: TrainConfig,
    opt: torch.optim.Optimizer,
    sched: LambdaLR,
    gen: torch.Generator,
) -> dict[str, Any]:
    """Everything besides the weights that a resumed run needs to replay the same steps."""
    return {
        "step": step,
        "tokens": tokens,
        "elapsed_s": elapsed,
        "config": dataclasses.asdict(cfg),
        "optimizer": opt.state_dict(),
        "scheduler": sched.state_dict(),
        "generator": gen.get_state(),
        "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def restore(
    ckpt: Path,
    model: torch.nn.Module,
    cfg: TrainConfig,
    opt: torch.optim.Optimizer,
    sched: LambdaLR,
    gen: torch.Generator,
) -> dict[str, Any]:
    """Load weights, optimizer, scheduler and RNG states from `ckpt`; returns its state."""
    try:
        state = torch.load(ckpt / TRAINER_STATE, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, EOFError) as e:
        raise CheckpointError(f"{ckpt / TRAINER_STATE}: not readable ({e})") from e
    saved = state["config"]
    changed = sorted(
        k for k, v in dataclasses.asdict(cfg).items() if k not in _RESUMABLE and saved.get(k) != v
    )
    if changed:
        diff = ", ".join(f"{k}: {saved.get(k)!r} → {getattr(cfg, k)!r}" for k in changed)
        raise ModelConfigError(
            f"cannot resume {ckpt} with a different config ({diff}); "
            f"only {', '.join(sorted(_RESUMABLE))} may change"
        )
    device = next(model.parameters()).device
    load_into(model, load_state_dict(ckpt, device=device))
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    gen.set_state(state["generator"])
    torch.set_rng_state(state["torch_rng"])
    if state["cuda_rng"] and torch.cuda.is_available():
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


def open_run(out_dir: Path | None, resume: bool) -> Path | None:
    """Check `out_dir` for a fresh or a resumed run; drop staging folders of a crash."""
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


class RunLog:
    """Counters and metrics rows of one `train` call: each row is completed with step,
    tokens, throughput and elapsed time, appended (flushed) to `metrics.jsonl`, then handed
    to `on_metrics`."""

    def __init__(
        self,
        tokens_per_step: int,
        out_dir: Path | None,
        on_metrics: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        self.tokens_per_step, self.on_metrics = tokens_per_step, on_metrics
        self.file = None if out_dir is None else out_dir / METRICS_FILE
        self.step = self.tokens = 0
        self.prior_s = 0.0  # wall time of the runs this one resumes
        self.start = time.perf_counter()
        self.rows: list[dict[str, Any]] = []
        self.window_tokens, self.window_s = 0, 0.0  # trained since the previous row
        self.call_tokens, self.call_s = 0, 0.0  # trained by this call

    def resume_from(self, state: dict[str, Any], metrics_file: Path) -> None:
        """Continue the counters of a restored trainer state and its kept metrics rows."""
        self.step, self.tokens, self.prior_s = state["step"], state["tokens"], state["elapsed_s"]
        self.rows = kept_metrics(metrics_file, self.step)

    def elapsed(self) -> float:
        return self.prior_s + time.perf_counter() - self.start

    def advance(self, step_s: float) -> None:
        """Count one optimizer step that took `step_s` seconds."""
        self.step += 1
        self.tokens += self.tokens_per_step
        self.window_tokens += self.tokens_per_step
        self.window_s += step_s
        self.call_tokens += self.tokens_per_step
        self.call_s += step_s

    def emit(self, row: dict[str, Any]) -> None:
        """Complete `row`, keep it, append it to `metrics.jsonl` and hand it on."""
        row = {"step": self.step, "tokens": self.tokens, **row}
        if self.window_tokens:
            row["tokens_per_s"] = self.window_tokens / max(self.window_s, 1e-9)
        row["elapsed_s"] = self.elapsed()
        self.window_tokens, self.window_s = 0, 0.0
        self.rows.append(row)
        if self.file is not None:
            with self.file.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
                f.flush()
        if self.on_metrics is not None:
            self.on_metrics(dict(row))

    def stats(self, row: dict[str, Any]) -> str:
        """The progress bar's text: this step's loss and the latest eval loss."""
        evals = [r["eval_loss"] for r in self.rows if "eval_loss" in r]
        return f"loss {row['loss']:.3f}" + (f"  eval {evals[-1]:.3f}" if evals else "")
