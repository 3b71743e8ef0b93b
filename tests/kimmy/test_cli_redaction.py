"""Credentials in `--base-url` reach the model server, and nothing that is stored or printed:
not `kimmy.db`, not the `run_started` event, not `kimmy show`, not an error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from tests.support.openai_server import OpenAIServer, echo, status

PASSWORD = "s3cretPW"
TOKEN = "tok3nVALUE"


def secret_url(base_url: str) -> str:
    """`http://alice:PASSWORD@127.0.0.1:PORT/v1?api_key=TOKEN` for the server's base URL."""
    return base_url.replace("http://", f"http://alice:{PASSWORD}@") + f"?api_key={TOKEN}"


def assert_clean(text: str | bytes, where: str) -> None:
    blob = text.encode() if isinstance(text, str) else text
    for secret in (PASSWORD, TOKEN):
        assert secret.encode() not in blob, f"{secret!r} leaked into {where}"


def stored_bytes(runs: Path) -> bytes:
    """Every byte under the runs folder (the database and any WAL beside it)."""
    return b"".join(p.read_bytes() for p in sorted(runs.rglob("*")) if p.is_file())


def plan_file(tmp_path: Path) -> Path:
    subtasks = [
        {"id": "r", "role": "researcher", "instructions": "topic"},
        {"id": "w", "role": "writer", "instructions": "combine", "depends_on": ["r"]},
    ]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"goal": "test", "subtasks": subtasks}))
    return path


def test_credentials_in_base_url_are_used_but_never_stored_or_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KIMMY_BASE_URL", raising=False)
    runs = tmp_path / "runs"
    plan = plan_file(tmp_path)
    # the researcher's call fails (HTTP 500, no retries): its stored error names the URL
    with OpenAIServer([status(500)], default=echo()) as srv:
        url = secret_url(srv.base_url)
        code = main(["run", str(plan), "--base-url", url, "--runs-dir", str(runs), "--json",
                     "--retries", "0"])  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 1, err
        # the client did use them: basic auth from the user info, the token in every query
        assert srv.requests and all(r.path.endswith(f"?api_key={TOKEN}") for r in srv.requests)
        assert all(r.headers["authorization"].startswith("Basic ") for r in srv.requests)
        assert_clean(out + err, "the output of kimmy run")
        started = [json.loads(line) for line in out.splitlines() if '"run_started"' in line]
        masked = srv.base_url.replace("http://", "http://***@") + "?api_key=***"
        assert started[0]["settings"]["base_url"] == masked
        assert_clean(stored_bytes(runs), "kimmy.db")
        for flags in ([], ["--events"], ["--json"], ["--events", "--json"]):
            assert main(["show", "latest", "--runs-dir", str(runs), *flags]) == 0
            shown, err = capsys.readouterr()
            assert_clean(shown + err, f"kimmy show {' '.join(flags)}")
        assert masked in shown  # the failure's stored message names the masked URL

        # resume cannot guess the credentials: one line asks for them again ...
        assert main(["resume", "latest", "--runs-dir", str(runs)]) == 2
        _, err = capsys.readouterr()
        assert "pass --base-url" in err and len(err.strip().splitlines()) == 1
        assert_clean(err, "the error of kimmy resume")
        # ... and continues with them from KIMMY_BASE_URL (or --base-url), storing them masked
        monkeypatch.setenv("KIMMY_BASE_URL", url)
        before = len(srv.requests)
        code = main(["resume", "latest", "--runs-dir", str(runs), "--json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert len(srv.requests) - before == 3  # GET /models, then r and w
    assert_clean(out + err, "the output of kimmy resume")
    assert_clean(stored_bytes(runs), "kimmy.db after resume")


def test_unreachable_server_with_credentials_is_one_clean_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://alice:{PASSWORD}@127.0.0.1:9/v1?api_key={TOKEN}"
    code = main(["run", str(plan_file(tmp_path)), "--base-url", url, "--runs-dir", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code == 2 and "cannot reach model server at http://***@127.0.0.1:9/v1" in err
    assert_clean(err, "the error line")
    code = main(["run", str(plan_file(tmp_path)), "--base-url", f"ftp://u:{PASSWORD}@h/v1"])
    _, err = capsys.readouterr()
    assert code == 2 and "ftp://***@h/v1" in err
    assert_clean(err, "the bad-URL error line")
