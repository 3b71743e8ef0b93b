"""SubAgent: the offline procedure, the policy choice and the fallback to the procedure,
through a real swarm (the model policy's loop itself is in `tests/agents/loop/test_policy.py`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import (
    AgentStepLimitError,
    Attempt,
    Provenance,
    Role,
    SubAgent,
    ToolBox,
    fallbacks,
    falls_back,
    install,
)
from kimmy_swarm.cli.app import main
from kimmy_swarm.rewards.graders import outputs_as
from kimmy_swarm.rewards.parl import completion_reward
from kimmy_swarm.rewards.trajectory import build_trajectory
from kimmy_swarm.swarm import Backoff, Swarm
from kimmy_swarm.swarm.errors import (
    ConfigError,
    ModelBehaviourError,
    ModelConnectionError,
    ModelRequestError,
    ModelServerError,
    ModelTimeoutError,
)
from kimmy_swarm.swarm.events import AgentStep, ToolCalled
from kimmy_swarm.swarm.llm import ScriptedChat
from kimmy_swarm.swarm.schema import SubtaskStatus
from tests.support.summing_role import (
    SUMMER,
    Sink,
    Total,
    run_summer,
    sum_procedure,
    summing_tools,
    tool_turn,
)


def test_offline_procedure_calls_tools_and_records_steps() -> None:
    result, sink = run_summer(None)
    assert result.results["s1"].output == {"numbers": [2, 3, 5, 7], "total": 17}
    assert sink.agent() == [
        ("tool", ("lookup", True)),
        ("step", (1, ["lookup"], "tools")),
        ("tool", ("add", True)),
        ("step", (2, ["add"], "tools")),
        ("step", (3, [], "answer")),
    ]
    assert all(e.policy == "offline" for e in sink.events if isinstance(e, AgentStep))


def test_offline_tool_failure_fails_the_subtask_and_is_recorded() -> None:
    result, sink = run_summer(None, key="cubes")
    res = result.results["s1"]
    assert res.status is SubtaskStatus.FAILED
    assert "cubes" in res.error.message
    tools = [e for e in sink.events if isinstance(e, ToolCalled)]
    assert [(t.tool, t.ok) for t in tools] == [("lookup", False)]
    assert "KeyError" in tools[0].error


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_role_max_tokens_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(ConfigError, match="max_tokens"):
        Role("plain", "You answer.", max_tokens=bad)


def test_subagent_rejects_missing_tools_and_bad_policy() -> None:
    with pytest.raises(ConfigError, match="lacks"):
        SubAgent(SUMMER, ToolBox())
    with pytest.raises(ConfigError, match="policy"):
        SubAgent(SUMMER, summing_tools(), policy="psychic")  # type: ignore[arg-type]


def test_role_without_procedure_needs_a_model() -> None:
    bare = Role("bare", "You answer.")
    swarm = Swarm(max_retries=0)
    install(swarm, [bare])
    result = swarm.run_sync({"subtasks": [{"id": "q", "role": "bare"}]})
    assert result.results["q"].status is SubtaskStatus.FAILED
    assert "KIMMY_BASE_URL" in result.results["q"].error.message


# --- falling back to the offline procedure ---------------------------------------------


class MarkedTotal(Total, Provenance):
    """`Total`, saying who made it."""


def _marked_procedure(run: Attempt) -> dict[str, Any]:
    return sum_procedure(run).model_dump()


MARKED = SUMMER.derive(name="marked", output=MarkedTotal, procedure=_marked_procedure)


def _run_marked(model: Any, *, fallback: bool, role: Role = MARKED) -> tuple[Any, Sink]:
    sink = Sink()
    swarm = Swarm(model=model, sinks=[sink], max_retries=0)
    install(swarm, [role], summing_tools(), fallback=fallback)
    plan = {"subtasks": [{"id": "s1", "role": role.name, "inputs": {"key": "primes"}}]}
    return swarm.run_sync(plan), sink


def _steps(sink: Sink) -> list[AgentStep]:
    return [e for e in sink.events if isinstance(e, AgentStep)]


def test_an_invalid_answer_after_the_repair_turn_falls_back_to_the_procedure() -> None:
    model = ScriptedChat(["The total is seventeen.", "Seventeen, as I said."])
    result, sink = _run_marked(model, fallback=True)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.DONE
    assert res.output["numbers"] == [2, 3, 5, 7] and res.output["total"] == 17  # the tools'
    assert res.output["made_by"] == "offline_fallback"
    assert res.output["fallback_error"].startswith("ModelBehaviourError: role 'marked'")
    assert fallbacks(result.outputs) == {"s1": res.output["fallback_error"]}
    steps = [(e.step, e.policy, e.outcome) for e in _steps(sink)]
    assert steps == [
        (1, "model", "invalid"),
        (2, "model", "invalid"),
        (3, "model", "fallback"),  # the model's error, then the procedure's steps
        (4, "offline", "tools"),
        (5, "offline", "tools"),
        (6, "offline", "answer"),
    ]
    fallback = _steps(sink)[2]
    assert fallback.error is not None and "still invalid after the repair turn" in fallback.error
    assert len(model.calls) == 2  # the procedure asked no model


def test_the_step_limit_falls_back_and_the_trajectory_marks_it() -> None:
    model = ScriptedChat.always(tool_turn("lookup", {"key": "primes"}))
    result, sink = _run_marked(model, fallback=True)
    assert result.results["s1"].output["made_by"] == "offline_fallback"
    assert AgentStepLimitError.__name__ in result.results["s1"].output["fallback_error"]
    episode = build_trajectory(sink.events).episodes["s1"]
    assert episode.fell_back and episode.policy == "offline" and episode.output_valid


def test_an_output_says_who_made_it_whatever_the_model_wrote() -> None:
    claimed = {"numbers": [1, 2], "total": 3, "made_by": "offline_fallback"}
    result, _ = _run_marked(ScriptedChat([json.dumps(claimed)]), fallback=True)
    assert result.results["s1"].output["made_by"] == "model"
    assert result.results["s1"].output["fallback_error"] is None
    offline, _ = _run_marked(None, fallback=True)
    assert offline.results["s1"].output["made_by"] == "offline"
    assert fallbacks(offline.outputs) == {}


def test_strict_model_mode_keeps_failing_with_the_models_error() -> None:
    model = ScriptedChat(["The total is seventeen.", "Seventeen, as I said."])
    result, sink = _run_marked(model, fallback=False)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.FAILED and res.error.type == "ModelBehaviourError"
    assert "fallback" not in {e.outcome for e in _steps(sink)}


def test_a_model_server_that_fails_never_falls_back() -> None:
    """A dead server fails the subtask loudly (after the scheduler's retries) instead of
    turning a model run into a silent offline one."""
    down = ModelConnectionError("connection refused by 127.0.0.1:9")
    result, sink = _run_marked(ScriptedChat.always(down), fallback=True)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.FAILED and res.error.type == "ModelConnectionError"
    assert not _steps(sink)
    assert not falls_back(down) and falls_back(ModelBehaviourError("still invalid"))


def test_a_task_too_long_for_the_models_context_falls_back() -> None:
    """A first call the server rejects as too long, with no upstream results to reduce (and
    a later turn whose tool results filled the context), is the task not fitting this model:
    the procedure does it (it was a bare HTTP 400 that failed the subtask)."""
    too_long = ModelRequestError(
        "model server at http://127.0.0.1:9/v1/chat/completions answered HTTP 400: prompt "
        "(3733 tokens) + max_tokens (1024) is more than max_model_len 4096"
    )
    result, _ = _run_marked(ScriptedChat.always(too_long), fallback=True)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.DONE and res.output["made_by"] == "offline_fallback"
    assert res.output["fallback_error"].startswith("ContextOverflowError: role 'marked'")
    assert "max_model_len 4096" in res.output["fallback_error"]
    later = ScriptedChat([tool_turn("lookup", {"key": "primes"}), too_long])
    result, _ = _run_marked(later, fallback=True)
    assert result.results["s1"].output["made_by"] == "offline_fallback"
    strict, _ = _run_marked(ScriptedChat.always(too_long), fallback=False)
    assert strict.results["s1"].error.type == "ContextOverflowError"
    other = ModelRequestError("model server answered HTTP 400: unknown parameter 'foo'")
    rejected, _ = _run_marked(ScriptedChat.always(other), fallback=True)
    res = rejected.results["s1"]  # not a context problem: the server's own rejection
    assert res.output["fallback_error"].startswith("ModelRequestError: model server answered")


QUICK = Backoff(0.001, 0.002)


def test_a_server_that_fails_the_request_falls_back_once_no_retry_is_left() -> None:
    """llama.cpp answered HTTP 500 for a chat template it could not render, and the run
    ended with the planner failed and 0 claims. A server error the scheduler retries falls
    back on the subtask's last attempt (not before: a retry may succeed), marked as such."""
    broken = ModelServerError(
        "model server at http://127.0.0.1:9/v1 answered HTTP 500: 'dict object' has no "
        "attribute 'content'"
    )
    sink = Sink()
    swarm = Swarm(model=ScriptedChat.always(broken), sinks=[sink], max_retries=2, backoff=QUICK)
    install(swarm, [MARKED], summing_tools(), fallback=True)
    result = swarm.run_sync(
        {"subtasks": [{"id": "s1", "role": "marked", "inputs": {"key": "primes"}}]}
    )
    res = result.results["s1"]
    assert res.status is SubtaskStatus.DONE and res.attempts == 3
    assert res.output["made_by"] == "offline_fallback" and res.output["total"] == 17
    assert res.output["fallback_error"].startswith("ModelServerError: model server at")
    outcomes = [e.outcome for e in _steps(sink)]
    assert outcomes[0] == "fallback" and outcomes[-1] == "answer"  # then the procedure's steps
    assert fallbacks(result.outputs) == {"s1": res.output["fallback_error"]}
    retried = ScriptedChat([broken, json.dumps({"numbers": [2, 3], "total": 5})])
    sink = Sink()
    swarm = Swarm(model=retried, sinks=[sink], max_retries=2, backoff=QUICK)
    install(swarm, [MARKED], summing_tools(), fallback=True)
    result = swarm.run_sync(
        {"subtasks": [{"id": "s1", "role": "marked", "inputs": {"key": "primes"}}]}
    )
    assert result.results["s1"].output["made_by"] == "model"  # the retry answered
    strict, _ = _run_marked(ScriptedChat.always(broken), fallback=False)
    assert strict.results["s1"].error.type == "ModelServerError"
    timeout = ModelTimeoutError("no answer from model server at http://127.0.0.1:9 within 5s")
    slow, _ = _run_marked(ScriptedChat.always(timeout), fallback=True)
    assert slow.results["s1"].output["made_by"] == "offline_fallback"


def test_no_fallback_without_a_procedure() -> None:
    bare = Role("bare", "You answer.", MarkedTotal)
    result, sink = _run_marked(ScriptedChat(["prose", "prose"]), fallback=True, role=bare)
    assert result.results["s1"].error.type == "ModelBehaviourError"
    assert "fallback" not in {e.outcome for e in _steps(sink)}


def test_a_failing_procedure_fails_the_fallback_with_its_own_error() -> None:
    def broken(run: Attempt) -> Total:
        run.call("lookup", key="cubes")  # no such key: the tool raises
        raise AssertionError("unreachable")

    role = MARKED.derive(procedure=broken)
    result, sink = _run_marked(ScriptedChat(["prose", "prose"]), fallback=True, role=role)
    res = result.results["s1"]
    assert res.status is SubtaskStatus.FAILED and "cubes" in res.error.message
    assert [e.outcome for e in _steps(sink)] == ["invalid", "invalid", "fallback", "tools"]


def test_kimmy_show_lists_the_fallbacks_of_a_stored_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    swarm = Swarm(model=ScriptedChat(["prose", "prose"]), max_retries=0, runs_dir=tmp_path)
    install(swarm, [MARKED], summing_tools(), fallback=True)
    plan = {"subtasks": [{"id": "s1", "role": "marked", "inputs": {"key": "primes"}}]}
    run_id = swarm.run_sync(plan).run_id
    assert main(["show", run_id, "--runs-dir", str(tmp_path)]) in (0, None)
    out = capsys.readouterr().out
    assert "fell back 1 of 1 sub-agents to the offline procedure" in out
    assert "s1: ModelBehaviourError: role 'marked'" in out
    main(["show", run_id, "--runs-dir", str(tmp_path), "--events"])
    steps = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    [fallback] = [e for e in steps if e.get("outcome") == "fallback"]
    assert fallback["subtask_id"] == "s1" and "still invalid" in fallback["error"]


def test_rewards_do_not_count_a_fallback_as_the_models_success() -> None:
    sink = Sink()
    model = ScriptedChat([json.dumps({"numbers": [1, 2], "total": 3}), "prose", "prose"])
    swarm = Swarm(model=model, sinks=[sink], max_retries=0)
    install(swarm, [MARKED], summing_tools(), fallback=True)
    swarm.run_sync({"subtasks": [
        {"id": "s1", "role": "marked", "inputs": {"key": "squares"}},
        {"id": "s2", "role": "marked", "inputs": {"key": "primes"}, "depends_on": ["s1"]},
    ]})  # fmt: skip
    traj = build_trajectory(sink.events)
    assert [traj.episodes[k].fell_back for k in ("s1", "s2")] == [False, True]
    assert all(e.output_valid and e.output_used for e in traj.episodes.values())
    assert completion_reward(traj) == 0.5  # the fallen-back s2 is done, but not by the model
    assert set(outputs_as(traj, MarkedTotal, lambda k: True)) == {"s1"}
