"""The orchestrator agent in ScriptedChat scenarios: fan-out, a two-stage DAG, failure and
re-assignment, refused spawns, run-time roles, and rewards on its real spawns."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, run_solve
from kimmy_swarm.rewards import load_trajectory, score
from tests.support.orchestration import orchestration, tool_results

PROMPT = "You are a physics researcher. State units and assumptions; answer in one line."


def _create(name: str = "physicist", prompt: str = PROMPT) -> tuple[str, dict[str, Any]]:
    return ("create_subagent", {"name": name, "system_prompt": prompt, "tools": []})


def _solve(tmp_path: Path, model: Any, **options: Any) -> Any:
    config = SolveConfig(
        goal="Estimate some quantities", out=tmp_path / "out", model=model,
        runs_dir=tmp_path / "runs", **options,
    )  # fmt: skip
    return run_solve(config)


def _answer(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {"answer": f"{task} -> {inputs.get('n', '')}", "sources": []}


def test_one_turn_fans_out_100_subagents(tmp_path: Path) -> None:
    def finish(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        waited = [r for r in tool_results(messages) if "results" in r][-1]
        done = sum(r["status"] == "done" for r in waited["results"])
        return [("finish", {"answer": f"{done} sub-agents answered"})]

    inputs = [{"n": i} for i in range(100)]
    fan_out = {"agent": "physicist", "task": "Estimate", "inputs_list": inputs}
    model = orchestration(
        [[_create(), ("assign_tasks", fan_out), ("wait", {"ids": "all"})], finish],
        subagent=_answer,
    )
    out = _solve(tmp_path, model, max_concurrency=128)
    assert out.status == "completed" and out.subagents == 100 and out.turns == 2
    assert out.answer == "100 sub-agents answered"
    assert (tmp_path / "out" / "answer.md").read_text() == "100 sub-agents answered\n"
    traj = load_trajectory(out.run_id, tmp_path / "runs")
    (first, second) = [t for t in traj.turns if t.subtask_id == ORCHESTRATOR_ID]
    assert len(first.spawned) == 100 and second.spawned == []
    assert first.message is not None and first.message["tool_calls"][1]["function"]["name"] == (
        "assign_tasks"
    )
    breakdown = score(traj, step=0, width=64)
    assert breakdown.r_inst == 1.0  # 100 real spawns, saturating at 64
    breakdown = score(traj, step=0, width=200)
    assert breakdown.r_inst == pytest.approx(100 / 200)  # its spawns, not itself


def test_a_two_stage_dag_through_depends_on(tmp_path: Path) -> None:
    seen: dict[str, str] = {}

    def sub(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
        if task.startswith("Combine"):
            seen["writer"] = messages[-1]["content"]
            return {"answer": "combined", "sources": ["t1", "t2"]}
        return {"answer": f"fact {inputs['n']}", "sources": []}

    model = orchestration(
        [
            [
                ("assign_task", {"agent": "researcher", "task": "Find a fact", "inputs": {"n": 1}}),
                ("assign_task", {"agent": "researcher", "task": "Find a fact", "inputs": {"n": 2}}),
                (
                    "assign_task",
                    {"agent": "writer", "task": "Combine the facts", "depends_on": ["t1", "t2"]},
                ),
                ("wait", {"ids": ["t3"]}),
            ],
            [("finish", {"answer": "ok"})],
        ],
        subagent=sub,
    )
    out = _solve(tmp_path, model)
    assert out.status == "completed" and out.subagents == 3
    assert "fact 1" in seen["writer"] and "fact 2" in seen["writer"]  # upstream results
    traj = load_trajectory(out.run_id, tmp_path / "runs")
    assert [e for e in traj.edges if e[1] == "t3"] == [("t1", "t3"), ("t2", "t3")]
    assert traj.episodes["t3"].started_at >= max(
        traj.episodes["t1"].finished_at, traj.episodes["t2"].finished_at
    )


def test_a_failed_subagent_is_reassigned_after_wait(tmp_path: Path) -> None:
    tries = {"n": 0}

    def sub(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
        if inputs.get("n") == 1 and task == "Measure":
            tries["n"] += 1
            return "not JSON at all"  # invalid twice: the sub-agent fails
        return {"answer": "measured", "sources": []}

    def react(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        waited = [r for r in tool_results(messages) if "results" in r][-1]
        failed = [r for r in waited["results"] if r["status"] == "failed"]
        assert failed and failed[0]["id"] == "t1" and "repair" in failed[0]["error"]
        return [
            ("assign_task", {"agent": "researcher", "task": "Measure again", "inputs": {"n": 1}}),
            ("wait", {"ids": ["t2"]}),
        ]

    model = orchestration(
        [
            [("assign_task", {"agent": "researcher", "task": "Measure", "inputs": {"n": 1}}),
             ("wait", {"ids": "all"})],
            react,
            [("finish", {"answer": "measured after a retry"})],
        ],
        subagent=sub,
    )  # fmt: skip
    out = _solve(tmp_path, model)
    assert tries["n"] == 2  # the answer and its one repair turn
    traj = load_trajectory(out.run_id, tmp_path / "runs")
    assert traj.episodes["t1"].status == "failed" and traj.episodes["t2"].status == "done"
    assert out.answer == "measured after a retry"


def test_spawns_past_the_limits_come_back_as_tool_errors(tmp_path: Path) -> None:
    errors: list[str] = []

    def collect(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        errors.extend(m["content"] for m in messages if m.get("role") == "tool"
                      and m["content"].startswith("error:"))  # fmt: skip
        return [("finish", {"answer": "stopped"})]

    assign = [
        ("assign_task", {"agent": "researcher", "task": f"Task {i}", "inputs": {"n": i}})
        for i in range(4)
    ]
    model = orchestration(
        [[*assign, ("assign_task", {"agent": "nobody", "task": "x"}), ("wait", {"ids": "all"})],
         collect],
        subagent=_answer,
    )  # fmt: skip
    out = _solve(tmp_path, model, max_subagents=3)  # the orchestrator + 2 sub-agents
    assert out.subagents == 2
    assert sum("refused" in e and "max_subagents" in e for e in errors) == 2
    assert any("unknown agent 'nobody'" in e for e in errors)


def test_depth_limits_are_tool_errors_too(tmp_path: Path) -> None:
    errors: list[str] = []

    def collect(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        errors.extend(m["content"] for m in messages if m.get("role") == "tool")
        return [("finish", {"answer": "stopped"})]

    model = orchestration(
        [[("assign_task", {"agent": "researcher", "task": "x"})], collect], subagent=_answer
    )
    _solve(tmp_path, model, max_depth=0)
    assert any("refused" in e and "depth" in e for e in errors)


def test_a_runtime_role_gets_exactly_the_prompt_the_orchestrator_wrote(tmp_path: Path) -> None:
    systems: list[str] = []
    props = {"value": {"type": "number"}, "unit": {"type": "string"}}
    schema = {"type": "object", "properties": props, "required": ["value", "unit"]}

    def sub(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
        systems.append(messages[0]["content"])
        return {"value": 9.81, "unit": "m/s^2"}

    model = orchestration(
        [
            [("create_subagent", {"name": "physicist", "system_prompt": PROMPT, "tools": [],
                                  "output_schema": schema}),
             ("assign_task", {"agent": "physicist", "task": "g at sea level?"}),
             ("wait", {"ids": "all"})],
            [("finish", {"answer": "g = 9.81 m/s^2"})],
        ],
        subagent=sub,
    )  # fmt: skip
    out = _solve(tmp_path, model)
    assert out.agents == {"physicist": PROMPT}
    assert len(systems) == 1 and systems[0].startswith(PROMPT + "\n\n")
    assert json.loads(systems[0].rsplit("JSON schema:\n", 1)[1]) == schema
    traj = load_trajectory(out.run_id, tmp_path / "runs")
    assert traj.outputs["t1"] == {"value": 9.81, "unit": "m/s^2"}
    assert traj.episodes["t1"].role == "physicist"


def test_offline_a_goal_without_resources_says_how_to_give_a_model(tmp_path: Path) -> None:
    from kimmy_swarm.swarm.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a model to plan it"):
        run_solve(SolveConfig(goal="Write a poem", out=tmp_path))


def test_finish_can_synthesize_every_output_through_the_reduce_tree(tmp_path: Path) -> None:
    """40 long outputs into a 1,024-token context: the answer is the reduce tree's."""
    seen_prompts: list[int] = []

    def sub(task: str, inputs: dict[str, Any], messages: list[dict[str, Any]]) -> Any:
        if "You are a sub-agent (role" not in messages[0]["content"]:  # a synthesis call
            text = "\n".join(str(m["content"]) for m in messages)
            seen_prompts.append(len(text))
            tags = sorted(set(re.findall(r"\bt\d+\b", text)))
            return f"digest of {' '.join(tags)}"
        return {"answer": f"finding {inputs['n']}: " + "detail " * 120, "sources": []}

    inputs = [{"n": i} for i in range(40)]
    model = orchestration(
        [[("assign_tasks", {"agent": "researcher", "task": "Study", "inputs_list": inputs}),
          ("wait", {"ids": "all"})],
         [("finish", {"answer": "summarize the findings", "synthesize": True})]],
        subagent=sub,
    )  # fmt: skip
    out = _solve(tmp_path, model, context_tokens=1024, max_tokens=128, max_concurrency=64)
    assert out.status == "completed"
    assert out.answer.startswith("digest of")
    assert seen_prompts and max(seen_prompts) < 1024 * 4  # every call fitted a 1k context


def test_a_turn_fits_its_max_tokens_to_the_context_and_learns_from_a_rejection(
    tmp_path: Path,
) -> None:
    from kimmy_swarm.swarm.errors import ModelRequestError
    from kimmy_swarm.swarm.llm.scripted import ScriptedChat
    from kimmy_swarm.swarm.llm.server_profile import forget_shared_budgets
    from kimmy_swarm.swarm.llm.types import ChatResponse, FunctionCall, ToolCall

    forget_shared_budgets()
    finish = ChatResponse(
        tool_calls=[ToolCall(id="c", function=FunctionCall(name="finish",
                                                           arguments='{"answer": "ok"}'))]
    )  # fmt: skip
    too_long = ModelRequestError(
        "answered HTTP 400: prompt (3000 tokens) + max_tokens (1500) is more than "
        "max_model_len 4096"
    )
    model = ScriptedChat([too_long, finish])
    out = _solve(tmp_path, model, context_tokens=8192, max_tokens=1500)
    assert out.answer == "ok"
    first, second = (options["max_tokens"] for _, options in model.calls)
    assert first == 1500 and 64 <= second < 4096 - 3000  # the context it was told
    forget_shared_budgets()
