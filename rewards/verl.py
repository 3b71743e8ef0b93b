"""verl: tasks as verl's RL parquet rows, and the PARL reward as verl's custom reward function.

verl reads a parquet file whose rows hold `data_source`, `prompt` (chat messages, rendered
with the actor's own chat template), `ability`, `reward_model` (`style`, `ground_truth`) and
`extra_info`, and scores each response with `compute_score(data_source, solution_str,
ground_truth, extra_info)`. Here `ground_truth` is the task's JSON and `compute_score` hands
the response to the task's registered environment (`rewards.envs`):

    write_verl_parquet("data/train.parquet", verl_rows(prompt_pairs(tasks), split="train"))

    # verl's config: the file below imports agents.parl (registering kimmy/wide_spawn)
    custom_reward_function.path=agents/parl/verl_reward.py
    custom_reward_function.name=compute_score

verl does not hand the training step to reward functions, so λ1 and λ2 are read at step 0
(both 1: r = r_inst + r_comp + r_result) unless `custom_reward_function.reward_kwargs` sets
`lambda1`, `lambda2` (constants) or `step`. Nothing here imports verl; `write_verl_parquet`
imports `pyarrow` on use.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kimmy_swarm.rewards._prompts import TaskPrompt, checked_messages
from kimmy_swarm.rewards.envs import score_completion, task_json, task_mapping
from kimmy_swarm.rewards.parl import Schedule
from kimmy_swarm.swarm.errors import UserError

#: The `ability` of our rows (verl groups metrics by it and by `data_source`).
ABILITY = "agent_swarm"
#: The columns of a verl row, in order.
VERL_COLUMNS = ("data_source", "prompt", "ability", "reward_model", "extra_info")


def verl_rows(
    pairs: Iterable[TaskPrompt],
    *,
    split: str = "train",
    ability: str = ABILITY,
) -> list[dict[str, Any]]:
    """verl RL rows, one per (task, messages): `data_source` is the task's env name,
    `reward_model` is `{"style": "rule", "ground_truth": <the task's JSON>}`, `extra_info`
    holds `split`, `index` (the row's position), `task_id` and `env`.

    Raises:
        EnvTaskError: a task is not a JSON object with an `env` field.
        UserError: a prompt is not a list of role/content messages.
    """
    rows = []
    for i, (task, messages) in enumerate(pairs):
        text = task_json(task)
        mapping = task_mapping(text)
        task_id = mapping.get("id")
        rows.append(
            {
                "data_source": mapping["env"],
                "prompt": checked_messages(messages, f"prompt {i}"),
                "ability": ability,
                "reward_model": {"style": "rule", "ground_truth": text},
                "extra_info": {
                    "split": split,
                    "index": i,
                    "task_id": str(task_id) if task_id is not None else str(i),
                    "env": mapping["env"],
                },
            }
        )
    return rows


def write_verl_parquet(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write verl rows to a parquet file (its folder made as needed); returns the path.

    Raises:
        UserError: no rows, a row without verl's columns, or `pyarrow` is not installed.
    """
    items = [dict(r) for r in rows]
    if not items:
        raise UserError(f"no rows to write to {str(path)!r}")
    for i, row in enumerate(items):
        missing = [c for c in VERL_COLUMNS if c not in row]
        if missing:
            raise UserError(f"row {i} lacks verl's column(s) {', '.join(missing)}")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError(
            "write_verl_parquet needs the 'pyarrow' package: pip install pyarrow"
        ) from None
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(items), out)
    return out


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | Mapping[str, Any],
    extra_info: Mapping[str, Any] | None = None,
    *,
    step: int = 0,
    lambda1: Schedule | float | None = None,
    lambda2: Schedule | float | None = None,
    **kwargs: Any,
) -> float:
    """verl's custom reward function: r_PARL of the response `solution_str` for the task
    in `ground_truth` (its JSON), by the task's registered environment.

    A task without an `env` field takes `data_source` as its env name. Other keyword
    arguments verl may pass are ignored.

    Raises:
        EnvTaskError, UnknownEnvError: a task that is not one, or whose environment is not
            registered (`import kimmy_swarm.agents.parl` registers `kimmy/wide_spawn`).
    """
    task: Any = ground_truth
    if isinstance(task, str | bytes):
        with contextlib.suppress(json.JSONDecodeError):  # else score_completion names it
            task = json.loads(task)
    if isinstance(task, Mapping) and "env" not in task:
        task = {**task, "env": data_source}
    breakdown = score_completion(task, solution_str, step=step, lambda1=lambda1, lambda2=lambda2)
    return float(breakdown.total)


__all__ = ["ABILITY", "VERL_COLUMNS", "compute_score", "verl_rows", "write_verl_parquet"]
