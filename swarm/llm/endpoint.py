"""`ModelEndpoint` and `connect`: how a model is reached, stored without secrets, and the one
way its client is built.

`kimmy` builds every model client with `connect`, so a library caller gets the client the
command line builds:

    model = await connect(ModelEndpoint(kind="http", base_url="http://127.0.0.1:8000/v1"))
    model = await connect(ModelEndpoint(kind="local", local="smollm2", max_tokens=256))

`connect` preflights an HTTP server (it must answer `GET /models`, which names the model
when the endpoint names none, and whose card may state the context length), finds what the
server honours (the endpoint's stored capabilities; else probed, except what `given` says;
else as `given` says), and builds the client with all of it, the answer cap and the call
timeouts as constructor arguments. A run stores its endpoint (`ModelEndpoint.of`, or the
one it connected with), so a resumed run connects the same way without probing again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.capabilities import Capabilities, probe_capabilities
from kimmy_swarm.swarm.llm.redact import MASK, redact_url

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.local import LocalModel
    from kimmy_swarm.swarm.llm.openai_chat import OpenAIChat
    from kimmy_swarm.swarm.llm.protocol import ChatModel

EndpointKind = Literal["offline", "http", "local", "other"]


class ModelEndpoint(BaseModel):
    """How a run's sub-agents reached their model, without secrets.

    Attributes:
        kind: `offline` (the roles' procedures), `http` (an OpenAI-compatible server),
            `local` (a model served in the process, `--local SOURCE`), or `other` (a model
            object given by a library caller: it must be given again to resume).
        base_url: the server's URL, its credentials masked (`redact_url` runs on every
            value given, so nothing else can be stored).
        model: the model id (None: the first model the server lists).
        local: the `--local` source (an installed model's name such as smollm2, a .gguf
            file, a checkpoint folder, an org/repo in the Hugging Face cache).
        context_tokens: `--context-tokens`, when given.
        max_tokens: `--max-answer-tokens` (the most tokens one model call may generate), when given.
        capabilities: what the server honours, as probed or given by flags
            (`swarm.llm.capabilities`); a resumed run adapts the same way without probing
            again. None: not known (everything taken as honoured).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EndpointKind = "offline"
    base_url: str | None = None
    model: str | None = None
    local: str | None = None
    context_tokens: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    capabilities: Capabilities | None = None

    @field_validator("base_url")
    @classmethod
    def _redacted(cls, value: str | None) -> str | None:
        return redact_url(value) if value is not None else None

    @field_validator("model")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        # `auto@<base_url>` is a client's name before the server told it the model: it
        # holds the unredacted URL and names no model.
        return None if value is None or value.startswith("auto@") else value

    @classmethod
    def of(cls, model: ChatModel | None) -> ModelEndpoint:
        """The endpoint of a model object: offline, an HTTP client's, or `other`."""
        if model is None:
            return cls()
        from kimmy_swarm.swarm.llm.openai_chat import OpenAIChat

        if isinstance(model, OpenAIChat):
            return cls(
                kind="http",
                base_url=model.base_url,
                model=model.model,
                capabilities=model.capabilities,
            )
        return cls(kind="other")


async def connect(
    endpoint: ModelEndpoint,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    probe: bool = True,
    given: Mapping[str, bool] | None = None,
    max_connections: int = 64,
    timeout_s: float | None = None,
) -> OpenAIChat | LocalModel:
    """The client of `endpoint`, preflighted, probed and capped (see the module docstring).

    An HTTP endpoint's URL, model and key fall back to `KIMMY_BASE_URL`, `KIMMY_MODEL` and
    `KIMMY_API_KEY` (`OpenAIChat.from_env`). A local one is started (seconds), and honours
    everything unless `given` says otherwise; it is not probed.

    Args:
        endpoint: where the model is, and the limits to build its client with.
        base_url: the server's URL as given, credentials included (the endpoint keeps them
            masked); default the endpoint's.
        api_key: sent as a bearer token; never part of an endpoint.
        probe: ask an HTTP server what it honours of what `given` does not say (a few tiny
            requests); False: take it to honour that. Not done when the endpoint has
            stored capabilities.
        given: capabilities known without probing, by name (`--tools`, `--no-tools`, ...).
        max_connections: the client's connection pool (the run's concurrency).
        timeout_s: a fixed limit per call; None: the client's own (adaptive over HTTP;
            for a local model none but its engine's progress, `LocalModel`'s `stall_s`).

    Raises:
        ConfigError: an offline or `other` endpoint, no server configured, a URL whose
            credentials were masked, or a bad setting.
        ModelError: the server cannot be reached, refuses the key, or lists no model.
        KimiModelError: a local model that cannot be loaded (from `model.errors`).
    """
    if endpoint.kind == "local":
        return await _start_local(endpoint, given, max_connections, timeout_s)
    if endpoint.kind != "http":
        raise ConfigError(
            f"a {endpoint.kind} endpoint has no model to connect to; "
            "give an http or local one (or the model object itself)"
        )
    from kimmy_swarm.swarm.llm.openai_chat import OpenAIChat

    url = base_url or endpoint.base_url
    if url is not None and base_url is None and MASK in url:
        raise ConfigError(
            f"the endpoint's base URL {url} had credentials, which are not stored; "
            "pass base_url with them"
        )
    preflight = OpenAIChat.from_env(
        base_url=url, model=endpoint.model, api_key=api_key, max_connections=max_connections,
        timeout_s=timeout_s, context_length=endpoint.context_tokens,
    )  # fmt: skip
    try:
        await preflight.check()  # one clear error when the server is unreachable
        capabilities = endpoint.capabilities
        if capabilities is None and probe:
            capabilities = await probe_capabilities(preflight, given=given)
        elif capabilities is None and given:
            capabilities = Capabilities(**given)
    finally:
        await preflight.aclose()
    return OpenAIChat.from_env(
        base_url=url, model=preflight.model, api_key=api_key, max_connections=max_connections,
        timeout_s=timeout_s, context_length=preflight.context_length, capabilities=capabilities,
        max_tokens_cap=endpoint.max_tokens,
    )  # fmt: skip


async def _start_local(
    endpoint: ModelEndpoint,
    given: Mapping[str, bool] | None,
    max_connections: int,
    timeout_s: float | None,
) -> LocalModel:
    from kimmy_swarm.swarm.llm.local import LocalModel

    if endpoint.local is None:
        raise ConfigError("a local endpoint names no model source (local=...)")
    capabilities = endpoint.capabilities
    if capabilities is None and given:
        capabilities = Capabilities(**given)
    limit = {} if timeout_s is None else {"timeout_s": timeout_s}
    local = LocalModel.load(
        endpoint.local,
        max_connections=max_connections,
        capabilities=capabilities,
        max_tokens_cap=endpoint.max_tokens,
        **limit,
    )
    await local.start()
    return local


__all__ = ["EndpointKind", "ModelEndpoint", "connect"]
