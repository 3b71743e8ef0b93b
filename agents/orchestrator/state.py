"""What the orchestrator knows between turns: the sub-agents it created and its tasks.

It is saved with every turn (`AgentTurn.state`), so a resumed orchestrator continues with
the same agents, task ids and reported results.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from kimmy_swarm.agents.orchestrator.agent_specs import AgentSpec


class TaskRecord(BaseModel):
    """One assigned task."""

    model_config = ConfigDict(extra="forbid")

    id: str
    agent: str
    task: str
    depends_on: list[str] = Field(default_factory=list)
    #: Its result was shown to the model (by `wait`): `wait("any")` moves on from it.
    reported: bool = False


class OrchestratorState(BaseModel):
    """The orchestrator's own state (JSON; saved with each turn)."""

    model_config = ConfigDict(extra="forbid")

    agents: dict[str, AgentSpec] = Field(default_factory=dict)
    tasks: dict[str, TaskRecord] = Field(default_factory=dict)
    #: The number of the next default task id (`t<n>`).
    next_task: int = 1
    #: The answer given to `finish` (None while running).
    answer: str | None = None
    #: Model turns taken (over all attempts and sessions).
    turns: int = 0
    #: The last model turn's calls are being carried out (its results are not recorded
    #: yet): a resumed orchestrator carries them out again — each is idempotent (spawns of
    #: the same subtasks add nothing, waits wait).
    open_turn: bool = False
    #: Turns in a row whose calls all failed or repeated an earlier search (or that called
    #: no tool).
    idle_turns: int = 0
    #: Each search made (its query, conditions and limit as JSON), with the turn it was
    #: first made in.
    searches: dict[str, int] = Field(default_factory=dict)

    def new_task_id(self, taken: set[str]) -> str:
        """The next free default task id."""
        while True:
            key = f"t{self.next_task}"
            self.next_task += 1
            if key not in self.tasks and key not in taken:
                return key

    def unreported(self) -> list[str]:
        return [k for k, t in self.tasks.items() if not t.reported]


__all__ = ["OrchestratorState", "TaskRecord"]
