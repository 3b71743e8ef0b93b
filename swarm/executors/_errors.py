"""Errors that cross the Ray boundary: a worker's exception travels as data, then is rebuilt.

The host encodes a worker's exception (type, message, `retryable`, its attributes, its
traceback, and a pickle of it when that round-trips); the driver rebuilds the original type
so that the scheduler's retry policy and the recorded `ErrorInfo` match the local executor.
An exception that cannot be rebuilt becomes a `RemoteWorkerError` carrying its type name,
message and `retryable` flag.
"""

from __future__ import annotations

import importlib
import pickle
import traceback
from typing import Any

from kimmy_swarm.swarm.errors import SwarmError, is_retryable


class RemoteWorkerError(SwarmError):
    """A worker raised on a Ray host an exception the driver cannot rebuild by type.

    Attributes:
        type_name: the qualified name of the original exception type.
        remote_traceback: the traceback as formatted on the host.
    """

    def __init__(
        self,
        type_name: str,
        message: str,
        *,
        retryable: bool = False,
        remote_traceback: str | None = None,
    ) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.retryable = retryable
        self.remote_traceback = remote_traceback


class HostLostError(RemoteWorkerError):
    """Every resubmission of an attempt found its Ray host dead (retryable)."""

    def __init__(self, message: str) -> None:
        super().__init__("HostLostError", message, retryable=True)


def _plain_state(exc: BaseException) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key, value in getattr(exc, "__dict__", {}).items():
        try:
            pickle.dumps(value)
        except Exception:  # noqa: BLE001  an attribute that cannot travel is left behind
            continue
        state[key] = value
    return state


def encode_error(exc: BaseException) -> dict[str, Any]:
    """The exception as plain data (runs on the host)."""
    blob: bytes | None
    try:
        blob = pickle.dumps(exc)
        pickle.loads(blob)  # some exception types cannot be rebuilt from their args
    except Exception:  # noqa: BLE001  then it is rebuilt by type on the driver
        blob = None
    cls = type(exc)
    return {
        "module": cls.__module__,
        "qualname": cls.__qualname__,
        "message": str(exc),
        "retryable": is_retryable(exc),
        "state": _plain_state(exc),
        "traceback": "".join(traceback.format_exception(exc)),
        "pickled": blob,
    }


def _by_type(info: dict[str, Any]) -> BaseException | None:
    try:
        obj: Any = importlib.import_module(info["module"])
        for part in info["qualname"].split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        return None
    if not (isinstance(obj, type) and issubclass(obj, Exception)):
        return None
    exc = obj.__new__(obj)
    BaseException.__init__(exc, info["message"])
    exc.__dict__.update(info["state"])
    return exc


def decode_error(info: dict[str, Any]) -> BaseException:
    """The worker's exception, rebuilt on the driver with its type and `retryable` flag."""
    exc: BaseException | None = None
    if info["pickled"] is not None:
        try:
            exc = pickle.loads(info["pickled"])
        except Exception:  # noqa: BLE001  a type the driver cannot import: rebuild below
            exc = None
    if exc is None:
        exc = _by_type(info)
    if exc is None:
        return RemoteWorkerError(
            f"{info['module']}.{info['qualname']}",
            info["message"],
            retryable=info["retryable"],
            remote_traceback=info["traceback"],
        )
    if not isinstance(exc, SwarmError):  # unexpected errors keep where they happened
        exc.add_note("raised on a Ray host:\n" + info["traceback"])
    return exc


__all__ = ["HostLostError", "RemoteWorkerError", "decode_error", "encode_error"]
