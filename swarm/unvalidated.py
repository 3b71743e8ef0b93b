"""Pydantic models built from values the runtime produced itself, without re-validation.

A sub-agent's bookkeeping builds a few models (its result, its events). Validating values
this package just made, of the right types by construction, cost more than the rest of
the scheduling put together at 10,000 sub-agents; and `model_construct` is slower than
validation. `trusted` sets the fields directly, filling the defaults of missing ones.
Anything that crosses a boundary (plans, files, API bodies) is validated as usual.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__
_DEFAULTS: dict[type[BaseModel], tuple[dict[str, Any], dict[str, Any]]] = {}
_ALL_SET: dict[type[BaseModel], set[str]] = {}


def _defaults(cls: type[BaseModel]) -> tuple[dict[str, Any], dict[str, Any]]:
    found = _DEFAULTS.get(cls)
    if found is None:
        plain, factories = {}, {}
        for name, field in cls.model_fields.items():
            if field.default_factory is not None:
                factories[name] = field.default_factory
            elif not field.is_required():
                plain[name] = field.default
        found = _DEFAULTS[cls] = (plain, factories)
    return found


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of `cls` holding `values` (trusted to be valid) plus missing defaults.

    `values` becomes the instance's `__dict__` when it names every field: do not reuse it.
    """
    fields_set = _ALL_SET.get(cls)
    if fields_set is None:  # `cls.model_fields` is a slow descriptor: look it up once
        fields_set = _ALL_SET[cls] = set(cls.model_fields)
    if len(values) == len(fields_set):
        data = values
    else:
        plain, factories = _defaults(cls)
        data = {**plain, **values}
        for name, factory in factories.items():
            if name not in values:
                data[name] = factory()
        fields_set = set(values)
    obj = _new(cls)
    _set(obj, "__dict__", data)
    # One shared set per class when every field is set: frozen models never change it,
    # and pydantic copies it before any change (model_copy).
    _set(obj, "__pydantic_fields_set__", fields_set)
    _set(obj, "__pydantic_extra__", None)
    _set(obj, "__pydantic_private__", None)
    return obj


__all__ = ["trusted"]
