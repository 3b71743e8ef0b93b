"""Graders: r_result, the task's own score of a trajectory, in [0, 1].

The pipelines' outputs are read as plain JSON dicts (rewards never imports `agents`):

- `ReviewGrader`: a literature review's fact-checks (`check:*` outputs with `checks`, each
  with a `verdict`) and its plan's themes (the orchestrator's output with `themes`).
- `AnalysisGrader`: a data analysis's recomputed numbers (`check:*` outputs with
  `verdicts`) and answered questions (`analyze:*` outputs with `answered`).
- `CompletionGrader`: any run: the share of its final (sink) sub-agents that finished
  with an output.
- `ModelJudge`: a model grades the final output against a rubric.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarm.errors import ModelBehaviourError, UserError, validation_problems

if TYPE_CHECKING:
    from rewards.trajectory import Trajectory
    from swarm.llm.protocol import ChatModel


class GraderError(UserError):
    """A grader scored outside [0, 1], or was used the wrong way."""


@runtime_checkable
class Grader(Protocol):
    """Scores a trajectory's result in [0, 1]; `name` is shown in reward breakdowns."""

    name: str

    def __call__(self, traj: Trajectory) -> float: ...


def _outputs(traj: Trajectory, prefix: str, key: str) -> dict[str, dict[str, Any]]:
    """Done outputs whose id starts with `prefix` and that hold a list under `key`."""
    return {
        k: v
        for k, v in traj.outputs.items()
        if k.startswith(prefix) and isinstance(v, dict) and isinstance(v.get(key), list)
    }


def _items(out: dict[str, Any], key: str) -> list[dict[str, Any]]:
    return [x for x in out[key] if isinstance(x, dict)]


def _mean(*parts: float) -> float:
    return sum(parts) / len(parts)


class ReviewGrader:
    """Citation precision and theme coverage of a literature review, averaged.

    precision = supported claims / all checked claims (`check:*` outputs);
    coverage = the plan's themes with >= 1 supported claim / the plan's themes.
    The score is 0 when no claim was checked.
    """

    name = "review"

    def parts(self, traj: Trajectory) -> dict[str, float]:
        """precision, coverage, claims and supported, for reports."""
        checks = _outputs(traj, "check:", "checks")
        claims = supported = 0
        covered: set[str] = set()
        for k, out in checks.items():
            theme = str(out.get("theme_id") or k.removeprefix("check:"))
            for c in _items(out, "checks"):
                claims += 1
                if c.get("verdict") == "supported":
                    supported += 1
                    covered.add(theme)
        themes = _plan_themes(traj) or {
            str(o.get("theme_id") or k.removeprefix("check:")) for k, o in checks.items()
        }
        return {
            "precision": supported / claims if claims else 0.0,
            "coverage": len(covered & themes) / len(themes) if themes else 0.0,
            "claims": float(claims),
            "supported": float(supported),
        }

    def __call__(self, traj: Trajectory) -> float:
        p = self.parts(traj)
        return _mean(p["precision"], p["coverage"]) if p["claims"] else 0.0


def _plan_themes(traj: Trajectory) -> set[str]:
    """Theme ids of the plan: the first orchestrator output with a `themes` list."""
    episodes = traj.episodes
    ordered = sorted(
        traj.outputs, key=lambda k: not (k in episodes and episodes[k].is_orchestrator)
    )
    for k in ordered:
        out = traj.outputs[k]
        if isinstance(out, dict) and isinstance(out.get("themes"), list):
            return {str(t["id"]) for t in out["themes"] if isinstance(t, dict) and "id" in t}
    return set()


class AnalysisGrader:
    """Verified numbers and answered questions of a data analysis, averaged.

    verified = numbers the fact-checkers recomputed and confirmed (`check:*` verdicts
    `verified`) / numbers the analysts reported (`analyze:*` findings; a number whose
    check never ran counts as unverified); answered = `analyze:*` sub-agents whose output
    says `answered` / all `analyze:*` sub-agents (failed ones included).
    """

    name = "analysis"

    def parts(self, traj: Trajectory) -> dict[str, float]:
        """verified, answered, numbers and verified_numbers, for reports."""
        analyses = _outputs(traj, "analyze:", "findings")
        reported = sum(len(_items(o, "findings")) for o in analyses.values())
        verdicts = [
            v for o in _outputs(traj, "check:", "verdicts").values() for v in _items(o, "verdicts")
        ]
        confirmed = sum(v.get("verdict") == "verified" for v in verdicts)
        denominator = max(reported, len(verdicts))
        tasks = [k for k in traj.episodes if k.startswith("analyze:")]
        answered = sum(
            isinstance(traj.outputs.get(k), dict) and traj.outputs[k].get("answered") is True
            for k in tasks
        )
        return {
            "verified": confirmed / denominator if denominator else 0.0,
            "answered": answered / len(tasks) if tasks else 0.0,
            "numbers": float(reported),
            "verified_numbers": float(confirmed),
        }

    def __call__(self, traj: Trajectory) -> float:
        p = self.parts(traj)
        return _mean(p["verified"], p["answered"])


class CompletionGrader:
    """Share of the run's sink sub-agents (nothing depends on them) done with an output."""

    name = "completion"

    def __call__(self, traj: Trajectory) -> float:
        sinks = traj.sinks()
        if not sinks:
            return 0.0
        return sum(traj.episodes[k].output_valid for k in sinks) / len(sinks)


def grader_for(traj: Trajectory) -> Grader:
    """The grader for the run's shape: review, analysis, else completion of its sinks."""
    if _outputs(traj, "check:", "checks") or _plan_themes(traj):
        return ReviewGrader()
    if _outputs(traj, "check:", "verdicts") or _outputs(traj, "analyze:", "findings"):
        return AnalysisGrader()
    return CompletionGrader()


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
            }
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
    "AnalysisGrader",
    "CompletionGrader",
    "Grader",
    "GraderError",
    "Judgement",
    "ModelJudge",
    "ReviewGrader",
    "grader_for",
]
