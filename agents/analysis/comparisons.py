"""The analyst's grouped-comparison step (offline): the `compare_groups` tool on each value a
question asks about, every number a `NumericFinding`, and its reading in words.

"Which species has the longest sepals?" on iris becomes per species the count, mean and
median sepal length, the one-way ANOVA, Kruskal–Wallis and eta² (a Welch t-test for two
groups), and the answer: "virginica has the highest mean sepal length (cm): 6.588 vs 5.936
(versicolor) and 5.006 (setosa); one-way ANOVA F = 119.3, p = 1.7e-31."
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis.interpret import ALPHA
from kimmy_swarm.agents.tools.conventions import AnalysisError
from kimmy_swarm.agents.tools.finding import NumericFinding

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt

__all__ = ["MAX_COMPARED", "GroupStep", "compare_asked"]

#: Values compared across the groups per analysis at most.
MAX_COMPARED = 4


@dataclass
class GroupStep:
    """What the step produced: findings, problems, and readings ("groups", "question")."""

    findings: list[NumericFinding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    interpretation: dict[str, str] = field(default_factory=dict)
    compared: list[dict[str, Any]] = field(default_factory=list)

    def add(self, statistic: str, columns: list[str], value: float | None, **extra: Any) -> None:
        if value is not None and math.isfinite(value):
            self.findings.append(
                NumericFinding(statistic=statistic, columns=columns, value=float(value), **extra)
            )


def _record(step: GroupStep, cmp: dict[str, Any]) -> None:
    cols = [cmp["value"], cmp["group"]]
    for g in cmp["groups"]:
        extra = {"group": g["key"], "note": g["label"]}
        step.add("group_count", cols, g["count"], **extra)
        step.add("group_mean", cols, g["mean"], **extra)
        step.add("group_median", cols, g["median"], **extra)
    for stat in ("anova_f", "anova_pvalue", "kruskal_h", "kruskal_pvalue", "eta_squared"):
        step.add(stat, cols, cmp[stat])
    welch = cmp["welch"]
    if welch is not None:
        label = next(g["label"] for g in cmp["groups"] if g["key"] == welch["group"])
        step.add("welch_t", cols, welch["t"], group=welch["group"], note=label)
        step.add("welch_pvalue", cols, welch["pvalue"], group=welch["group"], note=label)


def _p(p: float | None) -> str:
    return "p undefined" if p is None else f"p = {p:.2g}"


def _mean_of(value: str) -> str:
    """ "mean bmi", but "mean radius" for the column "mean radius" (no "mean mean")."""
    return value if value.lower().startswith("mean ") else f"mean {value}"


def _by_key(cmp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["key"]: g for g in cmp["groups"]}


def _reading(cmp: dict[str, Any]) -> str:
    """One sentence on one value: highest and lowest group, the tests, the effect size."""
    groups = _by_key(cmp)
    hi, lo = groups[cmp["highest"]], groups[cmp["lowest"]]
    text = (
        f"{_mean_of(cmp['value'])} is highest for {hi['label']} ({hi['mean']:.4g}) and lowest for "
        f"{lo['label']} ({lo['mean']:.4g}) across {len(groups)} groups of {cmp['group']}; "
        f"one-way ANOVA F = {cmp['anova_f']:.4g}, {_p(cmp['anova_pvalue'])}"
    )
    if cmp["kruskal_pvalue"] is not None:
        text += f", Kruskal–Wallis H = {cmp['kruskal_h']:.4g}, {_p(cmp['kruskal_pvalue'])}"
    if cmp["welch"] is not None and cmp["welch"]["pvalue"] is not None:
        text += f", Welch t = {cmp['welch']['t']:.4g}, {_p(cmp['welch']['pvalue'])}"
    p, rank_p = cmp["anova_pvalue"], cmp["kruskal_pvalue"]
    significant = p is not None and p < ALPHA
    text += f" ({'a' if significant else 'no'} significant difference at {ALPHA:.0%}"
    if rank_p is not None and (rank_p < ALPHA) != significant:
        finds = "does not find" if significant else "finds"
        text += f"; the rank-based Kruskal–Wallis test {finds} one"
    text += ")"
    if cmp["eta_squared"] is not None:
        text += f"; the groups explain {cmp['eta_squared']:.0%} of its variance (eta²)"
    return text + "."


def _answer(cmp: dict[str, Any], comparison: str) -> str:
    """The question's direct answer from the first compared value."""
    groups = _by_key(cmp)
    test = f"one-way ANOVA F = {cmp['anova_f']:.4g}, {_p(cmp['anova_pvalue'])}"
    if comparison in ("highest", "lowest"):
        key = cmp[comparison]
        others = sorted(
            (g for k, g in groups.items() if k != key), key=lambda g: g["mean"], reverse=True
        )
        rest = " and ".join(f"{g['mean']:.4g} ({g['label']})" for g in others)
        return (
            f"{groups[key]['label']} has the {comparison} {_mean_of(cmp['value'])}: "
            f"{groups[key]['mean']:.4g} vs {rest}; {test}."
        )
    p = cmp["anova_pvalue"]
    means = ", ".join(f"{g['mean']:.4g} ({g['label']})" for g in groups.values())
    if p is not None and p < ALPHA:
        return f"Yes: {_mean_of(cmp['value'])} differs by {cmp['group']}: {means}; {test}."
    return (
        f"No significant difference at {ALPHA:.0%}: {_mean_of(cmp['value'])} by {cmp['group']} "
        f"is {means}; {test}."
    )


def compare_asked(run: Attempt, dataset: str, asked: dict[str, Any]) -> GroupStep | None:
    """Compare each asked value across the asked group (None: the question asks no grouped
    comparison, or names no value to compare)."""
    group = asked.get("group")
    values = [v for v in asked.get("named_numeric", []) if v != group][:MAX_COMPARED]
    if group is None or not values:
        return None
    step = GroupStep()
    for value in values:
        try:
            cmp = run.call("compare_groups", dataset=dataset, value=value, group=group)
        except AnalysisError as exc:
            step.problems.append(f"no comparison of {value!r} across {group!r}: {exc}")
            continue
        _record(step, cmp)
        step.compared.append(cmp)
    if step.compared:
        step.interpretation["groups"] = " ".join(
            r[0].upper() + r[1:] for r in map(_reading, step.compared)
        )
        step.interpretation["question"] = _answer(step.compared[0], asked.get("comparison") or "")
    return step
