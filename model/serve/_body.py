"""Reading a request body for `server.py`: within a size limit and a time limit, then parsed
as a JSON object that Python can hold and the tokenizer can encode.

Each check turns what would be a 500 (or a connection held open forever) into a 4xx that
names the problem: a body that nests past `MAX_JSON_DEPTH` (`json.loads` recurses, and
5,000 levels overflow it), a string holding a lone UTF-16 surrogate (`"\\ud800"` is valid
JSON but not Unicode, so encoding it fails later), the non-JSON constants `NaN` and
`Infinity` that Python's parser accepts, a body shorter than its Content-Length (408 after
`timeout_s`).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import Message, Receive

from kimmy_swarm.model.serve._server_io import ApiError, too_large

__all__ = ["DEFAULT_BODY_TIMEOUT_S", "MAX_JSON_DEPTH", "limited_receive", "parse_json_object"]

MAX_JSON_DEPTH = 64  # nested arrays/objects; OpenAI's own schemas allow 10 levels
DEFAULT_BODY_TIMEOUT_S = 30.0  # the whole body must arrive within this, from its first read
_SURROGATE = re.compile("[\ud800-\udfff]")  # only a lone one survives `json.loads`


def limited_receive(receive: Receive, *, limit: int, timeout_s: float) -> Receive:
    """`receive` for the app: raises 413 past `limit` body bytes (a chunked body has no
    Content-Length to refuse up front) and 408 when the body is not complete `timeout_s`
    after the app first asks for it. Once the body is complete, messages (the disconnect
    that `_server_io.unless_disconnected` waits for) pass without a time limit."""
    seen = 0
    deadline: float | None = None
    complete = False

    async def limited() -> Message:
        nonlocal seen, deadline, complete
        if complete:
            return await receive()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s if deadline is None else deadline
        try:
            async with asyncio.timeout_at(deadline):
                message = await receive()
        except TimeoutError as e:
            raise HTTPException(
                408,
                f"the request body did not arrive within {timeout_s:g} s ({seen} bytes came; "
                "is it shorter than its Content-Length?)",
            ) from e
        complete = message["type"] != "http.request" or not message.get("more_body", False)
        seen += len(message.get("body", b""))
        if seen > limit:
            raise HTTPException(413, too_large(seen, limit).message)
        return message

    return limited


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object.

    Raises:
        ApiError: 400 naming the problem: not JSON, not an object, nested deeper than
            `MAX_JSON_DEPTH`, `NaN`/`Infinity`, or a string with a lone surrogate (`param`
            names where).
    """
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except RecursionError as e:
        raise ApiError(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels") from e
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise ApiError(400, f"the body is not valid JSON: {e}") from e
    if not isinstance(data, dict):
        raise ApiError(400, f"the body must be a JSON object; got {type(data).__name__}")
    _check_tree(data)
    return data


def _check_tree(data: dict[str, Any]) -> None:
    """Depth and surrogates, iteratively (the tree may be deep enough to break recursion)."""
    stack: list[tuple[Any, int, str]] = [(data, 1, "")]
    while stack:
        value, depth, where = stack.pop()
        if isinstance(value, str):
            if (hit := _SURROGATE.search(value)) is not None:
                raise ApiError(
                    400,
                    f"{where or '(body)'}: the string holds a lone UTF-16 surrogate "
                    f"({ascii(hit.group())[1:-1]}), which is not valid Unicode; send the "
                    "character itself or a complete surrogate pair",
                    param=where or None,
                )
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_JSON_DEPTH:
            raise ApiError(400, f"the body nests deeper than {MAX_JSON_DEPTH} levels (at {where})")
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str):
                stack.append((key, depth, f"{where}.{key}" if where else key))  # a key too
            part = f"{where}[{key}]" if isinstance(key, int) else (
                f"{where}.{key}" if where else key
            )  # fmt: skip
            stack.append((item, depth + 1, part))
