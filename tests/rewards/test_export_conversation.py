"""Rollout records of real orchestrated runs (`run_solve`) hold the orchestrator's own
conversation: the opening it was sent, its messages and tool calls exactly as the model gave
them, the tool results as recorded, and per turn the token ids and logprobs the server sent
(`kimmy serve` sends ids); TRL rows end with its last message; v1 files are refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, run_solve
from kimmy_swarm.rewards import load_trajectory, score
from kimmy_swarm.rewards.conversation import TurnTokens
from kimmy_swarm.rewards.export import (
    RolloutSchemaError,
    load_rollouts,
    rollout_record,
    to_trl,
    write_rollouts,
)
from kimmy_swarm.rewards.trajectory_models import OrchestratorTurn, Trajectory
from kimmy_swarm.swarm.llm import ChatResponse, FunctionCall, ScriptedChat, TokenLogprob, ToolCall
from kimmy_swarm.swarm.schema import Usage
from tests.support.orchestration import is_orchestrator

#: The model's arguments, spaced as no JSON encoder would: the record keeps them as written.
ASSIGN = '{"agent":"researcher",  "task":"Find a fact","inputs":{"n":1}}'
WAIT = '{ "ids" : "all" }'
FINISH = '{"answer":"one fact"}'
WITH_IDS = [
    TokenLogprob(token='{"', logprob=-0.5, token_id=90),
    TokenLogprob(token="agent", logprob=-0.25, token_id=7),
]
WITHOUT_IDS = [TokenLogprob(token="fin", logprob=-0.125)]  # an OpenAI-like server: no ids


def _step(messages: list[dict[str, Any]], options: dict[str, Any]) -> ChatResponse:
    usage = Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12, model_calls=1)
    if not is_orchestrator(options):
        answer = json.dumps({"answer": "a fact", "sources": []})
        return ChatResponse(content=answer, finish_reason="stop", usage=usage)
    turn = sum(m["role"] == "assistant" for m in messages)
    calls = [("assign_task", ASSIGN), ("wait", WAIT)] if turn == 0 else [("finish", FINISH)]
    return ChatResponse(
        content="One task, then wait." if turn == 0 else None,
        tool_calls=[
            ToolCall(id=f"call{turn}_{i}", function=FunctionCall(name=name, arguments=args))
            for i, (name, args) in enumerate(calls)
        ],
        finish_reason="tool_calls",
        usage=usage,
        logprobs=WITH_IDS if turn == 0 else WITHOUT_IDS,
    )


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> tuple[ScriptedChat, Trajectory]:
    tmp = tmp_path_factory.mktemp("solve")
    model = ScriptedChat.always(_step)
    out = run_solve(
        SolveConfig(goal="Find one fact", out=tmp / "out", model=model, runs_dir=tmp / "runs",
                    logprobs=True)
    )  # fmt: skip
    assert out.status == "completed" and out.answer == "one fact"
    return model, load_trajectory(out.run_id, tmp / "runs")


def test_the_record_is_the_orchestrators_own_conversation(solved, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    model, traj = solved
    rec = rollout_record(traj, score(traj), task={"goal": "x"}, group="g", index=0, advantage=1)
    assert rec.orchestrator == ORCHESTRATOR_ID and rec.reconstructed is False
    assert not any("reconstructed" in m for m in rec.messages)
    # exactly what the model was sent on its last turn, then that turn and its tool result
    sent = [msgs for msgs, options in model.calls if is_orchestrator(options)]
    assert len(sent) == 2 and [m["role"] for m in sent[0]] == ["system", "user"]
    as_orchestrator = {"tools": [{"function": {"name": "create_subagent"}}]}
    last = _step(sent[1], as_orchestrator).message.to_openai()
    assert rec.messages[: len(sent[1])] == sent[1]
    assert rec.messages[len(sent[1])] == last
    assert rec.messages[len(sent[1]) + 1 :] == [
        {"role": "tool", "tool_call_id": "call1_0", "content": '{"finished": true}'}
    ]
    roles = [m["role"] for m in rec.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    first = rec.messages[2]
    assert first["content"] == "One task, then wait."
    assert [c["function"]["arguments"] for c in first["tool_calls"]] == [ASSIGN, WAIT]
    assert [m["tool_call_id"] for m in rec.messages[3:5]] == ["call0_0", "call0_1"]
    # token ids where the server gave them, None where it did not
    assert rec.tokens == [
        TurnTokens(turn=0, message=2, token_ids=[90, 7], logprobs=[-0.5, -0.25],
                   text=['{"', "agent"]),
        TurnTokens(turn=1, message=5, token_ids=None, logprobs=[-0.125], text=["fin"]),
    ]  # fmt: skip
    assert [(s.subtask_id, s.parent, s.turn) for s in rec.spawns] == [("t1", ORCHESTRATOR_ID, 0)]
    path = write_rollouts(tmp_path / "r.jsonl", [rec])
    assert load_rollouts(path) == [rec]


def test_trl_rows_end_with_the_last_assistant_message(solved) -> None:  # type: ignore[no-untyped-def]
    _, traj = solved
    rec = rollout_record(traj, score(traj), task={}, group="g", index=0, advantage=0.5)
    (row,) = to_trl([rec])
    assert row["prompt"] == rec.messages[:2] and row["reconstructed"] is False
    assert row["completion"] == rec.messages[2:-1]  # the finish call's result is left out
    assert [m["role"] for m in row["completion"]] == ["assistant", "tool", "tool", "assistant"]


def test_a_cut_or_missing_opening_is_marked(solved) -> None:  # type: ignore[no-untyped-def]
    _, traj = solved
    system, user = traj.openings[ORCHESTRATOR_ID]
    cut = {**user, "content": user["content"][:40] + " … [cut at 40 of 1,234 characters]"}
    rec = rollout_record(
        traj.model_copy(update={"openings": {ORCHESTRATOR_ID: [system, cut]}}),
        score(traj), task={}, group="g", index=0, advantage=0.0,
    )  # fmt: skip
    assert rec.messages[:2] == [system, {**cut, "reconstructed": True}] and rec.reconstructed
    # content capture off: roles and sizes only; the goal stands in, said so
    sizes = [{"role": m["role"], "chars": len(m["content"])} for m in (system, user)]
    bare = traj.model_copy(update={"openings": {ORCHESTRATOR_ID: sizes}})
    rec = rollout_record(bare, score(traj), task={}, group="g", index=0, advantage=0.0)
    assert rec.messages[0] == {"role": "system", "content": traj.goal, "reconstructed": True}
    assert rec.messages[1]["role"] == "assistant" and "reconstructed" not in rec.messages[1]


def test_spawns_of_another_agent_stay_out_of_the_conversation(solved) -> None:  # type: ignore[no-untyped-def]
    _, traj = solved
    helper = OrchestratorTurn(subtask_id="helper", index=0, ts=traj.turns[0].ts, spawned=["x"])
    mixed = traj.model_copy(update={"turns": [helper, *traj.turns]})
    rec = rollout_record(mixed, score(traj), task={}, group="g", index=0, advantage=0.0)
    assert rec.orchestrator == ORCHESTRATOR_ID and not rec.reconstructed
    assert [(s.subtask_id, s.parent, s.turn) for s in rec.spawns] == [
        ("x", "helper", None),
        ("t1", ORCHESTRATOR_ID, 0),
    ]


def test_v1_files_are_refused_saying_what_changed(tmp_path: Path) -> None:
    v1 = {"schema": "kimmy.rollout/v1", "task": {}, "group": "g", "index": 0, "run_id": "r",
          "messages": [], "spawns": [], "tokens": [], "reward": {}, "advantage": 0}  # fmt: skip
    (tmp_path / "old.jsonl").write_text(json.dumps(v1) + "\n")
    with pytest.raises(RolloutSchemaError) as info:
        load_rollouts(tmp_path / "old.jsonl")
    says = str(info.value)
    assert "old.jsonl:1: rollout schema 'kimmy.rollout/v1' is retired" in says
    assert '{"spawn": […]}' in says and "token ids" in says
    assert "kimmy rollouts" in says and "'kimmy.rollout/v2'" in says


def test_token_ids_from_kimmy_serve_decode_to_the_turns_text(tmp_path: Path) -> None:
    """The orchestrator on a real `kimmy serve` (tiny random model, loopback): the record's
    token ids decode to its text pieces, and together to the message the model gave."""
    from kimmy_swarm.model.presets import tiny_model, tiny_tokenizer
    from kimmy_swarm.model.serve.async_engine import AsyncEngine
    from kimmy_swarm.model.serve.factory import build_engine
    from kimmy_swarm.model.serve.server import ServerThread, create_app
    from kimmy_swarm.swarm.llm import OpenAIChat

    tok = tiny_tokenizer(vocab_size=384, num_docs=40)
    engine = build_engine(tiny_model(tok, seed=1), tok, max_num_seqs=4, max_model_len=8192,
                          page_size=4, num_pages=4096)  # fmt: skip
    with ServerThread(create_app(AsyncEngine(engine), model_name="tiny")) as server:
        model = OpenAIChat(server.base_url, "tiny", timeout_s=120)
        out = run_solve(
            SolveConfig(goal="Say hello", out=tmp_path / "o", model=model,
                        runs_dir=tmp_path / "r", max_turns=1, max_tokens=64, logprobs=True,
                        context_tokens=8192, max_subagents=2)
        )  # fmt: skip
    traj = load_trajectory(out.run_id, tmp_path / "r")
    rec = rollout_record(traj, score(traj), task={}, group="g", index=0, advantage=0.0)
    assert not rec.reconstructed and [m["role"] for m in rec.messages[:3]] == [
        "system", "user", "assistant"
    ]  # fmt: skip
    (turn,) = rec.tokens
    assert turn.token_ids and turn.text and turn.logprobs and turn.message == 2
    assert len(turn.token_ids) == len(turn.text) == len(turn.logprobs) <= 64
    assert [tok.decode([i]) for i in turn.token_ids] == turn.text
    text = tok.decode(turn.token_ids, skip_special_tokens=True)
    said = rec.messages[2]
    if said.get("tool_calls"):  # a whole call: the text is its JSON
        (call,) = said["tool_calls"]
        fn = call["function"]
        assert json.loads(text) == {"name": fn["name"], "arguments": json.loads(fn["arguments"])}
    else:  # cut at max_tokens: the text as generated
        assert said["content"] == text
    (row,) = to_trl([rec])
    assert row["completion"][-1] == said
