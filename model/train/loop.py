"""The language-model training loop: next-token cross-entropy, warmup + decay schedule,
gradient clipping, periodic eval loss, a metrics JSONL, HF-format checkpoints and exact resume.

    cfg = TrainConfig(steps=200, optimizer="muonclip")
    result = train(model, train_data, eval_data, cfg, out_dir=Path("runs/tiny"), tokenizer=tok)

`out_dir` holds `metrics.jsonl` (one JSON row a line: step, tokens, loss, eval_loss, lr,
grad_norm, max_attn_logit, qk_clipped_heads, tokens_per_s, elapsed_s) and
`checkpoint-{step:06d}/` folders: the model as `save_pretrained` writes it (loadable with
`KimiLinearForCausalLM.from_pretrained`) plus `trainer_state.pt` (optimizer, scheduler, step,
RNG states, config). A checkpoint is staged in a hidden folder and renamed into place, so a
crash never leaves a half-written `checkpoint-*`. Resuming restores all of it and replays
the batch generator, so a resumed run ends bit-identical (CPU, fp32) to one never stopped.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.mla import MLAttention
from kimmy_swarm.model.modeling import KimiLinearForCausalLM
from kimmy_swarm.model.moe import balance_router_biases_
from kimmy_swarm.model.optim import MuonClip, find_mla_layers
from kimmy_swarm.model.optim.groups import uses_weight_decay
from kimmy_swarm.model.train._run_log import RunLog
from kimmy_swarm.model.train.data import TokenData
from kimmy_swarm.model.train.run_folder import (
    METRICS_FILE,
    open_run,
    restore,
    save_checkpoint,
    trainer_state,
)

__all__ = [
    "TrainConfig",
    "TrainResult",
    "eval_loss",
    "lr_factor",
    "make_optimizer",
    "train",
]

OPTIMIZERS = ("muonclip", "adamw")
SCHEDULES = ("cosine", "linear", "constant")
_COUNTS = ("steps", "batch_size", "seq_len", "eval_every", "eval_batches", "checkpoint_every",
           "keep_checkpoints", "log_every")  # fmt: skip
#: Fields a resume may change: how long to train and how often to log, evaluate and save —
#: not the math of a step (changing `steps` re-shapes the rest of the lr schedule).
_RESUMABLE = frozenset(
    {"steps", "eval_every", "eval_batches", "checkpoint_every", "keep_checkpoints", "log_every"}
)


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one run (validated on creation; errors name the field).

    `lr` is Muon's rate under MuonClip (RMS-matched, so AdamW-scale) and every parameter's
    under plain AdamW; `adamw_lr` is MuonClip's rate for its AdamW group (None = `lr`).
    `qk_clip_tau` only applies to MuonClip (None = no clipping). `grad_clip` None = no
    clipping (the norm is still logged). The schedule warms up linearly for `warmup_steps`,
    then decays to `min_lr_ratio · lr` at `steps` ("constant" stays at `lr`).
    """

    steps: int = 200
    batch_size: int = 8
    seq_len: int = 128
    optimizer: Literal["muonclip", "adamw"] = "muonclip"
    lr: float = 3e-3
    adamw_lr: float | None = None
    weight_decay: float = 0.1
    warmup_steps: int = 10
    schedule: Literal["cosine", "linear", "constant"] = "cosine"
    min_lr_ratio: float = 0.1
    eval_every: int = 50
    eval_batches: int = 4
    checkpoint_every: int = 100
    keep_checkpoints: int = 2
    seed: int = 0
    qk_clip_tau: float | None = 100.0
    grad_clip: float | None = 1.0
    log_every: int = 1
    router_bias_rate: float = 1e-3

    def __post_init__(self) -> None:
        for name in _COUNTS:
            _check_int(name, getattr(self, name), low=1)
        _check_int("warmup_steps", self.warmup_steps, low=0)
        _check_int("seed", self.seed, low=0)
        if self.optimizer not in OPTIMIZERS:
            raise ModelConfigError(f"optimizer {self.optimizer!r} is not one of {OPTIMIZERS}")
        if self.schedule not in SCHEDULES:
            raise ModelConfigError(f"schedule {self.schedule!r} is not one of {SCHEDULES}")
        _check_float("lr", self.lr, positive=True)
        _check_float("weight_decay", self.weight_decay, positive=False)
        _check_float("router_bias_rate", self.router_bias_rate, positive=False)
        for name in ("adamw_lr", "qk_clip_tau", "grad_clip"):
            if getattr(self, name) is not None:
                _check_float(name, getattr(self, name), positive=True, none_ok=True)
        _check_float("min_lr_ratio", self.min_lr_ratio, positive=False)
        if self.min_lr_ratio > 1:
            raise ModelConfigError(f"min_lr_ratio must be in [0, 1]; got {self.min_lr_ratio}")


def _check_int(name: str, value: Any, *, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ModelConfigError(f"{name} must be an integer ≥ {low}; got {value!r}")


def _check_float(name: str, value: Any, *, positive: bool, none_ok: bool = False) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value < 0 or (positive and value == 0):
        allowed = "a finite number > 0" if positive else "a finite number ≥ 0"
        raise ModelConfigError(f"{name} must be {allowed}{' or None' * none_ok}; got {value!r}")


@dataclass(frozen=True)
class TrainResult:
    """What a run produced. `metrics` is the whole history in `metrics.jsonl` order (rows
    of earlier runs included when resuming); eval losses are mean token cross-entropy."""

    final_eval_loss: float | None
    initial_eval_loss: float | None
    metrics: list[dict[str, Any]]
    tokens_seen: int
    tokens_per_s: float  # training throughput of this call (steps only, not evals or saves)
    wall_time_s: float
    steps: int
    checkpoint: Path | None


def lr_factor(cfg: TrainConfig, step: int) -> float:
    """Multiplier of the base learning rate for optimizer step `step` (0-based)."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    shape = 0.5 * (1 + math.cos(math.pi * progress)) if cfg.schedule == "cosine" else 1 - progress
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * shape


def make_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    """MuonClip, or the AdamW baseline: one rate, decay only on ≥ 2-D `*.weight` tensors
    (the same decay rule as MuonClip's groups, so the two differ only in the update)."""
    if cfg.optimizer == "muonclip":
        return MuonClip(
            model,
            lr=cfg.lr,
            adamw_lr=cfg.adamw_lr,
            weight_decay=cfg.weight_decay,
            qk_clip_tau=cfg.qk_clip_tau,
        )
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [
        {
            "params": [p for n, p in named if uses_weight_decay(n, p) == decay],
            "weight_decay": cfg.weight_decay if decay else 0.0,
        }
        for decay in (True, False)
    ]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=cfg.lr, betas=(0.9, 0.95))


@torch.no_grad()
def eval_loss(model: torch.nn.Module, batches: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """Mean next-token cross-entropy over `batches` (eval mode, no logit recording)."""
    device = next(model.parameters()).device
    was_training = model.training
    mla = find_mla_layers(model)
    recording = [layer.record_max_logits for _, layer in mla]
    for _, layer in mla:
        layer.record_max_logits = False
    model.eval()
    total, count = 0.0, 0
    for x, y in batches:
        logits = model(x.to(device))  # (B, T, V)
        total += float(
            F.cross_entropy(logits.float().flatten(0, 1), y.to(device).flatten(), reduction="sum")
        )
        count += y.numel()
    for (_, layer), rec in zip(mla, recording, strict=True):
        layer.record_max_logits = rec
    model.train(was_training)
    return total / count


# ---- one step ------------------------------------------------------------------------------
def _train_step(
    model: torch.nn.Module,
    opt: torch.optim.Optimizer,
    batch: tuple[torch.Tensor, torch.Tensor],
    cfg: TrainConfig,
    mla: list[MLAttention],
) -> dict[str, Any]:
    """One optimizer step; returns its metrics: loss, the lr it used, the gradient norm
    before clipping, the largest MLA logit of its forward and the heads QK-Clip rescaled."""
    device = next(model.parameters()).device
    x, y = (t.to(device) for t in batch)  # (B, T), (B, T)
    for layer in mla:  # record this step's forward only (eval forwards do not record)
        layer.reset_max_logits()
    logits = model(x)  # (B, T, V)
    loss = F.cross_entropy(logits.float().flatten(0, 1), y.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip or math.inf)
    row: dict[str, Any] = {
        "loss": float(loss.detach()),
        "lr": opt.param_groups[0]["lr"],
        "grad_norm": float(grad_norm),
    }
    if mla:
        row["max_attn_logit"] = max(float(layer.max_logits.max()) for layer in mla)
    opt.step()
    if isinstance(opt, MuonClip) and opt.qk_clip_tau is not None:
        row["qk_clipped_heads"] = sum(r.num_clipped for r in opt.last_qk_clip.values())
    for layer in mla:
        layer.reset_max_logits()
    if cfg.router_bias_rate > 0:
        balance_router_biases_(model, rate=cfg.router_bias_rate)
    return row


# ---- the loop ------------------------------------------------------------------------------
def _progress(enabled: bool, total: int, done: int) -> AbstractContextManager[Any]:
    """A rich bar on stderr (stdout keeps only the final summary line), or nothing."""
    if not enabled:
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("[bold]train"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[stats]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )
    bar.add_task("train", total=total, completed=done, stats="")
    return bar


@contextmanager
def _recording_logits(model: torch.nn.Module) -> Iterator[list[MLAttention]]:
    """Have every MLA layer record its max attention logit during the run (the metrics
    and QK-Clip read it); afterwards the flags are as before, so inference pays nothing."""
    mla = [layer for _, layer in find_mla_layers(model)]
    before = [layer.record_max_logits for layer in mla]
    for layer in mla:
        layer.record_max_logits = True
    try:
        yield mla
    finally:
        for layer, flag in zip(mla, before, strict=True):
            layer.record_max_logits = flag


def train(
    model: KimiLinearForCausalLM,
    data_train: TokenData,
    data_eval: TokenData,
    cfg: TrainConfig,
    *,
    out_dir: Path | None,
    tokenizer: Any = None,
    resume: bool = False,
    on_metrics: Callable[[dict[str, Any]], None] | None = None,
    progress: bool = True,
) -> TrainResult:
    """Train `model` in place for `cfg.steps` optimizer steps (see the module docstring).

    Eval loss is taken at step 0, every `eval_every` steps and at the end; checkpoints
    every `checkpoint_every` steps and at the end. Rows go to `metrics.jsonl`, then to
    `on_metrics`. `resume` continues from the newest complete checkpoint in `out_dir`.

    Raises:
        ModelConfigError: data too short for `seq_len`, a resume with a changed config, or
            a fresh run into a folder that already holds one.
        CheckpointError: `resume` but `out_dir` has no complete checkpoint.
    """
    data_train.check_fits(cfg.seq_len, "training data")
    eval_sets = data_eval.eval_batches(cfg.batch_size, cfg.seq_len, cfg.eval_batches)
    ckpt = open_run(out_dir, resume)
    log = RunLog(cfg.batch_size * cfg.seq_len, out_dir, on_metrics)
    with _recording_logits(model) as mla:
        opt = make_optimizer(model, cfg)
        sched = LambdaLR(opt, functools.partial(lr_factor, cfg))
        gen = torch.Generator().manual_seed(cfg.seed)
        if resume and out_dir is not None and ckpt is not None:
            state = restore(
                ckpt, model, cfg, _RESUMABLE, optimizer=opt, scheduler=sched, generator=gen
            )
            log.resume_from(state, out_dir / METRICS_FILE)
        model.train()
        with _progress(progress, cfg.steps, log.step) as bar:
            if log.step == 0:
                log.emit({"eval_loss": eval_loss(model, eval_sets)})
            while log.step < cfg.steps:
                t0 = time.perf_counter()
                batch = data_train.batch(cfg.batch_size, cfg.seq_len, gen)
                row = _train_step(model, opt, batch, cfg, mla)
                sched.step()
                log.advance(time.perf_counter() - t0)
                final = log.step == cfg.steps
                if final or log.step % cfg.eval_every == 0:
                    row["eval_loss"] = eval_loss(model, eval_sets)
                if final or log.step % cfg.log_every == 0 or "eval_loss" in row:
                    log.emit(row)
                if bar is not None:
                    bar.update(bar.task_ids[0], completed=log.step, stats=log.stats(row))
                if out_dir is not None and (final or log.step % cfg.checkpoint_every == 0):
                    state = trainer_state(
                        log.step, cfg, optimizer=opt, tokens=log.tokens,
                        elapsed_s=log.elapsed(), scheduler=sched, generator=gen,
                    )  # fmt: skip
                    ckpt = save_checkpoint(out_dir, state, model, tokenizer, cfg.keep_checkpoints)
    return _result(log, ckpt)


def _result(log: RunLog, checkpoint: Path | None) -> TrainResult:
    evals = [r["eval_loss"] for r in log.rows if "eval_loss" in r]
    return TrainResult(
        final_eval_loss=evals[-1] if evals else None,
        initial_eval_loss=next((r["eval_loss"] for r in log.rows if r["step"] == 0), None),
        metrics=log.rows,
        tokens_seen=log.tokens,
        tokens_per_s=log.call_tokens / max(log.call_s, 1e-9),
        wall_time_s=time.perf_counter() - log.start,
        steps=log.step,
        checkpoint=checkpoint,
    )
