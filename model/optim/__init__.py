"""MuonClip, the optimizer Kimi K2 was trained with: Muon (Newton–Schulz-orthogonalised
momentum, RMS-matched to AdamW) for hidden matrices, AdamW for embeddings, the LM head, the
router gate and every non-matrix parameter, and QK-Clip after each step to keep MLA's
attention logits below τ.

The math lives in pure functions (`newton_schulz`, `muon_update`, `rms_match_scale`,
`qk_clip_`); `MuonClip` only keeps state and wires them to a model's parameters.
"""

from kimmy_swarm.model.optim.groups import ParamSplit, split_params
from kimmy_swarm.model.optim.muonclip import MuonClip
from kimmy_swarm.model.optim.newton_schulz import muon_update, newton_schulz, rms_match_scale
from kimmy_swarm.model.optim.qk_clip import QKClipResult, find_mla_layers, qk_clip_

__all__ = [
    "MuonClip",
    "ParamSplit",
    "QKClipResult",
    "find_mla_layers",
    "muon_update",
    "newton_schulz",
    "qk_clip_",
    "rms_match_scale",
    "split_params",
]
