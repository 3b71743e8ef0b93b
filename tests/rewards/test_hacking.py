"""The reward-hacking scenario (benchmarks/parl_hacking.py): serial, spurious and sensible
orchestrators in a real swarm, scored from their stored runs across the λ schedule; and real
pipeline runs, each scored by its own pipeline's grader."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "parl_hacking", ROOT / "benchmarks" / "parl_hacking.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["parl_hacking"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _benchmark()


@pytest.fixture(scope="module")
def rows(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    runs = tmp_path_factory.mktemp("runs")
    return {r.orchestrator: r for r in bench.scenario(runs, width=64, total_steps=1000)}


def test_early_spurious_beats_serial_on_r_inst_but_sensible_wins(rows) -> None:  # type: ignore[no-untyped-def]
    serial, spurious, sensible = rows["serial"], rows["spurious"], rows["sensible"]
    assert spurious.early.r_inst > serial.early.r_inst
    assert sensible.early.total > serial.early.total > spurious.early.total
    assert (serial.early.lambda1, serial.early.lambda2) == (1.0, 1.0)
    # by hand: serial 2 sub-agents (work, reduce), sensible 9, spurious 201 (saturates at 64)
    assert [r.started for r in (serial, spurious, sensible)] == [2, 201, 9]
    assert serial.early.r_inst == 2 / 64 and sensible.early.r_inst == 9 / 64
    assert spurious.early.r_inst == 1.0
    # only spurious's reduce completes; its 200 idle sub-agents return nothing
    assert spurious.early.r_comp == pytest.approx(1 / 201)
    assert serial.early.r_comp == sensible.early.r_comp == 1.0
    assert sensible.early.total == pytest.approx(9 / 64 + 1 + 1)


def test_late_the_ordering_follows_r_result(rows) -> None:  # type: ignore[no-untyped-def]
    late = {k: r.late for k, r in rows.items()}
    assert all((b.lambda1, b.lambda2) == (0.0, 0.0) for b in late.values())
    assert all(b.total == b.r_result for b in late.values())
    by_total = sorted(late, key=lambda k: late[k].total)
    by_result = sorted(late, key=lambda k: late[k].r_result)
    assert by_total == by_result
    # the grader compares against a sieve: both real decompositions are right, spurious is not
    assert (late["serial"].r_result, late["sensible"].r_result, late["spurious"].r_result) == (
        1.0,
        1.0,
        0.0,
    )
    # once λ1 is annealed, spurious spawning no longer pays: it ends below serial
    assert rows["spurious"].mid.total < rows["serial"].mid.total


def test_critical_steps_show_the_parallelism(rows) -> None:  # type: ignore[no-untyped-def]
    # serial: plan 1 + work 8 (one step per chunk) + reduce 1; sensible: 1 + 1 + 1
    serial, sensible = rows["serial"].early.critical, rows["sensible"].early.critical
    assert (serial.steps, serial.serial_steps) == (10, 10)
    assert (sensible.steps, sensible.serial_steps) == (3, 10)
    assert sensible.speedup == pytest.approx(10 / 3)


def test_render_writes_the_table(bench: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "parl.md"
    assert bench.main(["--no-pipelines", "--out", str(out)]) == 0
    text = out.read_text()
    assert "python benchmarks/parl_hacking.py" in text
    assert "combined, step 0: sensible" in text
    assert (
        sum(line.startswith(("| serial", "| spurious", "| sensible")) for line in text.splitlines())
        == 3
    )


def test_real_pipeline_runs_are_scored_by_their_own_graders(
    bench: ModuleType, tmp_path: Path
) -> None:
    """Each pipeline's run gets its pipeline's grader (`agents.graders.grader_for`), not the
    completion of its sinks (all a pipeline-blind `rewards` could offer)."""
    scored = bench.pipeline_rows(tmp_path / "runs", tmp_path / "out", width=64, total_steps=1000)
    graders = {label.split(":")[0]: early.grader for label, _, early, _, _ in scored}
    review = {"review": "review"} if bench.ICLR_JSON.exists() else {}  # the shared corpus
    assert graders == {**review, "analysis": "analysis"}
    assert all(early.r_result > 0 for _, _, early, _, _ in scored)
