"""Which numeric columns are categorical, and how a model takes each: the rule, and why.

A numeric column is, in this order:

- nominal: the source names its classes (sklearn's iris `target`), or its description lists
  codes that are not graded (fair's occupation: "1 = student, 2 = farming, …"). Described
  by its level counts; a model takes it as dummies, one per level but the most frequent (the
  reference level), named `conventions.dummy_term` ("occupation=2");
- ordinal: its description lists graded codes — the words before the codes or the codes'
  meanings use a word of a scale (`_GRADED`: fair's rate_marriage "How rate marriage,
  1 = very poor, …, 5 = very good", religious "1 = not … 4 = strongly", educ "Level of
  education, …") — or, with no codes described, it is integer-valued with 3 to
  `MAX_LEVELS` distinct values and at least `ROWS_PER_LEVEL` rows per value on average (a
  rating or a small count; china_smoking's 8 counts in 8 rows are no levels). Described by
  its level counts; a model takes it as an ordered score, one slope per step of the scale;
- binary: two distinct values (spector's PSI), with or without codes. Described by its
  level counts; a model takes it as the indicator it is;
- numeric: anything else, and a coded column with more than `MAX_LEVELS` levels (anes96's
  24 income brackets read as an ordered score). The target of a count model (cpunish's
  EXECUTIONS) stays numeric under the rule for undescribed integers: its mean is what the
  model describes.

Codes count only when every value of the column is one of them. Bool columns are not
numeric here (as in `agents.tools.stats`).

Example:
    >>> fair = load_dataset("statsmodels:fair")
    >>> column_types(fair.frame, codes=fair.codes, descriptions=fair.descriptions,
    ...              target=fair.target)["occupation"].kind
    'nominal'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from kimmy_swarm.agents.tools.conventions import level_name
from kimmy_swarm.agents.tools.families import choose_family

__all__ = [
    "CATEGORICAL",
    "MAX_LEVELS",
    "ROWS_PER_LEVEL",
    "ColumnKind",
    "ColumnType",
    "column_types",
    "level_counts",
]

ColumnKind = Literal["numeric", "binary", "ordinal", "nominal"]
#: The kinds described by level counts rather than mean, skew and outliers.
CATEGORICAL: frozenset[str] = frozenset({"binary", "ordinal", "nominal"})
#: Most distinct values of a categorical column.
MAX_LEVELS = 10
#: Fewest rows per distinct value (on average) of an undescribed integer column with levels.
ROWS_PER_LEVEL = 4
# words of a graded scale, in a description before its codes or in the codes' meanings
_GRADED = re.compile(
    r"\b(how|level|rate|rating|scale|very|poor|fair|good|excellent|not|mildly|slightly|"
    r"somewhat|fairly|moderately|strongly|extremely|weak|strong|never|rarely|sometimes|"
    r"often|always|low|medium|high|less|more|none)\b",
    flags=re.IGNORECASE,
)


@dataclass(frozen=True)
class ColumnType:
    """A numeric column's kind, why (one clause), and its values' meanings where described.

    `meanings` maps each level (`level_name`) to what the source says it means ("" where it
    says nothing); empty for numeric columns.
    """

    column: str
    kind: ColumnKind
    reason: str
    meanings: dict[str, str] = field(default_factory=dict)

    @property
    def categorical(self) -> bool:
        return self.kind in CATEGORICAL


def level_counts(values: pd.Series) -> dict[str, int]:
    """Rows at each distinct value (missing values ignored), in ascending order of value."""
    x = values.dropna().astype(float).to_numpy()
    levels, counts = np.unique(x, return_counts=True)
    return {level_name(v): int(n) for v, n in zip(levels, counts, strict=True)}


def _numeric(df: pd.DataFrame) -> list[str]:
    return [
        str(c)
        for c in df.columns
        if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
    ]


def _coded(
    name: str, distinct: np.ndarray, coded: Mapping[str, str], description: str
) -> ColumnType | None:
    """The kind of a column whose description lists codes (None: its values are not them)."""
    known = {level_name(float(k)): v for k, v in coded.items()}
    levels = [level_name(v) for v in distinct]
    if not set(levels) <= set(known):
        return None
    meanings = {lv: known[lv] for lv in levels}
    if len(levels) == 2:
        return ColumnType(name, "binary", "2 coded values", meanings)
    if len(levels) > MAX_LEVELS:
        return ColumnType(
            name, "numeric", f"{len(levels)} coded levels (> {MAX_LEVELS}): an ordered score"
        )
    before = description.split("=")[0] if "=" in description else description
    graded = _GRADED.search(before) or any(_GRADED.search(m) for m in meanings.values())
    shown = f"codes {levels[0]}–{levels[-1]} described in the source"
    if graded:
        return ColumnType(name, "ordinal", f"{shown}, graded", meanings)
    return ColumnType(name, "nominal", f"{shown}, not graded: categories", meanings)


def _column_type(
    df: pd.DataFrame, name: str, *, codes: Mapping[str, Mapping[str, str]],
    labels: Mapping[str, Mapping[str, str]], description: str, count_target: bool,
) -> ColumnType:  # fmt: skip
    distinct = np.unique(df[name].dropna().astype(float).to_numpy())  # sorted
    if name in labels:
        names = {level_name(float(k)): v for k, v in labels[name].items()}
        meanings = {level_name(v): names.get(level_name(v), "") for v in distinct}
        kind: ColumnKind = "binary" if distinct.size == 2 else "nominal"
        return ColumnType(name, kind, "a class label: the source names its classes", meanings)
    if name in codes:
        typed = _coded(name, distinct, codes[name], description)
        if typed is not None:
            return typed
    if distinct.size == 2:
        return ColumnType(name, "binary", "2 distinct values", dict.fromkeys(
            (level_name(v) for v in distinct), ""))  # fmt: skip
    integer = bool(np.all(distinct == np.round(distinct)))
    rows = int(df[name].notna().sum())
    if (integer and 3 <= distinct.size <= MAX_LEVELS and distinct.size * ROWS_PER_LEVEL <= rows
            and not count_target):  # fmt: skip
        why = (
            f"{distinct.size} integer values ({level_name(distinct[0])}–"
            f"{level_name(distinct[-1])}) and no description of them: an ordered score"
        )
        return ColumnType(name, "ordinal", why, dict.fromkeys(
            (level_name(v) for v in distinct), ""))  # fmt: skip
    return ColumnType(name, "numeric", "a measured quantity")


def column_types(
    df: pd.DataFrame,
    *,
    codes: Mapping[str, Mapping[str, str]] | None = None,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    descriptions: Mapping[str, str] | None = None,
    target: str | None = None,
) -> dict[str, ColumnType]:
    """The kind of every numeric column of `df` (the rule in the module docstring).

    Args:
        df: the table.
        codes: the coded values the source lists per column (`Dataset.codes`).
        labels: the class names the source gives per column (`Dataset.labels`).
        descriptions: what each column measures (`Dataset.descriptions`).
        target: the designated target; if a count model's, it stays numeric unless coded.
    """
    count_target = False
    if target is not None and target in _numeric(df) and df[target].nunique() >= 2:
        count_target = choose_family(df[target]).kind == "count"
    out = {}
    for c in _numeric(df):
        out[c] = _column_type(
            df, c, codes=codes or {}, labels=labels or {},
            description=(descriptions or {}).get(c, ""), count_target=count_target and c == target,
        )  # fmt: skip
    return out
