"""The model experiments (benchmarks/experiments/): each script's `--quick` run writes its
page and plot with the expected tables and finite numbers; the eval-curve arithmetic the
token-efficiency ratios rest on."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from benchmarks.experiments._common import tokens_to_reach
from model.errors import KimiModelError

PAGES = {
    "muonclip_vs_adamw": (
        "exp_muonclip",
        [
            "| optimizer | lr | final eval loss | vs best | wall (s) |",
            "| seed | AdamW final eval loss | MuonClip final eval loss | AdamW tokens |",
            "| run | τ | max attention logit reached |",
        ],
    ),
    "attnres": (
        "exp_attnres",
        ["| residual | parameters | final eval loss (seeds 0 / 1) | mean | Δ vs standard |"],
    ),
    "hybrid": (
        "exp_hybrid",
        [
            "| model | KDA:MLA | FFN width | parameters | non-embedding |",
            "| model | train tokens/s | vs all-MLA | decode tokens/s,",
            "| layout | 4k context | vs all-MLA | 32k context |",
            "| model | cache.nbytes() after a",
        ],
    ),
}


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All three quick runs, once, into one folder (they share the corpus and tokenizer)."""
    out = tmp_path_factory.mktemp("results")
    for module in PAGES:
        script = importlib.import_module(f"benchmarks.experiments.{module}")
        assert script.main(["--quick", "--out-dir", str(out)]) == 0
    return out


def _table_rows(page: str, header_start: str) -> list[list[str]]:
    """The body rows of the table whose header line starts with `header_start`."""
    lines = page.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


@pytest.mark.parametrize("module", list(PAGES))
def test_quick_run_writes_page_and_plot(out_dir: Path, module: str) -> None:
    name, headers = PAGES[module]
    page = (out_dir / f"{name}.md").read_text(encoding="utf-8")
    assert f"`python benchmarks/experiments/{module}.py --quick`" in page.splitlines()[0]
    for header in headers:
        rows = _table_rows(page, header)
        assert rows, f"{name}: table {header!r} has no rows"
        numbers = [
            float(x.replace(",", ""))
            for r in rows
            for x in re.findall(r"-?\d[\d,]*(?:\.\d+)?", " ".join(r))
        ]
        assert numbers and all(abs(x) < 1e12 for x in numbers)
    assert not re.search(r"\b(nan|inf)\b", page, flags=re.IGNORECASE)
    png = (out_dir / f"{name}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_hybrid_variants_have_similar_parameter_counts(out_dir: Path) -> None:
    page = (out_dir / "exp_hybrid.md").read_text(encoding="utf-8")
    rows = _table_rows(page, "| model | KDA:MLA |")
    assert [r[1] for r in rows] == ["3:1", "0:4", "4:0"]
    counts = [int(r[3].replace(",", "")) for r in rows]
    assert (max(counts) - min(counts)) / min(counts) < 0.05


def test_cache_formula_matches_the_allocated_cache(out_dir: Path) -> None:
    page = (out_dir / "exp_hybrid.md").read_text(encoding="utf-8")
    rows = _table_rows(page, "| model | cache.nbytes() after a")
    assert len(rows) == 3 and all(r[1] == r[2] and r[3] == "yes" for r in rows)


def test_tokens_to_reach_interpolates_between_evals() -> None:
    curve = [(0.0, 7.0), (100.0, 5.0), (200.0, 4.0), (300.0, 3.5)]
    assert tokens_to_reach(curve, 4.5) == pytest.approx(150.0)
    assert tokens_to_reach(curve, 3.75) == pytest.approx(250.0)
    assert tokens_to_reach(curve, 5.0) == 100.0  # exactly on an eval point
    assert tokens_to_reach(curve, 8.0) == 0.0  # already there at the first eval


def test_tokens_to_reach_takes_the_first_crossing() -> None:
    curve = [(0.0, 6.0), (10.0, 4.0), (20.0, 5.0), (30.0, 3.0)]  # dips, rises, dips again
    assert tokens_to_reach(curve, 4.5) == pytest.approx(7.5)


def test_tokens_to_reach_is_none_when_never_reached() -> None:
    assert tokens_to_reach([(0.0, 7.0), (100.0, 5.0), (200.0, 4.2)], 4.0) is None
    assert tokens_to_reach([], 4.0) is None


def test_tokens_to_reach_rejects_unordered_curves() -> None:
    with pytest.raises(KimiModelError, match="increase"):
        tokens_to_reach([(0.0, 7.0), (100.0, 5.0), (100.0, 4.0)], 4.5)
