"""Autoregressive generation with the hybrid cache: greedy or sampled, batched.

Batches of different prompt lengths are left-padded with an `attention_mask` (1 = real
token). With the cache, the prompt is prefilled once (chunked KDA, full MLA) and every new
token costs one step: KDA updates its constant-size state, MLA appends one latent. With
`use_cache=False` every step recomputes the whole sequence — the reference the cache is
tested against.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from kimmy_swarm.model.errors import GenerationError

__all__ = ["SamplingParams", "generate", "sample_next"]


@dataclass(frozen=True)
class SamplingParams:
    """How the next token is chosen. `do_sample=False` is greedy (argmax)."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None

    def __post_init__(self) -> None:
        if not self.temperature > 0:
            raise GenerationError(f"temperature must be > 0; got {self.temperature}")
        if self.top_k is not None and self.top_k < 1:
            raise GenerationError(f"top_k must be ≥ 1 or None; got {self.top_k}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise GenerationError(f"top_p must be in (0, 1] or None; got {self.top_p}")


def sample_next(
    logits: torch.Tensor,  # (B, vocab)
    params: SamplingParams,
    generator: torch.Generator | None = None,
) -> torch.Tensor:  # (B,)
    """The next token per row: argmax, or a sample after temperature, top-k and top-p."""
    if not params.do_sample:
        return logits.argmax(-1)
    x = logits.float() / params.temperature  # (B, V)
    if params.top_k is not None and params.top_k < x.shape[-1]:
        kth = x.topk(params.top_k, dim=-1).values[..., -1:]  # (B, 1)
        x = x.masked_fill(x < kth, float("-inf"))
    if params.top_p is not None and params.top_p < 1:
        sorted_x, order = x.sort(dim=-1, descending=True)  # (B, V)
        probs = sorted_x.softmax(-1)
        # drop a token when the tokens ranked above it already reach top_p
        drop = probs.cumsum(-1) - probs >= params.top_p
        x = x.scatter(-1, order, sorted_x.masked_fill(drop, float("-inf")))
    probs = x.softmax(-1)  # (B, V)
    return torch.multinomial(probs, 1, generator=generator).squeeze(-1)


def _check_inputs(
    input_ids: torch.Tensor, attention_mask: torch.Tensor | None, max_new_tokens: int
) -> None:
    if input_ids.ndim != 2 or input_ids.shape[1] == 0:
        raise GenerationError(
            f"input_ids must be [batch, length ≥ 1]; got shape {list(input_ids.shape)}"
        )
    if max_new_tokens < 0:
        raise GenerationError(f"max_new_tokens must be ≥ 0; got {max_new_tokens}")
    if attention_mask is None:
        return
    if attention_mask.shape != input_ids.shape:
        raise GenerationError(
            f"attention_mask has shape {list(attention_mask.shape)}; input_ids has "
            f"{list(input_ids.shape)}"
        )
    m = attention_mask.bool()
    if not m[:, -1].all() or (m[:, 1:].int() < m[:, :-1].int()).any():
        raise GenerationError(
            "attention_mask must be left-padded (zeros, then ones, ending on a real token); "
            "pad batches on the left"
        )


@torch.no_grad()
def generate(
    model: nn.Module,
    input_ids: torch.Tensor,  # (B, T)
    *,
    max_new_tokens: int = 32,
    attention_mask: torch.Tensor | None = None,  # (B, T), left padding
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_token_id: int | list[int] | None = None,
    pad_token_id: int | None = None,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
) -> torch.Tensor:  # (B, T + new)
    """Continue each row of `input_ids`; stops early when every row has produced an EOS.

    Args:
        model: a `KimiLinearForCausalLM`.
        input_ids: prompts `[B, T]`, left-padded when lengths differ.
        max_new_tokens: tokens to add at most.
        attention_mask: `[B, T]` 1 for real tokens, 0 for left padding.
        do_sample, temperature, top_k, top_p: see `SamplingParams`.
        eos_token_id: id(s) that end a row (default: the config's `eos_token_id`).
        pad_token_id: written after a row ended (default: config's pad, else the EOS).
        generator: a seeded `torch.Generator` makes sampling reproducible.
        use_cache: False recomputes the whole sequence every step (slow; the reference).

    Raises:
        GenerationError: bad shapes, right padding, or bad sampling parameters.
    """
    _check_inputs(input_ids, attention_mask, max_new_tokens)
    params = SamplingParams(do_sample, temperature, top_k, top_p)
    cfg = model.config
    eos = cfg.eos_token_id if eos_token_id is None else eos_token_id
    eos_ids = torch.tensor([] if eos is None else ([eos] if isinstance(eos, int) else eos))
    pad = pad_token_id if pad_token_id is not None else cfg.pad_token_id
    pad = pad if pad is not None else (int(eos_ids[0]) if len(eos_ids) else 0)
    b = input_ids.shape[0]
    mask = torch.ones_like(input_ids) if attention_mask is None else attention_mask.long()
    ids, done = input_ids, torch.zeros(b, dtype=torch.bool, device=input_ids.device)
    cache = model.new_cache() if use_cache else None
    step_input = input_ids
    for _ in range(max_new_tokens):
        if cache is None:
            logits = model(ids, attention_mask=mask)[:, -1]  # (B, V)
        else:
            logits = model(step_input, attention_mask=mask, cache=cache)[:, -1]  # (B, V)
        nxt = sample_next(logits, params, generator)  # (B,)
        nxt = torch.where(done, torch.full_like(nxt, pad), nxt)
        done = done | torch.isin(nxt, eos_ids.to(nxt.device))
        ids = torch.cat([ids, nxt[:, None]], dim=1)  # (B, T + i + 1)
        mask = torch.cat([mask, torch.ones_like(nxt)[:, None]], dim=1)
        step_input = nxt[:, None]
        if bool(done.all()):
            break
    return ids
