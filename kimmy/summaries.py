"""What `kimmy review`, `kimmy analyze` and `kimmy demo` print when a pipeline finished: the
counts, the fact-check pass rate, problems, the files written and the stored run.

With `--json` the events own stdout, so these lines go to stderr.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis import AnalysisOutcome
    from kimmy_swarm.agents.orchestrator import SolveOutcome
    from kimmy_swarm.agents.review import ReviewOutcome

__all__ = ["print_analysis", "print_review", "say", "solve_notes"]

#: Said when the offline rules planned a `kimmy swarm` run (no model read the goal).
PLANNED_OFFLINE = (
    "planned offline (no model given): the goal was read by rules; give --local or "
    "--base-url/--model for a model to plan"
)


class _Run(Protocol):
    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> str: ...


def say(text: str, json_lines: bool = False) -> None:
    """One line on stdout, or on stderr when the events are on stdout."""
    print(text, file=sys.stderr if json_lines else sys.stdout)


def _say_fallbacks(
    fell_back: dict[str, str], made_by: dict[str, int], subagents: int, json_lines: bool
) -> None:
    """In model mode, how many sub-agents' outputs the model made; then how many the
    offline procedure stood in for, and the first few."""
    by_model = made_by.get("model", 0)
    if by_model or fell_back:
        say(
            f"model: {by_model} of {subagents} sub-agents' outputs made by the model, "
            f"{len(fell_back)} by the offline procedure after the model failed",
            json_lines,
        )
    if not fell_back:
        return
    say(
        f"fallback: {len(fell_back)} of {subagents} sub-agents fell back to the offline "
        "procedure (their model failed the task)",
        json_lines,
    )
    for sid, why in list(fell_back.items())[:3]:
        say(f"  fell back {sid}: {why[:160]}", json_lines)


def _say_run(outcome: _Run, json_lines: bool, stored: bool) -> None:
    where = f": kimmy show {outcome.run_id}" if stored else " (not stored)"
    say(f"  run {outcome.run_id} (status {outcome.status}){where}", json_lines)


def print_review(outcome: ReviewOutcome, json_lines: bool = False, *, stored: bool = True) -> None:
    """The summary lines of a review run."""
    files = outcome.files
    say(
        f"review: {outcome.documents} documents ({len(outcome.skipped)} skipped), "
        f"{outcome.relevant} relevant, {outcome.themes} themes, {outcome.subagents} sub-agents "
        f"({outcome.peak_researchers} researchers at peak), {outcome.duration_s:.2f} s wall time",
        json_lines,
    )
    say(_review_check_line(outcome), json_lines)
    _say_fallbacks(outcome.fallbacks, outcome.made_by, outcome.subagents, json_lines)
    for skipped in outcome.skipped[:5]:
        say(f"  skipped {skipped.source}: {skipped.reason}", json_lines)
    for problem in outcome.problems[:5]:
        say(f"  problem: {problem}", json_lines)
    for name, path in files.paths.items():
        say(f"  {name:<15} {path}", json_lines)
    _say_run(outcome, json_lines, stored)


def _review_check_line(outcome: ReviewOutcome) -> str:
    """What the review's fact-check did, never a rate over checks that could not fail: a
    claim that quotes its passage word for word is counted apart, with the one check that
    could fail on it (its attribution: comparing it with the sentence it copies, numbers and
    caveats included, could not find it wrong); the summaries' own sentences are said to be
    unchecked; a partial run's counts carry no percentage."""
    files = outcome.files
    tail = "" if outcome.status == "completed" else f" (run {outcome.status}: see the problems)"
    if not files.verbatim:
        rate = f" ({100 * outcome.pass_rate:.1f}%)" if outcome.status == "completed" else ""
        return (
            f"fact-check: {files.supported}/{files.claims} claims supported{rate}, "
            f"{files.flagged} flagged{tail}"
        )
    reworded = files.claims - files.verbatim
    said = (
        f", {reworded} reword it (checked against it: its words, numbers, negations, hedges "
        "and caveats)"
        if reworded
        else ""
    )
    return (
        f"fact-check: {files.claims} claims, {files.flagged} flagged; {files.verbatim} quote "
        "their paper word for word, so only their attribution could fail (checked: the right "
        f"authors, year and standing){said}; the summaries' own sentences are not "
        f"checked{tail}"
    )


def print_analysis(
    outcome: AnalysisOutcome, json_lines: bool = False, *, stored: bool = True
) -> None:
    """The summary lines of an analysis run."""
    say(
        f"analysis: {outcome.analyses} analyses ({outcome.peak_analysts} in flight at peak), "
        f"{outcome.duration_s:.2f} s wall time",
        json_lines,
    )
    # a partial run's rate covers only what was reported: no percentage that reads as whole
    rate = f" ({100 * outcome.pass_rate:.1f}%)" if outcome.status == "completed" else ""
    tail = "" if outcome.status == "completed" else f" (run {outcome.status}: see the problems)"
    say(
        f"fact-check: {outcome.verified}/{outcome.findings} numbers verified by recomputation"
        f"{rate}, {outcome.mismatched} mismatched, {outcome.unverifiable} unverifiable{tail}",
        json_lines,
    )
    _say_fallbacks(outcome.fallbacks, outcome.made_by, outcome.subagents, json_lines)
    for problem in outcome.problems[:8]:
        say(f"  problem: {problem}", json_lines)
    for name, path in outcome.paths.items():
        say(f"  {name:<15} {path}", json_lines)
    _say_run(outcome, json_lines, stored)
    _say_answers(outcome.answers, json_lines)


#: Answers `kimmy analyze` prints at most (report.md has them all).
MAX_ANSWERS = 20


def _say_answers(answers: list[tuple[str, str, str]], json_lines: bool) -> None:
    """Each (dataset, question)'s answer in one line, as report.md gives it first."""
    for dataset, question, answer in answers[:MAX_ANSWERS]:
        say(f"answer [{dataset}] {question}: {answer}", json_lines)
    if len(answers) > MAX_ANSWERS:
        say(f"… and {len(answers) - MAX_ANSWERS} more answers in report.md", json_lines)


def solve_notes(outcome: SolveOutcome) -> list[str]:
    """What `kimmy swarm` says beside its counts: how the run was planned, and why it stopped
    short when the swarm refused the orchestrator's spawns (the sub-agent limit names its
    flag: raising it is the cure)."""
    notes = [PLANNED_OFFLINE] if outcome.planned_by_rules is not None else []
    if not outcome.refused:
        return notes
    lead = "stopped" if outcome.status != "completed" else "note"
    limited = sum("max_subagents" in m for m in outcome.refused)
    if limited:
        notes.append(
            f"{lead}: the sub-agent limit (--max-subagents {outcome.max_subagents}) refused "
            f"{limited} spawn{'s' if limited != 1 else ''}; raise it"
        )
    other = [m for m in outcome.refused if "max_subagents" not in m]
    if other:
        notes.append(
            f"{lead}: the swarm refused {len(other)} spawn{'s' if len(other) != 1 else ''}: "
            f"{' '.join(other[0].split())[:160]}"
        )
    return notes
