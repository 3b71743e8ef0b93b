"""PARL rewards over swarm trajectories: pure functions over stored runs, and RL export.

    traj = load_trajectory("latest", ".kimmy/runs")
    breakdown = score(traj, grader_for(traj), step=120)   # r_inst, r_comp, r_result, λs, …

`import rewards` stays light (pydantic and `swarm` only; no torch, no pandas).
"""

from rewards.export import RolloutRecord, group_advantages, load_rollouts, to_trl, write_rollouts
from rewards.graders import (
    AnalysisGrader,
    CompletionGrader,
    Grader,
    GraderError,
    Judgement,
    ModelJudge,
    ReviewGrader,
    grader_for,
)
from rewards.parl import (
    CriticalSteps,
    RewardBreakdown,
    RewardConfigError,
    Schedule,
    combine,
    completion_reward,
    critical_steps,
    instantiation_reward,
    score,
)
from rewards.trajectory import (
    SCHEMA_VERSION,
    Episode,
    ModelCall,
    OrchestratorTurn,
    ToolUse,
    Trajectory,
    build_trajectory,
    load_trajectory,
)

__all__ = [
    "SCHEMA_VERSION",
    "AnalysisGrader",
    "CompletionGrader",
    "CriticalSteps",
    "Episode",
    "Grader",
    "GraderError",
    "Judgement",
    "ModelCall",
    "ModelJudge",
    "OrchestratorTurn",
    "ReviewGrader",
    "RewardBreakdown",
    "RewardConfigError",
    "RolloutRecord",
    "Schedule",
    "ToolUse",
    "Trajectory",
    "build_trajectory",
    "combine",
    "completion_reward",
    "critical_steps",
    "grader_for",
    "group_advantages",
    "instantiation_reward",
    "load_rollouts",
    "load_trajectory",
    "score",
    "to_trl",
    "write_rollouts",
]
