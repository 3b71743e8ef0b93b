"""Per-request decoding for the serving engine: choosing each request's next token from a
batch of logits, and turning accepted tokens into text with OpenAI/vLLM stop semantics.

    samplers = [RequestSampler(p, tokenizer=tok, eos_token_ids={tok.eos_token_id},
                               vocab_size=tok.vocab_size) for p in params]
    for sampler, choice in zip(samplers, sample_batch(logits, samplers)):   # one engine step
        text, finish = sampler.accept(choice.token_id)

Each request owns a `torch.Generator` seeded from `params.seed`, so a seeded request draws
the same tokens whatever else shares its batch. Logprobs are those of the model's own
distribution — `log_softmax` of the raw logits over the tokenizer's vocabulary, before
temperature, top-k/top-p and the grammar mask — as vLLM reports them by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from kimmy_swarm.model.errors import GenerationError
from kimmy_swarm.model.generation import SamplingParams, sample_next
from kimmy_swarm.model.serve.types import FinishReason, GenerationParams, TopToken
from kimmy_swarm.model.tokenizer import Tokenizer

__all__ = ["MIN_TOP_P", "GrammarMatcherLike", "RequestSampler", "SampledToken", "sample_batch"]

REPLACEMENT_CHAR = "\ufffd"  # what a decoder writes for an incomplete UTF-8 sequence
# top_p is at least this: a smaller one rounds to 0 in fp32, and then even the most likely
# token is cut (`cumsum - p ≥ 0`), leaving no token to draw. It still keeps only the top token.
MIN_TOP_P = 1e-6


class GrammarMatcherLike(Protocol):
    """What `RequestSampler` needs of a grammar (an `xgrammar.GrammarMatcher` fits)."""

    def accept_token(self, token_id: int) -> bool: ...

    def fill_next_token_bitmask(self, bitmask: torch.Tensor, index: int = 0) -> bool: ...

    def is_terminated(self) -> bool: ...


@dataclass(frozen=True)
class SampledToken:
    """The token chosen for one row; `logprob`/`top` only when the request asked for them."""

    token_id: int
    logprob: float | None = None
    top: tuple[TopToken, ...] = ()


class _IncrementalDetokenizer:
    """Text of a growing id sequence, emitted piece by piece.

    Byte-level BPE splits one character (é, 你, 😀) over several tokens, so a token on its
    own may decode to U+FFFD. Like vLLM, decode a short window of ids and emit only what the
    new ids add once it no longer ends in U+FFFD; the window starts a few tokens back so
    tokenizers that strip a leading space of the first token (SentencePiece) stay correct.
    """

    def __init__(self, tokenizer: Tokenizer, *, skip_special_tokens: bool) -> None:
        self._tok = tokenizer
        self._skip = skip_special_tokens
        self.ids: list[int] = []
        self._prefix_offset = 0  # start of the decode window
        self._read_offset = 0  # ids before this are already emitted

    def _decode(self, ids: Sequence[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=self._skip)

    def add(self, token_id: int) -> str:
        """Append one id; return the complete new text (may be "" while a char is split)."""
        self.ids.append(token_id)
        prefix = self._decode(self.ids[self._prefix_offset : self._read_offset])
        full = self._decode(self.ids[self._prefix_offset :])
        if len(full) > len(prefix) and not full.endswith(REPLACEMENT_CHAR):
            self._prefix_offset, self._read_offset = self._read_offset, len(self.ids)
            return full[len(prefix) :]
        return ""

    def flush(self) -> str:
        """Whatever is still held back (an incomplete character is written as U+FFFD)."""
        prefix = self._decode(self.ids[self._prefix_offset : self._read_offset])
        full = self._decode(self.ids[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self.ids)
        return full[len(prefix) :]


class _StopStringMatcher:
    """Cuts the output before the first stop string, which may span several tokens.

    Text that could still be the start of a stop string is held back until the next text
    decides it; text already emitted therefore never contains the start of a match.
    """

    def __init__(self, stops: Sequence[str]) -> None:
        if any(not s for s in stops):
            raise GenerationError(f"stop strings must be non-empty; got {list(stops)!r}")
        self._stops = tuple(stops)
        self._held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """(text safe to emit, whether a stop string was found)."""
        buf = self._held + text
        hits = [i for i in (buf.find(s) for s in self._stops) if i >= 0]
        if hits:
            self._held = ""
            return buf[: min(hits)], True
        keep = self._held_length(buf)
        self._held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep], False

    def _held_length(self, buf: str) -> int:
        # the longest suffix of `buf` that is a proper prefix of a stop string
        for k in range(min(len(buf), max((len(s) for s in self._stops), default=1) - 1), 0, -1):
            tail = buf[-k:]
            if any(s.startswith(tail) for s in self._stops):
                return k
        return 0

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


class RequestSampler:
    """Decoding state of one request: its generator, detokenizer, stop handling, grammar.

    Args:
        params: the request's options.
        tokenizer: for text, stop strings and top-logprob token strings; None gives no text
            (token ids only) and `<id>` token strings.
        eos_token_ids: ids that end the request (unless `params.ignore_eos`).
        vocab_size: the tokenizer's vocabulary size; logits columns at or past it (the
            model's padding) are never sampled.
        grammar: a matcher (see `model.serve.structured.GrammarCache.matcher`) whose token
            mask is applied before choosing; the request stops when it terminates.
        skip_special_tokens: leave special tokens out of the text (vLLM's default).

    Raises:
        GenerationError: stop strings without a tokenizer, an empty stop string, or
            `vocab_size < 1`.
    """

    def __init__(
        self,
        params: GenerationParams,
        *,
        tokenizer: Tokenizer | None,
        eos_token_ids: set[int],
        vocab_size: int,
        grammar: GrammarMatcherLike | None = None,
        skip_special_tokens: bool = True,
    ) -> None:
        if vocab_size < 1:
            raise GenerationError(f"vocab_size must be ≥ 1; got {vocab_size}")
        if params.stop and tokenizer is None:
            raise GenerationError(f"stop strings {list(params.stop)!r} need a tokenizer")
        self.params = params
        self.tokenizer = tokenizer
        self.eos_token_ids = frozenset(eos_token_ids)
        self.vocab_size = vocab_size
        self.grammar = grammar
        self.seed = params.seed if params.seed is not None else torch.Generator().seed()
        self._generators: dict[torch.device, torch.Generator] = {}
        self._detok = (
            None
            if tokenizer is None
            else _IncrementalDetokenizer(tokenizer, skip_special_tokens=skip_special_tokens)
        )
        self._stops = _StopStringMatcher(params.stop)
        self.num_generated = 0
        self.finish_reason: FinishReason | None = None
        # temperature is applied by `sample_batch` (checked for overflow there), so not here
        self.sampling = (
            SamplingParams()
            if params.greedy
            else SamplingParams(
                do_sample=True,
                temperature=1.0,
                top_k=params.top_k or None,
                top_p=max(params.top_p, MIN_TOP_P) if params.top_p < 1 else None,
            )
        )

    def generator(self, device: torch.device) -> torch.Generator:
        """This request's generator on `device` (one per device, all seeded with `seed`)."""
        gen = self._generators.get(device)
        if gen is None:
            gen = torch.Generator(device=device)
            gen.manual_seed(self.seed)
            self._generators[device] = gen
        return gen

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    def accept(self, token_id: int) -> tuple[str, FinishReason | None]:
        """Take the token chosen for this request.

        Returns:
            The text it adds (stop strings cut, possible stop-string starts held back) and
            the finish reason when the request ends here. On any end the held-back text is
            released in this call, so `flush()` afterwards returns "".

        Raises:
            GenerationError: the request has already finished, or the grammar rejects the
                token (it was not chosen under the grammar's mask).
        """
        if self.finished:
            raise GenerationError(
                f"request already finished ({self.finish_reason!r}); got token {token_id}"
            )
        self.num_generated += 1
        if self.grammar is not None and not self.grammar.accept_token(token_id):
            raise GenerationError(f"token {token_id} is not allowed by the request's grammar")
        p = self.params
        stop_token = token_id in p.stop_token_ids or (
            token_id in self.eos_token_ids and not p.ignore_eos
        )
        if stop_token or (self.grammar is not None and self.grammar.is_terminated()):
            return self._finish("stop")  # the stop token's own text is not added
        text = "" if self._detok is None else self._detok.add(token_id)
        emitted, hit = self._stops.feed(text)
        if hit:
            self.finish_reason = "stop"
            return emitted, "stop"
        if self.num_generated >= p.max_tokens:
            text, reason = self._finish("length")
            return emitted + text, reason
        return emitted, None

    def _finish(self, reason: FinishReason) -> tuple[str, FinishReason]:
        self.finish_reason = reason
        return self.flush(), reason

    def flush(self) -> str:
        """Release held-back text: for ends decided outside the sampler (abort, the
        context length); a stop string completed by it is still cut."""
        tail = "" if self._detok is None else self._detok.flush()
        emitted, hit = self._stops.feed(tail)
        return emitted if hit else emitted + self._stops.flush()


# ---- one engine step ---------------------------------------------------------------------
def _unpack_bitmask(bitmask: torch.Tensor, width: int) -> torch.Tensor:  # (G, W) bool
    """xgrammar's int32 bitmask (bit j of word k allows id 32·k + j) → a boolean mask."""
    shifts = torch.arange(32, dtype=torch.int32, device=bitmask.device)  # (32,)
    bits = (bitmask.unsqueeze(-1) >> shifts) & 1  # (G, words, 32)
    return bits.flatten(1)[:, :width].bool()


def _apply_grammars(x: torch.Tensor, samplers: Sequence[RequestSampler]) -> torch.Tensor:
    """Set the logits each row's grammar forbids to -inf (rows without one keep all)."""
    if all(s.grammar is None for s in samplers):
        return x
    n, width = x.shape
    bitmask = torch.full((n, (width + 31) // 32), -1, dtype=torch.int32)  # (N, ⌈W/32⌉)
    for i, s in enumerate(samplers):
        if s.grammar is None:
            continue
        try:
            s.grammar.fill_next_token_bitmask(bitmask, i)
        except RuntimeError as e:  # xgrammar's shape check
            raise GenerationError(
                f"the grammar does not fit logits of width {width}: build the GrammarCache "
                f"with vocab_size={width} (the model's vocabulary) ({e})"
            ) from e
    allowed = _unpack_bitmask(bitmask.to(x.device), width)  # (N, W)
    return x.masked_fill(~allowed, float("-inf"))


def _top_logprobs(
    logprobs: torch.Tensor,  # (L, W)
    chosen: torch.Tensor,  # (L,)
    samplers: Sequence[RequestSampler],
) -> list[tuple[float, tuple[TopToken, ...]]]:
    """(logprob of the chosen token, its best alternatives) for each row."""
    picked = logprobs.gather(1, chosen[:, None]).squeeze(1).tolist()  # (L,)
    k_max = max(s.params.top_logprobs for s in samplers)
    values, ids = logprobs.topk(k_max, dim=-1)  # (L, k_max), best first
    values_l, ids_l = values.tolist(), ids.tolist()
    out = []
    for r, s in enumerate(samplers):
        k = s.params.top_logprobs
        top = tuple(
            TopToken(token_id=t, token=_token_string(s.tokenizer, t), logprob=v)
            for t, v in zip(ids_l[r][:k], values_l[r][:k], strict=True)
        )
        out.append((picked[r], top))
    return out


def _token_string(tokenizer: Tokenizer | None, token_id: int) -> str:
    return f"<{token_id}>" if tokenizer is None else tokenizer.decode([token_id])


def _tempered(x: torch.Tensor, samplers: Sequence[RequestSampler]) -> torch.Tensor:  # (D, W)
    """The rows divided by their temperatures, checked: NaN or +inf would reach
    `torch.multinomial`, which raises (greedy below `GREEDY_BELOW_TEMPERATURE` keeps the
    division itself finite; this catches a model whose logits are NaN/inf already)."""
    temps = torch.tensor([s.params.temperature for s in samplers], device=x.device)  # (D,)
    scaled = x / temps[:, None]  # (D, W); -inf (masked) stays -inf
    bad = (scaled.isnan() | scaled.isposinf()).any(-1)  # (D,)
    if bool(bad.any()):
        r = int(bad.nonzero()[0, 0])
        raise GenerationError(
            f"row {r}: the logits divided by temperature {samplers[r].params.temperature} "
            "hold NaN or +inf (the model produced non-finite logits); nothing can be sampled"
        )
    return scaled


def sample_batch(logits: torch.Tensor, samplers: Sequence[RequestSampler]) -> list[SampledToken]:
    """Choose the next token of every row: one call per engine step.

    Greedy rows take the argmax together; the others sample with temperature, top-k and
    top-p (`model.generation.sample_next`) from their own generator, so a row's draws do
    not depend on the other rows. Grammar rows are masked first (greedy ones too), and ids
    past each row's `vocab_size` never come out.

    Args:
        logits: `[N, W]` the model's last-position logits, W ≥ every sampler's vocab_size.
        samplers: the N requests, in row order; none finished.

    Raises:
        GenerationError: a count or width mismatch, a finished sampler, or a row where no
            token is allowed.
    """
    n, width = logits.shape
    if len(samplers) != n or any(s.vocab_size > width for s in samplers):
        raise GenerationError(
            f"logits {list(logits.shape)} need one sampler per row and width ≥ every "
            f"vocab_size; got {len(samplers)} samplers, vocab sizes "
            f"{sorted({s.vocab_size for s in samplers})}"
        )
    if any(s.finished for s in samplers):
        raise GenerationError("sample_batch got a sampler of a finished request")
    if n == 0:
        return []
    limits = torch.tensor([s.vocab_size for s in samplers], device=logits.device)  # (N,)
    columns = torch.arange(width, device=logits.device)  # (W,)
    raw = logits.float().masked_fill(columns >= limits[:, None], float("-inf"))  # (N, W)
    x = _apply_grammars(raw, samplers)  # (N, W)
    if not bool(x.isfinite().any(-1).all()):
        raise GenerationError("a row has no allowed token (its grammar has terminated?)")
    device = logits.device
    chosen = sample_next(x, SamplingParams())  # (N,) argmax; sampled rows replaced below
    drawn = [i for i, s in enumerate(samplers) if not s.params.greedy]
    if drawn:  # row by row: each request draws from its own generator
        rows = torch.tensor(drawn, device=device)  # (D,)
        scaled = _tempered(x.index_select(0, rows), [samplers[i] for i in drawn])  # (D, W)
        draws = [
            sample_next(scaled[j : j + 1], samplers[i].sampling, samplers[i].generator(device))
            for j, i in enumerate(drawn)
        ]  # [(1,)] * D
        chosen = chosen.scatter(0, rows, torch.cat(draws))
    want = [i for i, s in enumerate(samplers) if s.params.logprobs]
    extra: dict[int, tuple[float, tuple[TopToken, ...]]] = {}
    if want:
        rows = torch.tensor(want, device=device)  # (L,)
        logprobs = raw.index_select(0, rows).log_softmax(-1)  # (L, W)
        pairs = _top_logprobs(logprobs, chosen.index_select(0, rows), [samplers[i] for i in want])
        extra = dict(zip(want, pairs, strict=True))
    ids = chosen.tolist()
    return [
        SampledToken(ids[i], *extra[i]) if i in extra else SampledToken(ids[i]) for i in range(n)
    ]
