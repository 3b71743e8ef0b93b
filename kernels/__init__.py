"""GPU kernels (Kimi Delta Attention) with PyTorch references (not built yet)."""

__all__: list[str] = []
