"""The batch analysis's roles: built-in roles derived with this pipeline's schemas, tools,
offline procedures and meaning checks.

The checks run on model answers only (the offline procedures build their answers from the
same tools the checks would consult); an answer that fails one gets the repair turn.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kimmy_swarm.agents.analysis import briefs as role_briefs
from kimmy_swarm.agents.analysis.digest import AnalysisDigest
from kimmy_swarm.agents.analysis.procedures import analyze_dataset, check_findings, plan_analyses
from kimmy_swarm.agents.analysis.report_roles import build_report_page, write_summary
from kimmy_swarm.agents.analysis.schemas import (
    GENERAL_QUESTION,
    AnalysisPlan,
    DatasetAnalysis,
    FindingChecks,
    ReportPage,
    ReportText,
)
from kimmy_swarm.agents.roles import RoleRegistry, builtin_roles

if TYPE_CHECKING:
    from kimmy_swarm.agents.loop import Attempt

DATA_TOOLS = (
    "dataset_profile", "missing_values", "describe_columns", "top_correlations",
    "question_columns", "compare_groups", "fit_model", "diagnose_model", "count_outliers",
    "make_figure",
)  # fmt: skip

_FINDING_HELP = (
    " Report every number as a finding {statistic, columns, value, predictors}: statistic is "
    "one of count, missing, mean, median, std, min, max, skew, outliers (columns [col]), corr "
    "(columns [a, b]), slope, se, pvalue (columns [target, predictor or 'const'], predictors: "
    "the fit's predictors), intercept, r2, adj_r2, nobs (columns [target], predictors); "
    "grouped comparisons (compare_groups) take columns [value, group column]: group_count, "
    "group_mean, group_median, welch_t, welch_pvalue with group (the group's key) and note "
    "(its label); anova_f, anova_pvalue, kruskal_h, kruskal_pvalue, eta_squared without group."
    " When question_columns gives a group, compare the values across it, and put the answer "
    "in interpretation['question'] and the comparison in words in interpretation['groups']."
)
_MODEL_HELP = (
    " Model the target with the family its values call for, as a statistician would: "
    "fit_model chooses logistic regression for two values, multinomial logit for a labelled "
    "class, Poisson or negative binomial for counts and OLS otherwise, and says why in "
    "`reason`; keep its choice unless you can say why another fits better, and put the family "
    "in `model` and the reason in `model_reason`. Every model finding names its `model` "
    "(ols, logit, mnlogit, poisson, negbin, logit_l2, mnlogit_l2) and, for a multinomial "
    "coefficient, its class in `level`; fit measures aic, llf, pseudo_r2, accuracy (in "
    "sample), cv_accuracy, cv_auc (cross-validated), dispersion, alpha and diagnostics jb, "
    "jb_pvalue, bp, bp_pvalue, influential, cooks_max, cooks_max_row (OLS and logit: Cook's "
    "distance), cond_number take columns [target], vif [target, predictor], all with "
    "predictors; slope_per_sd (a coefficient's per_sd: rank predictors by it, not by the "
    "per-unit slope), ci_low and ci_high (a penalised coefficient's bootstrap interval) take "
    "[target, term]; a logit slope or pvalue refitted without the influential rows has "
    "without_influential true. Call diagnose_model on the fit (logit true for a logit). "
    "Put fit_model's notes (predictors left out as near-duplicates, a penalised refit) in "
    "`notes`. Write interpretation['profile'], ['distributions'], ['correlations'], ['model'] "
    "and ['diagnostics']: one to three sentences each that say what the numbers mean (which "
    "predictors matter and in which direction, whether the standard errors can be trusted), "
    "quoting only numbers you report as findings."
)


def _model_only(run: Attempt) -> bool:
    return run.policy == "model"


def check_plan(answer: AnalysisPlan, run: Attempt) -> None:
    """Every task names a loaded dataset; every (dataset, question) pair is planned once."""
    if not _model_only(run):
        return
    loaded = [d["name"] for d in run.tools.get_tool("list_datasets")()["datasets"]]
    questions = [str(q) for q in run.inputs.get("questions") or []] or [GENERAL_QUESTION]
    for t in answer.tasks:
        if t.dataset not in loaded:
            raise ValueError(f"task {t.n} names dataset {t.dataset!r}; loaded: {loaded}")
    numbers = [t.n for t in answer.tasks]
    if sorted(numbers) != list(range(1, len(numbers) + 1)):
        raise ValueError(f"task numbers must be 1..{len(numbers)} once each, got {numbers}")
    pairs = {(t.dataset, t.question) for t in answer.tasks}
    missing = [(d, q) for d in loaded for q in questions if (d, q) not in pairs]
    if missing or len(pairs) != len(answer.tasks):
        raise ValueError(f"plan each (dataset, question) pair exactly once; missing: {missing}")


def _finding_problem(f: Any, columns: set[str]) -> str | None:
    if not math.isfinite(f.value):
        return f"{f.statistic} of {f.columns}: value {f.value} is not a finite number"
    named = [*f.columns, *(f.predictors or [])]
    unknown = [c for c in named if c not in columns and c != "const"]
    if unknown:
        return f"{f.statistic} of {f.columns}: no column {unknown[0]!r} in the dataset"
    return None


def check_analysis(answer: DatasetAnalysis, run: Attempt) -> None:
    """The analysis is of the asked dataset, and its findings name columns that exist."""
    if not _model_only(run):
        return
    dataset = str(run.inputs["dataset"])
    if answer.dataset != dataset:
        raise ValueError(f"dataset must be {dataset!r} (the one asked), got {answer.dataset!r}")
    if not answer.answered and not answer.reason:
        raise ValueError("answered is false: say why in `reason`")
    if answer.answered and not answer.findings:
        raise ValueError("report the numbers that answer the question as findings")
    profile = run.tools.get_tool("dataset_profile")(dataset=dataset)
    columns = set(profile["column_names"])
    problems = [p for f in answer.findings if (p := _finding_problem(f, columns))]
    if problems:
        raise ValueError("; ".join(problems[:5]) + f" (columns: {sorted(columns)[:30]})")


def check_verdicts(answer: FindingChecks, run: Attempt) -> None:
    """Every finding of the analysis has a verdict, and each agrees with a recomputation."""
    if not _model_only(run):
        return
    analysis_id = str(run.inputs["analysis"])
    if answer.analysis != analysis_id:
        raise ValueError(f"analysis must be {analysis_id!r}, got {answer.analysis!r}")
    redone = run.tools.get_tool("verify_analysis")(analysis=analysis_id)
    want, got = _keyed(redone), _keyed(answer.verdicts)
    if want != got:
        wrong = len(set(got) ^ set(want)) or abs(len(got) - len(want))
        raise ValueError(
            f"{wrong} verdicts are missing or disagree with the recomputation from the data; "
            "call verify_analysis and report its verdicts"
        )
    labels = [v.verdict for v in answer.verdicts]
    counts = (labels.count("verified"), labels.count("mismatch"), labels.count("unverifiable"))
    if counts != (answer.verified, answer.mismatched, answer.unverifiable):
        raise ValueError(
            f"counts must match the verdicts (verified, mismatch, unverifiable) {counts}"
        )


def _keyed(verdicts: list[Any]) -> list[tuple[Any, ...]]:
    """(finding, verdict) pairs in a canonical order, to compare two verdict lists."""
    out = []
    for v in verdicts:
        data = v if isinstance(v, dict) else v.model_dump(mode="json")
        f = data["finding"]
        preds = tuple(f.get("predictors") or ())
        method = f.get("method", "pearson")
        group = f.get("group") or ""
        model = (f.get("model", "ols"), f.get("level", ""))
        out.append(
            (f["statistic"], tuple(f["columns"]), preds, method, group, model, f["value"],
             data["verdict"])
        )  # fmt: skip
    return sorted(out)


def check_page(answer: ReportPage, run: Attempt) -> None:
    """report.html was written by the `render_report` tool."""
    if _model_only(run) and not (
        answer.path.endswith("report.html") and Path(answer.path).is_file()
    ):
        raise ValueError("call render_report, then answer with the path it returned")


def check_text(answer: ReportText, run: Attempt) -> None:
    """report.md names every dataset and flags every mismatched number."""
    if not _model_only(run):
        return
    digest = AnalysisDigest.model_validate(run.tools.get_tool("collect_results")(detail=True))
    text = answer.markdown
    absent = [e.dataset for e in digest.analyses if e.dataset not in text]
    if absent:
        raise ValueError(f"the report must cover every dataset; missing: {absent}")
    flagged = [ln for ln in text.splitlines() if "mismatch" in ln.lower()]
    for e in digest.analyses:
        for r in e.findings:
            if r.verdict == "mismatch" and not any(r.columns[0] in ln for ln in flagged):
                raise ValueError(
                    f"flag the mismatched {r.statistic} of {r.columns} in {e.dataset} "
                    "on a line that says MISMATCH"
                )


def analysis_roles(*, python: bool = False, briefs: bool = True) -> RoleRegistry:
    """The five roles of the batch analysis (`python`: analysts may call `run_python`;
    `briefs`: each role with its brief, `agents.analysis.briefs`; False: their models call
    the tools themselves).

    planner (AnalysisPlan), data_analyst (DatasetAnalysis), fact_checker
    (FindingChecks), frontend_engineer (ReportPage) and synthesizer (ReportText).
    """
    base = builtin_roles()
    analyst_tools = (*DATA_TOOLS, "run_python") if python else DATA_TOOLS
    code_help = (
        " Use run_python(dataset, code): pandas code that reads data.csv and prints JSON."
        if python else ""
    )  # fmt: skip
    roles = [
        base.get_role("planner").derive(
            system_prompt=base.get_role("planner").system_prompt
            + " Call list_datasets; plan one task per (loaded dataset, question), numbered "
            "from 1; list datasets that did not load under problems.",
            output=AnalysisPlan, tools=("list_datasets",), procedure=plan_analyses,
            check=check_plan, brief=role_briefs.plan_brief,
        ),
        base.get_role("data_analyst").derive(
            system_prompt=base.get_role("data_analyst").system_prompt + code_help
            + _FINDING_HELP + _MODEL_HELP
            + " If the question names no column of the dataset, set answered "
            "to false and say why in reason, and still report the profile; if it names columns "
            "of other datasets of the run (question_columns' applies_to), also set applicable "
            "to false.",
            output=DatasetAnalysis, tools=analyst_tools, procedure=analyze_dataset,
            check=check_analysis, max_steps=12, brief=role_briefs.analyze_brief,
        ),
        base.get_role("fact_checker").derive(
            system_prompt=base.get_role("fact_checker").system_prompt
            + " Call verify_analysis (or verify_finding per number) and report every verdict.",
            output=FindingChecks, tools=("analysis_findings", "verify_finding", "verify_analysis"),
            procedure=check_findings, check=check_verdicts, brief=role_briefs.check_brief,
        ),
        base.get_role("frontend_engineer").derive(
            system_prompt=base.get_role("frontend_engineer").system_prompt
            + " Call collect_results, choose a title, an intro and the order of the analyses, "
            "then call render_report and answer with the path it returns.",
            output=ReportPage, tools=("collect_results", "render_report"),
            procedure=build_report_page, check=check_page, brief=role_briefs.page_brief,
        ),
        base.get_role("writer").derive(
            name="synthesizer",
            system_prompt=base.get_role("writer").system_prompt
            + " Call collect_results and write report.md in Markdown: a summary table across "
            "datasets, the verified numbers per analysis, every mismatch flagged on a line "
            "that says MISMATCH, unanswered questions and problems.",
            output=ReportText, tools=("collect_results",), procedure=write_summary,
            check=check_text, brief=role_briefs.summary_brief,
        ),
    ]  # fmt: skip
    if not briefs:  # their models call the tools themselves
        roles = [r.derive(brief=None) for r in roles]
    return RoleRegistry({r.name: r for r in roles})


__all__ = [
    "DATA_TOOLS",
    "analysis_roles",
    "check_analysis",
    "check_page",
    "check_plan",
    "check_text",
    "check_verdicts",
]
