"""A scripted "model" for the batch analysis, served by `tests.support.openai_server`.

It reads each chat request like an agent would — the role from the system prompt, the task
inputs from the user message, what its tools returned from the `tool` messages — and
answers: the analyst runs real pandas code with `run_python` and reports the numbers the
code printed; the fact-checker calls `verify_analysis`; the frontend engineer calls
`collect_results` then `render_report`; the synthesizer writes Markdown from
`collect_results`. Two scripted faults: the analysis of `bad_json` first answers invalid
JSON (the repair turn follows), and the analysis of `wrong_mean` reports one mean 10% off.
Thread-safe: it keeps no state between requests.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeAlias

from tests.support.openai_behaviours import Reply, ServerRequest, ToolCallSpec, reply

Body: TypeAlias = dict[str, Any]
#: What a scripted turn gives: the content and the tool calls (either may be None).
Turn: TypeAlias = tuple[str | None, list[ToolCallSpec] | None]

#: The pandas code the analyst runs in the sandbox (prints one JSON object).
ANALYST_CODE = """
import json
import numpy as np
import pandas as pd

df = pd.read_csv("data.csv")
num = df.select_dtypes("number")
y = num.columns[-1]
x = num.drop(columns=[y]).corrwith(num[y]).abs().idxmax()
both = df[[x, y]].dropna()
slope, intercept = np.polyfit(both[x], both[y], 1)
print(json.dumps({
    "y": y, "x": x,
    "means": {c: float(num[c].mean()) for c in num.columns[:3]},
    "missing": {c: int(n) for c, n in df.isna().sum().items()},
    "corr": float(df[x].corr(df[y])),
    "slope": float(slope), "intercept": float(intercept),
}))
"""


def _role(body: dict[str, Any]) -> str:
    system = body["messages"][0]["content"]
    found = re.search(r"\(role ([A-Za-z_.-]+)\)", system)
    return found.group(1) if found else "?"


def _inputs(body: dict[str, Any]) -> dict[str, Any]:
    user = body["messages"][1]["content"]
    found = re.search(r"^Inputs:\n(\{.*\})$", user, flags=re.MULTILINE)
    return json.loads(found.group(1)) if found else {}


def _tool_results(body: dict[str, Any]) -> dict[str, Any]:
    """The latest result of each tool called so far, by tool name (parsed JSON)."""
    names: dict[str, str] = {}
    out: dict[str, Any] = {}
    for m in body["messages"]:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if m.get("role") == "tool":
            out[names[m["tool_call_id"]]] = json.loads(m["content"])
    return out


class AnalysisModel:
    """A behaviour: `OpenAIServer(default=AnalysisModel(bad_json=..., wrong_mean=...))`."""

    def __init__(self, *, bad_json: str, wrong_mean: str) -> None:
        self.bad_json = bad_json
        self.wrong_mean = wrong_mean

    def __call__(self, request: ServerRequest) -> Reply:
        body = request.body
        handler = getattr(self, f"_{_role(body)}")
        content, calls = handler(body, _inputs(body), _tool_results(body))
        return reply(content, tool_calls=calls)(request)

    def _planner(self, body: Body, inputs: Body, tools: Body) -> Turn:
        if "list_datasets" not in tools:
            return None, [("list_datasets", {})]
        listing = tools["list_datasets"]
        loaded = [d["name"] for d in listing["datasets"]]
        questions = inputs["questions"] or ["profile and model the data"]
        pairs = [(d, q) for d in inputs["datasets"] if d in loaded for q in questions]
        plan = {
            "goal": "analyse every dataset",
            "tasks": [{"n": i, "dataset": d, "question": q} for i, (d, q) in enumerate(pairs, 1)],
            "problems": [f"{k}: {v}" for k, v in listing["errors"].items()],
        }
        return json.dumps(plan), None

    def _data_analyst(self, body: Body, inputs: Body, tools: Body) -> Turn:
        dataset = inputs["dataset"]
        if "run_python" not in tools:
            heatmap = {"dataset": dataset, "kind": "heatmap", "columns": []}
            return None, [
                ("run_python", {"dataset": dataset, "code": ANALYST_CODE}),
                ("make_figure", heatmap),
            ]
        repaired = any("Your answer is invalid" in str(m.get("content")) for m in body["messages"])
        if dataset == self.bad_json and not repaired:
            return "Here are my findings: {statistic: mean, oops", None
        printed = json.loads(tools["run_python"]["stdout"])
        return json.dumps(self._analysis(inputs, printed, tools["make_figure"])), None

    def _analysis(
        self, inputs: dict[str, Any], out: dict[str, Any], figure: dict[str, Any]
    ) -> dict[str, Any]:
        x, y = out["x"], out["y"]
        findings = []
        for i, (col, mean) in enumerate(out["means"].items()):
            wrong = inputs["dataset"] == self.wrong_mean and i == 0
            findings.append({"statistic": "mean", "columns": [col],
                             "value": mean * 1.1 if wrong else mean})  # fmt: skip
        findings += [
            {"statistic": "missing", "columns": [c], "value": n} for c, n in out["missing"].items()
        ]
        findings += [
            {"statistic": "corr", "columns": [x, y], "value": out["corr"]},
            {"statistic": "slope", "columns": [y, x], "value": out["slope"]},
            {"statistic": "intercept", "columns": [y], "value": out["intercept"],
             "predictors": [x]},
        ]  # fmt: skip
        return {
            "dataset": inputs["dataset"],
            "question": inputs["question"],
            "target": y,
            "predictors": [x],
            "summary": f"{y} rises by {out['slope']:.3g} per unit of {x}.",
            "findings": findings,
            "figures": [{"figure_id": figure["figure_id"], "kind": "heatmap"}],
        }

    def _fact_checker(self, body: Body, inputs: Body, tools: Body) -> Turn:
        if "verify_analysis" not in tools:
            return None, [("verify_analysis", {"analysis": inputs["analysis"]})]
        verdicts = tools["verify_analysis"]
        labels = [v["verdict"] for v in verdicts]
        answer = {
            "analysis": inputs["analysis"],
            "dataset": inputs["dataset"],
            "verdicts": verdicts,
            "verified": labels.count("verified"),
            "mismatched": labels.count("mismatch"),
            "unverifiable": labels.count("unverifiable"),
        }
        return json.dumps(answer), None

    def _frontend_engineer(self, body: Body, inputs: Body, tools: Body) -> Turn:
        if "collect_results" not in tools:
            return None, [("collect_results", {})]
        if "render_report" not in tools:
            order = [e["id"] for e in tools["collect_results"]["analyses"]][::-1]
            args = {"title": "Model-made analysis report", "intro": "Checked numbers.",
                    "order": order}  # fmt: skip
            return None, [("render_report", args)]
        page = tools["render_report"]
        answer = {"title": "Model-made analysis report", "intro": "Checked numbers.",
                  "order": page["order"], "path": page["path"]}  # fmt: skip
        return json.dumps(answer), None

    def _synthesizer(self, body: Body, inputs: Body, tools: Body) -> Turn:
        if "collect_results" not in tools:
            return None, [("collect_results", {})]
        lines = ["# Findings (model-written)", ""]
        for e in tools["collect_results"]["analyses"]:
            lines += [f"## {e['dataset']}", "", *(f"- {n}" for n in e["verified_numbers"])]
            for r in e["flagged"]:
                if r["verdict"] == "mismatch":
                    lines.append(
                        f"- MISMATCH: {r['statistic']} of {', '.join(r['columns'])} was "
                        f"reported as {r['value']:.6g}, the data gives {r['recomputed']:.6g}"
                    )
            lines.append("")
        return json.dumps({"markdown": "\n".join(lines)}), None


__all__ = ["ANALYST_CODE", "AnalysisModel"]
