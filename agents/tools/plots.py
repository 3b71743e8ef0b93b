"""Small PNG charts for reports, safe to draw from many threads at once.

Only matplotlib's object-oriented API is used: each call builds its own `Figure` with a
`FigureCanvasAgg`, so no global pyplot state is shared between threads. Every chart is
5 x 3.5 inches at 80 dpi (400 x 280 pixels). Missing and infinite values are dropped; a
chart with nothing to draw says so in its body instead of failing.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["DPI", "FIGSIZE", "corr_heatmap_png", "histogram_png", "scatter_png"]

FIGSIZE = (5.0, 3.5)
DPI = 80
_MAX_BINS = 50
_LABEL_CHARS = 14


def _new_axes(*, fixed_margins: bool = True) -> tuple[Figure, Axes]:
    # Fixed margins draw in half the time of a layout engine; the heatmap's long tick labels
    # need the constrained layout.
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout=None if fixed_margins else "constrained")
    FigureCanvasAgg(fig)  # attaches itself as fig.canvas
    if fixed_margins:
        fig.subplots_adjust(left=0.15, right=0.97, bottom=0.15, top=0.9)
    ax = fig.add_subplot()
    ax.tick_params(labelsize=7)
    return fig, ax


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _finite(values: Sequence[float] | np.ndarray | pd.Series) -> np.ndarray:
    x = pd.to_numeric(pd.Series(np.asarray(values).ravel()), errors="coerce").to_numpy(float)
    return x[np.isfinite(x)]


def _empty(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])


def _short(label: str) -> str:
    return label if len(label) <= _LABEL_CHARS else label[: _LABEL_CHARS - 1] + "…"


def histogram_png(
    values: Sequence[float] | np.ndarray | pd.Series, *, title: str, xlabel: str
) -> bytes:
    """Draw a histogram of the finite values.

    Returns:
        PNG bytes (400 x 280 pixels).
    """
    x = _finite(values)
    fig, ax = _new_axes()
    if x.size == 0:
        _empty(ax, "no finite values")
    else:
        edges = np.histogram_bin_edges(x, bins="auto")
        bins = min(len(edges) - 1, _MAX_BINS)
        ax.hist(x, bins=max(bins, 1), color="#4C72B0", edgecolor="white", linewidth=0.5)
        ax.set_ylabel("count", fontsize=8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    return _png(fig)


def scatter_png(
    x: Sequence[float] | np.ndarray | pd.Series,
    y: Sequence[float] | np.ndarray | pd.Series,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    fit: bool = True,
) -> bytes:
    """Draw y against x over the rows where both are finite, with an OLS line if `fit`.

    Raises:
        ValueError: x and y differ in length.

    Returns:
        PNG bytes (400 x 280 pixels).
    """
    xs = pd.to_numeric(pd.Series(np.asarray(x).ravel()), errors="coerce").to_numpy(float)
    ys = pd.to_numeric(pd.Series(np.asarray(y).ravel()), errors="coerce").to_numpy(float)
    if xs.shape != ys.shape:
        raise ValueError(f"x and y must have the same length, got {xs.size} and {ys.size}")
    keep = np.isfinite(xs) & np.isfinite(ys)
    xs, ys = xs[keep], ys[keep]
    fig, ax = _new_axes()
    if xs.size == 0:
        _empty(ax, "no rows with both values")
    else:
        ax.scatter(xs, ys, s=8 if xs.size > 500 else 14, alpha=0.6, color="#4C72B0", lw=0)
        if fit and xs.size >= 2 and np.ptp(xs) > 0:
            slope, intercept = np.polyfit(xs, ys, 1)
            grid = np.array([xs.min(), xs.max()])
            ax.plot(
                grid,
                intercept + slope * grid,
                color="#C44E52",
                lw=1.5,
                label=f"y = {intercept:.3g} + {slope:.3g}x",
            )
            ax.legend(fontsize=7, loc="best")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    return _png(fig)


def _heatmap_columns(df: pd.DataFrame, max_columns: int) -> list[str]:
    """The numeric, non-constant columns; past `max_columns`, those with most mean |r|."""
    cols = [
        c
        for c in df.columns
        if pd.api.types.is_numeric_dtype(df[c])
        and not pd.api.types.is_bool_dtype(df[c])
        and df[c].nunique(dropna=True) >= 2
    ]
    if len(cols) <= max_columns:
        return cols
    strength = df[cols].astype(float).corr().abs().mean()
    keep = set(strength.sort_values(ascending=False, kind="stable").index[:max_columns])
    return [c for c in cols if c in keep]


def corr_heatmap_png(df: pd.DataFrame, *, title: str, max_columns: int = 12) -> bytes:
    """Draw the Pearson correlation matrix of the numeric columns.

    Args:
        df: the table.
        title: the chart title.
        max_columns: past this many numeric columns, keep those most correlated with the
            rest (mean |r|), in frame order.

    Returns:
        PNG bytes (400 x 280 pixels).
    """
    cols = _heatmap_columns(df, max(max_columns, 2))
    fig, ax = _new_axes(fixed_margins=False)
    if len(cols) < 2:
        _empty(ax, "fewer than two numeric columns")
    else:
        corr = df[cols].astype(float).corr().to_numpy()  # (C, C)
        image = ax.imshow(corr, cmap="RdBu_r", vmin=-1.0, vmax=1.0)
        labels = [_short(str(c)) for c in cols]
        ax.set_xticks(range(len(cols)), labels, rotation=60, ha="right", fontsize=6)
        ax.set_yticks(range(len(cols)), labels, fontsize=6)
        if len(cols) <= 8:
            for i in range(len(cols)):
                for j in range(len(cols)):
                    r = corr[i, j]
                    if np.isfinite(r):
                        color = "white" if abs(r) > 0.6 else "black"  # readable on dark cells
                        ax.text(j, i, f"{r:.2f}", ha="center", va="center", fontsize=6, color=color)
        fig.colorbar(image, ax=ax, shrink=0.8).ax.tick_params(labelsize=6)
    ax.set_title(title, fontsize=9)
    return _png(fig)
