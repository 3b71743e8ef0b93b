"""A scripted "model" for the batch analysis with briefs (`agents.analysis.briefs`), served by
`tests.support.openai_server`.

It answers each request the way a model does that reads its brief and writes under the
schema it was sent (`response_format`, as a constrained decoder would): the planner states a
goal (its tasks are pinned), the analyst writes a summary and one reading per part the
schema asks for, the fact-checker reports the verdicts listed in its brief, the frontend
engineer orders the analyses last-first, the synthesizer writes report.md naming every
dataset and copying the brief's MISMATCH lines. Thread-safe: it keeps no state.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support.openai_behaviours import Reply, ServerRequest, reply

#: What the analyst writes as the answer to the question (found again in the reports).
SUMMARY = "Model-written answer: the leading predictor matters most."
TITLE = "Model-titled analysis report"
_VERDICT = re.compile(r"^\d+\. .*: (verified|mismatch|unverifiable)$")
_ANALYSIS = re.compile(r"^(analyze:\d+): ([^,]+), question")


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    return body["response_format"]["json_schema"]["schema"]


class BriefedAnalysisModel:
    """A behaviour: `OpenAIServer(default=BriefedAnalysisModel())`."""

    def __call__(self, request: ServerRequest) -> Reply:
        body = request.body
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        role = re.search(r"\(role ([A-Za-z_.-]+)\)", system).group(1)  # type: ignore[union-attr]
        answer = getattr(self, f"_{role}")(user.splitlines(), _schema(body))
        return reply(json.dumps(answer))(request)

    def _planner(self, brief: list[str], schema: dict[str, Any]) -> dict[str, Any]:
        tasks = [
            {k: v["const"] for k, v in item["properties"].items()}
            for item in schema["properties"]["tasks"]["prefixItems"]
        ]
        return {"goal": "answer each question of each dataset", "tasks": tasks}

    def _data_analyst(self, brief: list[str], schema: dict[str, Any]) -> dict[str, Any]:
        props = schema["properties"]
        parts = props["interpretation"]["required"]
        return {
            "dataset": props["dataset"]["const"],
            "question": props["question"]["const"],
            "summary": SUMMARY,
            "interpretation": {p: f"Model reading of the {p}." for p in parts},
        }

    def _fact_checker(self, brief: list[str], schema: dict[str, Any]) -> dict[str, Any]:
        said = [m.group(1) for line in brief if (m := _VERDICT.match(line))]
        return {
            "analysis": schema["properties"]["analysis"]["const"],
            "verdicts": said,
        }

    def _frontend_engineer(self, brief: list[str], schema: dict[str, Any]) -> dict[str, Any]:
        ids = [m.group(1) for line in brief if (m := _ANALYSIS.match(line))]
        return {"title": TITLE, "intro": "Checked numbers, by the model.", "order": ids[::-1]}

    def _synthesizer(self, brief: list[str], schema: dict[str, Any]) -> dict[str, Any]:
        lines = ["# Findings (model-written)", ""]
        for line in brief:
            if m := _ANALYSIS.match(line):
                lines.append(f"## {m.group(2)}")
            elif line.strip().startswith(("answer:", "MISMATCH")):
                lines.append(f"- {line.strip()}")
        return {"markdown": "\n".join(lines)}


__all__ = ["SUMMARY", "TITLE", "BriefedAnalysisModel"]
