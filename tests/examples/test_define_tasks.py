"""The example swarm runs offline end to end and its report holds real, checkable numbers."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from kimmy_swarm.swarm.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def load_example():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "define_tasks", ROOT / "examples" / "define_tasks.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["define_tasks"] = module
    spec.loader.exec_module(module)
    return module


def test_example_spawns_inspectors_and_writes_a_true_report(tmp_path: Path) -> None:
    example = load_example()
    out = tmp_path / "survey.md"
    runs = tmp_path / "runs"
    code = example.main(["--limit", "12", "--out", str(out), "--runs-dir", str(runs)])
    assert code == 0
    report = out.read_text()
    modules = example.stdlib_sources(12)
    # the totals line adds up the very files the inspectors parsed
    lines = sum(
        Path(p).read_text(encoding="utf-8", errors="replace").count("\n") + 1 for _, p in modules
    )
    assert f"{len(modules)} modules, {lines:,} lines" in report
    with RunStore(runs) as store:
        (summary,) = store.list_runs()
        stored = store.load_run(summary.run_id)
    # scout + writer planned, one inspector per module spawned into the live DAG
    spawned = [s for s in stored.plan.subtasks if s.parent == "scout"]
    assert len(spawned) == len(modules) and all(s.role == "inspector" for s in spawned)
    writer = next(s for s in stored.plan.subtasks if s.id == "write-report")
    assert set(writer.depends_on) == {"scout", *(s.id for s in spawned)}
    assert summary.n_done == summary.n_subtasks == len(modules) + 2


def test_inspector_counts_match_ast(tmp_path: Path) -> None:
    example = load_example()
    src = tmp_path / "m.py"
    src.write_text(
        '"""m."""\n\n'
        'def a():\n    """doc"""\n\n\n'
        "def _b():\n    pass\n\n\n"
        "class C:\n    def d(self):\n        pass\n"
    )
    stats = example.analyse("m", str(src))
    assert stats.functions == 3 and stats.classes == 1
    assert stats.public_names == 3 and stats.documented == 1  # a, C, d public; only a documented
    assert stats.doc_coverage == round(1 / 3, 4)
    assert stats.lines == src.read_text().count("\n") + 1
