"""A request inside the engine: its tokens, where its cache lives, how far it has run."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kimmy_swarm.model.serve.pages import ROOT_HASH
from kimmy_swarm.model.serve.types import FinishReason, GenerationParams

__all__ = ["SeqStatus", "Sequence"]


class SeqStatus(StrEnum):
    WAITING = "waiting"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(eq=False)
class Sequence:
    """One request. `tokens` = prompt + generated; `num_computed` of them are in the cache
    (MLA pages listed in `block_table`, KDA state in slot `slot`). The tokens after that are
    fed next: many while prefilling, one (the last sampled) while decoding."""

    request_id: str
    prompt_ids: list[int]
    params: GenerationParams
    order: int  # arrival order (FCFS; the newest running sequence is preempted first)
    output_ids: list[int] = field(default_factory=list)
    status: SeqStatus = SeqStatus.WAITING
    block_table: list[int] = field(default_factory=list)
    slot: int | None = None
    num_computed: int = 0
    cached_tokens: int = 0  # reused from the prefix cache at the first admission
    registered_pages: int = 0  # leading full pages registered in the prefix cache
    last_hash: int = ROOT_HASH  # chained hash of those pages
    checkpoint_at: int | None = None  # token boundary where a KDA checkpoint is saved
    finish_reason: FinishReason | None = None
    admitted_once: bool = False
    sampler: Any = None  # the engine's per-request sampling state
    text: str = ""
    logprobs: list[float] = field(default_factory=list)
    top_logprobs: list[Any] = field(default_factory=list)

    @property
    def tokens(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def num_tokens(self) -> int:
        return len(self.prompt_ids) + len(self.output_ids)

    @property
    def pending(self) -> int:
        """Tokens not yet fed through the model."""
        return self.num_tokens - self.num_computed

    @property
    def is_prefill(self) -> bool:
        return self.pending > 1
