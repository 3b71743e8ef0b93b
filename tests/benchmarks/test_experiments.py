"""The model experiments (benchmarks/experiments/): each script's `--quick` run writes its
page and plot with the expected tables and finite numbers; the eval-curve arithmetic the
token-efficiency ratios rest on; the lr sweep that picks each compared variant's lr; the
round-robin decode timing of the hybrid page and its generated speed text."""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from benchmarks.experiments._common import best_lr, lr_sweep, model_config, tokens_to_reach
from benchmarks.experiments._hybrid_cache import decode_rounds
from kimmy_swarm.model import KimiLinearForCausalLM
from kimmy_swarm.model.errors import KimiModelError
from kimmy_swarm.model.train import TrainResult
from tests.support.markdown_tables import table_rows

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
            "| layout | lr | final eval loss | vs best | wall (s) |",
            "| model | KDA:MLA | FFN width | parameters | non-embedding | lr (best of sweep) |",
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


@pytest.mark.parametrize("module", list(PAGES))
def test_quick_run_writes_page_and_plot(out_dir: Path, module: str) -> None:
    name, headers = PAGES[module]
    page = (out_dir / f"{name}.md").read_text(encoding="utf-8")
    assert f"`python benchmarks/experiments/{module}.py --quick`" in page.splitlines()[0]
    for header in headers:
        rows = table_rows(page, header)
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
    rows = table_rows(page, "| model | KDA:MLA |")
    assert [r[1] for r in rows] == ["3:1", "0:4", "4:0"]
    counts = [int(r[3].replace(",", "")) for r in rows]
    assert (max(counts) - min(counts)) / min(counts) < 0.05


def test_hybrid_compares_each_layout_at_the_best_lr_of_its_sweep(out_dir: Path) -> None:
    page = (out_dir / "exp_hybrid.md").read_text(encoding="utf-8")
    sweep = table_rows(page, "| layout | lr | final eval loss |")
    quality = table_rows(page, "| model | KDA:MLA |")
    assert [r[0] for r in quality] == ["hybrid 3:1 KDA:MLA", "all-MLA", "all-KDA"]
    for row in quality:
        mine = [r for r in sweep if r[0] == row[0]]
        assert len(mine) >= 2  # the quick sweep tries 2 lrs per layout
        best = [r for r in mine if r[1].endswith("(best)")]
        assert len(best) == 1 and best[0][3] == "+0.0000"
        assert all(float(r[3]) >= 0 for r in mine)  # nothing beats the marked best
        # the comparison ran at that lr, and its seed-0 run is the sweep's run
        assert row[5] == best[0][1].removesuffix(" (best)")
        assert row[6].split(" / ")[0] == best[0][2]
    assert "Learning-rate sweeps (seed 0)" in page and "What limits it:" in page


def test_cache_formula_matches_the_allocated_cache(out_dir: Path) -> None:
    page = (out_dir / "exp_hybrid.md").read_text(encoding="utf-8")
    rows = table_rows(page, "| model | cache.nbytes() after a")
    assert len(rows) == 3 and all(r[1] == r[2] and r[3] == "yes" for r in rows)


def test_hybrid_speed_text_quotes_the_speed_table(out_dir: Path) -> None:
    page = (out_dir / "exp_hybrid.md").read_text(encoding="utf-8")
    rows = {r[0]: r for r in table_rows(page, "| model | train tokens/s | vs all-MLA |")}
    speed = next(line for line in page.splitlines() if line.startswith("Speed on this CPU"))
    found = re.search(r"the hybrid decodes at ([\d.]+)× and all-KDA at ([\d.]+)×", speed)
    assert found, speed
    assert found.groups() == (rows["hybrid 3:1 KDA:MLA"][6][:-1], rows["all-KDA"][6][:-1])
    train = re.search(r"training runs at ([\d.]+)× \(hybrid\) and ([\d.]+)× \(all-KDA\)", speed)
    assert train and train.groups() == (rows["hybrid 3:1 KDA:MLA"][2][:-1], rows["all-KDA"][2][:-1])
    assert "median of 3 rounds taken round-robin" in speed and "the 32-token ratio" in speed
    assert "interleaved round-robin for 3 rounds; each rate is the median" in page


def test_decode_rounds_interleaves_the_models_round_robin() -> None:
    torch.manual_seed(0)
    models = {k: KimiLinearForCausalLM(model_config(64, kind=k, hidden=32)) for k in ("kda", "mla")}
    order: list[str] = []
    for kind, model in models.items():
        model.register_forward_pre_hook(lambda *_, k=kind: order.append(k))
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 64, (1, n), generator=gen) for n in (4, 9)]  # (1, T) each
    rates = decode_rounds(models, prompts, new=3, rounds=3)
    runs = [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]
    assert runs == ["kda", "mla"] * 4  # one warm-up pass, then 3 rounds A, B, A, B, ...
    assert set(rates) == set(models) and all(set(v) == {4, 9} for v in rates.values())
    assert all(len(r) == 3 and all(0 < x < math.inf for x in r) for v in rates.values()
               for r in v.values())  # fmt: skip
    with pytest.raises(KimiModelError, match="new >= 2 and rounds >= 1; got 1, 3"):
        decode_rounds(models, prompts, new=1, rounds=3)


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


def _result(loss: float) -> TrainResult:
    return TrainResult(loss, 7.0, [], 0, 0.0, 0.0, 0, None)


def _landscape(optimum: float, calls: list[float]) -> Callable[[float], TrainResult]:
    """A loss that is lowest at `optimum` and grows with the log-distance from it."""

    def run(lr: float) -> TrainResult:
        calls.append(lr)
        return _result(4.0 + math.log(lr / optimum) ** 2)

    return run


def test_lr_sweep_grows_past_the_edge_until_the_optimum_is_bracketed() -> None:
    calls: list[float] = []
    runs, bracketed = lr_sweep(_landscape(0.02, calls), (0.0057, 0.008, 0.011), max_lrs=8)
    assert calls == [0.0057, 0.008, 0.011, 0.015, 0.021, 0.029]  # 1.4× steps, 2 s.f.
    assert bracketed and best_lr(runs) == 0.021
    calls.clear()
    runs, bracketed = lr_sweep(_landscape(0.003, calls), (0.0057, 0.008, 0.011), max_lrs=8)
    assert calls == [0.0057, 0.008, 0.011, 0.0041, 0.0029, 0.0021]
    assert bracketed and best_lr(runs) == 0.0029


def test_lr_sweep_stops_at_max_lrs_and_says_it_is_not_bracketed() -> None:
    calls: list[float] = []
    runs, bracketed = lr_sweep(_landscape(1.0, calls), (0.0057, 0.008, 0.011), max_lrs=5)
    assert len(calls) == 5 and not bracketed and best_lr(runs) == max(calls)
    runs, bracketed = lr_sweep(_landscape(1.0, []), (0.004, 0.008), max_lrs=2)
    assert sorted(runs) == [0.004, 0.008] and not bracketed


def test_lr_sweep_never_picks_a_diverged_run() -> None:
    def run(lr: float) -> TrainResult:  # better with lr until it diverges past 0.01
        return _result(float("nan") if lr > 0.01 else 5.0 - lr)

    runs, bracketed = lr_sweep(run, (0.0057, 0.008, 0.011), max_lrs=6)
    assert best_lr(runs) == 0.008 and bracketed and len(runs) == 3


def test_lr_sweep_rejects_bad_grids() -> None:
    for grid, step in (((), 1.4), ((0.0, 0.01), 1.4), ((0.01,), 1.0)):
        with pytest.raises(KimiModelError, match="positive lrs and a step > 1"):
            lr_sweep(lambda lr: _result(4.0), grid, max_lrs=3, step=step)
