"""What goes into and comes out of the serving engine: per-request generation options,
engine limits, per-token events and final results."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from kimmy_swarm.model.errors import GenerationError, ModelConfigError

if TYPE_CHECKING:
    from kimmy_swarm.model.serve.tool_calls import ToolCallGrammar

__all__ = [
    "GREEDY_BELOW_TEMPERATURE",
    "EngineConfig",
    "EngineStats",
    "FinishReason",
    "GenerationParams",
    "RequestOutput",
    "TokenEvent",
    "TopToken",
]

FinishReason = Literal["stop", "length", "abort"]

# Below this temperature a request is decoded greedily: the argmax is what such a temperature
# samples anyway, and fp32 logits divided by 1e-45 overflow to inf (then NaN in softmax).
GREEDY_BELOW_TEMPERATURE = 1e-5


@dataclass(frozen=True)
class GenerationParams:
    """How one request is decoded (OpenAI semantics; `temperature == 0` is greedy, and so
    is any temperature below `GREEDY_BELOW_TEMPERATURE`).

    `json_schema` constrains decoding (xgrammar, through `structured.GrammarCache.matcher`):
    a JSON schema, or a `tool_calls.ToolCallGrammar` (tool-call blocks in a chat template's
    own format, free text around them with tool_choice "auto").

    `cache_point` is the number of leading prompt tokens that other requests share (the
    system/role prompt): the engine stores a KDA state checkpoint at the last page boundary
    inside it, so later requests with the same prefix skip its prefill.
    """

    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0: off
    seed: int | None = None
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    ignore_eos: bool = False
    logprobs: bool = False
    top_logprobs: int = 0
    json_schema: dict[str, Any] | ToolCallGrammar | None = None  # structured output
    cache_point: int | None = None

    def __post_init__(self) -> None:
        checks = [
            (self.max_tokens >= 1, "max_tokens", "≥ 1"),
            (self.temperature >= 0 and math.isfinite(self.temperature), "temperature", "≥ 0"),
            (0 < self.top_p <= 1, "top_p", "in (0, 1]"),
            (self.top_k >= 0, "top_k", "≥ 0 (0 = off)"),
            (0 <= self.top_logprobs <= 20, "top_logprobs", "in [0, 20]"),
            (self.cache_point is None or self.cache_point >= 0, "cache_point", "≥ 0 or None"),
        ]
        for ok, name, allowed in checks:
            if not ok:
                raise GenerationError(f"{name} must be {allowed}; got {getattr(self, name)!r}")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW_TEMPERATURE or self.top_k == 1


@dataclass(frozen=True)
class EngineConfig:
    """Limits of the engine. Memory: `num_pages · page_size` MLA tokens in total, and
    `num_state_slots` KDA states (one per running sequence + checkpoints of shared prefixes).
    """

    page_size: int = 16
    num_pages: int = 4096
    num_state_slots: int = 320
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 2048
    max_model_len: int = 4096
    enable_prefix_caching: bool = True
    max_waiting: int = 4096  # queued requests beyond this are refused (HTTP 503)
    max_waiting_prefill_tokens: int = 4_000_000

    def __post_init__(self) -> None:
        for name in (
            "page_size", "num_pages", "num_state_slots", "max_num_seqs",
            "max_num_batched_tokens", "max_model_len", "max_waiting",
        ):  # fmt: skip
            if getattr(self, name) < 1:
                raise ModelConfigError(f"{name} must be ≥ 1; got {getattr(self, name)}")
        if self.num_state_slots < 2:
            raise ModelConfigError(f"num_state_slots must be ≥ 2; got {self.num_state_slots}")


@dataclass(frozen=True)
class TopToken:
    token_id: int
    token: str
    logprob: float


@dataclass(frozen=True)
class TokenEvent:
    """One new token of one request (or its end: `finish_reason` set, token may be None)."""

    request_id: str
    token_id: int | None
    text: str  # the text this token adds (stop strings already cut)
    logprob: float | None = None
    top_logprobs: tuple[TopToken, ...] = ()
    finish_reason: FinishReason | None = None


@dataclass
class RequestOutput:
    """A finished request."""

    request_id: str
    prompt_tokens: int
    output_ids: list[int]
    text: str
    finish_reason: FinishReason
    cached_tokens: int = 0  # prompt tokens reused from the prefix cache
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[tuple[TopToken, ...]] = field(default_factory=list)


@dataclass(frozen=True)
class EngineStats:
    """A snapshot for /metrics and the benchmarks."""

    running: int
    waiting: int
    pages_used: int
    pages_total: int
    slots_used: int
    slots_total: int
    prompt_tokens: int  # prompt tokens of admitted requests
    cached_prompt_tokens: int  # of which reused from the prefix cache
    prefill_tokens_computed: int
    generated_tokens: int
    preemptions: int

    @property
    def prefix_hit_rate(self) -> float:
        return self.cached_prompt_tokens / self.prompt_tokens if self.prompt_tokens else 0.0
