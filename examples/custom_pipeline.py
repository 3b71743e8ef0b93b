"""A pipeline of your own, registered like the built-in ones, offline end to end: word counts.

    python examples/custom_pipeline.py [--out DIR] [--runs-dir DIR] [TEXT ...]

`WordCountPipeline` implements `agents.Pipeline` with one role, `counter`, whose offline
procedure counts the words of a text. Registered (`register_pipeline`), it is

- run on its own by `run_pipeline` (one `counter` per text, then counts.md), stored, and
  continued by `resume_pipeline`, as `run_review` / `run_analysis` are;
- found by the orchestrator's offline planner: `run_solve` (what `kimmy swarm` runs) with the
  goal "Count the words of: TEXT; TEXT; …" is planned by this pipeline's `offline_rules`
  (one `counter` per text, then the answer), with no model.

A pipeline writes the methods without a body in `Pipeline` (`install`, `write_outputs`) and
overrides the optional ones it needs (here: a run of its own, and offline rules).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from kimmy_swarm.agents import (
    Attempt,
    Pipeline,
    PipelineFiles,
    PipelineSettings,
    Role,
    RunResources,
    install,
    register_pipeline,
    run_pipeline,
)
from kimmy_swarm.agents.loop import Call
from kimmy_swarm.agents.pipeline import Orchestration
from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.llm.protocol import ChatModel
from kimmy_swarm.swarm.schema import RunResult

#: What a goal of this pipeline starts with; the texts follow, separated by ";".
GOAL_PREFIX = "Count the words of:"


class WordCount(BaseModel):
    """The `counter` role's answer."""

    text: str
    words: int


def count_words(run: Attempt) -> WordCount:
    """The `counter` role's offline procedure: the words of `inputs["text"]`."""
    text = str(run.inputs["text"])
    return WordCount(text=text, words=len(text.split()))


def counter_role() -> Role:
    return Role(
        "counter",
        "You count the words of the text you are given.",
        output=WordCount,
        procedure=count_words,
    )


class WordCountSettings(PipelineSettings):
    """A word-count run as stored (`kind` is the pipeline's name)."""

    kind: Literal["wordcount"] = "wordcount"
    texts: tuple[str, ...]
    out: Path
    threads: int = 2
    max_concurrency: int = 8


@dataclass(frozen=True)
class WordCountConfig:
    """The texts, where counts.md goes, and how the run is carried out."""

    texts: tuple[str, ...]
    out: Path
    model: ChatModel | None = None
    runs_dir: Path | None = None
    threads: int = 2
    max_concurrency: int = 8

    def settings(self) -> WordCountSettings:
        return WordCountSettings(texts=self.texts, out=self.out, threads=self.threads,
                                 max_concurrency=self.max_concurrency)  # fmt: skip


def counts_markdown(counts: Sequence[Mapping[str, Any]]) -> str:
    """The counts as a Markdown table, with the total."""
    rows = [f"| {c['text']} | {c['words']} |" for c in counts]
    total = sum(int(c["words"]) for c in counts)
    return "\n".join(["| text | words |", "|---|---|", *rows, f"| total | {total} |"]) + "\n"


@dataclass
class WordCountRules:
    """The offline plan of a word-count goal: one counter per text, then the table."""

    texts: tuple[str, ...]

    async def calls(
        self, ctx: SubtaskContext, progress: Orchestration
    ) -> list[Call]:
        if not progress.state.tasks:
            fan_out = {
                "agent": "counter",
                "task": "Count the words of your text.",
                "inputs_list": [{"text": t} for t in self.texts],
            }
            return [("assign_tasks", fan_out), ("wait", {"ids": "all"})]
        counts = []
        for key in progress.state.tasks:
            result = await progress.result_of(key)
            if result is not None and isinstance(result.output, dict):
                counts.append(result.output)
        return [("finish", {"answer": counts_markdown(counts)})]


class WordCountPipeline(Pipeline[WordCountConfig, PipelineFiles]):
    """Word counts as a pipeline."""

    name = "wordcount"
    Settings = WordCountSettings

    def configure(self, settings: WordCountSettings, **given: Any) -> WordCountConfig:
        return WordCountConfig(**{**settings.model_dump(exclude={"kind"}), **given})

    def load(self, config: WordCountConfig, executor: Executor) -> RunResources:
        return RunResources()  # the texts are in the plan: nothing to load

    def install(
        self,
        swarm: Swarm,
        resources: RunResources,
        executor: Executor,
        *,
        planner: str = "planner",
        config: WordCountConfig | None = None,
    ) -> dict[str, str]:
        install(swarm, [counter_role()], resources.tools, executor=executor)
        return {"counter": "counts the words of a text"}

    def plan(self, config: WordCountConfig, resources: RunResources) -> Plan:
        return Plan(
            goal=f"{GOAL_PREFIX} {'; '.join(config.texts)}",
            subtasks=[
                Subtask(id=f"count:{i}", role="counter", inputs={"text": text})
                for i, text in enumerate(config.texts)
            ],
        )

    def write_outputs(
        self,
        resources: RunResources,
        result: RunResult,
        out: Path,
        *,
        config: WordCountConfig | None = None,
    ) -> PipelineFiles:
        if config is None:  # under the orchestrator: its answer is the table
            return PipelineFiles(paths={})
        counts = [result.outputs[f"count:{i}"] for i in range(len(config.texts))
                  if result.outputs.get(f"count:{i}") is not None]  # fmt: skip
        out.mkdir(parents=True, exist_ok=True)
        path = out / "counts.md"
        path.write_text(counts_markdown(counts), encoding="utf-8")
        return PipelineFiles(paths={"counts.md": path})

    def offline_rules(self, goal: str, resources: RunResources) -> WordCountRules | None:
        if not goal.startswith(GOAL_PREFIX):
            return None
        texts = tuple(t.strip() for t in goal[len(GOAL_PREFIX) :].split(";") if t.strip())
        return WordCountRules(texts) if texts else None


WORDCOUNT = WordCountPipeline()


def main(argv: Sequence[str] | None = None) -> int:
    from kimmy_swarm.agents.orchestrator import SolveConfig, run_solve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("texts", nargs="*", default=["a swarm of agents", "one more text here"])
    parser.add_argument("--out", type=Path, default=Path("wordcount-out"))
    parser.add_argument("--runs-dir", type=Path, default=None)
    args = parser.parse_args(argv)

    register_pipeline(WORDCOUNT)
    config = WordCountConfig(tuple(args.texts), out=args.out / "alone", runs_dir=args.runs_dir)
    run = run_pipeline(WORDCOUNT, config)
    print(f"run_pipeline: run {run.run_id} ({run.result.status.value}) → {run.files.paths}")
    goal = f"{GOAL_PREFIX} {'; '.join(args.texts)}"
    solved = run_solve(SolveConfig(goal=goal, out=args.out / "swarm", runs_dir=args.runs_dir))
    print(f"run_solve: {solved.subagents} sub-agents planned offline by the wordcount rules")
    print(solved.answer)
    return 0 if run.result.status.value == solved.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
