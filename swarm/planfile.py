"""Reading plans from JSON text or files, turning every defect into one typed error line.

Beyond what `Plan` checks, JSON text may not repeat a key in one object (`json` would keep
the last one silently), nor hold a lone surrogate (`"\\ud800"`: not text, so it cannot be
stored) or a number of more than 4,300 digits; and no plan may nest lists and objects deeper
than `MAX_PLAN_NESTING` (deeper ones crash parsers and serializers with a RecursionError).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kimmy_swarm.swarm.errors import ConfigError, PlanValidationError, validation_problems
from kimmy_swarm.swarm.schema import Plan

#: How deep lists and objects may nest in a plan, counting the plan object itself.
MAX_PLAN_NESTING = 64

#: A surrogate code point, escaped (`\\udc80`) or raw: a hint that a string is not text.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """`object_pairs_hook` of `json.loads`: an object, unless a key repeats."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


def _decode(data: str | bytes, source: str) -> Any:
    try:
        return json.loads(data, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise PlanValidationError(
            f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except UnicodeDecodeError as exc:
        raise PlanValidationError(f"{source}: not UTF-8 text: {exc.reason}") from None
    except _DuplicateKey as exc:
        raise PlanValidationError(
            f"{source}: key {exc.key!r} appears twice in one JSON object; give each key once"
        ) from None
    except RecursionError:
        raise PlanValidationError(_too_deep(source, "")) from None
    except ValueError as exc:  # a number of more digits than int() may convert
        limit = sys.get_int_max_str_digits()
        raise PlanValidationError(
            f"{source}: a number has more than {limit} digits; a plan's numbers have fewer"
            if "digits" in str(exc)
            else f"{source}: not valid JSON: {exc}"
        ) from None


def _check_text(data: Any, source: str) -> None:
    """Every string and key encodes as UTF-8 (a lone surrogate does not)."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        pairs = value.items() if type(value) is dict else enumerate(value)
        for key, item in pairs:
            where = f"{path}.{key}" if path else str(key)
            for text in (key, item):
                if type(text) is str and _SURROGATE.search(text):
                    raise PlanValidationError(
                        f"{source}: {where}: {text[:40]!r} holds a lone surrogate, which is "
                        "not text; give the character itself or a valid UTF-16 pair"
                    )
            if type(item) is dict or type(item) is list:
                stack.append((item, where))


def _too_deep(source: str, where: str) -> str:
    at = f" (at {where})" if where else ""
    return (
        f"{source}: lists and objects nest too deeply{at}; "
        f"a plan may nest them at most {MAX_PLAN_NESTING} levels"
    )


def _check_nesting(data: Any, source: str) -> None:
    """No list or object deeper than `MAX_PLAN_NESTING` (iterative: no recursion limit)."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        for item in value.values() if type(value) is dict else value:
            if type(item) is dict or type(item) is list:
                if depth >= MAX_PLAN_NESTING:
                    raise PlanValidationError(_too_deep(source, _path_to_depth(data)))
                stack.append((item, depth + 1))


def _path_to_depth(data: Any, shown: int = 8) -> str:
    """Where a too-deep plan first goes past the limit: its first `shown` keys, then `…`."""
    path: list[str] = []
    stack: list[tuple[Any, tuple[str, ...]]] = [(data, ())]
    while stack:
        value, path_here = stack.pop()
        if len(path_here) >= MAX_PLAN_NESTING:
            path = list(path_here)
            break
        pairs = value.items() if type(value) is dict else enumerate(value)
        for key, item in pairs:
            if type(item) is dict or type(item) is list:
                stack.append((item, (*path_here, str(key))))
    return ".".join(path[:shown]) + "…"


def _first_errors(exc: ValidationError, limit: int = 3) -> str:
    return validation_problems(
        exc, limit=limit, root="(top level)", show_input=True, count_rest=True
    )


def parse_plan(data: str | bytes | dict[str, Any], *, source: str = "plan") -> Plan:
    """A `Plan` from JSON text or an already-decoded object.

    Raises:
        PlanValidationError: the data is not JSON (or repeats a key in an object, or nests
            deeper than `MAX_PLAN_NESTING`) or not a plan; the message names the field,
            the problem and the value found.
    """
    if isinstance(data, str | bytes):
        suspect = (_SURROGATE if isinstance(data, str) else _SURROGATE_BYTES).search(data)
        data = _decode(data, source)
        if suspect and isinstance(data, dict | list):  # rare: pay for the walk only then
            _check_text(data, source)
    if not isinstance(data, dict):
        raise PlanValidationError(
            f"{source}: a plan is a JSON object with `goal` and `subtasks`, "
            f"got {type(data).__name__}"
        )
    _check_nesting(data, source)
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        ids = []
        subtasks = data.get("subtasks")
        if isinstance(subtasks, list):
            for err in exc.errors():
                loc = err["loc"]
                if len(loc) >= 2 and loc[0] == "subtasks" and isinstance(loc[1], int):
                    item = subtasks[loc[1]] if loc[1] < len(subtasks) else None
                    if isinstance(item, dict) and isinstance(item.get("id"), str):
                        ids.append(item["id"])
        raise PlanValidationError(f"{source}: {_first_errors(exc)}", ids=ids) from None


def load_plan(path: str | Path) -> Plan:
    """Read a plan file (JSON).

    Raises:
        ConfigError: the file is missing or unreadable.
        PlanValidationError: its content is not a valid plan.
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"plan file {str(p)!r} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"plan file {str(p)!r} is a directory; give a .json file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read plan file {str(p)!r}: {exc.strerror}") from None
    return parse_plan(raw, source=str(p))


__all__ = ["MAX_PLAN_NESTING", "load_plan", "parse_plan"]
