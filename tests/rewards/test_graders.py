"""Graders on real pipeline runs (offline and model-mode reviews, an offline analysis), the
completion grader on a scripted swarm, and the model judge (scripted and over HTTP)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewards.graders import (
    AnalysisGrader,
    CompletionGrader,
    Grader,
    GraderError,
    ModelJudge,
    ReviewGrader,
    grader_for,
)
from rewards.trajectory import Trajectory, load_trajectory
from swarm import Swarm
from swarm.context import SubtaskContext
from swarm.errors import ModelBehaviourError
from swarm.llm import ScriptedChat
from tests.agents.review.conftest import ICLR_JSON


def _claims(out: Path) -> list[dict[str, Any]]:
    """The pipeline's own record of every fact-checked claim."""
    return [json.loads(x) for x in (out / "claims.jsonl").read_text().splitlines()]


def _coverage(claims: list[dict[str, Any]], themes: list[str]) -> float:
    covered = {c["theme"] for c in claims if c["verdict"] == "supported"}
    return len(covered & set(themes)) / len(themes)


@pytest.fixture(scope="module")
def review(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trajectory, Any]:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    from agents.review import ReviewConfig, run_review

    tmp = tmp_path_factory.mktemp("review")
    out = run_review(
        ReviewConfig(
            corpus=ICLR_JSON, topic="attention", out=tmp, runs_dir=tmp / "r", max_papers=20
        )
    )
    return load_trajectory(out.run_id, tmp / "r"), out


# --- review ------------------------------------------------------------------------------


def test_review_grader_matches_the_pipelines_own_counts(review: tuple[Trajectory, Any]) -> None:
    traj, out = review
    grader = grader_for(traj)
    assert isinstance(grader, ReviewGrader) and isinstance(grader, Grader)
    parts = grader.parts(traj)
    assert (parts["claims"], parts["supported"]) == (out.files.claims, out.files.supported)
    assert parts["claims"] > 0 and parts["precision"] == out.pass_rate
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    assert parts["coverage"] == _coverage(_claims(out.out_dir), themes)
    assert grader(traj) == (parts["precision"] + parts["coverage"]) / 2


def test_review_grader_when_a_theme_loses_its_support(review: tuple[Trajectory, Any]) -> None:
    traj, out = review
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    lost = f"check:{themes[0]}"
    section = traj.outputs[lost]
    flipped = {
        **section,
        "checks": [{**c, "verdict": "unsupported"} for c in section["checks"]],
    }
    n_lost = sum(c["verdict"] == "supported" for c in section["checks"])
    parts = ReviewGrader().parts(
        traj.model_copy(update={"outputs": {**traj.outputs, lost: flipped}})
    )
    assert parts["precision"] == (out.files.supported - n_lost) / out.files.claims
    assert parts["coverage"] == (len(themes) - 1) / len(themes)
    # a review whose fact-checks all failed has no claims: 0
    no_checks = {k: v for k, v in traj.outputs.items() if not k.startswith("check:")}
    assert ReviewGrader()(traj.model_copy(update={"outputs": no_checks})) == 0.0


def test_review_grader_on_a_model_mode_review_with_flagged_claims(tmp_path: Path) -> None:
    """The scripted review model invents one claim per writer; the fact-checkers flag them."""
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    from agents.review import ReviewConfig, run_review
    from swarm.llm import OpenAIChat
    from tests.support.openai_server import OpenAIServer
    from tests.support.review_model import ReviewModel

    with OpenAIServer(default=ReviewModel()) as srv:
        out = run_review(
            ReviewConfig(
                corpus=ICLR_JSON,
                topic="question answering",
                out=tmp_path,
                runs_dir=tmp_path / "r",
                max_papers=12,
                model=OpenAIChat(srv.base_url, "test-model"),
            )
        )
    traj = load_trajectory(out.run_id, tmp_path / "r")
    themes = [t["id"] for t in traj.outputs["plan"]["themes"]]
    parts = ReviewGrader().parts(traj)
    assert out.files.flagged == len(themes) > 0  # one invented claim per theme, flagged
    assert parts["precision"] == out.files.supported / out.files.claims < 1.0
    assert parts["coverage"] == _coverage(_claims(tmp_path), themes)
    assert ReviewGrader()(traj) == (parts["precision"] + parts["coverage"]) / 2
    assert {e.policy for e in traj.episodes.values()} == {"model"}
    assert all(e.model_calls and e.usage.model_calls for e in traj.episodes.values())


# --- analysis -----------------------------------------------------------------------------


def test_analysis_grader_offline_verifies_every_number(tmp_path: Path) -> None:
    from agents.analysis import AnalysisConfig, run_analysis

    out = run_analysis(
        AnalysisConfig(
            datasets=["statsmodels:longley", "sklearn:iris"], out=tmp_path, runs_dir=tmp_path / "r"
        )
    )
    traj = load_trajectory(out.run_id, tmp_path / "r")
    grader = grader_for(traj)
    assert isinstance(grader, AnalysisGrader)
    parts = grader.parts(traj)
    assert parts["numbers"] == out.findings > 0
    assert parts["verified_numbers"] == out.verified
    assert (parts["verified"], parts["answered"], grader(traj)) == (1.0, 1.0, 1.0)

    # check:2 never ran and analyze:2 could not answer: its numbers count unverified
    n2 = len(traj.outputs["analyze:2"]["findings"])
    outputs = {k: v for k, v in traj.outputs.items() if k != "check:2"}
    outputs["analyze:2"] = {**outputs["analyze:2"], "answered": False}
    parts = grader.parts(traj.model_copy(update={"outputs": outputs}))
    assert parts["verified"] == (out.findings - n2) / out.findings
    assert parts["answered"] == 0.5


# --- completion ------------------------------------------------------------------------


def test_completion_grader_on_a_scripted_swarm(tmp_path: Path) -> None:
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
    with Swarm(runs_dir=tmp_path, roles={"a": answer}, failure_policy="continue") as swarm:
        swarm.run_sync(plan, run_id="c")
    traj = load_trajectory("c", tmp_path)
    grader = grader_for(traj)
    assert isinstance(grader, CompletionGrader)
    assert grader(traj) == 1 / 3  # sinks good, blank, fails: one gave an output


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
    from swarm.llm import OpenAIChat
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
