"""`OpenAIChat` configuration: flags and environment, validation, and a light import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm import ChatModel, OpenAIChat

ROOT = Path(__file__).resolve().parents[3]


def test_from_env_reads_variables_and_flags_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIMMY_BASE_URL", "http://10.0.0.5:8000/v1/")
    monkeypatch.setenv("KIMMY_MODEL", "env-model")
    monkeypatch.setenv("KIMMY_API_KEY", "env-key")
    from_env = OpenAIChat.from_env(timeout_s=3.0)
    assert (from_env.base_url, from_env.model, from_env.name) == (
        "http://10.0.0.5:8000/v1",
        "env-model",
        "env-model",
    )
    assert from_env._headers["Authorization"] == "Bearer env-key"
    assert from_env.timeout_s == 3.0
    flags = OpenAIChat.from_env(base_url="https://flag.example/v1", model="flag-model")
    assert (flags.base_url, flags.model) == ("https://flag.example/v1", "flag-model")


def test_from_env_without_base_url_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIMMY_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match="--base-url or set KIMMY_BASE_URL"):
        OpenAIChat.from_env(model="m")
    monkeypatch.setenv("KIMMY_BASE_URL", "")  # empty counts as unset
    with pytest.raises(ConfigError, match="no model server configured"):
        OpenAIChat.from_env()


@pytest.mark.parametrize("url", ["localhost:8000/v1", "ftp://host/v1", "", "http://", "/v1"])
def test_bad_base_url_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match="not an http\\(s\\) URL") as info:
        OpenAIChat(url, "m")
    assert repr(url) in str(info.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timeout_s": 0},
        {"timeout_s": -1.0},
        {"timeout_s": float("nan")},
        {"connect_timeout_s": 0},
        {"max_connections": 0},
        {"max_connections": 2.5},
    ],
)
def test_bad_limits_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        OpenAIChat("http://127.0.0.1:1/v1", "m", **kwargs)
    [(name, value)] = kwargs.items()
    assert name in str(info.value) and repr(value) in str(info.value)


def test_empty_model_id_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="model ''"):
        OpenAIChat("http://127.0.0.1:1/v1", "")


def test_satisfies_chat_model_protocol() -> None:
    assert isinstance(OpenAIChat("http://127.0.0.1:1/v1", "m"), ChatModel)


def test_import_stays_light() -> None:
    code = (
        "import sys, kimmy_swarm.swarm.llm; "
        "print(sorted({'openai', 'torch'} & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
