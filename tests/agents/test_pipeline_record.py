"""What a pipeline run stores to be resumed (`agents.pipeline_record`): its settings, typed,
and its model endpoint (`swarm.llm.ModelEndpoint`, without secrets: `tests/swarm/llm/
test_endpoint.py`); and `resume_*` refusing another pipeline's run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.analysis import AnalysisConfig, run_analysis
from kimmy_swarm.agents.analysis.config import AnalysisSettings
from kimmy_swarm.agents.pipeline_record import (
    PIPELINE_KEY,
    PipelineRecord,
    parse_record,
    record_kind,
    stored_settings,
)
from kimmy_swarm.agents.pipelines import pipeline_record
from kimmy_swarm.agents.review import ReviewConfig, resume_review
from kimmy_swarm.agents.review.config import ReviewSettings
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import ModelEndpoint
from kimmy_swarm.swarm.store import RunStore


def test_configs_round_trip_through_their_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    analysis = AnalysisConfig(["statsmodels:longley"], out=Path("out"), questions=["Why?"])
    settings = analysis.settings()
    assert settings.out == tmp_path / "out" and settings.root == tmp_path  # absolute
    again = AnalysisConfig.from_settings(settings, runs_dir=tmp_path / "runs")
    assert again.settings() == settings and again.runs_dir == tmp_path / "runs"
    review = ReviewConfig(
        corpus=Path("c"), topic="t", out=Path("o"), themes=3, defaults={"year": 2017}
    )
    assert ReviewConfig.from_settings(review.settings()).settings() == review.settings()
    record = PipelineRecord(settings=settings)
    parsed = pipeline_record({PIPELINE_KEY: record.model_dump(mode="json")})
    assert parsed == record and isinstance(parsed.settings, AnalysisSettings)
    assert pipeline_record({"max_concurrency": 4}) is None
    with pytest.raises(ConfigError, match="not valid"):
        pipeline_record({PIPELINE_KEY: {"settings": {"kind": "poem"}}})
    stored = {PIPELINE_KEY: record.model_dump(mode="json")}
    assert record_kind(stored) == "analysis" and record_kind({}) is None
    assert stored_settings(stored)["datasets"] == ["statsmodels:longley"]
    with pytest.raises(ConfigError, match="not valid"):  # read as the wrong pipeline's
        parse_record(stored, ReviewSettings)


def test_a_run_records_its_pipeline_and_resume_checks_it(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    outcome = run_analysis(AnalysisConfig(["statsmodels:longley"], out=tmp_path, runs_dir=runs))
    with RunStore(runs, create=False) as store:
        record = pipeline_record(store.load_run(outcome.run_id).settings)
    assert record is not None and record.endpoint == ModelEndpoint()
    assert record.settings == AnalysisConfig(["statsmodels:longley"], out=tmp_path).settings()
    made = f"run {outcome.run_id} was not made by the review pipeline but by the analysis"
    with pytest.raises(ConfigError, match=made):
        resume_review(outcome.run_id, runs_dir=runs)
