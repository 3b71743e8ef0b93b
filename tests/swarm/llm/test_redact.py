"""`redact_url`: what may be stored or printed of an endpoint URL."""

from __future__ import annotations

import pytest

from kimmy_swarm.swarm.llm import OpenAIChat, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
        ("http://user:pass@host/v1", "http://***@host/v1"),
        ("https://sk-only-a-token@host:8443/v1", "https://***@host:8443/v1"),
        ("http://u:p@w@host/v1", "http://***@host/v1"),  # '@' inside the password
        ("http://host/v1?api_key=sk-1&api-version=2", "http://host/v1?api_key=***&api-version=***"),
        ("http://host/v1?token", "http://host/v1?token=***"),
        ("http://host/v1#sig=abc", "http://host/v1#***"),
        ("http://[::1/v1?key=x", "***"),  # unparsable, and may hold a secret
        ("not a url", "not a url"),
    ],
)
def test_redact_url_masks_user_info_and_query_values(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_url(shown) == shown  # masking twice changes nothing


def test_the_client_keeps_the_real_url_and_shows_the_masked_one() -> None:
    model = OpenAIChat("http://alice:pw123@127.0.0.1:9/v1?api_key=tok")
    assert model.base_url == "http://alice:pw123@127.0.0.1:9/v1?api_key=tok"
    for shown in (model.name, repr(model)):
        assert "pw123" not in shown and "tok" not in shown.replace("***", "")
        assert "http://***@127.0.0.1:9/v1?api_key=***" in shown
