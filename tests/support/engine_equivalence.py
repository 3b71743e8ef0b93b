"""What the engine-equivalence tests share, whatever the architecture: prompts that share a
"role prompt" prefix (plus a few unrelated ones), the uncached greedy reference, and the
two-wave run that first stores the shared prefix and then hits it."""

from __future__ import annotations

import torch
from torch import nn

from kimmy_swarm.model.serve.engine import LLMEngine
from kimmy_swarm.model.serve.types import GenerationParams

__all__ = ["run_two_waves", "shared_prefix_prompts", "uncached_greedy"]

TAILS = (5, 9, 1, 20, 3)  # per-request tails after the shared prefix
UNRELATED = (1, 2, 33)  # lengths of prompts that share nothing


def shared_prefix_prompts(*, vocab: int, shared: int, seed: int = 1) -> list[list[int]]:
    """Five prompts that start with the same `shared` random tokens (ids 3..vocab-1), then
    three that share nothing; the same list for the same arguments."""
    g = torch.Generator().manual_seed(seed)
    prefix = torch.randint(3, vocab, (shared,), generator=g).tolist()
    ps = [prefix + torch.randint(3, vocab, (k,), generator=g).tolist() for k in TAILS]
    return ps + [torch.randint(3, vocab, (n,), generator=g).tolist() for n in UNRELATED]


def uncached_greedy(lm: nn.Module, prompts: list[list[int]], n: int) -> list[list[int]]:
    """Each prompt's `n` greedy tokens from `lm.generate` without a cache, EOS ignored."""
    out = []
    for p in prompts:
        ids = lm.generate(torch.tensor([p]), max_new_tokens=n, eos_token_id=[], use_cache=False)
        out.append(ids[0, len(p) :].tolist())
    return out


def run_two_waves(
    engine: LLMEngine, prompts: list[list[int]], params: GenerationParams
) -> tuple[list[list[int]], list[int]]:
    """The first request alone (it stores the shared prefix), then the rest together;
    returns every request's output ids and cached-token count."""
    outs = engine.generate(prompts[:1], params) + engine.generate(prompts[1:], params)
    return [o.output_ids for o in outs], [o.cached_tokens for o in outs]
