"""The inference engine: continuous batching over a hybrid cache with shared-prefix reuse.

    engine = LLMEngine(KimiLinearForCausalLM.from_pretrained(path), tokenizer)
    engine = LLMEngine(*load_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")[:2])   # a Llama
    outs = engine.generate([prompt_ids_a, prompt_ids_b], GenerationParams(max_tokens=64))

`add_request` queues a request; each `step()` schedules a batch (decodes + prefill chunks
under a token budget), runs the model through the cache pools, samples one token for every
sequence whose pending tokens are all fed, and returns the `TokenEvent`s of that step.
A request that fails inside a step (its sampling, its grammar, a forward of its batch, or it
can never fit the cache) is dropped and freed alone, its exception kept for
`pop_failures()`; the engine goes on with the others.
The model is a `KimiLinearForCausalLM` or a `LlamaForCausalLM` (Qwen2 included), run by
`ModelRunner` in PyTorch (`kv_layout` maps its cache onto the pools), or a `GGMLModel`,
run by `GGMLRunner` with llama.cpp's kernels (the pages map onto llama.cpp's KV cells).
Greedy output equals `model.generate` without a cache (tests: single and
batched requests, prefix hits and misses, chunk boundaries inside the shared prefix,
preemption, eviction).
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import torch

from kimmy_swarm.model.errors import EngineOverloadedError, GenerationError
from kimmy_swarm.model.ggml_model import GGMLModel
from kimmy_swarm.model.serve.ggml_runner import GGMLRunner
from kimmy_swarm.model.serve.runner import ModelRunner
from kimmy_swarm.model.serve.sampling import RequestSampler, SampledToken, sample_batch
from kimmy_swarm.model.serve.scheduler import Scheduler
from kimmy_swarm.model.serve.sequence import SeqStatus, Sequence
from kimmy_swarm.model.serve.types import (
    EngineConfig,
    EngineStats,
    GenerationParams,
    RequestOutput,
    TokenEvent,
)

__all__ = ["LLMEngine"]


class LLMEngine:
    """Synchronous engine core (one thread). `AsyncEngine` drives it for servers."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        config: EngineConfig | None = None,
        *,
        grammars: Any = None,
    ) -> None:
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config or EngineConfig()
        self.grammars = grammars  # a structured.GrammarCache, built by the caller if wanted
        self.runner: ModelRunner | GGMLRunner
        if isinstance(model, GGMLModel):
            self.runner = GGMLRunner(
                model,
                num_pages=self.config.num_pages,
                page_size=self.config.page_size,
                max_running=self.config.max_num_seqs,
            )
        else:
            self.runner = ModelRunner.build(model, self.config)
        self.pages, self.slots = self.runner.pages, self.runner.slots
        self.scheduler = Scheduler(
            self.config,
            self.pages,
            self.slots,
            needs_state=self.runner.needs_state,
            on_free=self.runner.release,
        )
        mcfg = model.config  # after the runner, which refuses a model it cannot run
        self.vocab_size = mcfg.vocab_size
        self.eos_ids = {mcfg.eos_token_id} if mcfg.eos_token_id is not None else set()
        if tokenizer is not None and tokenizer.eos_token_id is not None:
            self.eos_ids.add(tokenizer.eos_token_id)
        self._order = itertools.count()
        self.seqs: dict[str, Sequence] = {}
        self.generated_tokens = 0
        self.prefill_tokens_computed = 0
        self._failures: list[tuple[str, Exception]] = []

    # ---- requests -----------------------------------------------------------------------
    def add_request(
        self,
        prompt_ids: list[int],
        params: GenerationParams | None = None,
        *,
        request_id: str | None = None,
    ) -> str:
        """Queue a request; returns its id.

        Raises:
            GenerationError: empty or too long prompt, token ids outside the vocabulary,
                a duplicate request id.
            EngineOverloadedError: the waiting queue is over its limits (retry later).
        """
        params = params or GenerationParams()
        rid = request_id or uuid.uuid4().hex
        self.validate(prompt_ids, params, request_id=rid)
        sched = self.scheduler
        if len(sched.waiting) >= self.config.max_waiting or (
            sched.waiting_prefill_tokens + len(prompt_ids) > self.config.max_waiting_prefill_tokens
        ):
            raise EngineOverloadedError(
                f"{len(sched.waiting)} requests ({sched.waiting_prefill_tokens} prompt tokens) "
                "are already waiting",
                retry_after=1.0,
            )
        seq = Sequence(rid, list(prompt_ids), params, next(self._order))
        seq.sampler = RequestSampler(
            params,
            tokenizer=self.tokenizer,
            eos_token_ids=self.eos_ids,
            vocab_size=self._sampling_vocab(),
            grammar=None if params.json_schema is None else self._matcher(params.json_schema),
        )
        self.seqs[rid] = seq
        sched.add(seq)
        return rid

    def _sampling_vocab(self) -> int:
        tok = self.tokenizer
        return self.vocab_size if tok is None else min(self.vocab_size, tok.vocab_size)

    def _matcher(self, schema: dict[str, Any]) -> Any:
        assert self.grammars is not None  # validate() checked
        return self.grammars.matcher(schema)

    def validate(self, prompt_ids: list[int], params: GenerationParams, *, request_id: str) -> None:
        """Raise GenerationError if the request could never run (changes nothing)."""
        if params.json_schema is not None and self.grammars is None:
            raise GenerationError(
                "structured output (json_schema) needs a tokenizer and a grammar cache: "
                "build the engine with grammars=GrammarCache(tokenizer, ...)"
            )
        rid = request_id
        if not prompt_ids:
            raise GenerationError("the prompt is empty; it needs at least one token")
        limit = self.config.max_model_len
        if len(prompt_ids) + params.max_tokens > limit:
            raise GenerationError(
                f"prompt ({len(prompt_ids)} tokens) + max_tokens ({params.max_tokens}) is "
                f"more than max_model_len {limit}"
            )
        bad = [t for t in prompt_ids if not 0 <= t < self.vocab_size]
        if bad:
            raise GenerationError(
                f"token ids {bad[:5]} are outside the vocabulary [0, {self.vocab_size})"
            )
        if rid in self.seqs:
            raise GenerationError(f"request id {rid!r} is already in use")

    def abort(self, request_id: str) -> bool:
        """Stop a request and free its cache (e.g. the client went away)."""
        seq = self.scheduler.abort(request_id)
        if seq is None:
            return False
        seq.finish_reason = "abort"
        self.seqs.pop(request_id, None)
        return True

    def has_unfinished(self) -> bool:
        return bool(self.scheduler.waiting or self.scheduler.running)

    def pop_failures(self) -> list[tuple[str, Exception]]:
        """(request id, why) of the requests that failed in the steps since the last call;
        they are already dropped and their cache freed."""
        out, self._failures = self._failures, []
        return out

    def _fail(self, seq: Sequence, error: Exception) -> None:
        self.scheduler.abort(seq.request_id)  # frees its pages and state slot
        seq.finish_reason = "abort"
        self.seqs.pop(seq.request_id, None)
        self._failures.append((seq.request_id, error))

    # ---- one step ------------------------------------------------------------------------
    def step(self) -> list[TokenEvent]:
        batch = self.scheduler.schedule()
        if not batch:
            if self.scheduler.waiting and not self.scheduler.running:
                seq = self.scheduler.waiting[0]  # nothing else holds the pools: it never fits
                self._fail(seq, GenerationError(
                    f"request {seq.request_id} ({seq.num_tokens} tokens) does not fit the "
                    f"cache pools ({self.pages.num_pages} pages of {self.pages.page_size})"
                ))  # fmt: skip
            return []
        # The runner plans the forwards (PyTorch: one per feed length; llama.cpp: one).
        items = [(s, 1) for s in batch.decodes] + batch.prefills
        done: list[tuple[Sequence, torch.Tensor]] = []
        for group in self.runner.plan(items):
            try:
                logits = self.runner.run(group)  # (len(group), V)
            except Exception as e:  # noqa: BLE001 — fails this forward's requests, not all
                for seq, _ in group:  # their pages and slots may be half written: freed
                    self._fail(seq, e)
                continue
            for i, (seq, n) in enumerate(group):
                self.scheduler.advance(seq, n)
                if seq.pending == 0:  # its last token is in: sample the next one
                    done.append((seq, logits[i]))
        self.prefill_tokens_computed += sum(n for _, n in batch.prefills)
        return self._sample(done)

    def _sample(self, done: list[tuple[Sequence, torch.Tensor]]) -> list[TokenEvent]:
        if not done:
            return []
        seqs = [s for s, _ in done]
        picks: list[SampledToken | None]
        try:
            picks = list(
                sample_batch(torch.stack([row for _, row in done]), [s.sampler for s in seqs])
            )
        except Exception:  # noqa: BLE001 — redone row by row, which names the failing requests
            picks = [self._sample_one(seq, row) for seq, row in done]
        events = []
        for seq, pick in zip(seqs, picks, strict=True):
            if pick is None:
                continue
            try:
                events.append(self._accept(seq, pick))
            except Exception as e:  # noqa: BLE001 — this request fails, the others go on
                self._fail(seq, e)
        return events

    def _sample_one(self, seq: Sequence, row: torch.Tensor) -> SampledToken | None:
        try:
            return sample_batch(row[None], [seq.sampler])[0]
        except Exception as e:  # noqa: BLE001 — this request fails, the others go on
            self._fail(seq, e)
            return None

    def _accept(self, seq: Sequence, pick: SampledToken) -> TokenEvent:
        seq.output_ids.append(pick.token_id)
        self.generated_tokens += 1
        text, reason = seq.sampler.accept(pick.token_id)
        if reason is not None and reason == "length":
            text += seq.sampler.flush()
        seq.text += text
        if pick.logprob is not None:
            seq.logprobs.append(pick.logprob)
            seq.top_logprobs.append(pick.top)
        if reason is not None:
            seq.finish_reason = reason
            self.scheduler.finish(seq)
        return TokenEvent(seq.request_id, pick.token_id, text, pick.logprob, pick.top, reason)

    # ---- conveniences --------------------------------------------------------------------
    def output(self, request_id: str) -> RequestOutput:
        seq = self.seqs[request_id]
        if seq.status is not SeqStatus.FINISHED or seq.finish_reason is None:
            raise GenerationError(f"request {request_id} has not finished")
        return RequestOutput(
            request_id,
            len(seq.prompt_ids),
            list(seq.output_ids),
            seq.text,
            seq.finish_reason,
            seq.cached_tokens,
            list(seq.logprobs),
            list(seq.top_logprobs),
        )

    def pop_output(self, request_id: str) -> RequestOutput:
        out = self.output(request_id)
        del self.seqs[request_id]
        return out

    def generate(
        self, prompts: list[list[int]], params: GenerationParams | None = None
    ) -> list[RequestOutput]:
        """Run requests to completion (all queued at once); outputs in prompt order.

        Raises:
            The first failure of one of them (the others are aborted then).
        """
        ids = [self.add_request(p, params) for p in prompts]
        while self.has_unfinished():
            self.step()
            failures = [e for rid, e in self.pop_failures() if rid in ids]
            if failures:
                for rid in ids:
                    self.abort(rid)
                raise failures[0]
        return [self.pop_output(i) for i in ids]

    def stats(self) -> EngineStats:
        s = self.scheduler
        return EngineStats(
            running=len(s.running),
            waiting=len(s.waiting),
            pages_used=self.pages.num_used,
            pages_total=self.pages.num_pages,
            slots_used=self.slots.num_used,
            slots_total=self.slots.num_slots,
            prompt_tokens=s.prompt_tokens,
            cached_prompt_tokens=s.cached_prompt_tokens,
            prefill_tokens_computed=self.prefill_tokens_computed,
            generated_tokens=self.generated_tokens,
            preemptions=s.preemptions,
        )
