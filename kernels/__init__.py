"""GPU kernels with PyTorch references: `kernels.kda` (Kimi Delta Attention).

Subpackages load on first attribute access (`kernels.lazy_exports`, which `model` uses
too), so `import kimmy_swarm.kernels` alone does not import torch.
"""

from kimmy_swarm.kernels.lazy_exports import lazy_exports as _lazy_exports

__all__, __getattr__, __dir__ = _lazy_exports(__name__, {".": ["kda"]})
