"""`ServerProfile`: what one model client knows of its server, kept in one place.

A client's profile holds:

- `capabilities`: what the server honours of the chat-completions API
  (`swarm.llm.capabilities`), probed once by `swarm.llm.connect` or given; None: not known,
  everything taken as honoured;
- `context_length`: the model's context in tokens, as the server's `/models` card or the
  caller says;
- `tokens`: one learned `TokenEstimate` (characters per token). The client's adaptive call
  timeouts read it to estimate each request's prompt tokens, and `budget` reads and teaches
  it when the agent loop sizes prompts, so what the server counted for one serves both;
- `budget`: the `TokenBudget` the sub-agents of the client share (the tokenizer is the
  server's, so what one sub-agent learned saves the next a rejection).

The profile pickles with its client, so a Ray host's copy adapts and estimates as the
driver's did.

`profile_of(model)` finds a model's profile: its own (`OpenAIChat`, `LocalModel`, and the
swarm's wrappers, which forward it), else, for a model that carries none (a scripted model, a
user's own `ChatModel`), one kept for this process by the model's name.
`shared_budget(model)` is that profile's budget, told the context length the model says.

Example:
    profile = ServerProfile(context_length=8192)
    profile.tokens.prompt_tokens([{"role": "user", "content": "Hi"}])   # 18
"""

from __future__ import annotations

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.budget import TokenBudget, TokenEstimate, told_context
from kimmy_swarm.swarm.llm.capabilities import Capabilities

#: Profiles of models that carry none, by model name (the oldest dropped beyond the limit).
_BY_NAME: dict[str, ServerProfile] = {}
_BY_NAME_LIMIT = 256


class ServerProfile:
    """What a client knows of its server: capabilities, context length, a token estimate.

    Not thread-safe: one per client, used from its event loop.

    Args:
        capabilities: what the server honours (None: not known; everything is taken as
            honoured).
        context_length: the model's context length in tokens (prompt + completion), when
            known otherwise.

    Raises:
        ConfigError: a context length that is not an integer >= 1.
    """

    def __init__(
        self, *, capabilities: Capabilities | None = None, context_length: int | None = None
    ) -> None:
        self._capabilities = capabilities
        #: The server's, else the one given, else None (`OpenAIChat` replaces the given
        #: one with what the server's `/models` card says, when it says).
        self.context_length = _checked_length(context_length)
        #: The learned characters per token of the server's tokenizer.
        self.tokens = TokenEstimate()
        #: The prompt room the client's sub-agents share; it learns into `tokens`.
        self.budget = TokenBudget(estimate=self.tokens)

    @property
    def capabilities(self) -> Capabilities | None:
        """What the server honours; None: not known (everything taken as honoured)."""
        return self._capabilities

    def learn_context_length(self, context_length: int) -> None:
        """The context length the server said (its `/models` card): it replaces the one
        given, which was the caller's fallback for a server that says none."""
        #: The server's, else the one given, else None (`OpenAIChat` replaces the given
        #: one with what the server's `/models` card says, when it says).
        self.context_length = _checked_length(context_length)

    def __repr__(self) -> str:
        return (
            f"ServerProfile(capabilities={self._capabilities!r}, "
            f"context_length={self.context_length!r}, tokens={self.tokens!r})"
        )


def _checked_length(value: int | None) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"context_length {value!r} is not an integer >= 1")
    return value


def profile_of(model: object) -> ServerProfile:
    """`model`'s profile: its own (`profile`), else the one this process keeps for the
    models called `model.name` that carry none, made on first use."""
    own = getattr(model, "profile", None)  # an optional attribute of a ChatModel
    if isinstance(own, ServerProfile):
        return own
    name = str(getattr(model, "name", ""))
    profile = _BY_NAME.get(name)
    if profile is None:
        if len(_BY_NAME) >= _BY_NAME_LIMIT:
            _BY_NAME.pop(next(iter(_BY_NAME)))
        profile = _BY_NAME[name] = ServerProfile()
    return profile


def shared_budget(model: object) -> TokenBudget:
    """The budget of `model`'s profile (`profile_of`), shared by every sub-agent using it.

    A model that says its context length (`context_length`) tells it to the budget; a
    budget whose model says none knows its context only when a server rejection said it.
    """
    budget = profile_of(model).budget
    told = told_context(model)
    if told is not None:
        budget.tell_context(told)
    return budget


def forget_shared_budgets() -> None:
    """Drop the profiles kept by name for models that carry none (a process that switches
    servers; tests)."""
    _BY_NAME.clear()


__all__ = ["ServerProfile", "forget_shared_budgets", "profile_of", "shared_budget"]
