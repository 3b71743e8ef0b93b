"""Offline procedures of the planner, the analyst and the fact-checker.

Each is a deterministic algorithm over the run's tools (`run.call`), run in a worker thread;
the model policy of the same role calls the same tools. The report roles' procedures are
in `agents.analysis.report_roles`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.answers import LeftOut, answer_text, left_out, left_out_text
from kimmy_swarm.agents.analysis.comparisons import compare_asked
from kimmy_swarm.agents.analysis.interpret import (
    correlations_text,
    distributions_text,
    profile_text,
)
from kimmy_swarm.agents.analysis.model_step import fit_summary, model_step
from kimmy_swarm.agents.analysis.schemas import (
    GENERAL_QUESTION,
    AnalysisPlan,
    AnalysisTask,
    DatasetAnalysis,
    DatasetInfo,
    FigureOut,
    FindingChecks,
)
from kimmy_swarm.agents.tools.finding import NumericFinding, Verdict

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt
    from kimmy_swarm.swarm.context import SubtaskContext

#: Columns described (distribution statistics, outliers) per analysis at most.
MAX_DESCRIBED = 12
#: Columns whose missing-value count is reported per analysis at most.
MAX_MISSING = 40
TOP_PAIRS = 5
_DESCRIBED_STATS = ("count", "mean", "median", "std", "min", "max", "skew")


def is_general(question: str) -> bool:
    """Whether a question is the default one (profile and model, no column named)."""
    return " ".join(question.lower().split()) == GENERAL_QUESTION


# --- orchestrator ------------------------------------------------------------------------


def plan_analyses(run: Attempt) -> AnalysisPlan:
    """One task per (loaded dataset, question), in the order given; load errors as problems."""
    specs = [str(s) for s in run.inputs.get("datasets") or []]
    questions = [str(q) for q in run.inputs.get("questions") or []] or [GENERAL_QUESTION]
    listing = run.call("list_datasets")
    loaded = {d["name"]: DatasetInfo.model_validate(d) for d in listing["datasets"]}
    tasks: list[AnalysisTask] = []
    for spec in dict.fromkeys(specs):
        if spec in loaded:
            tasks.extend(
                AnalysisTask(n=len(tasks) + 1, dataset=spec, question=q) for q in questions
            )
    problems = [
        f"dataset {spec!r} was not loaded: {msg}" for spec, msg in listing["errors"].items()
    ]
    return AnalysisPlan(
        goal=f"analyse {len(loaded)} dataset(s) x {len(questions)} question(s)",
        tasks=tasks,
        datasets=[loaded[s] for s in dict.fromkeys(specs) if s in loaded],
        problems=problems,
    )


# --- data analyst ------------------------------------------------------------------------


@dataclass
class _Draft:
    """An analysis being assembled: findings, figures and problems so far."""

    dataset: str
    question: str
    findings: list[NumericFinding] = field(default_factory=list)
    figures: list[FigureOut] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    interpretation: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: What `question_columns` said of the question (None: the general question).
    asked: dict[str, Any] | None = None

    def add(self, statistic: str, columns: list[str], value: float | None, **extra: Any) -> None:
        if value is None or not math.isfinite(value):  # undefined (skew of two values)
            return
        self.findings.append(
            NumericFinding(statistic=statistic, columns=columns, value=float(value), **extra)
        )


def _target_for(
    run: Attempt, d: _Draft, prof: dict[str, Any], missing: dict[str, int]
) -> tuple[str | None, list[str]]:
    """The target and the predictors the question asks for (None target: unanswerable).

    For the general question: the dataset's designated target, else the last numeric
    column with at least three values (an empty last column cannot be modelled).
    """
    numeric = prof["numeric_columns"]
    if is_general(d.question):
        designated = prof.get("target")
        if designated in numeric:
            return designated, []
        filled = [c for c in numeric if prof["rows"] - missing.get(c, 0) >= 3]
        return (filled or numeric)[-1], []
    asked = run.call("question_columns", dataset=d.dataset, question=d.question)
    d.asked = asked
    target = asked["target"]
    if target is None:
        return None, []
    return target, [c for c in asked["named_numeric"] if c != target]


def _unanswered_reason(d: _Draft, prof: dict[str, Any]) -> str:
    cols = ", ".join(prof["column_names"][:30])
    if (d.asked or {}).get("outcome"):
        return (
            f"the question asks about the outcome in general terms, but {d.dataset} designates "
            f"no numeric target column (columns: {cols}); name the column to model; reported "
            "the profile of the data only"
        )
    elsewhere = (d.asked or {}).get("applies_to") or []
    if elsewhere:
        return (
            f"the question does not apply to {d.dataset}: it names no numeric column of it "
            f"(columns: {cols}) but does of {', '.join(elsewhere)}; reported the profile only"
        )
    return (
        f"the question names no numeric column of {d.dataset} (columns: {cols}); "
        "reported the profile of the data only"
    )


def _fit(run: Attempt, d: _Draft, target: str, predictors: list[str]) -> dict[str, Any] | None:
    """The model the target calls for, its diagnostics and their reading (`model_step`)."""
    step = model_step(run, d.dataset, target, predictors)
    d.findings.extend(step.findings)
    d.problems.extend(step.problems)
    d.notes.extend(step.notes)
    d.interpretation.update(step.interpretation)
    return step.fit


def _describe(
    run: Attempt, d: _Draft, columns: list[str], missing: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """Distribution statistics, missing counts and outliers, and their reading."""
    described = run.call("describe_columns", dataset=d.dataset, columns=columns)
    for col in columns:
        for stat in _DESCRIBED_STATS:
            d.add(stat, [col], described[col][stat])
        meanings = described[col].get("meanings") or {}  # a categorical column's levels
        for level, n in (described[col].get("levels") or {}).items():
            d.add("level_count", [col], n, level=level, note=meanings.get(level, ""))
        zeros, count = described[col].get("zeros"), described[col].get("count")
        if zeros is not None and count:  # the share of zeros the reading states
            d.add("level_share", [col], zeros / count, level="0")
    with_missing = [c for c, n in missing.items() if n > 0 and c not in columns]
    for col in [*columns, *with_missing][:MAX_MISSING]:
        d.add("missing", [col], missing[col])
    outliers = run.call("count_outliers", dataset=d.dataset, columns=columns)
    for col, n in outliers.items():
        d.add("outliers", [col], n)
    d.interpretation["distributions"] = distributions_text(described, outliers)
    return described


def _correlate(run: Attempt, d: _Draft, target: str | None) -> list[dict[str, Any]]:
    pairs = run.call("top_correlations", dataset=d.dataset, top=TOP_PAIRS)
    for p in pairs:
        d.add("corr", [p["a"], p["b"]], p["r"], method=p["method"])
    d.interpretation["correlations"] = correlations_text(pairs, target=target)
    return pairs


def _left_out(
    run: Attempt,
    d: _Draft,
    prof: dict[str, Any],
    fit: dict[str, Any],
    described: dict[str, dict[str, Any]],
    named: list[str],
) -> list[LeftOut]:
    """The columns the model left out and why, each said in a note (the near-duplicates
    have theirs from the model step)."""
    used = {fit["target"], *fit["predictors"]}
    unseen = [c for c in prof["numeric_columns"] if c not in used and c not in described]
    if unseen:  # a constant or empty column is left out for that, not for the count
        described = {**described, **run.call("describe_columns", dataset=d.dataset,
                                             columns=unseen)}  # fmt: skip
    out = left_out(prof, fit, described, named=named)
    others = [x for x in out if x.r is None]
    if others:
        d.notes.append(f"left out of the model of {fit['target']}: {left_out_text(others)}")
    return out


def _figure(run: Attempt, d: _Draft, kind: str, columns: list[str]) -> None:
    made = run.call("make_figure", dataset=d.dataset, kind=kind, columns=columns)
    d.figures.append(FigureOut.model_validate(made))


def _no_numeric(d: _Draft, prof: dict[str, Any], missing: dict[str, int]) -> DatasetAnalysis:
    for col in list(missing)[:MAX_MISSING]:
        d.add("missing", [col], missing[col])
    cols = ", ".join(prof["column_names"][:30])
    reason = (
        f"no numeric columns (columns: {cols}): reported missing values per column only; "
        "distributions, correlations and models need numeric data"
    )
    return _result(d, prof, answered=False, reason=reason, summary=f"{prof['rows']} rows; {reason}")


def _compare(run: Attempt, d: _Draft) -> bool:
    """The grouped comparison the question asks for, if any (True: it was made)."""
    step = compare_asked(run, d.dataset, d.asked) if d.asked is not None else None
    if step is None:
        return False
    d.findings.extend(step.findings)
    d.problems.extend(step.problems)
    d.interpretation.update(step.interpretation)
    return bool(step.compared)


def _result(d: _Draft, prof: dict[str, Any], **fields: Any) -> DatasetAnalysis:
    # a question about the run's other datasets is no failure of this analysis
    unanswered = not fields.get("answered", True) and fields.get("applicable", True)
    partial = bool(d.problems) or unanswered
    # a number two steps report (the target's share of zeros) is one finding, checked once
    keys = [f.model_dump_json(exclude={"note"}) for f in d.findings]
    d.findings = [f for i, f in enumerate(d.findings) if keys[i] not in keys[:i]]
    return DatasetAnalysis(
        dataset=d.dataset,
        question=d.question,
        status="partial" if partial else "complete",
        rows=prof["rows"],
        columns=prof["columns"],
        column_names=prof["column_names"],
        findings=d.findings,
        figures=d.figures,
        problems=d.problems,
        notes=d.notes,
        interpretation={**d.interpretation, **fields.pop("interpretation", {})},
        **fields,
    )


def _summary(
    d: _Draft,
    fit: dict[str, Any] | None,
    pairs: list[dict[str, Any]],
    prof: dict[str, Any],
    dropped: list[LeftOut],
) -> str:
    """The answer first where a model gives one: its predictors ranked with their effect
    sizes, the model and its fit, the columns it left out and why; then how the question
    was read (where no column name said it) and the shape. Without a model: how the
    question was read, the shape and the strongest correlation."""
    readings = (d.asked or {}).get("readings") or []
    shape = [*readings, f"{prof['rows']} rows, {prof['columns']} columns"]
    if fit is None:
        if pairs:
            top = pairs[0]
            shape.append(f"strongest correlation {top['a']} ~ {top['b']}: r = {top['r']:.3f}")
        return "; ".join(shape) + "."
    model = fit_summary(fit)
    if dropped:
        model += f"; left out of the model: {left_out_text(dropped)}"
    tail = "; ".join(shape)
    return f"{answer_text(fit)}. {model}. {tail[0].upper()}{tail[1:]}."


def analyze_dataset(run: Attempt) -> DatasetAnalysis:
    """Profile, missing values, distributions, correlations, the model the target calls for
    (`agents.tools.models`) with its diagnostics, outliers, figures, and a reading of each."""
    d = _Draft(str(run.inputs["dataset"]), str(run.inputs["question"]))
    prof = run.call("dataset_profile", dataset=d.dataset)
    missing = run.call("missing_values", dataset=d.dataset)
    numeric: list[str] = prof["numeric_columns"]
    d.interpretation["profile"] = profile_text(prof, missing)
    if not numeric:
        return _no_numeric(d, prof, missing)
    target, asked = _target_for(run, d, prof, missing)
    fit = _fit(run, d, target, asked) if target is not None else None
    predictors: list[str] = fit["predictors"] if fit is not None else []
    leading = [target, *predictors] if target is not None else []
    columns = list(dict.fromkeys([*leading, *numeric]))[:MAX_DESCRIBED]
    described = _describe(run, d, columns, missing)
    pairs = _correlate(run, d, target)
    dropped = _left_out(run, d, prof, fit, described, asked) if fit is not None else []
    if target is not None:
        _figure(run, d, "histogram", [target])
    if predictors:
        _figure(run, d, "scatter", [predictors[0], target])
    if len(numeric) >= 2:
        _figure(run, d, "heatmap", [])
    fields: dict[str, Any] = {"target": target, "predictors": predictors}
    if fit is not None:
        fields.update(model=fit["family"], model_reason=fit["reason"])
    compared = _compare(run, d)
    if target is None:
        applicable = not (d.asked or {}).get("applies_to")
        fields.update(answered=False, applicable=applicable, reason=_unanswered_reason(d, prof))
    elif d.asked is not None and d.asked.get("group") is not None and not compared:
        fields.update(answered=False, reason="; ".join(d.problems) or "no grouped comparison")
    elif d.problems:
        fields["reason"] = "; ".join(d.problems)
    return _result(d, prof, summary=_summary(d, fit, pairs, prof, dropped), **fields)


# --- fact-checker ------------------------------------------------------------------------


def failed_dependency(ctx: SubtaskContext, dep: str) -> str:
    """What went wrong with a failed upstream subtask, for the report."""
    res = ctx.upstream_results.get(dep)
    error = res.error if res is not None else None
    what = f"{error.type}: {error.message}" if error is not None else "no output"
    return f"{dep} failed ({what})"


def check_findings(run: Attempt) -> FindingChecks:
    """Recompute every finding of the upstream analysis from the raw data (`verify_finding`)."""
    analysis_id = str(run.inputs["analysis"])
    raw = run.upstream.get(analysis_id)
    if raw is None:
        return FindingChecks(
            analysis=analysis_id, problems=[failed_dependency(run.ctx, analysis_id)]
        )
    analysis = DatasetAnalysis.model_validate(raw)
    verdicts = [
        Verdict.model_validate(run.call("verify_finding", dataset=analysis.dataset, finding=f))
        for f in analysis.findings
    ]
    return tally(analysis_id, analysis.dataset, verdicts)


def tally(analysis_id: str, dataset: str, verdicts: list[Verdict]) -> FindingChecks:
    """A `FindingChecks` with its counts taken from the verdicts."""
    labels = [v.verdict for v in verdicts]
    return FindingChecks(
        analysis=analysis_id,
        dataset=dataset,
        verdicts=verdicts,
        verified=labels.count("verified"),
        mismatched=labels.count("mismatch"),
        unverifiable=labels.count("unverifiable"),
    )


__all__ = [
    "MAX_DESCRIBED",
    "MAX_MISSING",
    "TOP_PAIRS",
    "analyze_dataset",
    "check_findings",
    "failed_dependency",
    "is_general",
    "plan_analyses",
    "tally",
]
