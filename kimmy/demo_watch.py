"""`kimmy demo`'s watcher: a progress view per pipeline, its steps and summaries, and, when
the demo is stopped, what is left of it and the command that finishes each part.

A demo is two runs, its analysis then its review: `kimmy resume latest` after Ctrl-C would
only continue the one that was running. So the message after an interrupted demo names both
halves: the run that stopped (`kimmy resume RUN` finishes it) and the half not yet started
(the `kimmy review` command that runs it on the corpus the demo wrote first).
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

__all__ = ["DemoPrinter"]


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
                lines.append(
                    f"  {half}: run {run_id} stopped: `kimmy resume {run_id}{where}` finishes it"
                )
            elif half == "review":
                lines.append(f"  review: not started: `{_review_command(out)}{where}` runs it")
            else:
                lines.append(f"  {half}: not started: {again}")
        return "\n".join(lines)


def _review_command(out: Path) -> str:
    """The `kimmy review` command that runs the demo's review as `run_demo` does."""
    from kimmy_swarm.agents.demo import DEMO_MAX_PAPERS, DEMO_TOPIC

    q = shlex.quote
    return (
        f"kimmy review {q(str(out / 'docs-corpus'))} --topic {q(DEMO_TOPIC)} "
        f"--out {q(str(out / 'review'))} --max-papers {DEMO_MAX_PAPERS}"
    )
