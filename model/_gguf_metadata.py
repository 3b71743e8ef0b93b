"""Typed access to a GGUF file's key-value metadata; every error names the file and key.

meta = GGUFMetadata(path, GGUFReader(path).fields)
arch = meta.require("general.architecture")      # GGUFError when missing
eps = meta.get(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gguf import GGUFValueType, ReaderField

from kimmy_swarm.model.errors import GGUFError

__all__ = ["GGUFMetadata"]


def _value(field: ReaderField) -> Any:
    """The Python value of a metadata field: a scalar, a string, or a list of either."""

    def one(part_index: int, kind: GGUFValueType) -> Any:
        part = field.parts[part_index]
        return bytes(part).decode("utf-8") if kind == GGUFValueType.STRING else part[0].item()

    if field.types[0] == GGUFValueType.ARRAY:
        return [one(i, field.types[-1]) for i in field.data]
    return one(field.data[0], field.types[0])


class GGUFMetadata:
    """The metadata of the GGUF file at `path` (`fields`: `GGUFReader.fields`)."""

    def __init__(self, path: Path, fields: Mapping[str, ReaderField]) -> None:
        self.path, self._fields = path, fields

    def get(self, key: str, default: Any = None) -> Any:
        """The value of `key`, `default` when the file lacks it."""
        field = self._fields.get(key)
        return default if field is None else _value(field)

    def require(self, key: str) -> Any:
        """The value of `key`.

        Raises:
            GGUFError: the file lacks it.
        """
        if key not in self._fields:
            raise GGUFError(f"{self.path}: metadata key {key!r} is missing")
        return self.get(key)
