"""Each analysis role's offline procedure on real bundled datasets, through a real swarm."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from kimmy_swarm.agents import SubAgent
from kimmy_swarm.agents.analysis.board import AnalysisBoard
from kimmy_swarm.agents.analysis.pipeline import install_analysis_roles, load_datasets
from kimmy_swarm.agents.analysis.roles import analysis_roles
from kimmy_swarm.agents.analysis.schemas import DatasetAnalysis
from kimmy_swarm.agents.analysis.tools import build_toolbox
from kimmy_swarm.agents.tools.finding import NumericFinding
from kimmy_swarm.swarm import Swarm
from kimmy_swarm.swarm.events import Event, ToolCalled
from kimmy_swarm.swarm.schema import Plan, Subtask, SubtaskStatus

PNG = b"\x89PNG\r\n\x1a\n"


class Env:
    """A board over some datasets, its toolbox, and a thread pool."""

    def __init__(self, specs: list[str], out: Path, executor: ThreadPoolExecutor) -> None:
        datasets, errors = load_datasets(specs, root=out, executor=executor)
        self.board = AnalysisBoard(datasets, out_dir=out, load_errors=errors)
        self.tools = build_toolbox(self.board)
        self.executor = executor
        self.events: list[Event] = []

    def handle(self, event: Event) -> None:
        self.events.append(event)

    def swarm(self) -> Swarm:
        """The pipeline's swarm: the five roles behind their board workers."""
        swarm = Swarm(failure_policy="continue")
        install_analysis_roles(swarm, self.board, self.tools, self.executor)
        return swarm

    def run(
        self, subtasks: list[Subtask], swarm: Swarm | None = None, *, failing: int = 0
    ) -> dict[str, Any]:
        """Run subtasks (on the pipeline's swarm by default); the outputs by id."""
        swarm = swarm if swarm is not None else self.swarm()
        result = swarm.run_sync(Plan(subtasks=subtasks), sinks=[self])
        failed = {k: r.error for k, r in result.results.items() if r.status != SubtaskStatus.DONE}
        assert len(failed) == failing, failed
        return result.outputs


@pytest.fixture
def env_factory(tmp_path: Path) -> Iterator[Any]:
    pool = ThreadPoolExecutor(4)
    yield lambda specs: Env(specs, tmp_path, pool)
    pool.shutdown()


def _analyze(n: int, dataset: str, question: str = "profile and model the data") -> Subtask:
    return Subtask(
        id=f"analyze:{n}",
        role="data_analyst",
        inputs={"dataset": dataset, "question": question, "n": n},
    )


def _find(a: DatasetAnalysis, statistic: str, columns: list[str]) -> NumericFinding:
    hits = [f for f in a.findings if f.statistic == statistic and f.columns == columns]
    assert len(hits) == 1, (statistic, columns, hits)
    return hits[0]


def test_planner_plans_each_pair_and_reports_load_errors(env_factory: Any) -> None:
    env = env_factory(["statsmodels:longley", "sklearn:iris", "sklearn:irs"])
    role = analysis_roles()["planner"]
    swarm = Swarm(model=None, failure_policy="continue")
    swarm.add_role("planner", SubAgent(role, env.tools), output=role.output)
    questions = ["What drives TOTEMP?", "profile and model the data"]
    specs = ["statsmodels:longley", "sklearn:iris", "sklearn:irs"]
    inputs = {"datasets": specs, "questions": questions}
    plan = env.run([Subtask(id="plan", role="planner", inputs=inputs)], swarm)["plan"]
    pairs = [(t["n"], t["dataset"], t["question"]) for t in plan["tasks"]]
    assert pairs == [
        (1, "statsmodels:longley", questions[0]),
        (2, "statsmodels:longley", questions[1]),
        (3, "sklearn:iris", questions[0]),
        (4, "sklearn:iris", questions[1]),
    ]
    [problem] = plan["problems"]
    assert "'sklearn:irs'" in problem and "sklearn:iris" in problem  # suggests what exists
    assert [d["name"] for d in plan["datasets"]] == specs[:2]
    assert any(isinstance(e, ToolCalled) and e.tool == "list_datasets" for e in env.events)


def test_analyst_profiles_and_models_longley(env_factory: Any) -> None:
    env = env_factory(["statsmodels:longley"])
    out = env.run([_analyze(1, "statsmodels:longley")])
    a = DatasetAnalysis.model_validate(out["analyze:1"])
    frame = env.board.datasets["statsmodels:longley"].frame
    assert (a.status, a.answered, a.target) == ("complete", True, "TOTEMP")
    assert (a.rows, a.columns) == frame.shape
    assert _find(a, "mean", ["TOTEMP"]).value == pytest.approx(frame["TOTEMP"].mean())
    assert _find(a, "std", ["GNP"]).value == pytest.approx(frame["GNP"].std(ddof=1))
    fit = sm.OLS(frame["TOTEMP"], sm.add_constant(frame[a.predictors])).fit()
    assert _find(a, "r2", ["TOTEMP"]).value == pytest.approx(fit.rsquared)
    for p in a.predictors:
        assert _find(a, "slope", ["TOTEMP", p]).value == pytest.approx(fit.params[p])
        assert _find(a, "pvalue", ["TOTEMP", p]).value == pytest.approx(fit.pvalues[p])
    corr = frame.corr().abs().where(~np.eye(frame.shape[1], dtype=bool)).max().max()
    assert max(abs(f.value) for f in a.findings if f.statistic == "corr") == pytest.approx(corr)
    assert [f.kind for f in a.figures] == ["histogram", "scatter", "heatmap"]
    assert all(base64.b64decode(f.png_base64).startswith(PNG) for f in a.figures)
    assert all((env.board.out_dir / "figures" / f"{f.figure_id}.png").is_file() for f in a.figures)
    tools = {e.tool for e in env.events if isinstance(e, ToolCalled)}
    assert {"dataset_profile", "describe_columns", "fit_model", "diagnose_model"} <= tools


def test_analyst_models_what_the_question_names(env_factory: Any) -> None:
    env = env_factory(["sklearn:diabetes"])
    out = env.run([_analyze(1, "sklearn:diabetes", "How does bmi relate to the target?")])
    a = DatasetAnalysis.model_validate(out["analyze:1"])
    frame = env.board.datasets["sklearn:diabetes"].frame
    assert (a.target, a.predictors, a.answered) == ("target", ["bmi"], True)
    slope, _ = np.polyfit(frame["bmi"], frame["target"], 1)
    assert _find(a, "slope", ["target", "bmi"]).value == pytest.approx(slope)


def test_analyst_cannot_answer_a_question_about_no_column(env_factory: Any) -> None:
    env = env_factory(["statsmodels:longley"])
    out = env.run([_analyze(1, "statsmodels:longley", "What is the effect of temperature?")])
    a = DatasetAnalysis.model_validate(out["analyze:1"])
    assert (a.answered, a.status, a.target) == (False, "partial", None)
    assert "names no numeric column" in a.reason and "TOTEMP" in a.reason
    assert _find(a, "mean", ["GNP"]).value == pytest.approx(
        env.board.datasets["statsmodels:longley"].frame["GNP"].mean()
    )  # the profile is still reported
    assert not [f for f in a.findings if f.statistic in ("slope", "r2")]


def test_fact_checker_verifies_real_and_flags_wrong_numbers(env_factory: Any) -> None:
    env = env_factory(["statsmodels:stackloss"])
    frame = env.board.datasets["statsmodels:stackloss"].frame
    true_mean = float(frame["AIRFLOW"].mean())

    async def handmade(ctx: Any) -> DatasetAnalysis:
        findings = [
            NumericFinding(statistic="mean", columns=["AIRFLOW"], value=true_mean),
            NumericFinding(statistic="mean", columns=["AIRFLOW"], value=true_mean * 1.05),
            NumericFinding(statistic="max", columns=["HUMIDITY"], value=1.0),
        ]
        return DatasetAnalysis(dataset="statsmodels:stackloss", question="q", findings=findings)

    swarm = env.swarm()
    swarm.add_role("handmade", handmade, output=DatasetAnalysis)
    out = env.run(
        [
            Subtask(id="analyze:1", role="handmade"),
            _analyze(2, "statsmodels:stackloss"),
            Subtask(
                id="check:1",
                role="fact_checker",
                depends_on=["analyze:1"],
                inputs={"analysis": "analyze:1"},
            ),
            Subtask(
                id="check:2",
                role="fact_checker",
                depends_on=["analyze:2"],
                inputs={"analysis": "analyze:2"},
            ),
        ],
        swarm,
    )
    first = out["check:1"]
    assert [v["verdict"] for v in first["verdicts"]] == ["verified", "mismatch", "unverifiable"]
    assert first["verdicts"][1]["recomputed"] == pytest.approx(true_mean)
    assert "HUMIDITY" in first["verdicts"][2]["reason"]  # no such column in stackloss
    assert (first["verified"], first["mismatched"], first["unverifiable"]) == (1, 1, 1)
    second = out["check:2"]
    assert second["verified"] == len(out["analyze:2"]["findings"]) > 20
    assert second["mismatched"] == second["unverifiable"] == 0


def test_report_roles_write_pages_from_the_checked_analyses(env_factory: Any) -> None:
    env = env_factory(["statsmodels:longley", "sklearn:iris"])
    subtasks = [_analyze(1, "statsmodels:longley"), _analyze(2, "sklearn:iris")]
    for n in (1, 2):
        subtasks.append(
            Subtask(id=f"check:{n}", role="fact_checker", depends_on=[f"analyze:{n}"],
                    inputs={"analysis": f"analyze:{n}"})
        )  # fmt: skip
    checks = ["check:1", "check:2"]
    subtasks += [
        Subtask(id="report", role="frontend_engineer", depends_on=checks),
        Subtask(id="summarize", role="synthesizer", depends_on=checks),
    ]
    out = env.run(subtasks)
    page = out["report"]
    html = Path(page["path"]).read_text()
    assert page["order"] == ["analyze:1", "analyze:2"]
    assert "statsmodels:longley — profile and model the data" in html
    assert html.count("data:image/png;base64,") == 6
    assert "✔" in html and "MISMATCH" not in html
    md = out["summarize"]["markdown"]
    n_findings = len(out["analyze:1"]["findings"])
    assert "| statsmodels:longley | profile and model the data | 16 | TOTEMP |" in md
    assert f"{n_findings} / {n_findings} |" in md
    # the summary across datasets, then the 2 analyses
    assert pd.Series(md.splitlines()).str.startswith("## ").sum() == 3


def test_a_failed_analysis_is_reported_and_the_others_go_on(env_factory: Any) -> None:
    env = env_factory(["statsmodels:longley", "sklearn:iris"])
    swarm = env.swarm()
    analyst = swarm.workers["data_analyst"]

    async def flaky(ctx: Any) -> Any:
        if ctx.inputs["dataset"] == "sklearn:iris":
            raise RuntimeError("the analyst's machine caught fire")
        return await analyst(ctx)

    swarm.add_role("data_analyst", flaky, output=DatasetAnalysis)
    subtasks = [_analyze(1, "statsmodels:longley"), _analyze(2, "sklearn:iris")]
    for n, dataset in ((1, "statsmodels:longley"), (2, "sklearn:iris")):
        subtasks.append(
            Subtask(id=f"check:{n}", role="fact_checker", depends_on=[f"analyze:{n}"],
                    inputs={"analysis": f"analyze:{n}", "dataset": dataset})
        )  # fmt: skip
    subtasks += [
        Subtask(id="report", role="frontend_engineer", depends_on=["check:1", "check:2"]),
        Subtask(id="summarize", role="synthesizer", depends_on=["check:1", "check:2"]),
    ]
    out = env.run(subtasks, swarm, failing=1)
    assert out["check:2"]["problems"] == [
        "analyze:2 failed (RuntimeError: the analyst's machine caught fire)"
    ]
    assert out["check:1"]["verified"] == len(out["analyze:1"]["findings"])
    md = out["summarize"]["markdown"]
    iris = md.split("## sklearn:iris — ?")[1]  # not planned here, so the question is unknown
    assert "The analysis failed" in iris and "machine caught fire" in iris
    assert "| sklearn:iris | ? | — |" in md
    html = Path(out["report"]["path"]).read_text()
    errors = re.findall(r'<h2>([^<]*) <span class="badge badge-error">', html)
    assert errors == ["Problems", "sklearn:iris — ?"]
