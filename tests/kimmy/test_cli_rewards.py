"""`kimmy rewards` and `kimmy rollouts` on their command module's typer app: a stored
scripted run scored by hand, offline review rollouts over the ICLR corpus (identical rewards),
model-mode rollouts against a loopback OpenAI server whose review agent varies between
rollouts, and plan rollouts run by the agents' built-in roles.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kimmy_swarm.cli.commands.rewards import app
from kimmy_swarm.cli.tasks import TaskFileError
from kimmy_swarm.rewards.export import load_rollouts
from kimmy_swarm.swarm.errors import ConfigError, UserError
from kimmy_swarm.swarm.store import RunStore
from tests.rewards._fixtures import ICLR_JSON, run_small
from tests.support.openai_behaviours import Reply, ServerRequest
from tests.support.openai_server import OpenAIServer
from tests.support.review_model import BOGUS_CLAIM, ReviewModel

needs_iclr = pytest.mark.skipif(not ICLR_JSON.exists(), reason=f"no corpus at {ICLR_JSON}")


@pytest.fixture
def kimmy(monkeypatch: pytest.MonkeyPatch) -> Any:
    for name in ("KIMMY_BASE_URL", "KIMMY_MODEL", "KIMMY_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # offline unless a test gives --base-url
    runner = CliRunner()
    return lambda *args: runner.invoke(app, [str(a) for a in args])


def test_rewards_json_of_a_stored_run_by_hand(kimmy: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_id = run_small(runs)
    res = kimmy("rewards", run_id[:17], "--runs-dir", runs, "--json", "--width", 8)
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    # 4 sub-agents of width 8; 3 of 4 with a valid, used output; both sinks (plan, join) done
    assert (got["run_id"], got["grader"], got["step"]) == (run_id, "completion", 0)
    assert (got["r_inst"], got["r_comp"], got["r_result"]) == (0.5, 0.75, 1.0)
    assert (got["lambda1"], got["lambda2"], got["total"]) == (1.0, 1.0, 2.25)
    assert (got["critical"]["steps"], got["critical"]["serial_steps"]) == (3, 5)
    args = ("rewards", run_id, "--runs-dir", runs, "--json", "--width", 8, "--step", 500)
    cosine = json.loads(kimmy(*args, "--schedule", "cosine").output)
    assert cosine["lambda1"] == pytest.approx(0.5)
    assert cosine["total"] == pytest.approx(0.5 * 0.5 + 0.5 * 0.75 + 1.0)
    dropped = json.loads(kimmy(*args, "--schedule", "step").output)
    assert (dropped["lambda1"], dropped["total"]) == (0.0, 1.0)


def test_rewards_table_and_bad_input(kimmy: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run_small(runs)
    res = kimmy("rewards", "latest", "--runs-dir", runs, "--width", 8)
    assert res.exit_code == 0, res.output
    for text in ("r_inst", "0.5000", "0.7500", "2.2500", "completion", "critical steps"):
        assert text in res.output
    bad = kimmy("rewards", "latest", "--runs-dir", runs, "--schedule", "exponential")
    assert bad.exit_code == 2 and "exponential" in bad.output
    assert kimmy("rewards", "latest", "--runs-dir", runs, "--width", 0).exit_code == 2
    missing = kimmy("rewards", "latest", "--runs-dir", tmp_path / "nowhere")
    assert isinstance(missing.exception, ConfigError)


def _task(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "task.json"
    path.write_text(json.dumps(fields))
    return path


@needs_iclr
def test_offline_review_rollouts_score_the_same(kimmy: Any, tmp_path: Path) -> None:
    corpus = os.path.relpath(ICLR_JSON, tmp_path)  # relative to the task file's folder
    task = _task(
        tmp_path, pipeline="review", corpus=corpus, topic="question answering", max_papers=10
    )
    out, runs = tmp_path / "rollouts.jsonl", tmp_path / "runs"
    res = kimmy("rollouts", task, "-k", 2, "--jsonl", out, "--runs-dir", runs)
    assert res.exit_code == 0, res.output
    assert "scored the same" in res.output
    records = load_rollouts(out)
    assert [r.index for r in records] == [0, 1]
    assert records[0].group == records[1].group and records[0].run_id != records[1].run_id
    assert records[0].task == json.loads(task.read_text())
    assert records[0].reward == records[1].reward | {"critical": records[0].reward["critical"]}
    assert [r.advantage for r in records] == [0.0, 0.0]
    assert records[0].reward["grader"] == "review"
    # 10 researchers, a writer and a fact-checker per theme, a synthesizer, all spawned by `plan`
    roles = Counter(s.role for s in records[0].spawns)
    assert roles["researcher"] == 10 and roles["synthesizer"] == 1
    assert roles["writer"] == roles["fact_checker"] >= 2
    assert set(roles) == {"researcher", "writer", "fact_checker", "synthesizer"}
    assert all(s.completed and s.parent == "plan" for s in records[0].spawns)
    again = kimmy("rewards", records[1].run_id, "--runs-dir", runs, "--json")
    assert json.loads(again.output)["total"] == records[1].reward["total"]


class VaryingReviewModel(ReviewModel):
    """The scripted review agent, but in every second rollout each writer invents two more
    claims (which the fact-checkers flag); the orchestrator's answers carry logprobs."""

    def __init__(self) -> None:
        super().__init__()
        self.rollouts = 0
        self._count = threading.Lock()

    def __call__(self, request: ServerRequest) -> Reply:
        reply = super().__call__(request)
        if "(role planner)" not in request.body["messages"][0]["content"]:
            return reply
        body = json.loads(reply.body)
        tokens = [{"token": "plan", "logprob": -0.5, "bytes": [112, 108, 97, 110]}]
        body["choices"][0]["logprobs"] = {"content": tokens}
        return Reply(status=reply.status, body=json.dumps(body).encode())

    def _planner(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        if not repairing:  # a rollout's first call
            with self._count:
                self.rollouts += 1
        return super()._planner(subtask, inputs, brief, repairing)

    def _writer(self, subtask, inputs, brief, repairing):  # type: ignore[no-untyped-def]
        content = super()._writer(subtask, inputs, brief, repairing)
        if self.rollouts % 2 == 0:
            section = json.loads(content)
            doc = section["claims"][0]["cited"]
            for n in (2, 3):
                text = BOGUS_CLAIM.replace("97.3", f"9{n}.1")
                section["claims"].append(
                    {"id": f"{inputs['theme_id']}.bogus{n}", "text": text, "cited": doc}
                )
            content = json.dumps(section)
        return content


@needs_iclr
def test_model_rollouts_differ_and_get_advantages(kimmy: Any, tmp_path: Path) -> None:
    task = _task(
        tmp_path, pipeline="review", corpus=str(ICLR_JSON), topic="question answering", max_papers=6
    )
    out, runs = tmp_path / "rollouts.jsonl", tmp_path / "runs"
    agent = VaryingReviewModel()
    with OpenAIServer(default=agent, models=["served-model"]) as srv:
        res = kimmy(
            "rollouts",
            task,
            "-k",
            2,
            "--jsonl",
            out,
            "--runs-dir",
            runs,
            "--base-url",
            srv.base_url,
        )
        assert {r.body["model"] for r in srv.chat_requests} == {"served-model"}
    assert res.exit_code == 0, res.output
    assert agent.rollouts == 2 and "scored the same" not in res.output
    first, second = load_rollouts(out)
    # the same decomposition, so the shaping terms agree; the invented claims lower r_result
    assert first.reward["r_inst"] == second.reward["r_inst"]
    assert first.reward["r_comp"] == second.reward["r_comp"] == 1.0
    assert first.reward["r_result"] > second.reward["r_result"]
    assert first.advantage == pytest.approx(1.0, abs=1e-4)
    assert second.advantage == pytest.approx(-1.0, abs=1e-4)
    # the review's orchestrator spawns with ctx.spawn, recording no model turn: its spawns
    # are described and marked, with no tokens of their own (its model calls, logprobs and
    # all, stay in the trajectory)
    assert first.reconstructed and first.orchestrator == "plan"
    assert first.tokens and all(t.logprobs is None for t in first.tokens)
    assert "2 of 2 records hold reconstructed messages" in res.output


def test_bad_task_files(kimmy: Any, tmp_path: Path) -> None:
    def fails(task: Path) -> BaseException | None:
        return kimmy("rollouts", task, "-k", 1, "--runs-dir", tmp_path / "runs").exception

    err = fails(_task(tmp_path, pipeline="search", corpus="x"))
    assert isinstance(err, TaskFileError) and "'search'" in str(err)
    err = fails(_task(tmp_path, pipeline="review", corpus="x", colour="red"))
    assert isinstance(err, TaskFileError) and "colour" in str(err) and "max_papers" in str(err)
    err = fails(_task(tmp_path, pipeline="review", topic="x"))
    assert isinstance(err, TaskFileError) and "corpus" in str(err)
    plan = {"goal": "g", "subtasks": [{"id": "a", "role": "writer"}]}
    err = fails(_task(tmp_path, plan=plan))
    assert isinstance(err, UserError) and "need a model" in str(err)
    err = fails(tmp_path / "absent.json")
    assert isinstance(err, TaskFileError) and "does not exist" in str(err)
    (tmp_path / "list.json").write_text("[1, 2]")
    assert "holds a list" in str(fails(tmp_path / "list.json"))


def test_plan_rollouts_with_a_model_server(kimmy: Any, tmp_path: Path) -> None:
    plan = {
        "goal": "two notes",
        "subtasks": [
            {"id": "a", "role": "researcher", "instructions": "note A"},
            {"id": "b", "role": "writer", "instructions": "merge", "depends_on": ["a"]},
        ],
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    task = _task(tmp_path, plan="plan.json")  # relative to the task file
    out, runs = tmp_path / "r.jsonl", tmp_path / "runs"
    with OpenAIServer(models=["m"]) as srv:  # echoes: every sub-agent answers
        res = kimmy(
            "rollouts",
            task,
            "-k",
            2,
            "--jsonl",
            out,
            "--runs-dir",
            runs,
            "--base-url",
            srv.base_url,
        )
        calls = len(srv.chat_requests)
    assert res.exit_code == 0, res.output
    assert calls == 4  # 2 sub-agents × 2 rollouts
    records = load_rollouts(out)
    # no orchestrator, no spawns: r_inst 2/64, both done, the sink graded by completion
    assert all(r.spawns == [] and r.messages[0]["content"] == "two notes" for r in records)
    assert [r.reward["r_inst"] for r in records] == [2 / 64, 2 / 64]
    assert all(r.reward["grader"] == "completion" and r.reward["r_result"] == 1.0 for r in records)
    assert "the model's rollouts scored alike" in res.output


def test_plan_rollouts_with_a_model_in_process(kimmy: Any, tmp_path: Path) -> None:
    """`rollouts` takes the model flags every model command takes: `--local` (here the tiny
    random model, in this process), `--context-tokens`, `--call-timeout`."""
    plan = {
        "goal": "one note",
        "subtasks": [{"id": "a", "role": "researcher", "instructions": "a"}],
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    task = _task(tmp_path, plan="plan.json")
    out, runs = tmp_path / "r.jsonl", tmp_path / "runs"
    res = kimmy("rollouts", task, "-k", 2, "--jsonl", out, "--runs-dir", runs, "--local", "tiny",
                "--call-timeout", 120, "--context-tokens", 16384)  # fmt: skip
    assert res.exit_code in (0, 1), res.output  # noise from a random model may fail a check
    records = load_rollouts(out)
    assert len(records) == 2 and all(r.messages[0]["content"] == "one note" for r in records)
    with RunStore(runs, create=False) as store:  # the sub-agents called the model
        for r in records:
            assert store.events(r.run_id, types=["model_called"])
