"""The reward function file verl loads by path: PARL for Kimmy Swarm's spawn tasks.

verl imports this file on its own (`importlib`, not as part of a package), so it imports
`agents.parl`, which registers the `kimmy/wide_spawn` environment, and exposes
`rewards.verl.compute_score`:

    custom_reward_function.path=agents/parl/verl_reward.py
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.lambda1=0.5     # optional: constant λs, or step=N

The rows come from `rewards.verl.verl_rows(agents.parl.prompt_pairs(tasks))`; each task's
`corpus` path must exist where verl's reward workers run.
"""

from __future__ import annotations

import kimmy_swarm.agents.parl  # noqa: F401  (registers kimmy/wide_spawn in rewards.envs)
from kimmy_swarm.rewards.verl import compute_score

__all__ = ["compute_score"]
