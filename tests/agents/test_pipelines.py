"""The pipelines, done one way: frozen configs checked when made, a `swarm.Plan` built
from the pipeline's id helpers, `run_*(config, *, sinks=())`, and outcomes with the same
fields and the same pass-rate rule; and the registry (`agents.pipelines`) a pipeline of
your own joins."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

from kimmy_swarm.agents import Pipeline, PipelineFiles, PipelineSettings
from kimmy_swarm.agents.analysis import AnalysisConfig, AnalysisOutcome, run_analysis
from kimmy_swarm.agents.pipeline_record import PIPELINE_KEY
from kimmy_swarm.agents.pipelines import (
    pipeline_named,
    pipeline_record,
    pipelines,
    register_pipeline,
    unregister_pipeline,
)
from kimmy_swarm.agents.review import ReviewConfig, ReviewOutcome, decompose, run_review
from kimmy_swarm.agents.review.outputs import ReviewFiles
from kimmy_swarm.agents.review.schemas import (
    PLAN_ID,
    SYNTHESIZE_ID,
    ReviewPlan,
    ThemePlan,
    check_id,
    read_id,
    write_id,
)
from kimmy_swarm.agents.tracking import RoleConcurrency
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.schema import Subtask
from tests.agents.review.conftest import ICLR_JSON

CONFIGS = (ReviewConfig, AnalysisConfig)


def _review(tmp_path: Path, **changes: Any) -> ReviewConfig:
    return ReviewConfig(corpus=tmp_path / "c", topic="t", out=tmp_path / "o", **changes)


def _analysis(tmp_path: Path, **changes: Any) -> AnalysisConfig:
    return AnalysisConfig(**{"datasets": ["statsmodels:longley"], "out": tmp_path, **changes})


@pytest.mark.parametrize("make", [_review, _analysis])
def test_configs_are_frozen(make: Any, tmp_path: Path) -> None:
    config = make(tmp_path)
    assert dataclasses.is_dataclass(config) and type(config).__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.threads = 2
    assert isinstance(config.out, Path)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_papers": 0}, "max_papers must be >= 1, got 0"),
        ({"themes": 0}, "themes must be >= 1, or None to choose from the corpus; got 0"),
        ({"researcher": "critic"}, "unknown researcher role 'critic'; use one of researcher, "),
        ({"threads": 0}, "threads and max_concurrency must be >= 1, got 0 and 64"),
        ({"max_concurrency": -1}, "threads and max_concurrency must be >= 1, got 8 and -1"),
    ],
)
def test_review_config_names_the_bad_value(
    changes: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as info:  # when made: before any file is read
        _review(tmp_path, **changes)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"datasets": []}, "name at least one dataset (got [])"),
        ({"datasets": ["x", " "]}, "name at least one dataset (got ['x', ''])"),
        ({"datasets": "statsmodels:longley"}, "got the string 'statsmodels:longley'"),
        ({"questions": "why?"}, "questions is a list of strings; got the string 'why?'"),
        ({"threads": 0}, "threads and max_concurrency must be >= 1, got 0 and 64"),
    ],
)
def test_analysis_config_names_the_bad_value(
    changes: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as info:
        _analysis(tmp_path, **changes)
    assert message in str(info.value)


def test_analysis_config_keeps_clean_tuples(tmp_path: Path) -> None:
    config = _analysis(tmp_path, datasets=[" sklearn:iris "], questions=["", " why? "])
    assert (config.datasets, config.questions) == (("sklearn:iris",), ("why?",))


@pytest.mark.parametrize("run", [run_review, run_analysis])
def test_entry_points_take_the_config_and_keyword_sinks(run: Any) -> None:
    params = list(inspect.signature(run).parameters.values())
    # `endpoint`: how the model was reached, stored for `kimmy resume` (default: the config's)
    assert [p.name for p in params] == ["config", "sinks", "endpoint"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
    assert params[1].default == () and params[2].default is None


def test_outcomes_share_their_summary_fields() -> None:
    shared = {"status", "problems", "run_id", "duration_s", "out_dir", "fallbacks", "subagents"}
    for outcome in (ReviewOutcome, AnalysisOutcome):
        assert shared <= {f.name for f in dataclasses.fields(outcome)}, outcome
        assert isinstance(inspect.getattr_static(outcome, "pass_rate"), property)


def test_nothing_checked_passes_nothing(tmp_path: Path) -> None:
    files = ReviewFiles(paths={}, claims=0, supported=0, flagged=0)
    review = ReviewOutcome(
        out_dir=tmp_path, run_id="r", status="completed", files=files, documents=0,
        skipped=[], relevant=0, themes=0, subagents=1, peak_researchers=0, duration_s=0.0,
    )  # fmt: skip
    analysis = AnalysisOutcome(
        out_dir=tmp_path, run_id="a", status="partial", paths={}, analyses=0, findings=0,
        verified=0, mismatched=0, unverifiable=0, peak_analysts=0, problems=[], duration_s=0.0,
    )  # fmt: skip
    assert review.pass_rate == analysis.pass_rate == 0.0
    half = dataclasses.replace(review, files=dataclasses.replace(files, claims=4, supported=2))
    assert half.pass_rate == 0.5


def test_decompose_builds_subtasks_with_the_id_helpers() -> None:
    plan = ReviewPlan(
        topic="t",
        relevant=["d1", "d2"],
        themes=[ThemePlan(id="t0", label="T", terms=["x"], doc_ids=["d1", "d2"])],
    )
    subtasks = decompose(plan, corpus_size=2)
    assert all(isinstance(s, Subtask) for s in subtasks)
    by_id = {s.id: s for s in subtasks}
    assert list(by_id) == [
        read_id("d1"),
        read_id("d2"),
        write_id("t0"),
        check_id("t0"),
        "synthesize",
    ]
    assert by_id[check_id("t0")].depends_on == [write_id("t0")]
    # the notes too: the names the synthesis may cite (`agents.review.checks.check_prose`)
    reads = [read_id("d1"), read_id("d2")]
    assert by_id[SYNTHESIZE_ID].depends_on == [PLAN_ID, *reads, write_id("t0"), check_id("t0")]


def test_both_pipelines_feed_the_given_sinks(tmp_path: Path) -> None:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    seen = RoleConcurrency()
    review = run_review(
        ReviewConfig(corpus=ICLR_JSON, topic="attention", out=tmp_path / "r", max_papers=5),
        sinks=[seen],
    )
    assert seen.started["fact_checker"] == review.themes > 0
    assert seen.started["researcher"] == review.relevant == 5
    seen = RoleConcurrency()
    analysis = run_analysis(_analysis(tmp_path / "a"), sinks=[seen])
    assert seen.started["data_analyst"] == analysis.analyses == 1


def test_a_review_that_checked_nothing_does_not_pass(tmp_path: Path) -> None:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    outcome = run_review(
        ReviewConfig(corpus=ICLR_JSON, topic="zygomorphic xylophones", out=tmp_path)
    )
    assert outcome.files.claims == 0 and outcome.pass_rate == 0.0


class _EchoSettings(PipelineSettings):
    kind: Literal["echo"] = "echo"
    text: str = ""


class _Echo(Pipeline[Any, PipelineFiles]):
    """A pipeline of one's own: the smallest one (it writes nothing, plans nothing)."""

    name = "echo"
    Settings = _EchoSettings

    def install(self, swarm: Any, resources: Any, executor: Any, **_: Any) -> dict[str, str]:
        return {}

    def write_outputs(self, resources: Any, result: Any, out: Path, **_: Any) -> PipelineFiles:
        return PipelineFiles(paths={})


@pytest.fixture
def echo() -> Iterator[_Echo]:
    pipeline = _Echo()
    yield pipeline
    unregister_pipeline(pipeline.name)


def test_a_pipeline_of_ones_own_joins_the_registry(echo: _Echo) -> None:
    stored = {PIPELINE_KEY: {"settings": {"kind": "echo", "text": "hi"}}}
    with pytest.raises(ConfigError, match="not valid"):  # not registered: an unknown kind
        pipeline_record(stored)
    with pytest.raises(ConfigError, match="no pipeline named 'echo'; registered: widesearch"):
        pipeline_named("echo")
    assert register_pipeline(echo) is echo and register_pipeline(echo) is echo
    assert list(pipelines()) == ["widesearch", "analysis", "review", "echo"]
    assert pipeline_named("echo") is echo
    record = pipeline_record(stored)
    assert record is not None and record.settings == _EchoSettings(text="hi")
    unregister_pipeline("echo")
    assert "echo" not in pipelines() and "review" in pipelines()


def test_registering_names_what_is_wrong(echo: _Echo) -> None:
    class Review(_Echo):
        name = "review"
        Settings = None

    class Bad(_Echo):
        name = "2 words"

    class Mismatch(_Echo):
        name = "echo2"

    register_pipeline(echo)
    with pytest.raises(ConfigError, match="a pipeline named 'review' is already registered"):
        register_pipeline(Review())
    with pytest.raises(ConfigError, match="a pipeline named 'echo' is already registered"):
        register_pipeline(_Echo())
    with pytest.raises(ConfigError, match="bad pipeline name '2 words'"):
        register_pipeline(Bad())
    with pytest.raises(ConfigError, match="Settings' kind must default to 'echo2'"):
        register_pipeline(Mismatch())
    with pytest.raises(ConfigError, match=r"is not a pipeline: subclass agents\.Pipeline"):
        register_pipeline(object())  # type: ignore[arg-type]


def test_a_model_mode_sub_agent_gets_an_hour_an_offline_one_the_default(tmp_path: Path) -> None:
    """A 1.5B model's researcher ran past the runtime's 600 s per subtask while its answer
    was still being written; each model call has a limit of its own."""
    from kimmy_swarm.agents.analysis import AnalysisConfig
    from kimmy_swarm.agents.pipeline import MODEL_SUBTASK_TIMEOUT_S
    from kimmy_swarm.swarm import RunConfig
    from kimmy_swarm.swarm.llm import OpenAIChat

    model = OpenAIChat("http://127.0.0.1:9/v1", "m")
    review = pipeline_named("review")
    offline = ReviewConfig(corpus=ICLR_JSON, topic="x", out=tmp_path)
    assert review.run_config(offline).timeout_s == RunConfig().timeout_s == 600.0
    with_model = dataclasses.replace(offline, model=model)
    assert review.run_config(with_model).timeout_s == MODEL_SUBTASK_TIMEOUT_S == 3600.0
    analysis = AnalysisConfig(datasets=["statsmodels:longley"], out=tmp_path, model=model)
    assert pipeline_named("analysis").run_config(analysis).timeout_s == 3600.0
