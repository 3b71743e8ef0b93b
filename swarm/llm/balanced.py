"""`BalancedChat`: one `ChatModel` over several model endpoints, least outstanding requests.

    model = BalancedChat([OpenAIChat(url_a, "m"), OpenAIChat(url_b, "m")])

Each call goes to the member with the fewest calls in flight; ties go round-robin, so idle
endpoints share the load evenly and a slow endpoint gets less of it. It never retries on
another member: a failure is raised as the member raised it (the scheduler retries). It
pickles when its members do (each Ray host then balances its own calls over the members).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.capabilities import CAPABILITY_NAMES, Capabilities, capabilities_of
from kimmy_swarm.swarm.llm.types import ChatResponse, MessageLike


class BalancedChat:
    """A `ChatModel` that spreads calls over `models` by least outstanding requests.

    Args:
        models: the endpoints' clients (at least one), each a `ChatModel`.

    Raises:
        ConfigError: no models, or a member without an async `chat`.
    """

    def __init__(self, models: Sequence[Any]) -> None:
        members = list(models)
        if not members:
            raise ConfigError("BalancedChat needs at least one model, got none")
        for m in members:
            if not callable(getattr(m, "chat", None)):
                raise ConfigError(f"BalancedChat member {m!r} is not a ChatModel (no chat())")
        self.models = members
        self.name = (
            members[0].name
            if len(members) == 1
            else ("balanced(" + ",".join(str(m.name) for m in members) + ")")
        )
        self._outstanding = [0] * len(members)
        self._next = 0
        #: Calls sent to each member so far.
        self.calls = [0] * len(members)

    @property
    def streams(self) -> bool:
        """Whether `chat` can stream (`on_delta`): when every member can."""
        return all(getattr(m, "streams", False) for m in self.models)

    @property
    def context_length(self) -> int | None:
        """The smallest context length its members know (a call may go to any of them)."""
        known = [n for m in self.models if isinstance(n := getattr(m, "context_length", None), int)]
        return min(known) if known else None

    @property
    def capabilities(self) -> Capabilities:
        """What every member honours (a call may go to any of them)."""
        known = [capabilities_of(m) for m in self.models]
        return Capabilities(
            **{name: all(getattr(c, name) for c in known) for name in CAPABILITY_NAMES}
        )

    @property
    def outstanding(self) -> list[int]:
        """Calls in flight per member."""
        return list(self._outstanding)

    def _pick(self) -> int:
        n = len(self.models)
        low = min(self._outstanding)
        for k in range(n):
            index = (self._next + k) % n
            if self._outstanding[index] == low:
                self._next = (index + 1) % n
                return index
        raise AssertionError("unreachable: some member has the fewest calls in flight")

    async def chat(self, messages: Sequence[MessageLike], **options: Any) -> ChatResponse:
        """One call on the least busy member (see `ChatModel.chat` for the options)."""
        index = self._pick()
        self._outstanding[index] += 1
        self.calls[index] += 1
        try:
            return await self.models[index].chat(messages, **options)
        finally:
            self._outstanding[index] -= 1

    async def aclose(self) -> None:
        """Close every member."""
        for m in self.models:
            await m.aclose()

    def __reduce__(self) -> tuple[Any, ...]:
        return (BalancedChat, (self.models,))

    def __repr__(self) -> str:
        return f"BalancedChat({self.models!r})"


__all__ = ["BalancedChat"]
