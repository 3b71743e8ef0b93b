"""`context_overflow`: the "prompt too long" rejections of the servers in use, read with the
numbers they give; other errors are not overflows."""

from __future__ import annotations

import pytest

from kimmy_swarm.swarm.errors import ModelRequestError, ModelServerError
from kimmy_swarm.swarm.llm import ContextOverflow, context_overflow


@pytest.mark.parametrize(
    ("message", "prompt", "context"),
    [
        ("prompt (8007 tokens) + max_tokens (1024) is more than max_model_len 4096", 8007, 4096),
        ("5000 is more than this model's context length (4096 tokens)", None, 4096),
        ("This model's maximum context length is 4096 tokens. However, you requested 5120 "
         "tokens (4096 in the messages, 1024 in the completion).", 4096, 4096),
        ("This model's maximum context length is 4096 tokens. However, your request has "
         "5000 input tokens. Please reduce the length of the input messages.", 5000, 4096),
        ("'max_tokens' or 'max_completion_tokens' is too large: 1024. This model's maximum "
         "context length is 4096 tokens and your request has 3500 input tokens "
         "(1024 > 4096 - 3500).", 3500, 4096),
        ("The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
         5000, 4096),
        ("The input (5000 tokens) is longer than the model's context length (4096 tokens).",
         5000, 4096),
        ("the request exceeds the available context size, try increasing it", None, None),
    ],
)  # fmt: skip
def test_servers_overflow_wordings_are_read(
    message: str, prompt: int | None, context: int | None
) -> None:
    error = ModelRequestError(f"model server at http://x/v1 answered HTTP 400: {message}")
    assert context_overflow(error) == ContextOverflow(prompt, context)


def test_other_errors_are_not_overflows() -> None:
    assert context_overflow(ModelRequestError("HTTP 400: top_logprobs must be <= 20")) is None
    assert context_overflow(ModelRequestError("HTTP 404: the model 'x' does not exist")) is None
    assert context_overflow(ModelServerError("HTTP 500: context length exceeded")) is None
