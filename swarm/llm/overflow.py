"""Recognizing a server's "the prompt is longer than the context" rejection.

Servers word it differently, and the numbers they give are worth reading: the prompt's
length in the server's own tokens corrects the estimate exactly. Known wordings:

- `kimmy serve`: "prompt (8007 tokens) + max_tokens (1024) is more than max_model_len 4096",
  and "5000 is more than this model's context length (4096 tokens)" (max_tokens alone);
- vLLM: "This model's maximum context length is 4096 tokens. However, you requested 5120
  tokens (4096 in the messages, 1024 in the completion)." / "... your request has 5000
  input tokens ..." / "'max_tokens' or 'max_completion_tokens' is too large: 1024. This
  model's maximum context length is 4096 tokens and your request has 3500 input tokens";
  the V1 engine: "The decoder prompt (length 5000) is longer than the maximum model length
  of 4096.";
- OpenAI: "... maximum context length is 8192 tokens. However, your messages resulted in
  9000 tokens." (`context_length_exceeded`);
- SGLang: "The input (5000 tokens) is longer than the model's context length (4096 tokens).";
- llama.cpp: "the request exceeds the available context size";
- TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 5000 `inputs` tokens".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kimmy_swarm.swarm.errors import ModelRequestError

_PROMPT = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"prompt \((\d+) tokens\)",
        r"has (\d+) input tokens",
        r"\((\d+) in the messages",
        r"prompt \(length (\d+)\)",
        r"input \((\d+) tokens\)",
        r"messages resulted in (\d+) tokens",
        r"Given: (\d+) `inputs` tokens",
    )
]
_CONTEXT = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"max_model_len (\d+)",
        r"maximum context length is (\d+)",
        r"maximum model length of (\d+)",
        r"context length \((\d+) tokens\)",
        r"`max_new_tokens` must be <= (\d+)",
    )
]
_PHRASES = (
    "context length",
    "context window",
    "context size",
    "context_length_exceeded",
    "max_model_len",
    "maximum model length",
    "too long",
)


@dataclass(frozen=True, slots=True)
class ContextOverflow:
    """A rejection as too long, with the numbers the server gave (None: not said)."""

    prompt_tokens: int | None = None
    context_tokens: int | None = None


def context_overflow(error: BaseException) -> ContextOverflow | None:
    """The overflow a `ModelRequestError` reports, or None if it is some other rejection."""
    if not isinstance(error, ModelRequestError):
        return None
    text = str(error)
    context = _first_number(_CONTEXT, text)
    if context is None and not any(phrase in text.lower() for phrase in _PHRASES):
        return None
    return ContextOverflow(prompt_tokens=_first_number(_PROMPT, text), context_tokens=context)


def _first_number(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


__all__ = ["ContextOverflow", "context_overflow"]
