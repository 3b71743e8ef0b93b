"""The response and design [1, X] of a reported model, rebuilt from the raw table.

Shared conventions only (`agents.tools.conventions`, the finding schema): complete rows of
the target and the predictors; a constant named "const"; a nominal predictor as one dummy
per level present but the most frequent (the smallest of those tied), named `dummy_term`;
the rows of a two-part model's
part — "any": the target is 1 where > 0 else 0, every row; "positive": the rows where the
target is > 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from kimmy_swarm.agents.tools.conventions import AnalysisError, dummy_term
from kimmy_swarm.agents.tools.recompute._columns import numeric_values

__all__ = ["complete_rows", "design", "part_rows", "term_index"]


def part_rows(df: pd.DataFrame, target: str, part: str) -> pd.DataFrame:
    """The table a part of a two-part model is fitted on ("" : `df` itself)."""
    if not part:
        return df
    numeric_values(df, target)  # existence and type checks
    y = df[target].to_numpy(dtype=float, na_value=np.nan)
    if part == "positive":
        return df.loc[y > 0]
    out = df.copy()
    out[target] = np.where(np.isnan(y), np.nan, (y > 0).astype(float))
    return out


def design(
    df: pd.DataFrame, target: str, predictors: Sequence[str], nominal: Sequence[str] = ()
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """y (N,), the design x (N, 1 + P) over the complete rows, and its column names.

    Raises:
        AnalysisError: a missing or non-numeric column.
    """
    for name in (target, *predictors):
        numeric_values(df, name)  # existence and type checks
    data = df[[target, *predictors]].to_numpy(dtype=float, na_value=np.nan)  # (N, 1 + P0)
    data = data[~np.isnan(data).any(axis=1)]
    columns, names = [np.ones(len(data))], ["const"]
    for j, name in enumerate(predictors):
        values = data[:, 1 + j]
        if name not in nominal:
            columns.append(values)
            names.append(name)
            continue
        levels, counts = np.unique(values, return_counts=True)
        reference = levels[int(np.argmax(counts))]  # the most frequent level
        for level in levels[levels != reference]:
            columns.append((values == level).astype(float))
            names.append(dummy_term(name, level))
    return data[:, 0], np.column_stack(columns), names


def complete_rows(df: pd.DataFrame, target: str, predictors: Sequence[str]) -> np.ndarray:
    """The index labels of the rows `design` keeps, in its order (complete in every column)."""
    data = df[[target, *predictors]].to_numpy(dtype=float, na_value=np.nan)
    return df.index.to_numpy()[~np.isnan(data).any(axis=1)]


def term_index(names: list[str], term: str) -> int:
    """The column of `term` in the design (raises `AnalysisError` naming the terms there are)."""
    if term not in names:
        raise AnalysisError(f"no term {term!r} in the design; terms: {', '.join(names)}")
    return names.index(term)
