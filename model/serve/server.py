"""The OpenAI-compatible HTTP server of `kimmy serve` (FastAPI + uvicorn).

    engine = AsyncEngine(LLMEngine(model, tokenizer, grammars=GrammarCache(tokenizer)))
    app = create_app(engine, model_name="kimmy-tiny")  # the app starts and stops the engine
    serve(app, host="127.0.0.1", port=8000)             # or ServerThread(app).start()

Routes: `GET /v1/models`, `POST /v1/chat/completions`, `POST /v1/completions` (both with
`stream: true` as server-sent events ending in `data: [DONE]`), `GET /health`,
`GET /metrics` (Prometheus), `GET /openapi.json` (the routes and their bodies). With an API
key every `/v1` route needs `Authorization: Bearer <key>`; `/health`, `/metrics` and
`/openapi.json` stay open for probes, scrapers and client generators.

Errors are OpenAI's `{"error": {"message", "type", "param", "code"}}`: 400 for a body that is
not JSON or breaks a limit (the message and `param` name the field; see `_body`), 401 for a
wrong or missing key, 404 for another model name, 408 for a body not complete within
`body_timeout_s`, 413 for a body over `max_body_bytes`, 500 for a request that failed in the
engine (the others go on), 503 with `Retry-After` when the engine's queue is full — the
swarm's adaptive admission backs off on it — and 503 without it once the engine has stopped.
A client that disconnects, streaming or not, aborts its request: the engine frees its cache
pages and state slot at its next step.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.types import Receive, Scope, Send

from kimmy_swarm.model.errors import CheckpointError, EngineOverloadedError, GenerationError
from kimmy_swarm.model.serve import _server_io as io
from kimmy_swarm.model.serve._body import DEFAULT_BODY_TIMEOUT_S, limited_receive, parse_json_object
from kimmy_swarm.model.serve._openapi import install_openapi
from kimmy_swarm.model.serve._server_io import ApiError
from kimmy_swarm.model.serve.async_engine import AsyncEngine, EngineStoppedError, RequestStream
from kimmy_swarm.model.serve.chat import generation_params, output_mode, render_chat
from kimmy_swarm.model.serve.metrics import CONTENT_TYPE, ServerMetrics
from kimmy_swarm.model.serve.protocol import (
    ChatCompletionRequest,
    CompletionRequest,
    ModelCard,
    ModelList,
)
from kimmy_swarm.model.serve.types import GenerationParams, TokenEvent

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S", "DEFAULT_MAX_BODY_BYTES", "ApiError", "ServerThread",
    "create_app", "serve",
]  # fmt: skip

DEFAULT_MAX_BODY_BYTES = 8 * 2**20
_M = TypeVar("_M", bound=BaseModel)
_T = TypeVar("_T")


class _Guard:
    """Pure ASGI middleware (it must not buffer streams): API key, body size and time,
    status counts."""

    def __init__(
        self,
        app: Any,
        *,
        api_key: str | None,
        max_body_bytes: int,
        body_timeout_s: float,
        metrics: ServerMetrics,
    ) -> None:
        self.app, self.api_key, self.limit, self.metrics = app, api_key, max_body_bytes, metrics
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1"):
            await self.app(scope, receive, send)
            return

        async def counted_send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.metrics.record_request(message["status"])
            await send(message)

        error = self._refusal(scope)
        if error is not None:
            await error.response()(scope, receive, counted_send)
            return
        limited = limited_receive(receive, limit=self.limit, timeout_s=self.body_timeout_s)
        await self.app(scope, limited, counted_send)

    def _refusal(self, scope: Scope) -> ApiError | None:
        headers = dict(scope["headers"])
        if self.api_key is not None:
            auth = headers.get(b"authorization", b"").decode("latin-1")
            given = auth[7:] if auth[:7].lower() == "bearer " else None
            if given is None or not io.same_secret(given, self.api_key):
                what = "no API key was given" if given is None else "the API key is wrong"
                return ApiError(
                    401,
                    f"{what}: send 'Authorization: Bearer <key>' with this server's key",
                    code="invalid_api_key",
                )
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return io.too_large(int(length), self.limit)
        return None


def create_app(
    engine: AsyncEngine,
    *,
    model_name: str | None = None,
    api_key: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
) -> FastAPI:
    """The app serving `engine`; it starts the engine's loop at startup, in the server's
    event loop, and stops it at shutdown (so leave the engine unstarted).

    Args:
        engine: the engine (its `LLMEngine` needs a tokenizer for chat and text prompts).
        model_name: the id listed at `/v1/models` and accepted as `model`
            (default `engine.model_name`).
        api_key: required as a bearer token on `/v1` routes when given.
        max_body_bytes: larger request bodies get 413.
        body_timeout_s: a body not complete this long after the route starts reading it
            gets 408 (a client that sends less than its Content-Length holds nothing open).
    """
    srv = _Server(engine, model_name or engine.model_name, ServerMetrics(engine.stats))

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await engine.start()
        try:
            yield
        finally:
            await engine.stop()

    app = FastAPI(title="kimmy serve", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.add_middleware(
        _Guard, api_key=api_key, max_body_bytes=max_body_bytes, body_timeout_s=body_timeout_s,
        metrics=srv.metrics,
    )  # fmt: skip
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal_error)  # logged by uvicorn as well
    app.add_api_route("/health", srv.health, methods=["GET"])
    app.add_api_route(
        "/metrics", srv.metrics_text, methods=["GET"], response_class=Response,
        responses={200: {"description": "Prometheus text exposition format 0.0.4",
                         "content": {CONTENT_TYPE: {"schema": {"type": "string"}}}}},
    )  # fmt: skip
    app.add_api_route("/v1/models", srv.models, methods=["GET"])
    app.add_api_route("/v1/chat/completions", srv.chat, methods=["POST"])
    app.add_api_route("/v1/completions", srv.completions, methods=["POST"])
    install_openapi(app)
    app.state.kimmy = srv
    return app


async def _api_error(_: Request, exc: ApiError) -> Response:
    return exc.response()


async def _http_error(_: Request, exc: HTTPException) -> Response:
    code = {
        404: "not_found", 405: "method_not_allowed", 408: "request_timeout",
        413: "request_too_large",
    }  # fmt: skip
    headers = dict(exc.headers or {})  # a 405's Allow
    return ApiError(
        exc.status_code, str(exc.detail), code=code.get(exc.status_code), headers=headers or None
    ).response()


async def _internal_error(_: Request, exc: Exception) -> Response:
    return ApiError(500, f"{type(exc).__name__}: {exc}", type="server_error").response()


class _Server:
    """The routes, over one engine."""

    def __init__(self, engine: AsyncEngine, model_name: str, metrics: ServerMetrics) -> None:
        self.engine = engine
        self.model_name = model_name
        self.metrics = metrics
        self.tokenizer = engine.engine.tokenizer
        self.max_model_len = engine.engine.config.max_model_len
        self.created = int(time.time())

    # ---- small routes --------------------------------------------------------------------
    async def health(self) -> Response:
        if self.engine.error is not None:
            body = {"status": "error", "error": f"{type(self.engine.error).__name__}: "
                    f"{self.engine.error}"}  # fmt: skip
            return JSONResponse(body, 503)
        return JSONResponse({"status": "ok"})

    async def metrics_text(self) -> Response:
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    async def models(self) -> Response:
        card = ModelCard(id=self.model_name, created=self.created, max_model_len=self.max_model_len)
        return JSONResponse(ModelList(data=[card]).model_dump())

    # ---- generation ----------------------------------------------------------------------
    async def chat(self, request: Request) -> Response:
        req = await self._parse(request, ChatCompletionRequest)
        tok = self._need_tokenizer("chat completions")
        mode = _checked(output_mode, req, tok)
        prompt = await _checked_async(render_chat, tok, req.messages, req.tools)
        limit = req.token_limit()
        params = generation_params(
            req,
            max_tokens=limit or max(1, self.max_model_len - len(prompt.ids)),
            logprobs=bool(req.logprobs),
            top_logprobs=req.top_logprobs or 0,
            json_schema=mode.json_schema,
            cache_point=prompt.cache_point,
        )
        stream = await self._submit(prompt.ids, params)
        out = io.ChatOutput(f"chatcmpl-{stream.request_id}", self.model_name, tok, mode)
        if req.stream:
            usage = bool(req.stream_options and req.stream_options.include_usage)
            return io.EventStream(self._finishing(stream, out.sse(stream, include_usage=usage)))
        events = await self._collect(request, stream)
        return JSONResponse(out.completion(events, stream).model_dump(mode="json"))

    async def completions(self, request: Request) -> Response:
        req = await self._parse(request, CompletionRequest)
        if isinstance(req.prompt, str):
            ids = self._need_tokenizer("text prompts").encode(req.prompt)
        else:
            ids = list(req.prompt)  # type: ignore[arg-type]  # token ids (validated list[int])
        top = req.logprobs or 0
        params = generation_params(
            req,
            max_tokens=req.max_tokens or 16,
            logprobs=req.logprobs is not None,
            top_logprobs=top,
        )
        stream = await self._submit(ids, params)
        out = io.TextOutput(f"cmpl-{stream.request_id}", self.model_name, self.tokenizer)
        if req.stream:
            usage = bool(req.stream_options and req.stream_options.include_usage)
            return io.EventStream(self._finishing(stream, out.sse(stream, include_usage=usage)))
        events = await self._collect(request, stream)
        return JSONResponse(out.completion(events, stream).model_dump(mode="json"))

    # ---- helpers -------------------------------------------------------------------------
    async def _parse(self, request: Request, model: type[_M]) -> _M:
        data = parse_json_object(await request.body())
        try:
            req = model.model_validate(data, context={"max_model_len": self.max_model_len})
        except ValidationError as e:
            param, message = io.first_problem(e)
            raise ApiError(400, message, param=param) from e
        name = getattr(req, "model", None)
        if name is not None and name != self.model_name:
            raise ApiError(
                404,
                f"the model {name!r} does not exist; this server serves {self.model_name!r}",
                param="model",
                code="model_not_found",
            )
        return req

    def _need_tokenizer(self, what: str) -> Any:
        if self.tokenizer is None:
            raise ApiError(400, f"{what} need a tokenizer; this engine has none (send ids)")
        return self.tokenizer

    async def _submit(self, ids: list[int], params: GenerationParams) -> RequestStream:
        grammars = self.engine.engine.grammars
        if params.json_schema is not None and grammars is not None:
            # compiled here, off the engine's step thread (which would stall every request)
            await _checked_async(grammars.compile, params.json_schema)
        try:
            return self.engine.submit(ids, params)
        except GenerationError as e:
            raise ApiError(400, str(e)) from e
        except EngineOverloadedError as e:
            raise io.overloaded(e) from e
        except EngineStoppedError as e:
            raise _stopped(e) from e

    async def _collect(self, request: Request, stream: RequestStream) -> list[TokenEvent]:
        """All events of `stream`; aborts it if the client goes away first."""
        try:
            events = await io.unless_disconnected(request.receive, io.collect(stream))
        except GenerationError as e:
            raise ApiError(400, str(e)) from e
        except EngineOverloadedError as e:  # the queue filled between submit and the step
            raise io.overloaded(e) from e
        except EngineStoppedError as e:
            raise _stopped(e) from e
        finally:
            stream.abort()  # no-op once finished
            self.metrics.sample_tokens()
        if events is None:  # nobody will read the answer
            return []
        return events

    async def _finishing(self, stream: RequestStream, chunks: AsyncIterator[bytes]) -> Any:
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            stream.abort()
            self.metrics.sample_tokens()


def _stopped(e: EngineStoppedError) -> ApiError:
    return ApiError(503, str(e), type="server_error", code="engine_stopped")


def _checked(fn: Callable[..., _T], *args: Any) -> _T:
    try:
        return fn(*args)
    except GenerationError as e:
        raise ApiError(400, str(e)) from e
    except CheckpointError as e:
        raise ApiError(500, str(e), type="server_error") from e


async def _checked_async(fn: Callable[..., _T], *args: Any) -> _T:
    """`fn(*args)` in a worker thread (tokenizing, compiling), errors as `ApiError`s."""
    return await asyncio.to_thread(_checked, fn, *args)


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Run `app` with uvicorn until interrupted (binds loopback unless told otherwise)."""
    import uvicorn

    with contextlib.suppress(KeyboardInterrupt):
        uvicorn.run(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=5)


class ServerThread:
    """`app` served by uvicorn in a background thread of this process, on a socket bound
    before the thread starts (`port=0`: a free port, no race). Owned: `start()` then
    `stop()`, or `with ServerThread(app) as server:`. Used by `swarm.llm.LocalModel` and
    the tests.
    """

    def __init__(self, app: FastAPI, *, host: str = "127.0.0.1", port: int = 0) -> None:
        import uvicorn

        self._socket = socket.create_server((host, port), backlog=4096)
        self.host, self.port = self._socket.getsockname()[:2]
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="kimmy-serve",
            daemon=True,  # never keeps a finished program alive
        )

    @property
    def base_url(self) -> str:
        """The API root, e.g. `http://127.0.0.1:41234/v1`."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self, *, timeout_s: float = 60.0) -> ServerThread:
        """Start serving; returns once the app has started (engine loop running).

        Raises:
            RuntimeError: the app failed to start (uvicorn logged why) or took too long.
        """
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server at {self.base_url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stop accepting, finish or cancel requests, stop the engine; wait for the thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join()
        self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
