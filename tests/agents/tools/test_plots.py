"""PNG charts: valid images of the documented size, drawn safely from many threads."""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools.plots import (
    DPI,
    FIGSIZE,
    corr_heatmap_png,
    histogram_png,
    scatter_png,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parents[3]


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, after checking the signature."""
    assert png[:8] == PNG_MAGIC
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


EXPECTED_SIZE = (int(FIGSIZE[0] * DPI), int(FIGSIZE[1] * DPI))


def _jobs() -> list[Callable[[], bytes]]:
    """Eight different charts: one per thread."""
    rng = np.random.default_rng(2)
    latent = rng.normal(size=(400, 1))
    wide = pd.DataFrame(
        latent * rng.uniform(-1, 1, size=14) + rng.normal(size=(400, 14)),
        columns=[f"feature number {i}" for i in range(14)],
    )
    narrow = wide.iloc[:, :6].set_axis(["age", "bmi", "s5", "bp", "s1", "s2"], axis=1)
    narrow["target"] = 3 * narrow["bmi"] + rng.normal(size=400)
    jobs: list[Callable[[], bytes]] = []
    for col in ["age", "bmi", "s5"]:
        jobs.append(lambda c=col: histogram_png(narrow[c], title=c, xlabel=c))
        jobs.append(
            lambda c=col: scatter_png(
                narrow[c], narrow["target"], title=f"target vs {c}", xlabel=c, ylabel="y"
            )
        )
    jobs.append(lambda: corr_heatmap_png(narrow, title="narrow"))
    jobs.append(lambda: corr_heatmap_png(wide, title="wide", max_columns=12))
    return jobs


def test_charts_drawn_in_8_threads_equal_charts_drawn_alone() -> None:
    jobs = _jobs()
    alone = [job() for job in jobs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda job: job(), jobs))
    for png in together:
        assert len(png) > 1000 and png_size(png) == EXPECTED_SIZE
    # Agg output is deterministic, so any cross-thread interference shows as a byte change.
    assert together == alone
    assert len(set(alone)) == len(jobs)


def test_empty_and_missing_values_still_draw() -> None:
    nan = float("nan")
    for png in [
        histogram_png([nan, nan], title="empty", xlabel="x"),
        histogram_png(["1", "x", 3.0, np.inf], title="coerced", xlabel="x"),
        scatter_png([1.0, nan], [nan, 2.0], title="no pairs", xlabel="x", ylabel="y"),
        scatter_png([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], title="flat x", xlabel="x", ylabel="y"),
        corr_heatmap_png(pd.DataFrame({"x": [1.0, 2.0], "s": ["a", "b"]}), title="one"),
    ]:
        assert png_size(png) == EXPECTED_SIZE


def test_scatter_rejects_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="same length"):
        scatter_png([1.0, 2.0], [1.0], title="t", xlabel="x", ylabel="y")


def test_plotting_never_imports_pyplot() -> None:
    code = (
        "import sys\n"
        "from kimmy_swarm.agents.tools.plots import histogram_png\n"
        "histogram_png([1.0, 2.0, 2.0], title='t', xlabel='x')\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)
