"""Which parameters Muon trains and which AdamW trains, and which of them decay.

Muon orthogonalises a 2-D update, which only makes sense for a weight that maps one hidden
space to another. Three kinds of matrix are excluded even though they are 2-D (Moonlight,
Kimi K2): the token embedding and the LM head, whose rows are looked up or scored one token
at a time, and the MoE router gate, a tiny `[E, hidden]` scorer whose rows should move
independently. Everything else — norms, biases, `A_log` `[1, 1, H, 1]`, `dt_bias`, the
Attention-Residual pseudo-queries, and the depthwise conv filters `[D, 1, 4]` (a 4-tap
filter per channel, not a map between spaces) — goes to AdamW.

Weight decay (`uses_weight_decay`): only on weights that are at least 2-D and named
`*.weight`, in both groups. So embeddings, the LM head, the router gate, the conv filters
and every Muon matrix decay; norm gains, biases, `A_log`, `dt_bias` and the pseudo-queries
do not — pulling those toward 0 would change what the layer computes (a norm gain of 0
mutes a channel, `A_log` → 0 fixes the decay rate at 1) instead of regularising a map.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

__all__ = ["ParamSplit", "split_params", "uses_muon", "uses_weight_decay"]

NamedParams = list[tuple[str, nn.Parameter]]


@dataclass(frozen=True)
class ParamSplit:
    """The trainable parameters of a model, each in exactly one of the two lists."""

    muon: NamedParams
    adamw: NamedParams


def _is_adamw_matrix(name: str) -> bool:
    """Embedding, LM head or router gate, matched on whole name components."""
    parts = name.split(".")
    if "embed_tokens" in parts or "lm_head" in parts:
        return True
    return parts[-3:] == ["block_sparse_moe", "gate", "weight"]


def uses_muon(name: str, param: nn.Parameter) -> bool:
    """Muon for 2-D matrices except embeddings, the LM head and the MoE router gate."""
    return param.ndim == 2 and not _is_adamw_matrix(name)


def uses_weight_decay(name: str, param: nn.Parameter) -> bool:
    """Decay only weights of ≥ 2 dims named `*.weight` (see the module docstring)."""
    return param.ndim >= 2 and name.rsplit(".", 1)[-1] == "weight"


def split_params(model: nn.Module) -> ParamSplit:
    """Split `model`'s trainable parameters into Muon's and AdamW's, in registration order.

    Frozen parameters (`requires_grad=False`) are left out; a tied weight (LM head sharing
    the embedding) appears once, under its first name, as `named_parameters` gives it.
    """
    muon: NamedParams = []
    adamw: NamedParams = []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (muon if uses_muon(name, param) else adamw).append((name, param))
    return ParamSplit(muon=muon, adamw=adamw)
