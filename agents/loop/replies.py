"""Reading a model's reply: the JSON in it, wherever the model put it.

A server that enforces `response_format` returns the answer as bare JSON; a weak model on
one that does not wraps it in a code fence or prose, writes a second value after it, or
trails stray braces. Every reader of JSON in model text goes through `json_values`, which
decodes a value from each place one may start, in order:

- `parse_answer`: a final answer (and a text tool call): the whole text when it is JSON,
  else the first JSON object in it (`first_json_value(text, "{")`);
- `agents.parl.action.parse_calls`: the first value in a completion that is a tool call or
  a list of them.

Control characters inside strings (a raw line break) are read as they are, by default:
llama.cpp's JSON grammar lets a constrained model write them, and strict JSON would turn a
schema-valid answer away for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)
#: JSON that allows control characters (a raw line break) inside strings.
_LENIENT = json.JSONDecoder(strict=False)
_STRICT = json.JSONDecoder()


def json_values(text: str, kinds: str = "{[", *, strict: bool = False) -> Iterator[Any]:
    """Every JSON value in `text` that starts with one of `kinds` (`{` objects, `[` arrays),
    decoded from each such character in turn: a value nested in another comes after it,
    and a character that starts no JSON value is passed over.

    Args:
        text: the model's text.
        kinds: the characters a value may start with.
        strict: refuse control characters inside strings (`json.loads`'s default).
    """
    decoder = _STRICT if strict else _LENIENT
    for start, char in enumerate(text):
        if char not in kinds:
            continue
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        yield value


def first_json_value(text: str, kinds: str = "{[", *, strict: bool = False) -> Any | None:
    """The first JSON value in `text` that starts with one of `kinds`, or None (see
    `json_values`)."""
    return next(json_values(text, kinds, strict=strict), None)


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
        return _LENIENT.decode(text)
    except json.JSONDecodeError:
        found = first_json_value(text, "{")
        if found is None:
            raise json.JSONDecodeError("the answer holds no JSON object", text, 0) from None
        return found


__all__ = ["first_json_value", "json_values", "parse_answer"]
