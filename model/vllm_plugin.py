"""The vLLM general plugin: teaches `vllm serve` our Attention Residuals architecture.

vLLM serves a standard Kimi Linear checkpoint natively (`architectures:
["KimiLinearForCausalLM"]`), so nothing is registered for it. A checkpoint with
`residual` "full_attnres" or "block_attnres" names `KimmyAttnResForCausalLM` in its
`config.json` (`KimiLinearConfig.to_dict`), a name vLLM does not know; `register` maps that
name to `kimmy_swarm.model.vllm_model:KimmyAttnResForCausalLM`.

vLLM finds `register` through the entry point declared in `pyproject.toml`

    [project.entry-points."vllm.general_plugins"]
    kimmy = "kimmy_swarm.model.vllm_plugin:register"

and calls it in every process it starts (API server, engine core, workers) before it loads a
model. So this module imports neither torch nor vLLM at import time, and `register` uses the
lazy "module:Class" form: the model class (which subclasses vLLM's own Kimi Linear) is only
imported when vLLM resolves the architecture, in the process that builds the model.
"""

from __future__ import annotations

__all__ = [
    "ATTNRES_ARCHITECTURE",
    "ENTRY_POINT",
    "ENTRY_POINT_GROUP",
    "ENTRY_POINT_NAME",
    "MODEL_CLASS",
    "STANDARD_ARCHITECTURE",
    "register",
]

STANDARD_ARCHITECTURE = "KimiLinearForCausalLM"
ATTNRES_ARCHITECTURE = "KimmyAttnResForCausalLM"
MODEL_CLASS = f"kimmy_swarm.model.vllm_model:{ATTNRES_ARCHITECTURE}"
ENTRY_POINT_GROUP = "vllm.general_plugins"
ENTRY_POINT_NAME = "kimmy"
ENTRY_POINT = "kimmy_swarm.model.vllm_plugin:register"


def register() -> None:
    """Register `KimmyAttnResForCausalLM` with vLLM's `ModelRegistry` (lazy string form).

    Idempotent: vLLM may load general plugins more than once in a process, and
    re-registering an architecture makes it log an overwrite warning, so a name already
    known to the registry is left as it is.
    """
    from vllm import ModelRegistry  # imported here: this module must load without vLLM

    if ATTNRES_ARCHITECTURE in ModelRegistry.get_supported_archs():
        return
    ModelRegistry.register_model(ATTNRES_ARCHITECTURE, MODEL_CLASS)
