"""`benchmarks/bench_serve.py --quick` writes its page; the counted (not timed) figures on it
hold: the engine's answers equal the generate loop's, reuse cuts the prefill work to the
first few requests plus every tail, and the engine's pools hold what the cache formula says."""

from __future__ import annotations

import math
from pathlib import Path

from benchmarks import bench_serve
from benchmarks.bench_serve import ROLE_LEN, TAIL_LEN
from tests.support.markdown_tables import table_rows


def _int(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_quick_run_writes_the_page_with_consistent_figures(tmp_path: Path) -> None:
    out = tmp_path / "serve.md"
    assert bench_serve.main(["--quick", "--out", str(out)]) == 0
    page = out.read_text()

    runs = table_rows(page, "| runner |")
    assert [r[0] for r in runs] == ["(b) `model.generate`, one request at a time"] + [
        "(a) `LLMEngine`"
    ] * len(bench_serve.QUICK.concurrency)
    assert all(r[-1] == "yes" for r in runs[1:])  # greedy answers equal the loop's
    assert all(float(r[3].replace(",", "")) > 0 for r in runs)

    (on, off) = table_rows(page, "| prefix reuse |")
    n = bench_serve.QUICK.shared_requests
    prompt = n * (ROLE_LEN + TAIL_LEN)
    assert _int(on[1]) == _int(off[1]) == prompt
    assert _int(off[2]) == prompt and _int(off[3]) == 0  # reuse off: everything computed
    assert _int(on[2]) + _int(on[3]) == prompt
    # With reuse, a request that finds the role prompt computes only what follows the last
    # full page inside it; the first requests (admitted before it was cached) compute all.
    tail = ROLE_LEN + TAIL_LEN - ROLE_LEN // 16 * 16
    misses = (_int(on[2]) - n * tail) / (ROLE_LEN + TAIL_LEN - tail)
    assert misses == int(misses) and 1 <= misses <= 4, misses
    assert "Prefill work with reuse:" in page

    engine_bytes = table_rows(page, "| model | 4k |")  # the first such table: the engine's pools
    hybrid, mla = engine_bytes[0], engine_bytes[1]
    assert hybrid[0] == "hybrid" and mla[0] == "all-MLA"
    ratios = [float(c.rstrip("×")) for c in hybrid[2::2]]
    assert all(r < 0.3 for r in ratios) and ratios == sorted(ratios, reverse=True)
    assert "gives the same bytes" in page
    assert math.isclose(float(mla[2].rstrip("×")), 1.0)
