"""Grading a wide task's answer: item-level precision / recall / F1 and cell accuracy.

Items are rows keyed by paper (matched by `title_key` of the title cell). An answer row is
correct when it names a paper of the ground truth (the first row that does; a repeat is an
extra, wrong row) and every requested cell equals the truth after `normalize_cell`:

    precision = correct rows / answer rows        recall = correct rows / truth rows
    f1 = 2·p·r / (p + r)                          cell_accuracy = correct cells / truth cells

where truth cells = truth rows × columns and a cell counts only in the row matched to its
paper (a missing paper's cells are all wrong). `WideGrader` scores a run's final answer
(F1) and implements `rewards.graders.PipelineGrader`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.widesearch.answer import normalize_row, parse_answer, title_key
from kimmy_swarm.agents.widesearch.task import Paper, Row, WideTask

if TYPE_CHECKING:
    from kimmy_swarm.rewards.trajectory import Trajectory

#: Subtask id of the orchestrator agent, whose output's `answer` is the run's final answer.
#: It must match the id `agents.orchestrator` gives its own subtask.


@dataclass(frozen=True, slots=True)
class WideScore:
    """The figures of one graded answer."""

    precision: float
    recall: float
    f1: float
    cell_accuracy: float
    answer_rows: int
    truth_rows: int
    correct_rows: int

    def as_parts(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}


def score_rows(
    task: WideTask, answer_rows: Sequence[dict[str, Any]], truth: Sequence[Row]
) -> WideScore:
    """Score parsed answer rows (see `answer.parse_answer`) against the truth rows."""
    columns = task.columns
    expected = {title_key(r["title"]): normalize_row(dict(r), columns) for r in truth}
    seen: set[str] = set()
    correct = cells = 0
    for raw in answer_rows:
        row = normalize_row(raw, columns)
        key = row["title"]
        if not isinstance(key, str) or key not in expected or key in seen:
            continue
        seen.add(key)
        good = sum(row[c] == expected[key][c] for c in columns)
        cells += good
        correct += good == len(columns)
    n_answer, n_truth = len(answer_rows), len(expected)
    precision = correct / n_answer if n_answer else float(n_truth == 0)
    recall = correct / n_truth if n_truth else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    cell_accuracy = cells / (n_truth * len(columns)) if n_truth else float(n_answer == 0)
    return WideScore(precision, recall, f1, cell_accuracy, n_answer, n_truth, correct)


def grade_answer(task: WideTask, answer: str, truth: Sequence[Row]) -> WideScore:
    """Parse `answer` (a Markdown table or JSON rows) and score it against `truth`."""
    return score_rows(task, parse_answer(answer), truth)


def _ws(text: str) -> str:
    return " ".join(text.split())


def final_answer(traj: Trajectory) -> str | None:
    """The run's final answer: the `answer` in the output of a planned subtask (one nothing
    spawned: the orchestrator of a `run_solve` run), if any."""
    for key, episode in traj.episodes.items():
        if episode.parent is not None:
            continue
        output = traj.outputs.get(key)
        if isinstance(output, dict) and isinstance(output.get("answer"), str):
            return output["answer"]
    return None


class WideGrader:
    """r_result of a wide-task run: the F1 of its final answer against the ground truth.

    Args:
        task: the wide task the run was given (its `goal()` tells its runs from others).
        papers: the corpus's papers, from which the ground truth is computed.
        goal: the goal in words the run was given, when not `task.goal()` (a suite goal,
            or one read by `read_wide_goal`).
    """

    def __init__(self, task: WideTask, papers: Iterable[Paper], *, goal: str | None = None) -> None:
        self.task = task
        self.truth: list[Row] = task.ground_truth(papers)
        self.name = f"widesearch:{task.name}"
        self._goals = {_ws(task.goal())} | ({_ws(goal)} if goal else set())

    def applies(self, traj: Trajectory) -> bool:
        """A run whose goal is this task's goal or the words it was read from (whitespace
        aside)."""
        return isinstance(traj.goal, str) and _ws(traj.goal) in self._goals

    def score(self, traj: Trajectory) -> WideScore:
        """All the figures; a run without a final answer is scored as an empty answer."""
        return grade_answer(self.task, final_answer(traj) or "", self.truth)

    def parts(self, traj: Trajectory) -> dict[str, float]:
        """precision, recall, f1, cell_accuracy and the row counts."""
        return self.score(traj).as_parts()

    def __call__(self, traj: Trajectory) -> float:
        return self.score(traj).f1


__all__ = [
    "WideGrader",
    "WideScore",
    "final_answer",
    "grade_answer",
    "score_rows",
]
