"""The Kimi Linear hybrid-attention model: config, layers (KDA, MLA, MoE, Attention
Residuals), the causal LM with its hybrid cache and generation, HF-format checkpoints,
tokenizers, the MuonClip optimizer (`model.optim`) and training (`model.train`), and the
models a user installs by name (`model.catalog`, `install_model`, `resolve_model`).

    from kimmy_swarm.model import KimiLinearConfig, KimiLinearForCausalLM, MuonClip
    lm = KimiLinearForCausalLM(KimiLinearConfig.tiny())
    out = lm.generate(torch.tensor([[1, 5, 9]]), max_new_tokens=8)

Heavy kernels live in `kernels/`; this package only assembles the model. Names load on
first access, so `import kimmy_swarm.model` (and the `kimmy` CLI that registers
`kimmy train`) does not
import torch until a model object is used.
"""

from kimmy_swarm.kernels.lazy_exports import lazy_exports as _lazy_exports

__all__, __getattr__, __dir__ = _lazy_exports(
    __name__,
    {
        ".errors": [
            "CheckpointError",
            "GGUFError",
            "GenerationError",
            "KimiModelError",
            "ModelConfigError",
            "ModelInstallError",
            "ModelNotFoundError",
        ],
        ".cache": ["HybridCache", "KDAState", "MLAState", "cache_bytes_per_sequence"],
        ".config": ["KimiLinearConfig", "LinearAttnConfig", "hybrid_layers"],
        ".generation": ["SamplingParams", "generate"],
        ".modeling": ["KimiLinearForCausalLM"],
        ".llama": ["LlamaCache", "LlamaConfig", "LlamaForCausalLM"],
        ".qwen2": ["Qwen2Config", "Qwen2ForCausalLM"],
        ".gguf_loader": ["load_gguf"],
        ".catalog": ["KnownModel"],
        ".install": ["install_model"],
        ".locate": ["resolve_model"],
        ".optim": ["MuonClip"],
        ".tokenizer": ["Tokenizer", "load_tokenizer", "train_bpe_tokenizer"],
    },
)
