"""`OpenAIChat`: a `ChatModel` for any OpenAI-compatible server (vLLM, SGLang, llama.cpp, …).

It speaks the chat-completions API through `httpx.AsyncClient`s (not the `openai` package:
fewer layers, and precise control of timeouts and pool size), their connections split into
small shards so that 1,000+ concurrent calls stay cheap (see `_SHARD_CONNECTIONS`). It never
retries: every failure is raised as a typed `swarm.errors.ModelError` whose `retryable` flag the
scheduler obeys, so there is one retry policy in the system, not two.

Example:
    async with OpenAIChat("http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B") as model:
        answer = await model.chat([{"role": "user", "content": "Hi"}], max_tokens=16)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit

import httpx

from kimmy_swarm.swarm.errors import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelTimeoutError,
)
from kimmy_swarm.swarm.llm._openai_wire import (
    card_context_length,
    endpoint,
    model_cards,
    parse_completion,
    require_positive,
    snippet,
    status_error,
    validate_base_url,
    wire_message,
)
from kimmy_swarm.swarm.llm.call_timeout import CallLimit, CallTimeoutPolicy, CallTimeouts
from kimmy_swarm.swarm.llm.circuit import CircuitBreaker, CircuitSettings
from kimmy_swarm.swarm.llm.redact import redact_url
from kimmy_swarm.swarm.llm.server_profile import ServerProfile
from kimmy_swarm.swarm.llm.stream_chunks import ChunkAssembler, DeltaFn, StreamError, sse_data
from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.capabilities import Capabilities

ENV_BASE_URL = "KIMMY_BASE_URL"
ENV_MODEL = "KIMMY_MODEL"
ENV_API_KEY = "KIMMY_API_KEY"

#: Writing a request and waiting for a pooled connection, unless `timeout_s` fixes them too.
DEFAULT_WAIT_S = 120.0


def capped_max_tokens(requested: int | None, cap: int | None) -> int | None:
    """`requested` held to `cap` (a call that asks for nothing gets the cap)."""
    if cap is None:
        return requested
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ConfigError(f"max_tokens_cap {cap!r} is not an integer >= 1")
    return cap if requested is None else min(requested, cap)


class OpenAIChat:
    """A pooled client for the `/chat/completions` endpoint of an OpenAI-compatible server.

    Args:
        base_url: The API root, e.g. `http://127.0.0.1:8000/v1` (a trailing slash is ignored).
        model: The model id to request. `None` means: the first id the server lists at
            `GET {base_url}/models`, looked up once, on the first call.
        api_key: Sent as `Authorization: Bearer <api_key>` when given.
        timeout_s: A fixed limit for one call: reading, writing and waiting for a pooled
            connection. `None` (the default): each call's read timeout is estimated from its
            size and the speed the server has shown (`swarm.llm.call_timeout`), between 15 s
            and 30 min, and at least 120 s until a call has finished; writing and pool waits
            get `DEFAULT_WAIT_S`.
        timeout_policy: How those estimates are made (only with `timeout_s=None`).
        connect_timeout_s: Limit for opening a TCP connection.
        max_connections: Connections open at most; pass the swarm's `max_concurrency` so
            every in-flight sub-agent can hold a connection without queueing in the client.
            Callers beyond it wait (up to `timeout_s`, else `DEFAULT_WAIT_S`) in one FIFO
            queue.
        headers: Extra headers sent with every request.
        context_length: The model's context length in tokens (prompt + completion), when
            known otherwise; `check()` replaces it with what the server's `/models` card
            says (`max_model_len`, `context_length` or `context_window`), if it says.
        capabilities: What the server honours (`swarm.llm.connect` probes it); None: not
            known, taken to honour everything.
        max_tokens_cap: The most tokens any call may ask the model to generate (None: as
            each call asks). A slow or weak model that rambles to its roles' `max_tokens`
            gets shorter answers (`--max-answer-tokens`); a call asking less is sent as it is.
        circuit: When this endpoint's circuit breaker opens, probes and gives up
            (`swarm.llm.circuit`; default `CircuitSettings()`: 5 connection failures in a
            row open it, calls then wait, and fail with `ModelUnreachableError` after 60 s).

    Attributes:
        profile: What the client knows of its server (`ServerProfile`): capabilities,
            context length, and the learned token estimate its call timeouts and its
            sub-agents' token budget share. It pickles with the client.
        call_timeouts: The adaptive read timeouts and the speeds learned for them; None with
            a fixed `timeout_s`. Not pickled: a rebuilt client learns the speeds afresh.

    Raises:
        ConfigError: A bad URL, model, timeout, pool size, context length or answer cap.
    """

    #: `chat` streams its answer when given `on_delta` (`swarm.llm.stream_chunks`).
    streams = True

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        api_key: str | None = None,
        timeout_s: float | None = None,
        timeout_policy: CallTimeoutPolicy | None = None,
        connect_timeout_s: float = 10.0,
        max_connections: int = 256,
        headers: Mapping[str, str] | None = None,
        context_length: int | None = None,
        capabilities: Capabilities | None = None,
        max_tokens_cap: int | None = None,
        circuit: CircuitSettings | None = None,
    ) -> None:
        self.base_url = validate_base_url(base_url)
        if model is not None and not (isinstance(model, str) and model.strip()):
            raise ConfigError(f"model {model!r} is not a model id; expected a non-empty string")
        if timeout_s is not None:
            require_positive("timeout_s", timeout_s)
            if timeout_policy is not None:
                raise ConfigError(
                    f"timeout_policy {timeout_policy!r} applies to adaptive timeouts only; "
                    f"pass timeout_s=None with it, not {timeout_s!r}"
                )
        require_positive("connect_timeout_s", connect_timeout_s)
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise ConfigError(f"max_connections {max_connections!r} is not an integer >= 1")
        if max_connections < 1:
            raise ConfigError(f"max_connections {max_connections!r} is not an integer >= 1")
        capped_max_tokens(None, max_tokens_cap)  # refuses a bad cap
        self._model = model
        self.profile = ServerProfile(capabilities=capabilities, context_length=context_length)
        self._max_tokens_cap = max_tokens_cap
        #: The constructor's options, to rebuild the client elsewhere (see `__reduce__`).
        self._options: dict[str, Any] = {
            "api_key": api_key,
            "timeout_s": timeout_s,
            "timeout_policy": timeout_policy,
            "connect_timeout_s": connect_timeout_s,
            "max_connections": max_connections,
            "headers": dict(headers or {}),
            "max_tokens_cap": max_tokens_cap,
            "circuit": circuit,
        }
        #: The model id, or `auto@<base_url>` until the first call has asked the server
        #: (credentials in the URL masked: names and messages get stored and printed).
        self.name: str = model or f"auto@{redact_url(self.base_url)}"
        self.timeout_s: float | None = None if timeout_s is None else float(timeout_s)
        self.call_timeouts: CallTimeouts | None = (
            CallTimeouts(timeout_policy) if timeout_s is None else None
        )
        self.max_connections = max_connections
        self._wait_s = self.timeout_s or DEFAULT_WAIT_S
        self._timeout = httpx.Timeout(self._wait_s, connect=float(connect_timeout_s))
        self._calls_in_flight = 0
        self._headers = {"Accept": "application/json", **(headers or {})}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: _ShardedClient | None = None
        self._ssl: ssl.SSLContext | None = None
        self._resolve_lock: asyncio.Lock | None = None
        self._closed = False
        #: This endpoint's circuit breaker: calls wait while the server refuses connections.
        self.circuit = CircuitBreaker(redact_url(self.base_url), circuit or CircuitSettings())

    @classmethod
    def from_env(
        cls,
        *,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        **kwargs: Any,
    ) -> OpenAIChat:
        """Build a client from flags, falling back to environment variables.

        `KIMMY_BASE_URL`, `KIMMY_MODEL` and `KIMMY_API_KEY` fill in what the flags leave
        out: flags win, and empty values count as unset. Without a model id, the first model
        the server lists is used (see the class docstring). `kwargs` go to the constructor.

        Raises:
            ConfigError: Neither the flag nor the variable gives a base URL.
        """
        base_url = base_url or os.environ.get(ENV_BASE_URL) or None
        if base_url is None:
            raise ConfigError(
                f"no model server configured: pass --base-url or set {ENV_BASE_URL} "
                "(e.g. http://127.0.0.1:8000/v1)"
            )
        model = model or os.environ.get(ENV_MODEL) or None
        api_key = api_key or os.environ.get(ENV_API_KEY) or None
        return cls(base_url, model, api_key=api_key, **kwargs)

    @property
    def model(self) -> str | None:
        """The model id requested, or `None` while it is still to be asked of the server."""
        return self._model

    @property
    def context_length(self) -> int | None:
        """The context length: the server's, else the one given, else None."""
        return self.profile.context_length

    @property
    def capabilities(self) -> Capabilities | None:
        """What the server honours; None: not known, taken to honour everything."""
        return self.profile.capabilities

    @property
    def max_tokens_cap(self) -> int | None:
        """The most tokens any call may ask the model to generate (None: as each asks)."""
        return self._max_tokens_cap

    async def chat(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        on_delta: DeltaFn | None = None,
    ) -> ChatResponse:
        """POST one chat completion; options left as `None` are not sent.

        With `on_delta` the answer is streamed (`stream=True`): each piece of its text and of
        its tool calls goes to `on_delta` as it arrives, and the `ChatResponse` returned is
        the one a call without it would return (`swarm.llm.stream_chunks`).

        Raises:
            ModelRateLimitedError: 429 or 503 (`retry_after` from the `Retry-After` header).
            ModelServerError: Another 5xx.
            ModelTimeoutError: No answer within the call's limit (or a 408); the message says
                the limit and how it was estimated.
            ModelConnectionError: Refused, reset or broken connection.
            ModelUnreachableError: The circuit breaker gave up on the server (it refused
                connections for `CircuitSettings.give_up_s`); not retried.
            ModelRequestError: Another 4xx; carries the server's error message.
            ModelResponseError: A 2xx whose body is not a chat completion (truncated, not
                JSON, fields missing); retryable, as the server accepted the request.
            ConfigError: No model given and the server lists none.
        """
        max_tokens = capped_max_tokens(max_tokens, self._max_tokens_cap)
        body: dict[str, Any] = {
            "model": await self._model_id(),
            "messages": [wire_message(m) for m in messages],
        }
        options: dict[str, Any] = {
            "tools": list(tools) if tools is not None else None,
            "tool_choice": tool_choice,
            "response_format": response_format,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": [stop] if isinstance(stop, str) else (list(stop) if stop else None),
            "seed": seed,
            "logprobs": True if logprobs else None,
            "top_logprobs": top_logprobs,
        }
        body.update({key: value for key, value in options.items() if value is not None})
        if on_delta is not None:
            body.update(stream=True, stream_options={"include_usage": True})
        url = endpoint(self.base_url, "chat/completions")
        circuit = self.circuit
        while True:
            probe = await circuit.admit()  # waits while the server refuses connections
            try:
                if self.call_timeouts is not None:
                    answer = await self._timed_chat(
                        self.call_timeouts, url, body, max_tokens, on_delta
                    )
                else:
                    status, data = await self._post(url, body, None, on_delta)
                    answer = parse_completion(data, redact_url(url), status)
            except ModelError as exc:
                circuit.failed(exc, probe=probe)
                if isinstance(exc, ModelConnectionError) and not circuit.closed:
                    continue  # the breaker is open: wait for the server, spend no attempt
                raise
            except BaseException:
                circuit.aborted(probe=probe)
                raise
            circuit.succeeded()
            return answer

    async def list_models(self) -> list[str]:
        """The model ids the server lists at `GET {base_url}/models`."""
        return [card["id"] for card in await self._list_models(self._http())]

    async def check(self) -> None:
        """Preflight: the server answers `GET /models` and, without a model id, lists one.

        The model's card there sets `context_length` when it states one (vLLM and
        `kimmy serve` do, as `max_model_len`).

        It uses a one-off connection closed before it returns, so it may run in its own
        `asyncio.run` before the run that makes the calls.

        Raises:
            ModelConnectionError: "cannot reach model server at URL: <reason>".
            ModelError: The server answered with an error status (e.g. 401 for a bad key).
            ConfigError: No model id was given and the server lists none.
        """
        self._ensure_open()
        limits = httpx.Limits(max_connections=1)
        async with httpx.AsyncClient(
            headers=self._headers, timeout=self._timeout, limits=limits, verify=self._ssl_context()
        ) as client:
            cards = await self._list_models(client)
        self._adopt(cards)

    async def aclose(self) -> None:
        """Close the pooled connections; later calls raise `RuntimeError`."""
        self._closed = True
        pool, loop = self._pool, self._loop
        self._pool = self._loop = None
        # Connections opened under another (usually finished) loop cannot be closed from
        # this one; dropping them lets the garbage collector close their sockets.
        if pool is not None and loop is asyncio.get_running_loop():
            await pool.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"OpenAIChat(base_url={redact_url(self.base_url)!r}, model={self._model!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the constructor's arguments (a Ray host rebuilds the model so): the
        copy opens its own connections; a model id already looked up, the answer cap and
        the profile (capabilities, context length, token estimate) travel with it, so a Ray
        host's agent loop adapts and sizes prompts the same way."""
        return (_rebuild, (self.base_url, self._model, self._options), {"profile": self.profile})

    # --- internals ---------------------------------------------------------------------

    async def _timed_chat(
        self,
        timeouts: CallTimeouts,
        url: str,
        body: dict[str, Any],
        max_tokens: int | None,
        on_delta: DeltaFn | None = None,
    ) -> ChatResponse:
        """POST `body` under its own read timeout (`CallTimeouts.limit`) and learn from it:
        the time it took (pool waits included: a longer limit, never a shorter one) and the
        usage the server reports. The prompt's tokens are estimated by the profile's learned
        `TokenEstimate`."""
        prompt_tokens = self.profile.tokens.prompt_tokens(body["messages"], body.get("tools"))
        self._calls_in_flight += 1
        try:
            limit = timeouts.limit(prompt_tokens, max_tokens, load=self._calls_in_flight)
            started = time.monotonic()
            status, data = await self._post(url, body, limit, on_delta)
            seconds = time.monotonic() - started
        finally:
            self._calls_in_flight -= 1
        answer = parse_completion(data, redact_url(url), status)
        timeouts.observe(prompt_tokens, answer.usage, seconds, load=limit.load)
        return answer

    def _http(self) -> _ShardedClient:
        """The connection pool of the running event loop.

        Pooled connections belong to the loop that opened them, so the pool of an earlier
        (finished) loop is replaced rather than reused, which would fail with "Event loop is
        closed". Its sockets are left to the garbage collector; keep a client to one loop.
        """
        self._ensure_open()
        loop = asyncio.get_running_loop()
        if self._pool is None or self._loop is not loop:
            self._loop = loop
            self._resolve_lock = asyncio.Lock()
            self._pool = _ShardedClient(
                self.max_connections,
                self._wait_s,
                headers=self._headers,
                timeout=self._timeout,
                verify=self._ssl_context(),
            )
        return self._pool

    def _ssl_context(self) -> ssl.SSLContext:
        """One SSL context shared by every client: building one loads the CA bundle (~0.1 s).

        Plain-http servers never use it (redirects are not followed), so they get a bare one.
        """
        if self._ssl is None:
            https = urlsplit(self.base_url).scheme == "https"
            self._ssl = (
                httpx.create_ssl_context() if https else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            )
        return self._ssl

    async def _model_id(self) -> str:
        if self._model is not None:
            return self._model
        self._http()  # binds the lock to this loop
        assert self._resolve_lock is not None
        async with self._resolve_lock:
            if self._model is None:
                self._adopt(await self._list_models(self._http()))
        assert self._model is not None
        return self._model

    def _adopt(self, cards: list[dict[str, Any]]) -> None:
        """The first model listed when none was given; the context length its card states."""
        if self._model is None:
            if not cards:
                raise ConfigError(
                    f"model server at {redact_url(self.base_url)} lists no models at /models; "
                    f"pass --model or set {ENV_MODEL}"
                )
            self._model = self.name = cards[0]["id"]
        card = next((c for c in cards if c["id"] == self._model), None)
        if card is None and len(cards) == 1:  # one model served, under another name
            card = cards[0]
        told = card_context_length(card) if card is not None else None
        if told is not None:
            self.profile.context_length = told

    def _ensure_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self!r} is closed")

    async def _list_models(
        self, client: httpx.AsyncClient | _ShardedClient
    ) -> list[dict[str, Any]]:
        url = endpoint(self.base_url, "models")
        response, data = await self._send(client, "GET", url, None)
        return model_cards(data, redact_url(url), response.status_code)

    async def _send(
        self,
        client: httpx.AsyncClient | _ShardedClient,
        method: str,
        url: str,
        body: dict[str, Any] | None,
        limit: CallLimit | None = None,
    ) -> tuple[httpx.Response, Any]:
        """One request; every failure becomes a `ModelError`. Returns the response and its JSON.

        `limit`: the request's own read timeout (connect, write and pool waits as the
        client's). The errors name the URL with its credentials masked: they get stored and
        printed.
        """
        shown = redact_url(url)
        with self._transport_errors(url, limit, "no HTTP status"):
            if limit is None:
                response = await client.request(method, url, json=body)
            else:  # only the pool takes None: to httpx it means no limit at all
                response = await client.request(
                    method, url, json=body, timeout=self._timeout_for(limit)
                )
        if not response.is_success:
            raise status_error(response, shown)
        try:
            return response, response.json()
        except ValueError as exc:
            raise ModelResponseError(
                f"model server at {shown} answered HTTP {response.status_code} with a body that "
                f"is not JSON: {snippet(response.text)}",
                status=response.status_code,
            ) from exc

    async def _post(
        self, url: str, body: dict[str, Any], limit: CallLimit | None, on_delta: DeltaFn | None
    ) -> tuple[int, Any]:
        """POST a chat completion (streamed when `on_delta` is given); its status and JSON."""
        if on_delta is None:
            response, data = await self._send(self._http(), "POST", url, body, limit)
            return response.status_code, data
        return await self._send_streamed(url, body, limit, on_delta)

    async def _send_streamed(
        self, url: str, body: dict[str, Any], limit: CallLimit | None, on_delta: DeltaFn
    ) -> tuple[int, Any]:
        """`_send` for `stream=True`: the chunks go to `on_delta` as they arrive; returns the
        status and the completion they add up to. Failures are the `ModelError`s of `_send`
        (a stream cut short or reporting an error is a `ModelResponseError`)."""
        shown = redact_url(url)
        timeout = None if limit is None else self._timeout_for(limit)
        assembler = ChunkAssembler()
        try:
            with self._transport_errors(url, limit, "streamed"):
                async with self._http().stream("POST", url, json=body, timeout=timeout) as response:
                    if not response.is_success:
                        await response.aread()
                        raise status_error(response, shown)
                    status, done = response.status_code, False
                    async for line in response.aiter_lines():
                        data = sse_data(line)
                        if data is None or not data:
                            continue
                        if data == "[DONE]":
                            done = True
                            break
                        for delta in assembler.add(json.loads(data)):
                            on_delta(delta)
        except (StreamError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
            raise ModelResponseError(
                f"model server at {shown} broke off its streamed answer: "
                f"{type(exc).__name__}: {exc}",
                status=200,
            ) from exc
        if not done:
            raise ModelResponseError(
                f"model server at {shown} ended its streamed answer without [DONE] "
                f"after {assembler.chunks} chunks",
                status=status,
            )
        return status, assembler.completion()

    @contextlib.contextmanager
    def _transport_errors(self, url: str, limit: CallLimit | None, what: str) -> Iterator[None]:
        """httpx's timeouts and transport failures as `ModelError`s naming the URL with its
        credentials masked (`what`: said of the request in a timeout's message)."""
        shown = redact_url(url)
        try:
            yield
        except httpx.TimeoutException as exc:
            within, why = self._timed_out(exc, limit)
            raise ModelTimeoutError(
                f"no answer from model server at {shown} within {within} "
                f"({type(exc).__name__}; {what}{why})",
                status=None,
            ) from exc
        except httpx.TransportError as exc:
            raise ModelConnectionError(
                f"cannot reach model server at {shown}: {type(exc).__name__}: "
                f"{str(exc).replace(url, shown)}",
                status=None,
            ) from exc

    def _timed_out(self, exc: httpx.TimeoutException, limit: CallLimit | None) -> tuple[str, str]:
        """The limit `exc` ran past, and `; why` for an adaptive one, which also makes the
        client forget the speeds it learned (`CallTimeouts.timed_out`)."""
        if isinstance(exc, httpx.ReadTimeout) and limit and self.call_timeouts is not None:
            self.call_timeouts.timed_out()
            return limit.shown, f"; {limit.reason(self.call_timeouts.policy)}"
        if isinstance(exc, httpx.ConnectTimeout):
            return f"{self._timeout.connect:g}s", ""
        return f"{self._wait_s:g}s", ""

    def _timeout_for(self, limit: CallLimit) -> httpx.Timeout:
        """The client's timeouts with `limit` as the read timeout."""
        base = self._timeout
        return httpx.Timeout(
            connect=base.connect, read=limit.seconds, write=base.write, pool=base.pool
        )


def _rebuild(base_url: str, model: str | None, options: dict[str, Any]) -> OpenAIChat:
    return OpenAIChat(base_url, model, **options)


#: Connections per httpx client. httpcore's pool scans every connection of its client (with a
#: syscall per idle one, some scans quadratic) on each request, so the cost per request grows
#: with the pool. Measured on loopback, 200 concurrent calls held 0.3 s by the server, warm
#: pool: one 200-connection client ~11 s; shards of 32 ~2 s; shards of 8 ~0.7 s.
_SHARD_CONNECTIONS = 8


class _ShardedClient:
    """`max_connections` spread over small `httpx.AsyncClient`s (see `_SHARD_CONNECTIONS`).

    Callers beyond `max_connections` wait here, in one FIFO queue, not inside a shard: a
    request queued in a busy shard could not move to one that frees up first. A request
    that gets a slot goes to the shard with the fewest requests in flight (ties to the
    larger, lower-index shards), which always has a free connection.
    """

    def __init__(self, max_connections: int, pool_timeout_s: float, **client_kwargs: Any) -> None:
        count = -(-max_connections // _SHARD_CONNECTIONS)
        base, extra = divmod(max_connections, count)
        sizes = [base + (index < extra) for index in range(count)]
        self.clients = [
            httpx.AsyncClient(
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                **client_kwargs,
            )
            for size in sizes
        ]
        self._in_flight = [0] * count
        self._free = asyncio.Semaphore(max_connections)
        self._pool_timeout_s = pool_timeout_s

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[httpx.AsyncClient]:
        """A free connection's client, held until the block ends."""
        if self._free.locked():
            try:
                async with asyncio.timeout(self._pool_timeout_s):
                    await self._free.acquire()
            except TimeoutError as exc:  # what one httpx pool raises in the same case
                raise httpx.PoolTimeout(
                    f"no free connection within {self._pool_timeout_s:g}s"
                ) from exc
        else:
            await self._free.acquire()
        try:
            index = min(range(len(self._in_flight)), key=self._in_flight.__getitem__)
            self._in_flight[index] += 1
            try:
                yield self.clients[index]
            finally:
                self._in_flight[index] -= 1
        finally:
            self._free.release()

    async def request(
        self, method: str, url: str, *, json: Any = None, timeout: httpx.Timeout | None = None
    ) -> httpx.Response:
        async with self._slot() as client:
            if timeout is None:
                return await client.request(method, url, json=json)
            return await client.request(method, url, json=json, timeout=timeout)

    @contextlib.asynccontextmanager
    async def stream(
        self, method: str, url: str, *, json: Any = None, timeout: httpx.Timeout | None = None
    ) -> AsyncIterator[httpx.Response]:
        """A request whose body is read as it arrives; the connection is held until then."""
        async with self._slot() as client:
            extra = {} if timeout is None else {"timeout": timeout}
            async with client.stream(method, url, json=json, **extra) as response:
                yield response

    async def aclose(self) -> None:
        for client in self.clients:
            await client.aclose()


__all__ = [
    "DEFAULT_WAIT_S",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "OpenAIChat",
    "capped_max_tokens",
]
