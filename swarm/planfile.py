"""Reading plans from JSON text or files, turning every defect into one typed error line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarm.errors import ConfigError, PlanValidationError, validation_problems
from swarm.schema import Plan


def _first_errors(exc: ValidationError, limit: int = 3) -> str:
    return validation_problems(
        exc, limit=limit, root="(top level)", show_input=True, count_rest=True
    )


def parse_plan(data: str | bytes | dict[str, Any], *, source: str = "plan") -> Plan:
    """A `Plan` from JSON text or an already-decoded object.

    Raises:
        PlanValidationError: the data is not JSON or not a plan; the message names the
            field, the problem and the value found.
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise PlanValidationError(
                f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from None
        except UnicodeDecodeError as exc:
            raise PlanValidationError(f"{source}: not UTF-8 text: {exc.reason}") from None
    if not isinstance(data, dict):
        raise PlanValidationError(
            f"{source}: a plan is a JSON object with `goal` and `subtasks`, "
            f"got {type(data).__name__}"
        )
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


__all__ = ["load_plan", "parse_plan"]
