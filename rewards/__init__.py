"""PARL rewards over swarm trajectories: pure functions over stored runs, and RL export.

    traj = load_trajectory("latest", ".kimmy/runs")
    breakdown = score(traj, grader_for(traj), step=120)   # r_inst, r_comp, r_result, λs, …

`grader_for(traj)` here knows no pipeline (it gives `CompletionGrader`);
`agents.graders.grader_for(traj)` picks the run's own pipeline grader.

Trainers' reward functions (`rewards.trl.parl_reward`, `rewards.verl.compute_score`) score a
completion from its task alone: the task's `env` names a completion environment registered
in `rewards.envs` (`import kimmy_swarm.agents.parl` registers `kimmy/wide_spawn`).

`import kimmy_swarm.rewards` stays light (pydantic and `swarm` only; no torch, no pandas).
"""

from kimmy_swarm.rewards.envs import (
    CompletionEnv,
    EnvTaskError,
    UnknownEnvError,
    env_for,
    register_env,
    registered_envs,
    score_completion,
)
from kimmy_swarm.rewards.export import (
    RolloutRecord,
    group_advantages,
    load_rollouts,
    to_trl,
    write_rollouts,
)
from kimmy_swarm.rewards.graders import (
    CompletionGrader,
    Grader,
    GraderError,
    Judgement,
    ModelJudge,
    PipelineGrader,
    grader_for,
    outputs_as,
)
from kimmy_swarm.rewards.parl import (
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
from kimmy_swarm.rewards.trajectory import (
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
    "CompletionEnv",
    "CompletionGrader",
    "CriticalSteps",
    "EnvTaskError",
    "Episode",
    "Grader",
    "GraderError",
    "Judgement",
    "ModelCall",
    "ModelJudge",
    "OrchestratorTurn",
    "PipelineGrader",
    "RewardBreakdown",
    "RewardConfigError",
    "RolloutRecord",
    "Schedule",
    "ToolUse",
    "Trajectory",
    "UnknownEnvError",
    "build_trajectory",
    "combine",
    "completion_reward",
    "critical_steps",
    "env_for",
    "grader_for",
    "group_advantages",
    "instantiation_reward",
    "load_rollouts",
    "load_trajectory",
    "outputs_as",
    "register_env",
    "registered_envs",
    "score",
    "score_completion",
    "to_trl",
    "write_rollouts",
]
