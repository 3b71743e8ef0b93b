"""`kimmy serve`'s API key: from a file or the environment (neither shows in `ps`); on the
command line it still works, with a warning that it is visible to every local user."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from kimmy_swarm.cli.app import main
from tests.support.serve_process import tiny_server


def test_the_key_from_a_file_is_required_and_never_on_the_command_line(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-from-file\n", encoding="utf-8")
    with tiny_server("--api-key-file", str(key_file)) as url:
        assert httpx.get(f"{url}/models", timeout=30).status_code == 401
        ok = httpx.get(f"{url}/models", headers={"Authorization": "Bearer sk-from-file"})
        assert ok.status_code == 200


def test_a_key_on_the_command_line_draws_a_warning(capsys: pytest.CaptureFixture[str]) -> None:
    # no model given: the command stops right after reading the key (exit 2), serving nothing
    assert main(["serve", "--api-key", "sk-visible"]) == 2
    err = capsys.readouterr().err
    assert "warning: --api-key on the command line is visible" in err
    assert "KIMMY_API_KEY or --api-key-file" in err


def test_the_environment_gives_the_key_without_a_warning(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMMY_API_KEY", "sk-env")
    assert main(["serve"]) == 2  # stops at the missing model, after the key
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        ("", (), "the first line is empty"),
        (None, (), "cannot read it"),
        ("sk-x\n", ("--api-key", "sk-y"), "give the key once"),
    ],
    ids=["empty", "missing", "both"],
)
def test_a_bad_key_file_is_one_error_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    extra: tuple[str, ...],
    message: str,
) -> None:
    key_file = tmp_path / "key"
    if content is not None:
        key_file.write_text(content, encoding="utf-8")
    assert main(["serve", "--tiny", "--api-key-file", str(key_file), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
