"""`/openapi.json` for `server.py`: FastAPI's schema of the routes, plus the OpenAI bodies.

The generation routes read their body themselves (so a bad one gets OpenAI's 400, not
FastAPI's 422), which leaves FastAPI nothing to describe; the request and response models of
`protocol.py` are added here, under `components/schemas`, and each `/v1` operation points
at them.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from kimmy_swarm.model.serve.protocol import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    Completion,
    CompletionRequest,
    ErrorBody,
    ModelList,
)

__all__ = ["install_openapi"]

_REF = "#/components/schemas/{model}"
_Model = type[BaseModel]
# path → (method, request body, 200 body, one event of its `stream: true` answer)
_ROUTES: dict[str, tuple[str, _Model | None, _Model, _Model | None]] = {
    "/v1/chat/completions": ("post", ChatCompletionRequest, ChatCompletion, ChatCompletionChunk),
    "/v1/completions": ("post", CompletionRequest, Completion, Completion),
    "/v1/models": ("get", None, ModelList, None),
}


def _json(ref: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ref}}}


def _build(app: FastAPI) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
    models: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (ChatCompletionRequest, "validation"), (CompletionRequest, "validation"),
        (ChatCompletion, "serialization"), (ChatCompletionChunk, "serialization"),
        (Completion, "serialization"), (ModelList, "serialization"),
        (ErrorBody, "serialization"),
    ]  # fmt: skip
    refs, defs = models_json_schema(models, ref_template=_REF)
    schema.setdefault("components", {}).setdefault("schemas", {}).update(defs["$defs"])
    error = _json(refs[(ErrorBody, "serialization")], "OpenAI's error body")
    for path, (method, body, answer, event) in _ROUTES.items():
        op = schema["paths"][path][method]
        ok = _json(refs[(answer, "serialization")], "the answer")
        if event is not None:  # each `data:` line of the stream holds one of these
            ok["content"]["text/event-stream"] = {"schema": refs[(event, "serialization")]}
        op["responses"] = {"200": ok, "default": error}
        if body is not None:
            op["requestBody"] = {"required": True, **_json(refs[(body, "validation")], "")}
            op["requestBody"].pop("description")
    return schema


def install_openapi(app: FastAPI) -> None:
    """Serve the schema with the OpenAI bodies at `app.openapi_url` (built once, on first use)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _build(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override
