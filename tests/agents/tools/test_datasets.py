"""Dataset specs: bundled statsmodels / sklearn datasets offline, table files, and errors."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kimmy_swarm.agents.tools.datasets import (
    Dataset,
    DatasetError,
    UnknownDatasetError,
    bundled_datasets,
    load_dataset,
)
from kimmy_swarm.swarm.errors import UserError


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {"x": rng.normal(size=20), "y": rng.integers(0, 9, size=20), "label": list("ab" * 10)}
    )


def test_bundled_datasets_lists_both_sources_sorted() -> None:
    names = bundled_datasets()
    assert names == sorted(names)
    assert len(names) == len(set(names)) >= 10
    assert {n.partition(":")[0] for n in names} == {"statsmodels", "sklearn"}
    assert {"sklearn:iris", "sklearn:diabetes", "statsmodels:longley"} <= set(names)
    assert not any("fetch" in n for n in names)


@pytest.mark.usefixtures("no_network")
def test_every_bundled_dataset_loads_offline() -> None:
    for name in bundled_datasets():
        ds = load_dataset(name)
        assert ds.name == name
        assert not ds.frame.empty, name
        assert ds.frame.select_dtypes("number").shape[1] >= 1, name
        assert ds.target is None or ds.target in ds.frame.columns, name
        assert ds.description and "\n" not in ds.description, name


def test_statsmodels_dataset_carries_target_and_source() -> None:
    ds = load_dataset("statsmodels:longley")
    assert ds.frame.shape == (16, 7)
    assert ds.target == "TOTEMP"
    assert ds.source == "statsmodels.datasets.longley"
    # star98's endogenous variable is two columns: no single designated target.
    assert load_dataset("statsmodels:star98").target is None


def test_sklearn_dataset_target_column() -> None:
    iris = load_dataset("sklearn:iris")
    assert iris.target == "target" and iris.frame.shape == (150, 5)
    assert iris.source == "sklearn.datasets.load_iris"
    assert load_dataset("sklearn:linnerud").target is None  # three target columns


def test_sklearn_class_codes_carry_their_names() -> None:
    iris = load_dataset("sklearn:iris")
    assert iris.labels == {"target": {"0": "setosa", "1": "versicolor", "2": "virginica"}}
    assert set(iris.frame["target"].unique()) == {0, 1, 2}  # the codes stay in the frame
    assert load_dataset("sklearn:breast_cancer").labels["target"]["0"] == "malignant"
    # a regression target and digits (named by their own codes) have no labels
    assert load_dataset("sklearn:diabetes").labels == {}
    assert load_dataset("sklearn:digits").labels == {}
    assert load_dataset("statsmodels:longley").labels == {}


def test_spec_prefix_and_name_are_case_insensitive() -> None:
    assert load_dataset("  StatsModels:Longley ").name == "statsmodels:longley"


def test_unknown_name_suggests_close_match_and_lists_all() -> None:
    with pytest.raises(UnknownDatasetError) as info:
        load_dataset("statsmodels:longly")
    assert isinstance(info.value, UserError)
    assert info.value.suggestions[0] == "statsmodels:longley"
    message = str(info.value)
    assert "'statsmodels:longly'" in message and "sklearn:NAME" in message
    assert all(name in message for name in bundled_datasets())


@pytest.mark.parametrize(
    "spec", ["statsmodels:utils", "sklearn:california_housing", "sklearn:fetch_openml", "nope"]
)
def test_specs_outside_the_allowlist_are_unknown(spec: str) -> None:
    with pytest.raises(UnknownDatasetError, match="Accepted forms"):
        load_dataset(spec)


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_table_files_round_trip(tmp_path: Path, suffix: str) -> None:
    frame = _table()
    path = tmp_path / f"sample{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, sep="\t" if suffix == ".tsv" else ",", index=False)
    ds = load_dataset(str(path))
    assert isinstance(ds, Dataset)
    assert ds.name == "sample" and ds.source == str(path.resolve()) and ds.target is None
    pd.testing.assert_frame_equal(ds.frame, frame, check_dtype=False)
    assert "20 rows, 3 columns" in ds.description


def test_root_confines_paths(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    _table().to_csv(root / "inside.csv", index=False)
    _table().to_csv(tmp_path / "outside.csv", index=False)
    (root / "link.csv").symlink_to(tmp_path / "outside.csv")
    assert load_dataset("inside.csv", root=root).frame.shape == (20, 3)
    assert load_dataset(str(root / "inside.csv"), root=root).name == "inside"
    for spec in ["../outside.csv", str(tmp_path / "outside.csv"), "link.csv"]:
        with pytest.raises(DatasetError, match="outside the allowed root"):
            load_dataset(spec, root=root)


def test_bad_files_raise_dataset_error(tmp_path: Path) -> None:
    (tmp_path / "broken.parquet").write_bytes(b"not a parquet file")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "table.xlsx").write_bytes(b"")
    with pytest.raises(DatasetError, match=r"cannot read .*broken\.parquet"):
        load_dataset(str(tmp_path / "broken.parquet"))
    with pytest.raises(DatasetError, match="cannot read"):
        load_dataset(str(tmp_path / "empty.csv"))
    with pytest.raises(DatasetError, match=r"missing\.csv' does not exist.*\.tsv or \.parquet"):
        load_dataset(str(tmp_path / "missing.csv"))  # names the path and what is allowed
    with pytest.raises(DatasetError, match=r"unsupported file type '\.xlsx'.*\.parquet"):
        load_dataset(str(tmp_path / "table.xlsx"))


def test_concurrent_loads_match_sequential_loads() -> None:
    names = bundled_datasets()[:12]
    with ThreadPoolExecutor(max_workers=12) as pool:
        loaded = list(pool.map(load_dataset, names))
    for name, ds in zip(names, loaded, strict=True):
        assert ds.name == name
        pd.testing.assert_frame_equal(ds.frame, load_dataset(name).frame)
    # Each load returns a fresh frame: one caller's edits do not leak into another's.
    first, second = load_dataset("sklearn:iris"), load_dataset("sklearn:iris")
    first.frame.iloc[0, 0] = -1.0
    assert second.frame.iloc[0, 0] != -1.0


def test_bundled_datasets_keep_their_column_descriptions() -> None:
    longley = load_dataset("statsmodels:longley")
    assert longley.descriptions["TOTEMP"] == "Total Employment"
    assert longley.descriptions["UNEMP"] == "Number of unemployed"
    assert set(longley.descriptions) == set(longley.frame.columns)
    # a name alone on its line, the description indented below it, cut to one sentence
    crime = load_dataset("statsmodels:statecrime").descriptions
    assert crime["violent"] == "Rate of violent crimes / 100,000 population."
    # names in another case; coded values ("0 - Strong Democrat") are no description
    assert load_dataset("statsmodels:spector").descriptions["GRADE"].startswith("binary")
    assert load_dataset("statsmodels:anes96").descriptions["PID"] == (
        "Party identification of respondent."
    )
    diabetes = load_dataset("sklearn:diabetes").descriptions
    assert diabetes["bp"] == "average blood pressure"
    assert "disease progression" in diabetes["target"]
    assert load_dataset("sklearn:iris").descriptions == {}  # iris names its columns only


def test_table_files_have_no_descriptions(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    assert load_dataset(str(tmp_path / "t.csv")).descriptions == {}
