"""Installing a model from part wheels (`model.install`): real pip runs on tiny real wheels
(`tests.support.part_wheels`), into a throwaway venv (`pip --python`), never this one; no
network (`--no-index --find-links`)."""

from __future__ import annotations

import importlib.metadata
import random
import shutil
import venv
from collections import namedtuple
from pathlib import Path

import pytest

from kimmy_swarm.model.catalog import MODELS, KnownModel
from kimmy_swarm.model.errors import ModelConfigError, ModelInstallError, ModelNotFoundError
from kimmy_swarm.model.install import InstallProgress, install_model
from kimmy_swarm.model.locate import models_dir, package_file, resolve_model
from tests.support.part_wheels import PACKAGE, part_entry, write_part_wheels

DATA = random.Random(0).randbytes(10_000)


@pytest.fixture(autouse=True)
def _pip_sees_only_our_wheels(monkeypatch: pytest.MonkeyPatch) -> None:
    """No pip configuration of this machine (extra indexes, find-links) takes part."""
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def python(tmp_path: Path) -> Path:
    """The interpreter of a fresh venv without pip: where the part packages go."""
    venv.create(tmp_path / "env", with_pip=False)
    return tmp_path / "env" / "bin" / "python"


def _site_parts(python: Path) -> list[str]:
    """The part packages' folders in the venv's site-packages."""
    site = next(python.parent.parent.glob("lib/python*/site-packages"))
    found = site.glob(f"{PACKAGE.replace('-', '_')}*")
    return sorted(p.name for p in found if p.name.isidentifier())  # not the dist-info


def _install(entry: KnownModel, wheels: Path, python: Path, home: Path, **options: object) -> Path:
    args = ["--no-index", "--find-links", str(wheels)]
    return install_model(entry, home=home, python=python, pip_args=args, **options)  # type: ignore[arg-type]


def test_parts_are_installed_checked_joined_and_removed_when_asked(
    tmp_path: Path, python: Path
) -> None:
    entry, home = part_entry(DATA), tmp_path / "home"
    write_part_wheels(tmp_path / "wheels", DATA)
    events: list[InstallProgress] = []
    path = _install(entry, tmp_path / "wheels", python, home, progress=events.append)
    assert path == models_dir(home) / "test-model.gguf"
    assert path.read_bytes() == DATA
    assert [p.name for p in models_dir(home).iterdir()] == ["test-model.gguf"]  # no partial
    assert _site_parts(python) == [f"kimmy_test_model_part{i}" for i in (1, 2, 3)]  # kept
    assert [e.done for e in events if e.stage == "pip"] == [0, 1, 2, 3]
    joined = [e for e in events if e.stage == "join"]
    assert joined[-1].done == joined[-1].total == len(DATA)
    assert resolve_model("test-model", catalog={"test-model": entry}, home=home) == path

    # again, parts to be removed: the file is checked again, nothing is pip-installed
    events.clear()
    again = _install(entry, tmp_path / "wheels", python, home, remove_parts=True,
                     progress=events.append)  # fmt: skip
    assert again == path and path.read_bytes() == DATA
    assert {e.stage for e in events} == {"verify", "remove", "done"}
    assert _site_parts(python) == []


def test_a_part_with_other_bytes_is_named_and_nothing_is_installed(
    tmp_path: Path, python: Path
) -> None:
    entry, home = part_entry(DATA), tmp_path / "home"
    tampered = bytearray(DATA)
    tampered[5_000] ^= 1  # in part 2 of 3
    write_part_wheels(tmp_path / "wheels", bytes(tampered))
    with pytest.raises(ModelInstallError) as info:
        _install(entry, tmp_path / "wheels", python, home)
    message = str(info.value)
    assert message.startswith(f"part 2 of test-model ({PACKAGE}2==1.0.0, ")
    assert f"not {entry.parts[1].sha256}: nothing installed" in message
    assert list(models_dir(home).iterdir()) == []  # the partial file is deleted


def test_a_part_pip_cannot_find_is_named(tmp_path: Path, python: Path) -> None:
    entry, home = part_entry(DATA), tmp_path / "home"
    wheels = write_part_wheels(tmp_path / "wheels", DATA)
    wheels[1].unlink()
    with pytest.raises(ModelInstallError) as info:
        _install(entry, tmp_path / "wheels", python, home)
    assert str(info.value).startswith(
        f"pip could not install {PACKAGE}2==1.0.0 (part 2 of test-model): ERROR: "
    )
    assert list(models_dir(home).iterdir()) == []


def test_a_part_of_the_wrong_size_is_named_before_any_copy(tmp_path: Path, python: Path) -> None:
    entry, home = part_entry(DATA), tmp_path / "home"
    write_part_wheels(tmp_path / "wheels", DATA[:-1])  # each part a byte shorter than listed
    with pytest.raises(ModelInstallError, match=r"^part 1 of test-model .* 3,333 bytes, not 3,334"):
        _install(entry, tmp_path / "wheels", python, home)
    assert list(models_dir(home).iterdir()) == []


def test_too_little_disk_says_what_is_needed_and_free(
    tmp_path: Path, python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**9, 10**9 - 5_000, 5_000))
    entry, home = part_entry(DATA), tmp_path / "home"
    with pytest.raises(ModelInstallError) as info:
        _install(entry, tmp_path / "nowhere", python, home)  # fails before pip runs
    assert str(info.value) == (
        "not enough free disk to install test-model: it needs 0.07 GB (the 0.00 GB file, "
        f"0.00 GB of part packages to download, a 64 MiB margin) and {models_dir(home)} has "
        "0.00 GB free"
    )
    assert _site_parts(python) == []


def test_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        install_model("qwen-9000", home=tmp_path)
    assert str(info.value) == (
        "unknown model 'qwen-9000': the known models are qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b, smollm2 (kimmy models list)"
    )
    assert not tmp_path.joinpath("models").exists()


def test_smollm2_installed_is_checked_where_it_lies(tmp_path: Path) -> None:
    part = MODELS["smollm2"].parts[0]
    bundled = package_file(part)
    if bundled is None or importlib.metadata.version(part.package) != part.version:
        pytest.skip(f"{part.requirement} is not installed")  # it would be, into this venv
    # already in this environment: nothing is pip-installed, the file is hashed in place
    assert install_model("smollm2", home=tmp_path) == bundled
    with pytest.raises(ModelConfigError, match="no parts to remove"):
        install_model("smollm2", home=tmp_path, remove_parts=True)
