"""`TranscriptCapture`: what the store keeps of conversations — texts cut at a stated size,
saying so; the setting read from the environment, checked, and recorded with the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.swarm import RunConfig
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.transcript_capture import TranscriptCapture


def test_long_texts_are_cut_at_the_cap_saying_so() -> None:
    cap = TranscriptCapture(max_chars=100)
    msg = cap.message({"role": "user", "content": "x" * 250})
    assert msg["content"] == "x" * 100 + " … [cut at 100 of 250 characters]"
    # a bounded repr (30 items, then "..."): a huge structure is never formatted whole
    assert TranscriptCapture().value(list(range(10_000))).endswith(", 29, ...]")
    assert cap.value(list(range(10_000))).endswith(" … [cut at 100 of 115 characters]")


@pytest.mark.parametrize(
    "env, message",
    [
        ({"KIMMY_TRANSCRIPTS": "partial"}, "'partial'"),
        ({"KIMMY_TRANSCRIPT_MAX_CHARS": "lots"}, "'lots'"),
        ({"KIMMY_TRANSCRIPT_MAX_CHARS": "5"}, "≥ 100"),
    ],
)
def test_bad_transcript_settings_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        TranscriptCapture.from_env(env)


def test_transcript_setting_from_the_environment_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KIMMY_TRANSCRIPTS", "off")
    assert RunConfig().transcripts == TranscriptCapture(content=False)
    stored = RunConfig().to_settings()["transcripts"]
    assert stored == {"content": False, "max_chars": 16_000}
    assert RunConfig.from_settings({"transcripts": stored}).transcripts.content is False
