"""A benchmark writes its results page only where `--out` says: a plain run prints the page and
leaves the committed one under benchmarks/results/ as it is (`benchmarks/_results.py`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks._results import out_dir, publish

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "parl_hacking.py"  # the cheapest writer: a few seconds, no model, no corpus
PAGE = "parl.md"


def _checkout(tmp_path: Path) -> Path:
    """The script, its helper and its committed page, laid out as in the repository."""
    bench = tmp_path / "benchmarks"
    (bench / "results").mkdir(parents=True)
    for name in (SCRIPT, "_results.py"):
        shutil.copy(ROOT / "benchmarks" / name, bench / name)
    shutil.copy(ROOT / "benchmarks" / "results" / PAGE, bench / "results" / PAGE)
    return bench


def _run(bench: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(bench / SCRIPT), "--no-pipelines", "--width", "8", *args],
        cwd=bench.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )


def test_a_run_without_out_prints_the_page_and_leaves_the_committed_one(tmp_path: Path) -> None:
    bench = _checkout(tmp_path)
    page = bench / "results" / PAGE
    before, mtime = page.read_bytes(), page.stat().st_mtime_ns
    files = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    done = _run(bench)
    assert page.read_bytes() == before
    assert page.stat().st_mtime_ns == mtime
    assert "| sensible |" in done.stdout  # the page went to stdout instead
    after = sorted(
        p.relative_to(tmp_path)
        for p in tmp_path.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    assert after == files


def test_out_names_the_page_to_write(tmp_path: Path) -> None:
    bench = _checkout(tmp_path)
    target = tmp_path / "elsewhere" / PAGE
    done = _run(bench, "--out", str(target))
    assert "| sensible |" in target.read_text(encoding="utf-8")
    assert f"wrote {target}" in done.stderr
    committed = ROOT / "benchmarks" / "results" / PAGE
    assert (bench / "results" / PAGE).read_bytes() == committed.read_bytes()


def test_publish_without_out_only_prints(capsys: pytest.CaptureFixture[str]) -> None:
    publish("| a | b |", None)
    assert capsys.readouterr().out == "| a | b |\n"


def test_out_dir_defaults_to_a_new_folder_outside_the_repository() -> None:
    first, second = out_dir(None), out_dir(None)
    try:
        assert first != second
        assert ROOT not in first.resolve().parents
        assert list(first.iterdir()) == []
    finally:
        first.rmdir()
        second.rmdir()
