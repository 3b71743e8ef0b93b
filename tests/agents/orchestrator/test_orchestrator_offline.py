"""The orchestrator with no model: the rule-based planner behind the same tools — a review
of a corpus, an analysis of datasets, a wide task graded by item-level F1 — and `kimmy
swarm` / `kimmy show` on the command line."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kimmy_swarm.agents.orchestrator import ORCHESTRATOR_ID, SolveConfig, offline_rules, run_solve
from kimmy_swarm.agents.orchestrator.resources import load_resources
from kimmy_swarm.agents.pipeline import RunInputs, RunResources
from kimmy_swarm.agents.review.planning import ReviewRules
from kimmy_swarm.agents.widesearch import ICLR_DEFAULTS, WIDE_TASKS, WideGrader, load_papers
from kimmy_swarm.cli.app import main
from kimmy_swarm.rewards import load_trajectory, score
from kimmy_swarm.swarm.errors import ConfigError

PAPERS = Path(__file__).resolve().parents[4] / "shared" / "data" / "papers"
ICLR = PAPERS / "iclr2017_citations_in_2018.json"
needs_papers = pytest.mark.skipif(not ICLR.is_file(), reason="../shared/data/papers is absent")


@needs_papers
def test_a_wide_task_offline_is_graded_by_f1_as_the_result_reward(tmp_path: Path) -> None:
    task = WIDE_TASKS["attention_papers"]
    out = run_solve(
        SolveConfig(goal=task.goal(), out=tmp_path / "o", corpus=ICLR, runs_dir=tmp_path / "r",
                    defaults=ICLR_DEFAULTS)
    )  # fmt: skip
    assert out.status == "completed" and out.turns == 2
    # One extractor per 5 of the 35 papers whose text holds the phrase (found by `fan_out`
    # over the quoted phrase, not by reading all 489).
    assert out.subagents == 7
    traj = load_trajectory(out.run_id, tmp_path / "r")
    grader = WideGrader(task, load_papers(ICLR))
    assert grader.applies(traj)
    breakdown = score(traj, grader, step=0)
    assert breakdown.r_result == 1.0 and breakdown.grader.startswith("widesearch")
    assert grader.parts(traj)["truth_rows"] == 35


@needs_papers
def test_a_review_offline_writes_the_answer_and_the_review(tmp_path: Path) -> None:
    out = run_solve(
        SolveConfig(goal="Review attention mechanisms", out=tmp_path / "o", corpus=ICLR,
                    defaults=ICLR_DEFAULTS)
    )  # fmt: skip
    assert out.status == "completed" and out.turns == 3
    answer = (tmp_path / "o" / "answer.md").read_text()
    assert answer.startswith("# Literature review: attention mechanisms")
    assert (tmp_path / "o" / "review" / "review.md").read_text() == answer


def test_an_analysis_offline_answers_with_the_report(tmp_path: Path) -> None:
    out = run_solve(
        SolveConfig(goal="What drives employment?", out=tmp_path / "o",
                    datasets=("statsmodels:longley",), runs_dir=tmp_path / "r")
    )  # fmt: skip
    assert out.status == "completed" and out.subagents == 5  # plan, analyst, checker, 2 reports
    assert out.answer.startswith("# Batch data analysis")
    traj = load_trajectory(out.run_id, tmp_path / "r")
    assert {e.role for k, e in traj.episodes.items() if k != ORCHESTRATOR_ID} == {
        "planner", "data_analyst", "fact_checker", "frontend_engineer", "synthesizer",
    }  # fmt: skip


def test_kimmy_swarm_and_show_offline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    for i, topic in enumerate(["linear attention kernels", "delta rule memory", "gating"]):
        (corpus / f"n{i}.md").write_text(
            f"# Note {i}\n\nThis note studies {topic}. Linear attention keeps a state of "
            f"fixed size; the delta rule updates it ({i + 1} experiments).\n"
        )
    runs = tmp_path / "runs"
    code = main(["swarm", "Review linear attention", "--corpus", str(corpus), "--out",
                 str(tmp_path / "o"), "--runs-dir", str(runs)])  # fmt: skip
    assert code == 0, capsys.readouterr()
    assert (tmp_path / "o" / "answer.md").read_text().startswith("# Literature review")
    capsys.readouterr()
    assert main(["show", "latest", "--runs-dir", str(runs)]) == 0
    shown = capsys.readouterr().out
    assert "orchestrator (orchestrator, 3 turns)" in shown
    assert 'assign_task(agent="planner"' in shown and "finish(answer=" in shown
    assert main(["rewards", "latest", "--runs-dir", str(runs), "--json"]) == 0
    reward = json.loads(capsys.readouterr().out)
    traj = load_trajectory("latest", runs)
    spawned = sum(len(t.spawned) for t in traj.turns if t.subtask_id == ORCHESTRATOR_ID)
    assert spawned == len(traj.episodes) - 1  # every sub-agent is one of its spawns
    assert reward["r_inst"] == pytest.approx(min(spawned, 64) / 64)
    assert main(["swarm", "Write a poem", "--out", str(tmp_path / "p"), "--runs-dir",
                 str(runs)]) == 2  # fmt: skip
    assert "needs a model to plan it" in capsys.readouterr().err


def test_settings_of_a_run_leave_the_model_alone(tmp_path: Path) -> None:
    """A local model holds sockets and threads: recording the settings must not copy it."""
    import socket

    class Local:
        name = "local"

        def __init__(self) -> None:
            self.sock = socket.socket()

    model = Local()
    try:
        settings = SolveConfig(goal="g", out=tmp_path, model=model).settings()  # type: ignore[arg-type]
    finally:
        model.sock.close()
    stored = settings.model_dump(mode="json")
    assert "model" not in stored and stored["out"] == str(tmp_path)
    assert json.loads(json.dumps(stored)) == stored


def test_offline_rules_come_from_the_registered_pipelines_in_order(tmp_path: Path) -> None:
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "n.md").write_text("# Note\n\nLinear attention keeps a state of fixed size.\n")
    wide = WIDE_TASKS["rl_papers"].goal()
    with ThreadPoolExecutor(2) as pool:
        papers = load_resources(RunInputs(out=tmp_path, corpus=corpus), pool)
        both = load_resources(
            RunInputs(out=tmp_path, corpus=corpus, datasets=("statsmodels:longley",)), pool
        )
    tools = list(papers.tools)
    assert "search_corpus" in tools and tools[-1] == "read_metadata"  # the corpus loaded once
    assert list(both.tools)[: len(tools)] == tools and both.datasets == ("statsmodels:longley",)
    pipeline, rules = offline_rules("Review linear attention", papers)
    assert pipeline.name == "review" and isinstance(rules, ReviewRules)
    assert rules.topic == "linear attention"
    assert offline_rules(wide, papers)[0].name == "widesearch"  # tried before the review
    assert offline_rules(wide, both)[0].name == "widesearch"
    with pytest.raises(ConfigError, match=r"either a review .* or an analysis"):
        offline_rules("Review linear attention", both)
    with pytest.raises(ConfigError, match="needs a model to plan it"):
        offline_rules("Write a poem", RunResources())


@needs_papers
def test_every_suite_goal_in_words_is_planned_offline_and_answered_exactly(
    tmp_path: Path,
) -> None:
    """The offline planner reads each of the suite's goals and its extractors over the
    quoted phrases' documents (`fan_out`) give the whole table: F1 1.0 on all 28."""
    from kimmy_swarm.agents.widesearch import WIDE_SUITE, grade_answer

    papers = load_papers(ICLR)
    missed = {}
    for goal in WIDE_SUITE.values():
        out = run_solve(SolveConfig(goal=goal.words, out=tmp_path / goal.name, corpus=ICLR,
                                    defaults=ICLR_DEFAULTS))  # fmt: skip
        score = grade_answer(goal.task, out.answer, goal.task.ground_truth(papers))
        if (out.status, score.f1, score.cell_accuracy) != ("completed", 1.0, 1.0):
            missed[goal.name] = (out.status, score)
    assert not missed
