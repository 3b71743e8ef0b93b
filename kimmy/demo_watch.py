"""`kimmy demo`'s watcher: a progress view per pipeline, its steps and summaries, and, when
the demo is stopped, what is left of it and the command that finishes each part.

A demo is two runs, its analysis then its review. The message after an interrupted demo
names both halves and the run that stopped: `kimmy resume RUN` finishes it, and a resumed
analysis goes on with the review (`finish_demo`), as the demo would have.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kimmy_swarm.agents.analysis import AnalysisOutcome
    from kimmy_swarm.agents.review import ReviewOutcome
    from kimmy_swarm.swarm import EventSink

__all__ = ["DemoPrinter", "finish_demo"]


class _RunId:
    """A sink that keeps the id of the run whose events it is given."""

    def __init__(self) -> None:
        self.run_id: str | None = None

    def handle(self, event: Any) -> None:
        if self.run_id is None:
            self.run_id = event.run_id


class DemoPrinter:
    """Watches `agents.demo.run_demo` for `kimmy demo` (a `DemoWatcher`).

    Args:
        json_lines: events as JSON lines on stdout (the lines said go to stderr).
        stored: the runs are stored (else `--no-store`).
    """

    def __init__(self, json_lines: bool, stored: bool) -> None:
        self.json_lines, self.stored = json_lines, stored
        self._started: list[_RunId] = []  # one per pipeline run: the analysis, the review
        self._finished: list[str] = []  # the halves done, in order

    @contextmanager
    def progress(self) -> Iterator[Sequence[EventSink]]:
        from kimmy_swarm.swarm.progress import make_progress

        seen = _RunId()
        self._started.append(seen)
        with make_progress(json=self.json_lines) as sink:
            yield [sink, seen]

    def step(self, text: str) -> None:
        from kimmy_swarm.cli.summaries import say

        say(text, self.json_lines)

    def analysis_done(self, outcome: AnalysisOutcome) -> None:
        from kimmy_swarm.cli.summaries import print_analysis

        self._finished.append("analysis")
        print_analysis(outcome, self.json_lines, stored=self.stored)

    def review_done(self, outcome: ReviewOutcome) -> None:
        from kimmy_swarm.cli.summaries import print_review

        self._finished.append("review")
        print_review(outcome, self.json_lines, stored=self.stored)

    def unfinished(self, out: Path, runs_dir: Path, *, default_runs_dir: Path) -> str:
        """What the message after an interrupted demo says: each half, and the command that
        finishes the ones left (`runs_dir` named in them unless it is the default)."""
        again = f"`kimmy demo --out {shlex.quote(str(out))}` starts it again"
        if not self.stored:
            return f"the demo's runs were not stored (--no-store): {again}"
        where = "" if runs_dir == default_runs_dir else f" --runs-dir {shlex.quote(str(runs_dir))}"
        ids = [seen.run_id for seen in self._started]
        if not any(ids):
            return f"nothing was stored yet: {again}"
        lines = ["finished work is stored, but the demo is not finished:"]
        for i, half in enumerate(("analysis", "review")):
            run_id = ids[i] if i < len(ids) else None
            if half in self._finished:
                lines.append(f"  {half}: finished (run {run_id})")
            elif run_id is not None:
                then = ", then runs the review" if half == "analysis" else ""
                lines.append(
                    f"  {half}: run {run_id} stopped: `kimmy resume {run_id}{where}` finishes "
                    f"it{then}"
                )
            elif half == "review":
                lines.append("  review: not started (the analysis's resume runs it)")
            else:
                lines.append(f"  {half}: not started: {again}")
        return "\n".join(lines)


def finish_demo(analysis_out: Path, runs_dir: Path, json_lines: bool) -> None:
    """After `kimmy resume` of an analysis: when it was a demo's analysis, stopped before the
    demo's review began, run that review now (said first), as `kimmy demo` would have."""
    from kimmy_swarm.agents.demo import review_left, run_demo_review

    demo = review_left(analysis_out)
    if demo is None:
        return
    printer = DemoPrinter(json_lines, stored=True)
    printer.step(f"this run was the analysis of the demo in {demo}; its review runs now")
    run_demo_review(demo, runs_dir=runs_dir, watcher=printer)
