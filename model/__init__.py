"""The Kimi Linear hybrid-attention model (not built yet)."""

__all__: list[str] = []
