"""Load a dataset by spec: a local table file or a dataset bundled with statsmodels / sklearn.

Every bundled dataset here ships its data inside the installed package, so loading never
touches the network (statsmodels' `get_rdataset` and sklearn's `fetch_*` are never used).
The allowlists below were checked by loading each dataset offline; `bundled_datasets()`
reads them and imports nothing, so it is instant.

Example:
    >>> ds = load_dataset("statsmodels:longley")
    >>> ds.target, ds.frame.shape
    ('TOTEMP', (16, 7))
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kimmy_swarm.agents.tools._descriptions import (
    sklearn_codes,
    sklearn_descriptions,
    statsmodels_codes,
    statsmodels_descriptions,
)
from kimmy_swarm.swarm.errors import UserError

__all__ = [
    "Dataset",
    "DatasetError",
    "UnknownDatasetError",
    "bundled_datasets",
    "load_dataset",
]

# Every statsmodels.datasets module whose `load_pandas()` works offline (statsmodels 0.15).
_STATSMODELS = (
    "anes96", "cancer", "ccard", "china_smoking", "co2", "committee", "copper", "cpunish",
    "danish_data", "elec_equip", "elnino", "engel", "fair", "fertility", "grunfeld", "heart",
    "interest_inflation", "longley", "macrodata", "modechoice", "nile", "randhie", "scotland",
    "spector", "stackloss", "star98", "statecrime", "strikes", "sunspots",
)  # fmt: skip
# sklearn `load_*` loaders whose data ships with the package (never the `fetch_*` ones).
_SKLEARN = ("breast_cancer", "diabetes", "digits", "iris", "linnerud", "wine")
_FILE_SUFFIXES = (".csv", ".tsv", ".parquet")
_FORMS = "'statsmodels:NAME', 'sklearn:NAME', or a path to a .csv, .tsv or .parquet file"


class DatasetError(UserError):
    """A dataset file cannot be used: unreadable, outside the allowed root, or bad type."""


class UnknownDatasetError(UserError):
    """The spec names no bundled dataset; the message lists close matches and all names."""

    def __init__(self, spec: str) -> None:
        names = bundled_datasets()
        close = _suggest(spec, names)
        hint = f"; did you mean {', '.join(close)}?" if close else "."
        super().__init__(
            f"unknown dataset {spec!r}{hint} Accepted forms: {_FORMS}. "
            f"Bundled datasets: {', '.join(names)}"
        )
        self.spec = spec
        self.suggestions: tuple[str, ...] = tuple(close)


@dataclass
class Dataset:
    """A loaded table and where it came from.

    Attributes:
        name: the spec's canonical name ("statsmodels:longley"), or the file stem for paths.
        frame: the data; a fresh frame per load, so callers may mutate it.
        source: the resolved file path, or the module ("statsmodels.datasets.longley").
        target: the dependent variable the source designates, if it is a column, else None.
        description: a one-line title.
        labels: display names of coded values per column: {column: {code: name}}, codes
            as `agents.tools.conventions.group_key` writes them (sklearn's class names of its
            integer target: {"target": {"0": "setosa", ...}}).
        descriptions: what each column measures, from the dataset's own metadata
            ({column: text}; statsmodels' "Variable name definitions", sklearn's attribute
            list): {"TOTEMP": "Total Employment", ...}; empty for table files.
        codes: the coded values the metadata lists per column, {column: {code: meaning}}
            (fair's {"occupation": {"1": "student", ...}}; sklearn's class names of its
            target); `agents.tools.variables` reads a column with codes as categorical.
    """

    name: str
    frame: pd.DataFrame
    source: str
    target: str | None
    description: str
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    codes: dict[str, dict[str, str]] = field(default_factory=dict)


def _suggest(spec: str, names: list[str]) -> list[str]:
    """Close matches for a spec by its bare name ("longly" ~ "longley"), same source first."""
    prefix, _, bare_query = spec.strip().lower().rpartition(":")
    scored: dict[str, tuple[bool, float]] = {}
    for name in names:
        source, _, bare = name.partition(":")
        ratio = difflib.SequenceMatcher(None, bare_query, bare).ratio()
        if ratio >= 0.6:
            scored[name] = (source != prefix, -ratio)
    return sorted(scored, key=lambda n: (scored[n], n))[:3]


def bundled_datasets() -> list[str]:
    """Return every bundled dataset spec that loads offline, sorted.

    Returns:
        Names like "sklearn:iris" and "statsmodels:longley".
    """
    names = [f"statsmodels:{n}" for n in _STATSMODELS] + [f"sklearn:{n}" for n in _SKLEARN]
    return sorted(names)


def load_dataset(spec: str, *, root: str | Path | None = None) -> Dataset:
    """Load a dataset from a spec.

    Args:
        spec: "statsmodels:NAME", "sklearn:NAME", or a .csv/.tsv/.parquet path.
        root: if given, a file path must resolve inside this directory; a relative path is
            taken relative to it.

    Returns:
        The loaded `Dataset`.

    Raises:
        UnknownDatasetError: the spec is neither a bundled name nor a table file path.
        DatasetError: the file is missing, unreadable, outside `root`, or of another type.
    """
    text = spec.strip()
    prefix, sep, rest = text.partition(":")
    if sep and prefix.lower() in ("statsmodels", "sklearn"):
        name = rest.strip().lower()
        if prefix.lower() == "statsmodels" and name in _STATSMODELS:
            return _load_statsmodels(name)
        if prefix.lower() == "sklearn" and name in _SKLEARN:
            return _load_sklearn(name)
        raise UnknownDatasetError(spec)
    suffix = Path(text).suffix.lower()
    if suffix in _FILE_SUFFIXES:
        return _load_file(text, root)
    if suffix:
        raise DatasetError(
            f"unsupported file type {suffix!r} in {spec!r}; allowed: {', '.join(_FILE_SUFFIXES)}"
        )
    raise UnknownDatasetError(spec)


def _load_statsmodels(name: str) -> Dataset:
    module = importlib.import_module(f"statsmodels.datasets.{name}")
    data = module.load_pandas()
    frame = data.data
    endog = getattr(data, "endog_name", None)
    target = endog if isinstance(endog, str) and endog in frame.columns else None
    return Dataset(
        name=f"statsmodels:{name}",
        frame=frame,
        source=module.__name__,
        target=target,
        description=" ".join(str(getattr(module, "TITLE", name)).split()),
        descriptions=statsmodels_descriptions(str(getattr(module, "NOTE", "")), frame.columns),
        codes=statsmodels_codes(str(getattr(module, "NOTE", "")), frame.columns),
    )


def _load_sklearn(name: str) -> Dataset:
    from sklearn import datasets as skd  # imported lazily: sklearn takes seconds to import

    bunch = getattr(skd, f"load_{name}")(as_frame=True)
    frame = bunch.frame
    # Multi-output targets (linnerud) have no single dependent variable.
    target_col = getattr(bunch.target, "name", None)
    target = target_col if isinstance(target_col, str) and target_col in frame.columns else None
    names = bunch.get("target_names")
    labels = {}
    if target is not None and names is not None:  # classifiers: codes 0..k-1 -> class names
        coded = {str(i): str(n) for i, n in enumerate(names)}
        if any(code != label for code, label in coded.items()):
            labels[target] = coded
    return Dataset(
        name=f"sklearn:{name}",
        frame=frame,
        source=f"sklearn.datasets.load_{name}",
        target=target,
        description=_descr_title(str(bunch.get("DESCR", "")), name),
        labels=labels,
        descriptions=sklearn_descriptions(str(bunch.get("DESCR", "")), frame.columns, target),
        codes=sklearn_codes(labels),
    )


def _descr_title(descr: str, fallback: str) -> str:
    """The first heading of an sklearn DESCR (it starts with an rST label line)."""
    for line in descr.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(".."):
            return stripped
    return fallback


def _resolve_path(spec: str, root: str | Path | None) -> Path:
    path = Path(spec).expanduser()
    if root is None:
        return path.resolve()
    base = Path(root).expanduser().resolve()
    resolved = (base / path).resolve()  # an absolute `path` replaces `base` here
    if not resolved.is_relative_to(base):
        raise DatasetError(f"dataset path {spec!r} resolves outside the allowed root {str(base)!r}")
    return resolved


def _load_file(spec: str, root: str | Path | None) -> Dataset:
    path = _resolve_path(spec, root)
    if not path.is_file():
        raise DatasetError(
            f"dataset file {str(path)!r} does not exist or is not a file; give an existing "
            f".csv, .tsv or .parquet file, 'statsmodels:NAME' or 'sklearn:NAME'"
        )
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            frame = pd.read_parquet(path)
        else:
            frame = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        # pandas parser errors and pyarrow's ArrowInvalid are ValueError subclasses.
        raise DatasetError(f"cannot read dataset file {str(path)!r}: {exc}") from exc
    rows, cols = frame.shape
    return Dataset(
        name=path.stem,
        frame=frame,
        source=str(path),
        target=None,
        description=f"{path.name}: {rows} rows, {cols} columns",
    )
