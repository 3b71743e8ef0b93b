"""`kimmy serve`: the tiny server in a subprocess answers /health and /v1/models; user errors
exit 2 with one line naming the bad value; the command module loads without torch."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kimmy_swarm.cli.app import main

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_tiny_answers_health_and_lists_its_model() -> None:
    port = _free_port()
    cmd = [sys.executable, "-P", "-m", "kimmy_swarm.cli", "serve", "--tiny", "--port", str(port)]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 90  # a bound for a hung start, not a speed check
        while True:
            assert proc.poll() is None, proc.communicate()[0]
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "kimmy serve --tiny did not start"
                time.sleep(0.2)
        assert health.json() == {"status": "ok"}
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).json()
        assert [m["id"] for m in models["data"]] == ["kimmy-tiny"]
    finally:
        proc.terminate()
        out = proc.communicate(timeout=60)[0]
    first = out.splitlines()[0]
    assert first.startswith("kimmy: serving kimmy-tiny (a tiny KimiLinear with random weights")
    assert f"http://127.0.0.1:{port}/v1" in first


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["serve", "{tmp}/missing"], "model '{tmp}/missing' is not a known model name ("),
        (["serve", "{tmp}/missing"], "smollm2, tiny; kimmy models list), a .gguf file"),
        (["serve", "{tmp}"], "MODEL_DIR {tmp}: no config.json"),  # not a checkpoint
        (["serve"], "give either MODEL"),
        (["serve", "{tmp}", "--tiny"], "give either MODEL"),
        (["serve", "--tiny", "--engine", "vllm"], "--tiny needs --engine kimmy"),
        (["serve", "{tmp}", "--engine", "vllm", "--num-pages", "9"], "--num-pages 9 sizes kimmy's"),
        (["serve", "--tiny", "--tensor-parallel-size", "2"], "--tensor-parallel-size 2 needs"),
    ],
)
def test_user_errors_exit_2_naming_the_problem(
    args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(tmp=tmp_path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kimmy: error: ") and says.format(tmp=tmp_path) in err
    assert len(err.splitlines()) == 1


def test_the_command_module_loads_without_torch() -> None:
    code = "import sys, kimmy_swarm.cli.commands.serve; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["False"], out.stderr


def test_engine_vllm_says_plainly_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here")
    assert main(["serve", str(tmp_path), "--engine", "vllm"]) == 2
    assert "kimmy: error: vLLM is not installed: pip install vllm" in capsys.readouterr().err
