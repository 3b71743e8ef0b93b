"""The pipeline-agnostic graders: the completion grader on a scripted swarm, the choice
among pipeline graders (`grader_for`), the model judge (scripted and over HTTP), and the rule
that `rewards` knows no pipeline. The pipelines' own graders are tested beside them
(tests/agents/review/test_grader.py, tests/agents/analysis/test_grader.py)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.rewards.graders import (
    CompletionGrader,
    Grader,
    GraderError,
    ModelJudge,
    PipelineGrader,
    grader_for,
    outputs_as,
)
from kimmy_swarm.rewards.trajectory import Trajectory, load_trajectory
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.errors import ModelBehaviourError
from kimmy_swarm.swarm.llm import ScriptedChat

REWARDS = Path(__file__).resolve().parents[2] / "rewards"


@pytest.fixture
def review(iclr_attention_review: tuple[Trajectory, Any]) -> tuple[Trajectory, Any]:
    """A real offline review (20 papers on attention), run once per session."""
    return iclr_attention_review


# --- completion, and the choice of a grader -----------------------------------------------


def _scripted_run(runs: Path) -> Trajectory:
    """Sinks good, blank and fails under src: only `good` gives an output."""

    async def answer(ctx: SubtaskContext) -> Any:
        if ctx.id == "fails":
            raise ValueError("no")
        return {"good": "yes", "blank": ""}.get(ctx.id, ctx.id)

    plan = {
        "subtasks": [
            {"id": "src", "role": "a"},
            {"id": "good", "role": "a", "depends_on": ["src"]},
            {"id": "blank", "role": "a", "depends_on": ["src"]},
            {"id": "fails", "role": "a", "depends_on": ["src"]},
        ]
    }
    with Swarm(runs_dir=runs, roles={"a": answer}, failure_policy="continue") as swarm:
        swarm.run_sync(plan, run_id="c")
    return load_trajectory("c", runs)


def test_completion_grader_on_a_scripted_swarm(tmp_path: Path) -> None:
    traj = _scripted_run(tmp_path)
    grader = grader_for(traj)
    assert isinstance(grader, CompletionGrader)
    assert grader(traj) == 1 / 3  # sinks good, blank, fails: one gave an output


class _Picky:
    """A pipeline grader that applies or not, and remembers being asked."""

    def __init__(self, name: str, wants: bool) -> None:
        self.name, self.wants, self.asked = name, wants, 0

    def applies(self, traj: Trajectory) -> bool:
        self.asked += 1
        return self.wants

    def parts(self, traj: Trajectory) -> dict[str, float]:
        return {"whole": 1.0}

    def __call__(self, traj: Trajectory) -> float:
        return 1.0


def test_grader_for_takes_the_first_candidate_that_applies(tmp_path: Path) -> None:
    traj = _scripted_run(tmp_path)
    no, first, second = _Picky("no", False), _Picky("first", True), _Picky("second", True)
    assert isinstance(first, PipelineGrader) and isinstance(first, Grader)
    assert not isinstance(CompletionGrader(), PipelineGrader)  # it applies to any run
    assert grader_for(traj, [no, first, second]) is first
    assert (no.asked, first.asked, second.asked) == (1, 1, 0)
    assert isinstance(grader_for(traj, (no,)), CompletionGrader)
    assert isinstance(grader_for(traj), CompletionGrader)  # rewards alone knows no pipeline


def test_outputs_as_keeps_the_outputs_that_are_the_model() -> None:
    from pydantic import BaseModel

    class Count(BaseModel):
        n: int

    outputs = {"count:1": {"n": 1}, "count:2": {"m": 2}, "count:3": "3", "other": {"n": 4}}
    traj = Trajectory(run_id="t", status="completed", episodes={}, outputs=outputs)
    found = outputs_as(traj, Count, lambda k: k.startswith("count:"))
    assert found == {"count:1": Count(n=1)}


def _imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_rewards_never_imports_agents() -> None:
    """Layering: agents → rewards → swarm. A pipeline's grader lives beside its pipeline."""
    sources = sorted(REWARDS.rglob("*.py"))
    assert sources
    wrong = [
        f"{path.relative_to(REWARDS.parent)}:{line} imports {name}"
        for path in sources
        for line, name in _imports(path)
        if name == "agents" or name.startswith("agents.")
    ]
    assert wrong == []


def test_rewards_names_no_pipeline_subtask() -> None:
    """The pipelines' subtask ids are theirs (`agents.*.schemas`), never spelled here."""
    wrong = [
        f"{path.relative_to(REWARDS.parent)}:{node.lineno} {node.value!r}"
        for path in sorted(REWARDS.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and any(p in node.value for p in ("check:", "analyze:", "read:", "write:"))
    ]
    assert wrong == []


# --- the model judge ---------------------------------------------------------------------


async def test_judge_scores_the_final_output(review: tuple[Trajectory, Any]) -> None:
    traj, _ = review
    async with ScriptedChat(['{"score": 7, "reason": "sound, but thin"}']) as model:
        judge = ModelJudge(model, "Cites only supported claims.")
        assert await judge.ascore(traj) == 0.7
    (messages, options) = model.calls[0]
    user = messages[-1]["content"]
    assert traj.goal in user and "Cites only supported claims." in user
    assert traj.outputs["synthesize"]["title"] in user  # the sink's output
    assert options["response_format"]["json_schema"]["name"] == "Judgement"
    assert judge.name == "judge:scripted"


async def test_judge_repairs_an_invalid_answer_once(review: tuple[Trajectory, Any]) -> None:
    traj, _ = review
    script = ["Looks great, 9/10!", '```json\n{"score": 9, "reason": "clear"}\n```']
    async with ScriptedChat(script) as model:
        judgement = await ModelJudge(model, "Is it clear?").ajudge(traj)
    assert (judgement.score, judgement.reason) == (9, "clear")
    repair = model.calls[1][0]
    assert repair[-2] == {"role": "assistant", "content": "Looks great, 9/10!"}
    assert repair[-1]["role"] == "user" and "invalid" in repair[-1]["content"]

    script = ['{"score": 11, "reason": "off the scale"}', '{"score": "high"}']
    async with ScriptedChat(script) as model:
        with pytest.raises(ModelBehaviourError, match="still invalid after the repair turn"):
            await ModelJudge(model, "Is it clear?").ascore(traj)
    assert "less than or equal to 10" in model.calls[1][0][-1]["content"]


async def test_judge_gives_nothing_zero_without_asking(tmp_path: Path) -> None:
    async def fail(ctx: SubtaskContext) -> None:
        raise ValueError("no")

    with Swarm(runs_dir=tmp_path, roles={"f": fail}) as swarm:
        await swarm.execute({"subtasks": [{"id": "x", "role": "f"}]}, run_id="n")
    async with ScriptedChat([]) as model:  # any call would fail the test
        assert await ModelJudge(model, "anything").ascore(load_trajectory("n", tmp_path)) == 0.0


async def test_judge_called_synchronously_inside_a_loop_says_to_await(
    review: tuple[Trajectory, Any],
) -> None:
    judge = ModelJudge(ScriptedChat([]), "r")
    with pytest.raises(GraderError, match=r"await judge\.ascore"):
        judge(review[0])


def test_judge_over_http_from_sync_code(review: tuple[Trajectory, Any]) -> None:
    from kimmy_swarm.swarm.llm import OpenAIChat
    from tests.support.openai_server import OpenAIServer, reply

    traj, _ = review
    with OpenAIServer([reply('{"score": 4.5, "reason": "misses recent work"}')]) as srv:
        judge = ModelJudge(OpenAIChat(srv.base_url, "judge-model"), "Covers recent work.")
        assert judge(traj) == 0.45  # the Grader protocol: a plain call
        (request,) = srv.chat_requests
    assert request.body["model"] == "judge-model"
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.body["temperature"] == 0.0


def test_judge_rejects_a_useless_rubric() -> None:
    with pytest.raises(GraderError, match="rubric is empty"):
        ModelJudge(ScriptedChat([]), "  ")
