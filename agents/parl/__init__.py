"""PARL environments: an orchestrator's completion carried out by a real swarm with frozen
sub-agents, and scored with the PARL reward — what `kimmy train parl`, the TRL reward
function and the verl export run on.

- `tasks`: `SpawnTask` (a wide task over N documents), `make_spawn_tasks`, the prompt
  (`spawn_messages`) and the two tools the orchestrator may call (`spawn_tools`).
- `action`: `parse_calls`, a completion's text as tool calls.
- `env`: `SpawnEnv`, a completion → a run → `SpawnRollout` (trajectory, reward breakdown).
- `scoring`: `ParlScorer`, a trainer's group of completions → rewards and advantages.
- `trainer_env`: prompts for outside trainers (`chat_messages`, `prompt_pairs`: the tools
  described in the system message) and `SpawnCompletionEnv`, registered on import for
  `kimmy/wide_spawn` in `rewards.envs`, which `rewards.trl.parl_reward` and
  `rewards.verl.compute_score` reach (`agents/parl/verl_reward.py` is the file verl loads).
"""

from kimmy_swarm.agents.parl.action import parse_calls
from kimmy_swarm.agents.parl.env import (
    DecisionTurns,
    SpawnEnv,
    SpawnRollout,
    calls_json,
    expand_split,
    frozen_extractor,
    load_spawn_env,
)
from kimmy_swarm.agents.parl.scoring import GroupScore, ParlScorer
from kimmy_swarm.agents.parl.tasks import (
    ACTION_SETS,
    EXTRACTOR,
    SPAWN_ENV,
    SpawnTask,
    SpawnTaskError,
    make_spawn_tasks,
    spawn_messages,
    spawn_tools,
)
from kimmy_swarm.agents.parl.trainer_env import (
    SPAWN_COMPLETION_ENV,
    SpawnCompletionEnv,
    chat_messages,
    prompt_pairs,
    tools_prompt,
)

__all__ = [
    "ACTION_SETS",
    "EXTRACTOR",
    "SPAWN_COMPLETION_ENV",
    "SPAWN_ENV",
    "DecisionTurns",
    "GroupScore",
    "ParlScorer",
    "SpawnCompletionEnv",
    "SpawnEnv",
    "SpawnRollout",
    "SpawnTask",
    "SpawnTaskError",
    "calls_json",
    "chat_messages",
    "expand_split",
    "frozen_extractor",
    "load_spawn_env",
    "make_spawn_tasks",
    "parse_calls",
    "prompt_pairs",
    "spawn_messages",
    "spawn_tools",
    "tools_prompt",
]
