"""Reading and writing a checkpoint's `config.json`, shared by every architecture's config.

data = read_config_json("ckpt/")          # a dict, or ModelConfigError naming the file
write_config_json(config.to_dict(), "out/")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimmy_swarm.model.errors import ModelConfigError

__all__ = ["read_config_json", "write_config_json"]

CONFIG_FILE = "config.json"


def read_config_json(path: str | Path) -> dict[str, Any]:
    """The JSON object in `path/config.json` (or in `path` itself when it is a file).

    Raises:
        ModelConfigError: the file is missing, not readable JSON, or not a JSON object.
    """
    p = Path(path)
    file = p / CONFIG_FILE if p.is_dir() else p
    if not file.is_file():
        raise ModelConfigError(f"no {CONFIG_FILE} at {file}")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelConfigError(f"{file}: not readable JSON ({e})") from e
    if not isinstance(data, dict):
        raise ModelConfigError(f"{file}: expected a JSON object, got {type(data).__name__}")
    return data


def write_config_json(data: dict[str, Any], folder: str | Path) -> Path:
    """Write `data` as `folder/config.json` (the folder is created); returns the file."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    file = out / CONFIG_FILE
    file.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return file
