"""Reading a model's reply: the JSON in it, wherever the model put it.

A server that enforces `response_format` returns the answer as bare JSON; a weak model on
one that does not wraps it in a code fence or prose, writes a second object after it, or
trails stray braces. `parse_answer` takes the whole text when it is JSON, else the first
JSON object in it. Control characters inside strings (a raw line break) are read as they
are: llama.cpp's JSON grammar lets a constrained model write them, and strict JSON would
turn a schema-valid answer away for it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
#: JSON that allows control characters (a raw line break) inside strings.
_DECODER = json.JSONDecoder(strict=False)


def parse_answer(content: str | None) -> Any:
    """The JSON of a final answer: the whole text when it is JSON (a code fence around it
    stripped), else the FIRST JSON object in it — prose, a fence, a second object or stray
    braces around it tolerated (weak models; servers that do not enforce `response_format`).

    Raises:
        json.JSONDecodeError: the text is not JSON and holds no JSON object.
    """
    text = (content or "").strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError:
        found = first_json_object(text)
        if found is None:
            raise json.JSONDecodeError("the answer holds no JSON object", text, 0) from None
        return found


def first_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in `text` (decoded from each `{` in turn), or None."""
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


__all__ = ["first_json_object", "parse_answer"]
