"""Graders: r_result, the task's own score of a trajectory, in [0, 1].

Only what holds for any run lives here (rewards never imports `agents`):

- `Grader`: the protocol — a `name` and a call that scores a trajectory.
- `PipelineGrader`: a grader of one pipeline's runs — it says which runs are its own
  (`applies`) and reports its sub-scores (`parts`). The pipelines' graders live beside their
  pipelines and read the outputs through the pipelines' own schemas and subtask ids
  (`agents.review.grader`, `agents.analysis.grader`; `agents.graders` lists them).
- `grader_for(traj, candidates)`: the first candidate that applies, else `CompletionGrader`.
- `CompletionGrader`: any run: the share of its final (sink) sub-agents that finished
  with an output.
- `ModelJudge`: a model grades the final output against a rubric.
- `outputs_as`: a run's outputs read as a pydantic model, for pipeline graders.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kimmy_swarm.swarm.errors import ModelBehaviourError, UserError, validation_problems

if TYPE_CHECKING:
    from kimmy_swarm.rewards.trajectory import Trajectory
    from kimmy_swarm.swarm.llm.protocol import ChatModel

M = TypeVar("M", bound=BaseModel)


class GraderError(UserError):
    """A grader scored outside [0, 1], or was used the wrong way."""


@runtime_checkable
class Grader(Protocol):
    """Scores a trajectory's result in [0, 1]; `name` is shown in reward breakdowns."""

    name: str

    def __call__(self, traj: Trajectory) -> float: ...


@runtime_checkable
class PipelineGrader(Grader, Protocol):
    """A grader of one pipeline's runs, chosen for a run by `grader_for`.

    `applies` must be cheap and must not raise: it tells the pipeline's runs from any other
    (by the pipeline's subtask ids and output schemas). `parts` are the sub-scores the
    score is made of (shown by `kimmy rewards`), each a float.
    """

    def applies(self, traj: Trajectory) -> bool: ...

    def parts(self, traj: Trajectory) -> dict[str, float]: ...


def outputs_as(traj: Trajectory, model: type[M], ids: Callable[[str], bool]) -> dict[str, M]:
    """The done outputs whose subtask id `ids` accepts and that validate as `model`, by id.

    An output that does not validate is left out, not an error: it is not this pipeline's
    (or not a finished one), so a pipeline grader counts only what its pipeline accepted.
    An output the offline procedure made after the model failed (`Episode.fell_back`) is
    left out too: a grader scores what the model did, not its stand-in.
    """
    found: dict[str, M] = {}
    for k, v in traj.outputs.items():
        episode = traj.episodes.get(k)
        if not ids(k) or (episode is not None and episode.fell_back):
            continue
        try:
            found[k] = model.model_validate(v)
        except ValidationError:
            continue
    return found


class CompletionGrader:
    """Share of the run's sink sub-agents (nothing depends on them) done with an output."""

    name = "completion"

    def __call__(self, traj: Trajectory) -> float:
        sinks = traj.sinks()
        if not sinks:
            return 0.0
        return sum(traj.episodes[k].output_valid for k in sinks) / len(sinks)


def grader_for(traj: Trajectory, candidates: Iterable[PipelineGrader] = ()) -> Grader:
    """The first of `candidates` that applies to the run, else the completion of its sinks.

    `rewards` knows no pipeline: pass the pipelines' graders (`agents.graders.grader_for`
    does), or get `CompletionGrader`.
    """
    for grader in candidates:
        if grader.applies(traj):
            return grader
    return CompletionGrader()


#: The most tokens of a judge's answer (a score and one or two sentences).
JUDGE_MAX_TOKENS = 512


class Judgement(BaseModel):
    """A judge's verdict: a score from 0 to 10 and why."""

    model_config = ConfigDict(extra="ignore")

    score: float = Field(ge=0, le=10, allow_inf_nan=False)
    reason: str


_SYSTEM = (
    "You grade the final output of a multi-agent run against a goal and a rubric. Be strict "
    'and fair. Reply with only one JSON object: {"score": <number from 0 to 10>, '
    '"reason": "<one or two sentences>"}.'
)


class ModelJudge:
    """A model grades the run's final output (its sink outputs) against a rubric: score/10.

    Args:
        model: the chat model that judges (the caller owns and closes it).
        rubric: what a good output does.
        name: shown in breakdowns (default `judge:<model name>`).
        max_chars: the final output is cut to this many characters in the prompt.
        temperature: passed to the model.
    """

    def __init__(
        self,
        model: ChatModel,
        rubric: str,
        *,
        name: str | None = None,
        max_chars: int = 24_000,
        temperature: float | None = 0.0,
    ) -> None:
        if not rubric.strip():
            raise GraderError("the judge's rubric is empty; say what a good output does")
        if max_chars < 100:
            raise GraderError(f"max_chars must be >= 100, got {max_chars}")
        self.model = model
        self.rubric = rubric
        self.name = name or f"judge:{model.name}"
        self.max_chars = max_chars
        self.temperature = temperature

    def messages(self, traj: Trajectory) -> list[dict[str, str]]:
        """The conversation the judge is asked: goal, rubric, the final outputs by id."""
        final = {k: traj.outputs[k] for k in traj.sinks() if k in traj.outputs}
        text = json.dumps(final, indent=1, ensure_ascii=False, default=str)
        if len(text) > self.max_chars:
            text = text[: self.max_chars] + f"\n… (cut: {len(text)} characters in all)"
        user = (
            f"Goal: {traj.goal or '(none given)'}\n\nRubric:\n{self.rubric}\n\n"
            f"Final output (the outputs of the run's last sub-agents, by id):\n{text}"
        )
        return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]

    async def ajudge(self, traj: Trajectory) -> Judgement:
        """Ask the model; one repair turn for an invalid answer.

        A run with no final output scores 0 without asking.

        Raises:
            ModelBehaviourError: the answer is still invalid after the repair turn.
            ModelError: the model call failed.
        """
        if not any(k in traj.outputs for k in traj.sinks()):
            return Judgement(score=0.0, reason="the run produced no final output")
        messages: list[dict[str, Any]] = self.messages(traj)
        options: dict[str, Any] = {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "Judgement", "schema": Judgement.model_json_schema()},
            },
            "max_tokens": JUDGE_MAX_TOKENS,
        }
        if self.temperature is not None:
            options["temperature"] = self.temperature
        for turn in (1, 2):
            response = await self.model.chat(messages, **options)
            try:
                return _parse(response.content)
            except (ValueError, ValidationError) as exc:  # JSONDecodeError is a ValueError
                problem = validation_problems(exc, root="(answer)")
                if turn == 2:
                    raise ModelBehaviourError(
                        f"judge {self.name!r}: the answer is still invalid after the repair "
                        f"turn: {problem}"
                    ) from exc
                messages += [
                    {"role": "assistant", "content": response.content or ""},
                    {
                        "role": "user",
                        "content": f"Your answer is invalid: {problem}\nReply again with ONLY "
                        'one JSON object: {"score": <number from 0 to 10>, "reason": "..."}.',
                    },
                ]
        raise AssertionError("unreachable")  # pragma: no cover

    async def ascore(self, traj: Trajectory) -> float:
        """The judge's score / 10, in [0, 1] (see `ajudge`)."""
        return (await self.ajudge(traj)).score / 10.0

    def __call__(self, traj: Trajectory) -> float:
        """`ascore` for synchronous callers (not from inside a running event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(traj))
        raise GraderError(
            f"judge {self.name!r} was called synchronously inside a running event loop; "
            "use `await judge.ascore(traj)` there"
        )


def _parse(content: str | None) -> Judgement:
    text = (content or "").strip()
    if text.startswith("```"):  # a fenced block: drop the fence lines
        text = text.strip("`").removeprefix("json").strip()
    if not text:
        raise ValueError("the answer is empty")
    return Judgement.model_validate(json.loads(text))


__all__ = [
    "CompletionGrader",
    "Grader",
    "GraderError",
    "Judgement",
    "ModelJudge",
    "PipelineGrader",
    "grader_for",
    "outputs_as",
]
