"""GRPO on our own engine: groups of sampled completions, a scorer, a clipped policy step.

Each step takes `tasks_per_step` prompts (chat messages + tools, drawn with the seed), and
the serving engine (`model.serve`, the same module being trained) samples `group_size`
completions of each with its token ids and logprobs — token-in/token-out, the text is never
re-tokenized. A forced tool call (`tool_choice` "required") constrains decoding to the
tools' JSON, as our server does. The caller's `score_group` turns a group's completions into
rewards and advantages (PARL and group-relative advantages live on the swarm side,
`rewards`); the step is then the clipped surrogate of PPO/GRPO,

    L = -mean_i mean_t min(ρ_it·A_i, clip(ρ_it, 1-ε, 1+ε)·A_i),   ρ = π_θ / π_θ_old,

over the completion tokens, for `ppo_epochs` passes (π_θ_old is the policy that sampled;
with one pass ρ = 1 and the step is the plain policy gradient of the advantages). Groups
whose advantages are all 0 carry no signal and are skipped. No KL term (β = 0).

Full fine-tuning by default; `train_layers` trains only the last decoder layers and the
final norm (the embeddings and the tied head stay frozen). Checkpoints are HF-format folders
(`save_pretrained` + tokenizer + `trainer_state.pt`), metrics go to `metrics.jsonl`, and
`resume=True` continues from the newest checkpoint with the same prompts and samples.

    result = train_grpo(model, tokenizer, prompts, score_group, GRPOConfig(steps=40),
                        out_dir=Path("runs/parl"))
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kimmy_swarm.model.errors import ModelConfigError
from kimmy_swarm.model.train.run_folder import (
    METRICS_FILE,
    kept_metrics,
    open_run,
    restore,
    save_checkpoint,
    trainer_state,
)

__all__ = [
    "GRPOConfig",
    "GRPOResult",
    "Prompt",
    "Sample",
    "ScoreGroup",
    "Scored",
    "clipped_loss",
    "completion_logprobs",
    "train_grpo",
    "trainable_parameters",
]


@dataclass(frozen=True)
class Prompt:
    """One task as the policy sees it: chat messages, the tools it must call one of, and
    the caller's key for the task (handed back with each sample)."""

    key: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Sample:
    """One sampled completion: the prompt's and the completion's token ids, the text they
    decode to, and the sampling policy's logprob of each completion token."""

    prompt: Prompt
    index: int
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    text: str
    logprobs: tuple[float, ...]
    finish_reason: str


@dataclass(frozen=True)
class Scored:
    """What the scorer says of one sample: its reward, its advantage within the group,
    and figures to log (numbers are averaged per step in the metrics)."""

    reward: float
    advantage: float
    metrics: dict[str, Any] = field(default_factory=dict)


#: `(the group's samples, training step) -> one score per sample`: a `Scored`, or any
#: object with the same `reward`, `advantage` and `metrics` attributes.
ScoreGroup = Callable[[Sequence[Sample], int], Sequence[Any]]


@dataclass(frozen=True)
class GRPOConfig:
    """How the policy is trained (validated on construction; errors name the bad value).

    Attributes:
        steps: optimizer steps (the total; a resume trains the rest).
        tasks_per_step: prompts per step.
        group_size: completions sampled per prompt (k).
        lr: AdamW learning rate (constant).
        clip_eps: ε of the clipped ratio.
        ppo_epochs: passes over each step's samples.
        temperature: sampling temperature.
        max_new_tokens: the most tokens of one completion.
        max_grad_norm: gradient clipping.
        train_layers: None trains every weight; n trains the last n decoder layers and the
            final norm only.
        weight_decay: AdamW weight decay.
        checkpoint_every: steps between checkpoints (and one at the end).
        keep_checkpoints: the newest checkpoints kept.
        seed: draws of prompts and samples.
    """

    steps: int = 40
    tasks_per_step: int = 2
    group_size: int = 4
    lr: float = 1e-5
    clip_eps: float = 0.2
    ppo_epochs: int = 1
    temperature: float = 1.0
    max_new_tokens: int = 256
    max_grad_norm: float = 1.0
    train_layers: int | None = None
    weight_decay: float = 0.0
    checkpoint_every: int = 10
    keep_checkpoints: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        ints = ("steps", "tasks_per_step", "ppo_epochs", "max_new_tokens", "checkpoint_every",
                "keep_checkpoints")  # fmt: skip
        for name in ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ModelConfigError(f"{name} must be an integer ≥ 1; got {value!r}")
        if not isinstance(self.group_size, int) or self.group_size < 2:
            raise ModelConfigError(
                f"group_size must be an integer ≥ 2 (advantages are relative to the group); "
                f"got {self.group_size!r}"
            )
        if self.train_layers is not None and self.train_layers < 1:
            raise ModelConfigError(f"train_layers must be ≥ 1 or None; got {self.train_layers!r}")
        for name, low in (("lr", 0.0), ("clip_eps", 0.0), ("max_grad_norm", 0.0)):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > low):
                raise ModelConfigError(f"{name} must be a finite number > {low}; got {value!r}")
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ModelConfigError(f"temperature must be > 0; got {self.temperature!r}")
        if self.weight_decay < 0:
            raise ModelConfigError(f"weight_decay must be ≥ 0; got {self.weight_decay!r}")


#: Fields a resume may change (how long to train and how often to save).
_RESUMABLE = frozenset({"steps", "checkpoint_every", "keep_checkpoints"})


@dataclass
class GRPOResult:
    steps: int
    rows: list[dict[str, Any]]
    checkpoint: Path | None
    elapsed_s: float


def _decoder_layers(model: torch.nn.Module) -> Sequence[torch.nn.Module]:
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise ModelConfigError(
            f"train_layers needs a model with .model.layers (got {type(model).__name__})"
        )
    return layers


def trainable_parameters(model: torch.nn.Module, train_layers: int | None) -> list[Any]:
    """Mark what trains (requires_grad) and return it."""
    if train_layers is None:
        for p in model.parameters():
            p.requires_grad_(True)
        return [p for p in model.parameters()]
    for p in model.parameters():
        p.requires_grad_(False)
    layers = _decoder_layers(model)
    keep: list[torch.nn.Module] = list(layers[-train_layers:])
    norm = getattr(model.model, "norm", None)
    if isinstance(norm, torch.nn.Module):
        keep.append(norm)
    params = [p for m in keep for p in m.parameters()]
    for p in params:
        p.requires_grad_(True)
    return params


def _logits(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    out = model(ids)
    return out if isinstance(out, torch.Tensor) else out.logits


def completion_logprobs(model: torch.nn.Module, sample: Sample) -> torch.Tensor:
    """log π(token) of each completion token under `model` (with grad when enabled)."""
    device = next(model.parameters()).device
    ids = torch.tensor([[*sample.prompt_ids, *sample.completion_ids]], device=device)
    n = len(sample.completion_ids)
    logits = _logits(model, ids)[0, -n - 1 : -1].float()  # the positions that predict them
    target = ids[0, -n:]
    return logits.log_softmax(-1).gather(1, target[:, None]).squeeze(1)


def clipped_loss(
    new: torch.Tensor, old: torch.Tensor, advantage: float, clip_eps: float
) -> tuple[torch.Tensor, float]:
    """The clipped surrogate of one sample (mean over its tokens) and its clipped share."""
    ratio = torch.exp(new - old)
    plain = ratio * advantage
    clipped = ratio.clamp(1 - clip_eps, 1 + clip_eps) * advantage
    loss = -torch.minimum(plain, clipped).mean()
    share = float(((ratio - ratio.clamp(1 - clip_eps, 1 + clip_eps)).abs() > 0).float().mean())
    return loss, share


class _Sampler:
    """Samples groups with the serving engine over the policy being trained."""

    def __init__(self, model: Any, tokenizer: Any, cfg: GRPOConfig) -> None:
        self.model, self.tokenizer, self.cfg = model, tokenizer, cfg

    def _render(self, prompt: Prompt) -> tuple[list[int], dict[str, Any] | None]:
        from kimmy_swarm.model.serve.chat import render_chat
        from kimmy_swarm.model.serve.protocol import ChatMessage, Tool
        from kimmy_swarm.model.serve.structured import schema_for_tool_choice

        messages = [ChatMessage.model_validate(m) for m in prompt.messages]
        tools = [Tool.model_validate(t) for t in prompt.tools] or None
        rendered = render_chat(self.tokenizer, messages, tools)
        schema = schema_for_tool_choice(list(prompt.tools), "required") if tools else None
        return rendered.ids, schema

    def sample(self, prompts: Sequence[Prompt], step: int) -> list[list[Sample]]:
        from kimmy_swarm.model.serve.factory import build_engine
        from kimmy_swarm.model.serve.types import GenerationParams

        k = self.cfg.group_size
        rendered = [self._render(p) for p in prompts]
        longest = max(len(ids) for ids, _ in rendered) + self.cfg.max_new_tokens
        # A fresh engine per step: its prefix cache would hold the previous weights' keys.
        engine = build_engine(
            self.model, self.tokenizer, max_num_seqs=len(prompts) * k,
            max_model_len=longest, enable_prefix_caching=False,
        )  # fmt: skip
        ids_of: list[tuple[int, int, str]] = []
        for i, (ids, schema) in enumerate(rendered):
            for j in range(k):
                params = GenerationParams(
                    max_tokens=self.cfg.max_new_tokens,
                    temperature=self.cfg.temperature,
                    seed=self.cfg.seed * 1_000_003 + step * 10_007 + i * 101 + j,
                    logprobs=True,
                    json_schema=schema,
                )
                ids_of.append((i, j, engine.add_request(ids, params)))
        while engine.has_unfinished():
            engine.step()
            failures = engine.pop_failures()
            if failures:
                raise failures[0][1]
        groups: list[list[Sample]] = [[] for _ in prompts]
        for i, j, rid in ids_of:
            out = engine.pop_output(rid)
            groups[i].append(
                Sample(
                    prompt=prompts[i], index=j, prompt_ids=tuple(rendered[i][0]),
                    completion_ids=tuple(out.output_ids), text=out.text,
                    logprobs=tuple(out.logprobs), finish_reason=out.finish_reason,
                )
            )  # fmt: skip
        return groups


def _mean_metrics(scored: Sequence[Scored]) -> dict[str, float]:
    keys = sorted({k for s in scored for k, v in s.metrics.items() if _number(v)})
    out = {}
    for k in keys:
        values = [float(s.metrics[k]) for s in scored if _number(s.metrics.get(k))]
        out[k] = sum(values) / len(values)
    return out


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _policy_step(
    model: Any,
    params: list[Any],
    opt: Any,
    batch: list[tuple[Sample, Any]],
    cfg: GRPOConfig,
) -> dict[str, float]:
    """`ppo_epochs` passes of the clipped loss over the samples with a signal."""
    live = [(s, sc) for s, sc in batch if sc.advantage != 0.0 and s.completion_ids]
    if not live:
        return {"loss": 0.0, "trained_samples": 0.0}
    old: list[torch.Tensor] = []
    mismatch: list[float] = []
    losses: list[float] = []
    clipped: list[float] = []
    norm = 0.0
    for epoch in range(cfg.ppo_epochs):
        opt.zero_grad(set_to_none=True)
        for n, (sample, scored) in enumerate(live):
            new = completion_logprobs(model, sample)
            if epoch == 0:
                old.append(new.detach())
                sampled = torch.tensor(sample.logprobs[: len(new)], device=new.device)
                if len(sampled) == len(new):
                    mismatch.append(float((sampled - new.detach()).abs().mean()))
            loss, share = clipped_loss(new, old[n], scored.advantage, cfg.clip_eps)
            (loss / len(live)).backward()
            losses.append(float(loss.detach()))
            clipped.append(share)
        norm = float(torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm))
        opt.step()
    out = {
        "loss": sum(losses) / len(losses),
        "grad_norm": norm,
        "clipped": sum(clipped) / len(clipped),
        "trained_samples": float(len(live)),
    }
    if mismatch:  # engine vs. trainer logprobs of the same tokens (numerics, not policy)
        out["logprob_mismatch"] = sum(mismatch) / len(mismatch)
    return out


def train_grpo(
    model: torch.nn.Module,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    score_group: ScoreGroup,
    cfg: GRPOConfig,
    *,
    out_dir: Path | None = None,
    resume: bool = False,
    on_step: Callable[[dict[str, Any]], None] | None = None,
) -> GRPOResult:
    """Train `model` with GRPO on `prompts`; see the module docstring.

    Raises:
        ModelConfigError: no prompts; a resume with different settings; `out_dir` already
            holds a run (without `resume`).
        CheckpointError: `resume` without a checkpoint, or an unreadable one.
    """
    if not prompts:
        raise ModelConfigError("GRPO needs at least one prompt")
    ckpt = open_run(out_dir, resume)
    params = trainable_parameters(model, cfg.train_layers)
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    start, prior_s, rows = 0, 0.0, []
    if ckpt is not None and out_dir is not None:
        state = restore(ckpt, model, cfg, _RESUMABLE, optimizer=opt)
        start, prior_s = int(state["step"]), float(state["elapsed_s"])
        rows = kept_metrics(out_dir / METRICS_FILE, start)
    sampler = _Sampler(model, tokenizer, cfg)
    t_run = time.perf_counter()
    last: Path | None = ckpt
    for step in range(start, cfg.steps):
        t0 = time.perf_counter()
        rng = random.Random(cfg.seed * 7_919 + step)
        chosen = [prompts[rng.randrange(len(prompts))] for _ in range(cfg.tasks_per_step)]
        with torch.no_grad():
            groups = sampler.sample(chosen, step)
        t_sample = time.perf_counter() - t0
        batch: list[tuple[Sample, Any]] = []
        for group in groups:
            scored = list(score_group(group, step))
            if len(scored) != len(group):
                raise ModelConfigError(
                    f"score_group returned {len(scored)} scores for {len(group)} samples"
                )
            batch += list(zip(group, scored, strict=True))
        t_score = time.perf_counter() - t0 - t_sample
        update = _policy_step(model, params, opt, batch, cfg)
        scored_all = [sc for _, sc in batch]
        row: dict[str, Any] = {
            "step": step + 1,
            "reward": sum(s.reward for s in scored_all) / len(scored_all),
            **_mean_metrics(scored_all),
            **update,
            "completion_tokens": sum(len(s.completion_ids) for s, _ in batch) / len(batch),
            "sample_s": t_sample,
            "score_s": t_score,
            "step_s": time.perf_counter() - t0,
            "elapsed_s": prior_s + time.perf_counter() - t_run,
            "tasks": [p.key for p in chosen],
        }
        rows.append(row)
        if out_dir is not None:
            with (out_dir / METRICS_FILE).open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps:
                state = trainer_state(step + 1, cfg, optimizer=opt, elapsed_s=row["elapsed_s"])
                last = save_checkpoint(out_dir, state, model, tokenizer, cfg.keep_checkpoints)
        if on_step is not None:
            on_step(dict(row))
    return GRPOResult(
        steps=cfg.steps, rows=rows, checkpoint=last, elapsed_s=prior_s + time.perf_counter() - t_run
    )
