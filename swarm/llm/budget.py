"""`TokenEstimate` and `TokenBudget`: a prompt's tokens estimated without the server's
tokenizer, and how many of them a call may send.

The swarm talks to servers whose tokenizer it does not have, so it estimates a prompt's
tokens from its characters at a conservative characters-per-token ratio, and lets the server
correct it: after every call the estimate is compared with the `usage.prompt_tokens` the
server counted, and after a "prompt too long" rejection with what the error says. The ratio
only ever moves to the pessimistic side — the most tokens per character seen wins — so a
prompt that once fitted by the estimate is never later judged to fit when it does not.

`TokenEstimate` is that ratio, one per server: a client's `ServerProfile`
(`swarm.llm.server_profile`) holds one, which its call timeouts read to size each call's
limit and its `TokenBudget` reads to size prompts. A pessimistic estimate is what both need:
a prompt judged to fit must fit, and a timeout from an estimate too high is only longer.

A call with `max_tokens` may send `context_tokens - max_tokens - margin` prompt tokens; the
margin covers what the estimate cannot see (chat-template tokens, a tokenizer that splits
an unseen kind of text finer than anything observed so far).

A conversation the server counted before (an agent's next turn) is sized from that count:
`TokenBudget` keeps the counts (`swarm.llm.counted_prompts`) and estimates only the messages
added since, so a long conversation is not judged at the pessimistic ratio as a whole.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.counted_prompts import CountedPrompts
from kimmy_swarm.swarm.llm.overflow import ContextOverflow
from kimmy_swarm.swarm.llm.types import Message, MessageLike

#: The context length assumed when neither the server nor the user says one.
DEFAULT_CONTEXT_TOKENS = 4_096
#: The starting ratio: below English prose with a large-vocabulary tokenizer (~4), near code
#: and JSON (~3). Smaller vocabularies and other scripts are learned from the server.
DEFAULT_CHARS_PER_TOKEN = 2.5
#: Tokens the chat template adds per message (role markers), and once per prompt (the
#: assistant header). Measured on the `kimmy serve` template: ~6 per message, ~6 at the end.
MESSAGE_OVERHEAD = 8
PROMPT_OVERHEAD = 8
#: Never assume fewer characters per token than this (a byte-level BPE can spend up to a
#: token per byte, and a character of some scripts takes 3-4 bytes).
MIN_CHARS_PER_TOKEN = 0.25
#: Observations of fewer tokens say more about the template than about the tokenizer.
MIN_OBSERVED_TOKENS = 64
#: After a rejection the ratio drops at least this much, so retries always make progress.
_REJECTION_SHRINK = 0.95
#: When a rejection does not say how long the prompt was.
_BLIND_SHRINK = 0.8
#: A call sized as if a token took only this many characters fits nearly any tokenizer
#: before any server count has corrected the estimate; its usage then calibrates the rest
#: (`agents.synthesis.reduce` sizes the first call of each level so).
PROBE_CHARS_PER_TOKEN = 1.0


def message_chars(
    messages: Sequence[MessageLike], tools: Sequence[Mapping[str, Any]] | None = None
) -> int:
    """The characters of a conversation the server tokenizes: contents, tool calls, tools."""
    total = 0
    for message in messages:
        wire = message.to_openai() if isinstance(message, Message) else message
        total += len(str(wire.get("content") or ""))
        calls = wire.get("tool_calls")
        if calls:
            total += len(json.dumps(calls, ensure_ascii=False, default=str))
    if tools:
        total += len(json.dumps(list(tools), ensure_ascii=False, separators=(",", ":")))
    return total


class TokenEstimate:
    """Characters per token of one server's tokenizer: a conservative start, corrected by
    every count the server gives, and only ever towards more tokens per character.

    Not thread-safe; share one across the coroutines of one event loop (updates never await).

    Args:
        chars_per_token: the starting ratio; it only goes down from here.

    Raises:
        ConfigError: a ratio below `MIN_CHARS_PER_TOKEN`.
    """

    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        if not (math.isfinite(chars_per_token) and chars_per_token >= MIN_CHARS_PER_TOKEN):
            raise ConfigError(
                f"chars_per_token {chars_per_token!r} is not a number >= {MIN_CHARS_PER_TOKEN}"
            )
        self._ratio = float(chars_per_token)
        #: Server counts the estimate has been compared with.
        self.observations = 0
        #: Rejections as too long it learned from.
        self.rejections = 0

    @property
    def chars_per_token(self) -> float:
        """The ratio estimates use: the starting one or the most pessimistic one seen."""
        return self._ratio

    @property
    def calibrated(self) -> bool:
        """Whether any server count has corrected the starting ratio's guess yet."""
        return self.observations > 0 or self.rejections > 0

    def tokens(self, text: str | int) -> int:
        """The estimated tokens of a text (or of that many characters), rounded up."""
        chars = text if isinstance(text, int) else len(text)
        return math.ceil(chars / self._ratio)

    def chars(self, tokens: int) -> int:
        """The most characters that are estimated at no more than `tokens` tokens."""
        return max(0, math.floor(tokens * self._ratio))

    def prompt_tokens(
        self, messages: Sequence[MessageLike], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        """The estimated prompt tokens of a conversation, chat template included."""
        return self.tokens(message_chars(messages, tools)) + _overhead(len(messages))

    def observe(
        self,
        messages: Sequence[MessageLike],
        prompt_tokens: int,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Compare with the prompt tokens the server counted; keep the lower ratio."""
        if prompt_tokens < MIN_OBSERVED_TOKENS:
            return  # no count (a scripted model), or too short to tell
        self.observations += 1
        implied = _implied_ratio(message_chars(messages, tools), prompt_tokens, len(messages))
        if implied is not None and implied < self._ratio:
            self._ratio = max(MIN_CHARS_PER_TOKEN, implied)

    def reject(
        self,
        messages: Sequence[MessageLike],
        prompt_tokens: int | None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Learn from a rejection as too long of a prompt the server counted at
        `prompt_tokens` (None: it did not say): a lower ratio, always, down to a floor."""
        chars = message_chars(messages, tools)
        implied = None
        if prompt_tokens is not None:
            implied = _implied_ratio(chars, prompt_tokens, len(messages))
        ratio = self._ratio * (_BLIND_SHRINK if implied is None else _REJECTION_SHRINK)
        if implied is not None:
            ratio = min(ratio, implied)
        self._ratio = max(MIN_CHARS_PER_TOKEN, ratio)
        self.rejections += 1

    def __repr__(self) -> str:
        return f"TokenEstimate(chars_per_token={self._ratio:.3f})"


class TokenBudget:
    """The prompt room a model's context leaves per call, by a learned `TokenEstimate`.

    Not thread-safe; share one across the coroutines of one event loop (updates never await).

    Args:
        context_tokens: the model's context length (prompt + completion), in tokens; None
            when nobody said: `DEFAULT_CONTEXT_TOKENS` is assumed until a server rejection
            names the real one (`context_known` tells which).
        chars_per_token: the starting ratio of a new estimate; it only goes down from here.
        margin: prompt tokens kept free on every call (default: max(64, context / 32)).
        estimate: the estimate to read and teach (a `ServerProfile`'s, shared with the
            client's call timeouts); default a new one starting at `chars_per_token`.

    Raises:
        ConfigError: a context, ratio or margin that leaves no room for a prompt, or both
            `chars_per_token` and `estimate`.
    """

    def __init__(
        self,
        context_tokens: int | None = None,
        *,
        chars_per_token: float | None = None,
        margin: int | None = None,
        estimate: TokenEstimate | None = None,
    ) -> None:
        if context_tokens is not None:
            _check_context(context_tokens)
        if estimate is not None and chars_per_token is not None:
            raise ConfigError(
                f"chars_per_token {chars_per_token!r} is the start of a new estimate; "
                "give it or an estimate, not both"
            )
        context = DEFAULT_CONTEXT_TOKENS if context_tokens is None else context_tokens
        if margin is not None and not 0 <= margin < context:
            raise ConfigError(f"margin {margin!r} must be in [0, context_tokens)")
        if estimate is None:
            estimate = TokenEstimate(
                DEFAULT_CHARS_PER_TOKEN if chars_per_token is None else chars_per_token
            )
        #: The learned characters per token this budget reads and teaches.
        self.estimate = estimate
        self._context_tokens = context
        self._known = context_tokens is not None
        self._margin = margin
        #: The server's counts of conversations it answered (their next turns start there).
        self.counted = CountedPrompts()

    @property
    def context_tokens(self) -> int:
        """The context length: as given, or lower where a server rejection said so."""
        return self._context_tokens

    @property
    def context_known(self) -> bool:
        """Whether the context length was told (by the caller or a server's rejection)."""
        return self._known

    @property
    def margin(self) -> int:
        """Prompt tokens kept free on every call."""
        if self._margin is not None:
            return self._margin
        return max(64, self._context_tokens // 32)

    def tell_context(self, context_tokens: int) -> None:
        """A context length someone knows: adopted if none was, else the smaller one kept."""
        _check_context(context_tokens)
        if not self._known or context_tokens < self._context_tokens:
            self._context_tokens = context_tokens
        self._known = True

    @property
    def chars_per_token(self) -> float:
        """The estimate's ratio (`TokenEstimate.chars_per_token`)."""
        return self.estimate.chars_per_token

    @property
    def calibrated(self) -> bool:
        """Whether any server count has corrected the estimate's starting guess yet."""
        return self.estimate.calibrated

    @property
    def observations(self) -> int:
        """Server counts the estimate has been compared with."""
        return self.estimate.observations

    @property
    def rejections(self) -> int:
        """Rejections as too long the estimate learned from."""
        return self.estimate.rejections

    # --- estimates ---------------------------------------------------------------------

    def tokens(self, text: str | int) -> int:
        """The estimated tokens of a text (or of that many characters), rounded up."""
        return self.estimate.tokens(text)

    def chars(self, tokens: int) -> int:
        """The most characters that are estimated at no more than `tokens` tokens."""
        return self.estimate.chars(tokens)

    def prompt_tokens(
        self, messages: Sequence[MessageLike], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> int:
        """The estimated prompt tokens of a conversation, chat template included: the
        server's count of its longest prefix sent before (with the same tools), plus an
        estimate of the messages after it; an estimate of the whole when none was."""
        known, counted = self.counted.longest_prefix(messages, tools)
        if not known:
            return self.estimate.prompt_tokens(messages, tools)
        rest = messages[known:]
        return counted + self.estimate.tokens(message_chars(rest)) + MESSAGE_OVERHEAD * len(rest)

    def prompt_limit(self, max_tokens: int) -> int:
        """The prompt tokens a call with `max_tokens` may send (may be <= 0: none fits)."""
        return self._context_tokens - max_tokens - self.margin

    def fits(
        self,
        messages: Sequence[MessageLike],
        max_tokens: int,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> bool:
        """Whether the estimate says the conversation fits a call with `max_tokens`."""
        return self.prompt_tokens(messages, tools) <= self.prompt_limit(max_tokens)

    # --- learning ----------------------------------------------------------------------

    def observe(
        self,
        messages: Sequence[MessageLike],
        prompt_tokens: int,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        """Compare with the prompt tokens the server counted; keep the lower ratio, and the
        count itself for this conversation's next turns."""
        self.estimate.observe(messages, prompt_tokens, tools)
        self.counted.record(messages, prompt_tokens, tools)

    def reject(
        self,
        messages: Sequence[MessageLike],
        overflow: ContextOverflow,
        max_tokens: int,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> bool:
        """Learn from a rejection as too long: a lower ratio (and context, if it says one).

        Returns:
            False when the ratio is already at its floor and the context unchanged: nothing
            was learned, and a retry would be rejected the same way.
        """
        before = (self.chars_per_token, self._context_tokens, self._known)
        if overflow.context_tokens is not None and overflow.context_tokens >= 16:
            self.tell_context(overflow.context_tokens)
        prompt = overflow.prompt_tokens
        if prompt is None and overflow.context_tokens is not None:
            prompt = overflow.context_tokens - max_tokens + 1  # the least that overflows
        self.estimate.reject(messages, prompt, tools)
        return (self.chars_per_token, self._context_tokens, self._known) != before

    def __repr__(self) -> str:
        return (
            f"TokenBudget(context_tokens={self._context_tokens}, "
            f"chars_per_token={self.chars_per_token:.3f}, margin={self.margin})"
        )


def _check_context(value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 16:
        raise ConfigError(f"context_tokens {value!r} is not an integer >= 16")


def _overhead(messages: int) -> int:
    return PROMPT_OVERHEAD + MESSAGE_OVERHEAD * messages


def _implied_ratio(chars: int, prompt_tokens: int, messages: int) -> float | None:
    """The ratio a server count implies, the template's tokens taken out (None: no signal)."""
    content_tokens = prompt_tokens - _overhead(messages)
    if chars <= 0 or content_tokens <= 0:
        return None
    return chars / content_tokens


def context_tokens(model: object, default: int = DEFAULT_CONTEXT_TOKENS) -> int:
    """The context length a model client says (`context_length`), else `default`.

    `OpenAIChat` learns it from the server's `/models` in `check()`, `LocalModel` from its
    engine; a model without one (`ScriptedChat`) gets the default.
    """
    told = told_context(model)
    return default if told is None else told


def told_context(model: object) -> int | None:
    """The context length `model` says (`context_length`), if it is one (>= 16 tokens)."""
    told = getattr(model, "context_length", None)
    if isinstance(told, int) and not isinstance(told, bool) and told >= 16:
        return told
    return None


__all__ = [
    "DEFAULT_CHARS_PER_TOKEN",
    "DEFAULT_CONTEXT_TOKENS",
    "MIN_CHARS_PER_TOKEN",
    "PROBE_CHARS_PER_TOKEN",
    "TokenBudget",
    "TokenEstimate",
    "context_tokens",
    "message_chars",
    "told_context",
]
