"""`CountedPrompts`: the prompt tokens a server counted for conversations it was sent, so
that the next turn of the same conversation is sized from the count, not an estimate.

An agent's conversation grows by a few messages a turn. `TokenBudget` estimates a prompt
from its characters at the most pessimistic characters-per-token ratio it has seen — right
for a prompt it knows nothing of, but for a long conversation in English the estimate runs
well above the truth (40% over on the orchestrator's prompt on Qwen2.5), and a turn that
would fit gets a `max_tokens` so small that its tool call is cut off. The server already
counted every prefix it answered: a conversation whose first k messages (and tools) were
sent before is that count plus an estimate of the messages after them. The count is exact
for the prefix (the same template and tokenizer give the same tokens), so only the new
messages carry the estimate's pessimism.

Conversations are keyed by a hash chain over their messages (each message's canonical JSON
after the previous link; the tools seed the chain), so finding the longest counted prefix
costs one pass over the conversation. The table is bounded (least recently used dropped).
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from kimmy_swarm.swarm.llm.types import Message, MessageLike

#: Conversations remembered per server (a key is 16 bytes; the table stays small).
DEFAULT_CAPACITY = 4_096


def _links(
    messages: Sequence[MessageLike], tools: Sequence[Mapping[str, Any]] | None
) -> list[bytes]:
    """The chain's links: element k keys the conversation's first k messages (k = 0..n)."""
    seed = json.dumps(list(tools or ()), sort_keys=True, ensure_ascii=False, default=str)
    link = hashlib.blake2b(seed.encode("utf-8"), digest_size=16).digest()
    links = [link]
    for message in messages:
        wire = message.to_openai() if isinstance(message, Message) else dict(message)
        text = json.dumps(wire, sort_keys=True, ensure_ascii=False, default=str)
        link = hashlib.blake2b(link + text.encode("utf-8"), digest_size=16).digest()
        links.append(link)
    return links


class CountedPrompts:
    """Server counts of conversations' prompt tokens, looked up by their longest prefix.

    Not thread-safe; share one across the coroutines of one event loop (nothing awaits).

    Args:
        capacity: conversations kept (the least recently used is dropped first).
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity {capacity!r} must be at least 1")
        self._capacity = capacity
        self._counts: OrderedDict[bytes, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._counts)

    def record(
        self,
        messages: Sequence[MessageLike],
        prompt_tokens: int,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Keep the server's count of this conversation (with these tools)."""
        if prompt_tokens <= 0 or not messages:
            return
        key = _links(messages, tools)[-1]
        self._counts[key] = prompt_tokens
        self._counts.move_to_end(key)
        while len(self._counts) > self._capacity:
            self._counts.popitem(last=False)

    def longest_prefix(
        self, messages: Sequence[MessageLike], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> tuple[int, int]:
        """The longest counted prefix of `messages` (with the same tools).

        Returns:
            (k, tokens): its first k messages were counted at `tokens`; (0, 0) when no
            prefix was.
        """
        links = _links(messages, tools)
        for k in range(len(messages), 0, -1):
            tokens = self._counts.get(links[k])
            if tokens is not None:
                self._counts.move_to_end(links[k])
                return k, tokens
        return 0, 0


__all__ = ["DEFAULT_CAPACITY", "CountedPrompts"]
