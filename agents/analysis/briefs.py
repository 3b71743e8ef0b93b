"""The batch analysis's briefs: what each role's model is given for one subtask, and the
answer schema made for that subtask (`agents.brief`).

- planner: the datasets loaded and the questions; the plan's tasks (one per dataset and
  question, numbered from 1) are fixed by them and pinned, the model states the goal.
- data analyst: the numbers its tools give for the dataset and question (the profile, the
  model the target calls for with its coefficients and diagnostics, the distributions, the
  correlations, grouped comparisons) — computed by the tools, as every number must be; the
  model writes the summary that answers the question and the reading of each part. Its
  `dataset` and `question` are pinned; the numbers, figures and fit are the tools' (filled).
- fact-checker: each finding with what `verify_analysis` recomputed from the raw data; one
  verdict per finding, in order (the counts are their tally).
- frontend engineer: the analyses; the model writes the page's title, intro and order, and
  the page is rendered from them (`render_report`).
- synthesizer: each analysis's answer, verified numbers and flagged findings; the model
  writes report.md.

Every answer still goes through the role's checks (`agents.analysis.roles`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.digest import AnalysisDigest
from kimmy_swarm.agents.analysis.procedures import analyze_dataset, plan_analyses
from kimmy_swarm.agents.analysis.report_text import fmt
from kimmy_swarm.agents.analysis.schemas import (
    AnalysisPlan,
    DatasetAnalysis,
    FindingChecks,
    ReportPage,
    ReportText,
)
from kimmy_swarm.agents.brief import (
    SubtaskBrief,
    answer_schema,
    named_texts,
    node,
    one_each,
    pin,
    string_schema,
)
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.swarm.errors import UserError

if TYPE_CHECKING:
    from kimmy_swarm.agents.roles import AttemptView

#: Per-column statistics shown on one line each.
_COLUMN_STATS = ("mean", "median", "std", "min", "max", "skew", "missing", "outliers")


def plan_brief(run: AttemptView) -> SubtaskBrief:
    """The loaded datasets and the questions; the tasks pinned."""
    fixed = plan_analyses(run)  # its one tool call (list_datasets) is this sub-agent's step
    lines = ["The datasets loaded (name: rows x columns, target):"]
    lines += [
        f"- {d.name}: {d.rows} x {d.columns}, target {d.target or 'none'}" for d in fixed.datasets
    ]
    lines += [f"Not loaded: {p}" for p in fixed.problems]
    lines.append("The tasks, one per (dataset, question), are fixed; state the plan's goal.")
    schema = answer_schema(AnalysisPlan, keep=("goal", "tasks"))
    node(schema, "goal").update(string_schema())
    one_each(
        schema,
        "tasks",
        [
            {
                "type": "object",
                "properties": {
                    "n": {"const": t.n},
                    "dataset": {"const": t.dataset},
                    "question": {"const": t.question},
                },
                "required": ["n", "dataset", "question"],
                "additionalProperties": False,
            }
            for t in fixed.tasks
        ],
    )
    filled = {
        "datasets": [d.model_dump() for d in fixed.datasets],
        "problems": list(fixed.problems),
    }
    return SubtaskBrief(text="\n".join(lines), schema=schema, filled=filled)


def _finding_text(f: NumericFinding) -> str:
    what = f"{f.statistic}({', '.join(f.columns)})"
    if f.group is not None:
        what += f"[{f.note or f.group}]"
    if f.level:
        what += f"[class {f.level}]"
    return f"{what} = {fmt(f.value)}"


def _numbers(done: DatasetAnalysis) -> list[str]:
    """The analysis's numbers, a part a line: per column, the model, correlations, groups."""
    by_column: dict[str, dict[str, float]] = {}
    model: list[str] = []
    other: list[str] = []
    for f in done.findings:
        if f.statistic in _COLUMN_STATS and len(f.columns) == 1:
            by_column.setdefault(f.columns[0], {})[f.statistic] = f.value
        elif f.statistic == "corr":
            other.append(f"{f.method} r({f.columns[0]}, {f.columns[1]}) = {fmt(f.value)}")
        elif f.predictors is not None or f.statistic in ("r2", "adj_r2", "nobs", "pseudo_r2"):
            model.append(_finding_text(f))
        else:
            other.append(_finding_text(f))
    lines = [f"{done.rows} rows, {done.columns} columns: {', '.join(done.column_names[:30])}."]
    for col, stats in by_column.items():
        shown = ", ".join(f"{k} {fmt(v)}" for k, v in stats.items())
        lines.append(f"- {col}: {shown}")
    if done.model is not None:
        lines.append(
            f"Model: {done.model} of {done.target} on {', '.join(done.predictors) or 'nothing'}"
            f" ({done.model_reason})"
        )
        lines += [f"- {m}" for m in model]
    lines += [f"- {o}" for o in other]
    lines += [f"Note: {n}" for n in done.notes]
    lines += [f"Problem: {p}" for p in done.problems]
    if not done.answered:
        lines.append(f"The question cannot be answered from this dataset: {done.reason}")
    return lines


def analyze_brief(run: AttemptView) -> SubtaskBrief:
    """The tools' numbers for the dataset and question; the model writes the reading."""
    done = analyze_dataset(run)  # the tools a statistician calls, recorded as its steps
    dataset, question = str(run.inputs["dataset"]), str(run.inputs["question"])
    lines = [
        f"Dataset {dataset}; the question: {question!r}.",
        "What the tools computed (every number you quote must be one of these):",
        *_numbers(done),
        "Write `summary`: two or three sentences that answer the question with these numbers "
        "(which predictors matter, in which direction, how strongly); then one to three "
        "sentences for each part of `interpretation`.",
    ]
    parts = list(done.interpretation) or ["profile"]
    schema = answer_schema(
        DatasetAnalysis, keep=("dataset", "question", "summary", "interpretation")
    )
    pin(schema, "dataset", dataset)
    pin(schema, "question", question)
    node(schema, "summary").update(string_schema())
    named_texts(schema, "interpretation", parts)
    written = {"dataset", "question", "summary", "interpretation", "made_by", "fallback_error"}
    filled = {k: v for k, v in done.model_dump(mode="json").items() if k not in written}
    return SubtaskBrief(text="\n".join(lines), schema=schema, filled=filled)


def check_brief(run: AttemptView) -> SubtaskBrief:
    """Each finding with its recomputation; one verdict each, and the counts."""
    analysis_id = str(run.inputs["analysis"])
    found = run.call("analysis_findings", analysis=analysis_id)
    redone = run.call("verify_analysis", analysis=analysis_id)
    lines = [
        f"The findings of {analysis_id} ({found['dataset']}) as reported, each with what "
        "verify_analysis recomputed from the raw data and its verdict:"
    ]
    for i, v in enumerate(redone, 1):
        f = NumericFinding.model_validate(v["finding"])
        again = fmt(v["recomputed"]) if v["recomputed"] is not None else "not recomputed"
        lines.append(f"{i}. {_finding_text(f)}; recomputed {again}: {v['verdict']}")
    lines.append("Report each verdict, in order.")
    schema = answer_schema(FindingChecks, keep=("analysis", "verdicts"))
    pin(schema, "analysis", analysis_id)
    # a verdict is its label alone (each finding is the one in the brief's line)
    label = {"type": "string", "enum": ["verified", "mismatch", "unverifiable"]}
    one_each(schema, "verdicts", [label] * len(redone))

    def verdicts(answer: dict[str, Any]) -> dict[str, Any]:
        """Each label with its finding and recomputation; the counts are the labels' tally."""
        said = [str(v) for v in answer["verdicts"]]
        full = [{**r, "verdict": v} for r, v in zip(redone, said, strict=True)]
        return {
            "verdicts": full,
            "verified": said.count("verified"),
            "mismatched": said.count("mismatch"),
            "unverifiable": said.count("unverifiable"),
        }

    return SubtaskBrief(
        text="\n".join(lines), schema=schema, filled={"dataset": found["dataset"]}, derived=verdicts
    )


def _digest(run: AttemptView) -> AnalysisDigest:
    return AnalysisDigest.model_validate(run.call("collect_results", detail=True))


def _analyses_text(digest: AnalysisDigest) -> list[str]:
    lines: list[str] = []
    for e in digest.analyses:
        lines.append(f"{e.id}: {e.dataset}, question {e.question!r} ({e.status})")
        lines.append(f"  answer: {e.summary or e.reason or '(none)'}")
        c = e.counts
        lines.append(
            f"  numbers: {c.verified} verified, {c.mismatch} mismatch, {c.unverifiable} "
            "unverifiable"
        )
        for r in e.findings:
            if r.verdict == "mismatch":
                lines.append(
                    f"  MISMATCH {r.statistic}({', '.join(r.columns)}): reported {fmt(r.value)}, "
                    f"recomputed {fmt(r.recomputed)}"
                )
        lines += [f"  problem: {p}" for p in e.problems]
    return lines


def page_brief(run: AttemptView) -> SubtaskBrief:
    """The analyses; the page is rendered from the model's title, intro and order."""
    digest = _digest(run)
    ids = [e.id for e in digest.analyses]
    lines = [
        "The analyses of the run:",
        *_analyses_text(digest),
        "Write the report page's title and intro, and order the analyses (by id) as a reader "
        "should meet them.",
    ]
    schema = answer_schema(ReportPage, keep=("title", "intro", "order"))
    node(schema, "title").update(string_schema(120))
    node(schema, "intro").update(string_schema())
    one_each(schema, "order", [{"type": "string", "enum": ids}] * len(ids))

    def rendered(answer: dict[str, Any]) -> dict[str, Any]:
        try:
            page = run.call(
                "render_report", title=answer["title"], intro=answer["intro"], order=answer["order"]
            )
        except UserError as exc:  # the answer is left without a page: the check says so
            raise ValueError(str(exc)) from exc
        return {"order": page["order"], "path": page["path"]}

    return SubtaskBrief(text="\n".join(lines), schema=schema, derived=rendered)


def summary_brief(run: AttemptView) -> SubtaskBrief:
    """The analyses' answers, counts and mismatches; the model writes report.md."""
    digest = _digest(run)
    lines = [
        f"The run analysed {', '.join(digest.datasets)}:",
        *_analyses_text(digest),
        *(f"Not loaded: {name}: {why}" for name, why in digest.not_loaded.items()),
        "Write report.md in Markdown: a table across datasets (dataset, question, answer, "
        "verified numbers), then each analysis's answer; name every dataset, and put every "
        "mismatched number on a line that says MISMATCH with its column.",
    ]
    schema = answer_schema(ReportText, keep=("markdown",))
    node(schema, "markdown").update(string_schema())
    return SubtaskBrief(text="\n".join(lines), schema=schema)


__all__ = ["analyze_brief", "check_brief", "page_brief", "plan_brief", "summary_brief"]
