"""A pipeline of one's own (`examples/custom_pipeline.py`) registers like the built-in ones:
`run_pipeline` runs, stores and resumes it, and the orchestrator's offline planner
(`run_solve`, what `kimmy swarm` runs) plans its goals."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import resume_pipeline
from kimmy_swarm.agents.pipeline_record import record_kind
from kimmy_swarm.agents.pipelines import pipeline_named, unregister_pipeline
from kimmy_swarm.swarm.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def example() -> Iterator[Any]:
    spec = importlib.util.spec_from_file_location(
        "custom_pipeline", ROOT / "examples" / "custom_pipeline.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_pipeline"] = module
    spec.loader.exec_module(module)
    yield module
    unregister_pipeline("wordcount")


def test_a_registered_pipeline_runs_resumes_and_is_planned_offline(
    example: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, runs = tmp_path / "out", tmp_path / "runs"
    code = example.main(["one two three", "four five", "--out", str(out), "--runs-dir", str(runs)])
    assert code == 0
    assert pipeline_named("wordcount") is example.WORDCOUNT
    table = "| one two three | 3 |\n| four five | 2 |\n| total | 5 |\n"
    assert (out / "alone" / "counts.md").read_text().endswith(table)
    assert (out / "swarm" / "answer.md").read_text().endswith(table)  # planned by its rules
    assert "2 sub-agents planned offline by the wordcount rules" in capsys.readouterr().out
    with RunStore(runs, create=False) as store:
        kinds = {record_kind(store.load_run(r.run_id).settings) for r in store.list_runs()}
        alone = next(
            r.run_id for r in store.list_runs()
            if record_kind(store.load_run(r.run_id).settings) == "wordcount"
        )  # fmt: skip
    assert kinds == {"wordcount", "solve"}
    (out / "alone" / "counts.md").unlink()
    again = resume_pipeline(example.WORDCOUNT, alone, runs_dir=runs)
    assert again.result.status.value == "completed"
    assert (out / "alone" / "counts.md").read_text().endswith(table)
