"""PARL rewards over swarm trajectories (not built yet)."""

__all__: list[str] = []
