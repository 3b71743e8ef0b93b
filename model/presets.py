"""Model presets: the `--tiny` serving model and its tokenizer, and the sizes `kimmy train lm`
builds (`PRESETS`, `model_config`).

    tokenizer = tiny_tokenizer()                 # BPE on the Python docs, Kimi's chat tokens
    lm = tiny_model(tokenizer, seed=0)           # KimiLinearConfig.tiny(), seeded weights
    config = model_config(preset="small", vocab_size=2048, special_ids=(1, 2, 0))

torch and the tokenizer trainer load when a function runs, so importing this is light.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kimmy_swarm.model.config import KimiLinearConfig
    from kimmy_swarm.model.modeling import KimiLinearForCausalLM
    from kimmy_swarm.model.tokenizer import Tokenizer

__all__ = [
    "PRESETS",
    "TINY_MODEL_NAME",
    "TINY_SPECIAL_TOKENS",
    "model_config",
    "tiny_model",
    "tiny_tokenizer",
]

TINY_MODEL_NAME = "kimmy-tiny"
#: (pad, bos, eos, …): the EOS is Kimi's turn end, so a reply stops where its turn would.
TINY_SPECIAL_TOKENS = (
    "<|pad|>", "<|bos|>", "<|im_end|>", "<|im_system|>", "<|im_user|>", "<|im_assistant|>",
    "<|im_middle|>",
)  # fmt: skip


@functools.lru_cache(maxsize=4)
def tiny_tokenizer(*, vocab_size: int = 512, num_docs: int | None = None) -> Tokenizer:
    """The `--tiny` tokenizer: BPE trained on the Python docs (the first `num_docs` topics,
    all by default), cached per process (training takes seconds)."""
    from kimmy_swarm.model.python_docs import python_docs_texts
    from kimmy_swarm.model.tokenizer import train_bpe_tokenizer

    texts = python_docs_texts()
    return train_bpe_tokenizer(
        texts[:num_docs], vocab_size=vocab_size, special_tokens=TINY_SPECIAL_TOKENS
    )


def tiny_model(tokenizer: Tokenizer, *, seed: int = 0) -> KimiLinearForCausalLM:
    """`KimiLinearConfig.tiny()` sized to `tokenizer`, float32, weights drawn from `seed`
    (the caller's random state is left as it was)."""
    import torch

    from kimmy_swarm.model.config import KimiLinearConfig
    from kimmy_swarm.model.modeling import KimiLinearForCausalLM

    config = KimiLinearConfig.tiny(
        vocab_size=tokenizer.vocab_size,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return KimiLinearForCausalLM(config).eval()


#: Per preset name: (layers, hidden size, KDA/MLA heads, head dim, experts).
PRESETS: dict[str, tuple[int, int, int, int, int]] = {
    "tiny": (4, 64, 4, 16, 4),
    "small": (8, 256, 4, 64, 8),
}


def model_config(
    *,
    preset: str,
    vocab_size: int,
    special_ids: tuple[int | None, int | None, int | None],
    layers: int | None = None,
    hidden: int | None = None,
    residual: str = "standard",
) -> KimiLinearConfig:
    """The model of a preset, resized by `layers`/`hidden` (FFN 2·hidden, experts hidden/2,
    MLA every 4th and the last layer), for a tokenizer's vocabulary and (bos, eos, pad) ids.

    Raises:
        ModelConfigError: an unknown preset or a size the config rejects.
    """
    from kimmy_swarm.model.config import KimiLinearConfig, hybrid_layers
    from kimmy_swarm.model.errors import ModelConfigError

    if preset not in PRESETS:
        raise ModelConfigError(f"preset {preset!r} is not one of {', '.join(PRESETS)}")
    n, d, heads, head_dim, experts = PRESETS[preset]
    n, d = layers or n, hidden or d
    bos, eos, pad = special_ids
    return KimiLinearConfig.tiny(
        vocab_size=vocab_size,
        hidden_size=d,
        intermediate_size=2 * d,
        moe_intermediate_size=max(1, d // 2),
        num_hidden_layers=n,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        kv_lora_rank=2 * head_dim,
        qk_nope_head_dim=head_dim,
        qk_rope_head_dim=head_dim // 2,
        v_head_dim=head_dim,
        linear_attn_config=hybrid_layers(n, num_heads=heads, head_dim=head_dim),
        num_experts=experts,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=pad,
        residual=residual,
    )
