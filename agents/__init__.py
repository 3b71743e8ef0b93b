"""Roles, tools and pipelines: the domain knowledge of Kimmy Swarm (not built yet)."""

__all__: list[str] = []
