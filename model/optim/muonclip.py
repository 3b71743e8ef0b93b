"""`MuonClip`: Muon for hidden matrices, AdamW for the rest, then QK-Clip on MLA layers.

This is Kimi K2's optimizer (Muon with Moonlight's RMS matching, plus QK-Clip) as one
`torch.optim.Optimizer`, so LR schedulers, `state_dict()` checkpoints and `zero_grad` work
as for any optimizer. The class only keeps state and calls the pure functions in
`newton_schulz.py` and `qk_clip.py`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn

from kimmy_swarm.model.errors import CheckpointError, ModelConfigError
from kimmy_swarm.model.optim.groups import ParamSplit, split_params, uses_weight_decay
from kimmy_swarm.model.optim.newton_schulz import muon_update, rms_match_scale
from kimmy_swarm.model.optim.qk_clip import QKClipResult, find_mla_layers, qk_clip_

__all__ = ["MuonClip"]


def _check_range(name: str, value: float, *, low: float, high: float, allowed: str) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not (low <= value < high) or math.isnan(value):
        raise ModelConfigError(f"{name} must be {allowed}; got {value!r}")


def _validate(
    *,
    lr: float,
    adamw_lr: float,
    weight_decay: float,
    momentum: float,
    ns_steps: int,
    adamw_betas: tuple[float, float],
    adamw_eps: float,
    qk_clip_tau: float | None,
) -> None:
    """Raise `ModelConfigError` naming the first hyper-parameter outside its range."""
    _check_range("lr", lr, low=0.0, high=math.inf, allowed="a finite number ≥ 0")
    _check_range("adamw_lr", adamw_lr, low=0.0, high=math.inf, allowed="a finite number ≥ 0")
    _check_range("weight_decay", weight_decay, low=0.0, high=math.inf, allowed="finite, ≥ 0")
    _check_range("momentum", momentum, low=0.0, high=1.0, allowed="in [0, 1)")
    if isinstance(ns_steps, bool) or not isinstance(ns_steps, int) or ns_steps < 1:
        raise ModelConfigError(f"ns_steps must be an int ≥ 1; got {ns_steps!r}")
    if len(adamw_betas) != 2:
        raise ModelConfigError(f"adamw_betas must be (beta1, beta2); got {adamw_betas!r}")
    for i, beta in enumerate(adamw_betas):
        _check_range(f"adamw_betas[{i}]", beta, low=0.0, high=1.0, allowed="in [0, 1)")
    if not (isinstance(adamw_eps, int | float) and 0.0 < adamw_eps < math.inf):
        raise ModelConfigError(f"adamw_eps must be a finite number > 0; got {adamw_eps!r}")
    if qk_clip_tau is not None:
        _check_range("qk_clip_tau", qk_clip_tau, low=0.0, high=math.inf, allowed="None or > 0")
        if qk_clip_tau <= 0:
            raise ModelConfigError(f"qk_clip_tau must be None or > 0; got {qk_clip_tau}")


def _param_groups(
    split: ParamSplit, *, lr: float, adamw_lr: float, weight_decay: float
) -> list[dict[str, Any]]:
    """Up to four groups — (Muon | AdamW) × (decay | no decay) — skipping empty ones.

    Each group carries its own `lr`, so an LR scheduler scales Muon's and AdamW's rates by
    the same factor while keeping them apart.
    """
    groups: list[dict[str, Any]] = []
    for use_muon, named, group_lr in ((True, split.muon, lr), (False, split.adamw, adamw_lr)):
        for decay in (True, False):
            params = [(n, p) for n, p in named if uses_weight_decay(n, p) == decay]
            if params:
                groups.append(
                    {
                        "params": params,
                        "use_muon": use_muon,
                        "lr": group_lr,
                        "weight_decay": weight_decay if decay else 0.0,
                    }
                )
    return groups


def _adamw_update_(
    param: torch.Tensor,
    grad: torch.Tensor,
    exp_avg: torch.Tensor,
    exp_avg_sq: torch.Tensor,
    *,
    step: int,
    lr: float,
    betas: tuple[float, float],
    eps: float,
    weight_decay: float,
) -> None:
    """One AdamW step in place (decoupled decay, bias-corrected moments; `step` from 1)."""
    beta1, beta2 = betas
    param.mul_(1.0 - lr * weight_decay)
    exp_avg.lerp_(grad, 1.0 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    bias1 = 1.0 - beta1**step
    bias2 = 1.0 - beta2**step
    denom = (exp_avg_sq.sqrt() / math.sqrt(bias2)).add_(eps)
    param.addcdiv_(exp_avg, denom, value=-lr / bias1)


def _first_difference(saved: list[str], current: list[str]) -> str:
    for i, (a, b) in enumerate(zip(saved, current, strict=False)):
        if a != b:
            return f"parameter {i} is {a!r} in the state, {b!r} in the model"
    return f"the state names {len(saved)} parameters, the model {len(current)}"


class MuonClip(torch.optim.Optimizer):
    """Muon + AdamW + QK-Clip over one model (Kimi K2 / Moonlight recipe).

    Muon group (`use_muon=True`, see `split_params`):
    `W ← W·(1 − lr·wd) − lr·0.2·√max(A, B)·NS(nesterov momentum)`. AdamW group: decoupled
    weight decay and bias correction. Then, if `qk_clip_tau` is set, every MLA layer is
    clipped with the max logits it recorded since the last step, and its record is reset.

    Defaults: `lr=1e-3` is an AdamW-scale rate — the 0.2·√max(A, B) factor matches Muon's
    update RMS to AdamW's, so one lr (and `weight_decay=0.1`, Moonlight/K2) serves both
    groups. Keller Jordan's 0.02 belongs to his unscaled update; here it would act like an
    AdamW lr of 0.02, ~10× the usual. `adamw_lr=None` means "same as lr". β = (0.9, 0.95),
    eps 1e-8, μ = 0.95 Nesterov, 5 Newton–Schulz steps and τ = 100 are the K2/Moonlight
    values. `ns_dtype` stays fp32 (bf16 matmuls are ~25× slower on CPU); bf16 suits a GPU
    and reproduces `torch.optim.Muon` bit for bit.

    Args:
        model: the module to train; its trainable parameters are grouped by name.

    Raises:
        ModelConfigError: a hyper-parameter out of range, or no trainable parameters.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_steps: int = 5,
        ns_dtype: torch.dtype = torch.float32,
        adamw_lr: float | None = None,
        adamw_betas: tuple[float, float] = (0.9, 0.95),
        adamw_eps: float = 1e-8,
        qk_clip_tau: float | None = 100.0,
    ) -> None:
        adamw_lr = lr if adamw_lr is None else adamw_lr
        _validate(
            lr=lr,
            adamw_lr=adamw_lr,
            weight_decay=weight_decay,
            momentum=momentum,
            ns_steps=ns_steps,
            adamw_betas=adamw_betas,
            adamw_eps=adamw_eps,
            qk_clip_tau=qk_clip_tau,
        )
        groups = _param_groups(
            split_params(model), lr=lr, adamw_lr=adamw_lr, weight_decay=weight_decay
        )
        if not groups:
            raise ModelConfigError(f"{type(model).__name__} has no trainable parameters")
        defaults = {
            "lr": lr,
            "weight_decay": weight_decay,
            "use_muon": False,
            "momentum": momentum,
            "nesterov": nesterov,
            "ns_steps": ns_steps,
            "betas": tuple(adamw_betas),
            "eps": adamw_eps,
        }
        super().__init__(groups, defaults)
        self.ns_dtype = ns_dtype
        self.qk_clip_tau = qk_clip_tau
        self.mla_layers = find_mla_layers(model)
        self.last_qk_clip: dict[str, QKClipResult] = {}
        if qk_clip_tau is not None:
            for _, layer in self.mla_layers:
                layer.record_max_logits = True

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """Update every parameter with a gradient, then QK-Clip; returns `closure()`'s loss."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            if group["use_muon"]:
                self._muon_step(group)
            else:
                self._adamw_step(group)
        if self.qk_clip_tau is not None:
            self._qk_clip(self.qk_clip_tau)
        return loss

    def _with_grads(
        self, group: dict[str, Any]
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor, dict[str, Any]]]:
        """(parameter, its dense gradient, its state) for the group's parameters that have one."""
        for p in group["params"]:
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise ModelConfigError("MuonClip does not support sparse gradients")
            yield p, p.grad, self.state[p]

    def _muon_step(self, group: dict[str, Any]) -> None:
        lr, wd = group["lr"], group["weight_decay"]
        for p, grad, state in self._with_grads(group):
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(grad)
            update = muon_update(
                grad,
                state["momentum_buffer"],
                momentum=group["momentum"],
                nesterov=group["nesterov"],
                ns_steps=group["ns_steps"],
                ns_dtype=self.ns_dtype,
            )  # (A, B)
            p.mul_(1.0 - lr * wd)
            p.add_(update, alpha=-lr * rms_match_scale(p.shape))

    def _adamw_step(self, group: dict[str, Any]) -> None:
        for p, grad, state in self._with_grads(group):
            if "step" not in state:
                state["step"] = 0
                state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg_sq"] = torch.zeros_like(p)
            state["step"] += 1
            _adamw_update_(
                p,
                grad,
                state["exp_avg"],
                state["exp_avg_sq"],
                step=state["step"],
                lr=group["lr"],
                betas=group["betas"],
                eps=group["eps"],
                weight_decay=group["weight_decay"],
            )

    def _qk_clip(self, tau: float) -> None:
        results: dict[str, QKClipResult] = {}
        for name, layer in self.mla_layers:
            results[name] = qk_clip_(layer, tau)
            layer.reset_max_logits()
        self.last_qk_clip = results

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a `state_dict()`, first checking it was saved for the same parameters.

        Raises:
            CheckpointError: the saved groups name other parameters or another split.
        """
        saved = state_dict.get("param_groups", [])
        if len(saved) != len(self.param_groups):
            raise CheckpointError(
                f"optimizer state has {len(saved)} param groups; this model needs "
                f"{len(self.param_groups)}"
            )
        for i, (old, new) in enumerate(zip(saved, self.param_groups, strict=True)):
            old_names, new_names = old.get("param_names"), new.get("param_names")
            if old.get("use_muon") != new["use_muon"] or old_names != new_names:
                raise CheckpointError(
                    f"optimizer param group {i} was saved for other parameters: "
                    f"use_muon {old.get('use_muon')} vs {new['use_muon']}; "
                    f"{_first_difference(old_names or [], new_names or [])}"
                )
        super().load_state_dict(state_dict)
