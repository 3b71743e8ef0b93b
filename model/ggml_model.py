"""A GGUF model run by llama.cpp's own library (ggml's quantized CPU kernels), for our engine.

    model = GGMLModel.load("qwen2.5-coder-1.5b.gguf")
    model.open_context(GGMLOptions(cells=8192))
    logits = model.decode([Feed(seq=0, tokens=[151644, 872], start=0)])   # [1, vocab]
    model.copy_cells(src=0, dst=1, start=0, end=2)   # seq 1 now shares seq 0's first 2

Why this and not PyTorch: on a 2-core CPU, decoding a quantized 1.5B model is bound by
reading the weights. PyTorch keeps them dequantized (fp32: 6 GB, bf16: 3 GB; its int8/int4
weight-only kernels measured slower than bf16 there), while ggml reads the GGUF's own
4–6-bit blocks (1.1 GB) with kernels written for them. So this module hands the *forward
pass* to llama.cpp (through `llama-cpp-python`'s low-level bindings) and keeps everything
else ours: the engine's scheduler, prefix cache, sampling, grammars and logprobs (see
`model.serve.ggml_runner`). Only the weights, the KV cells and the forward live in C.

The KV cache is llama.cpp's *unified* cache: one pool of cells, each tagged with the
sequence ids that see it. `copy_cells` adds a tag (no data is copied), which is how a shared
prompt prefix is computed once and attended by many sequences. Kimi Linear models stay on
the PyTorch path; this serves the architectures llama.cpp knows (Llama, Qwen2, …).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from kimmy_swarm.model.errors import GenerationError, GGUFError

__all__ = ["Feed", "GGMLConfig", "GGMLModel", "GGMLOptions", "llama_cpp_available"]

log = logging.getLogger(__name__)

#: llama.cpp's most sequence ids a context can hold (`LLAMA_MAX_SEQ`).
MAX_SEQUENCES = 256


def llama_cpp_available() -> bool:
    """Whether `llama-cpp-python` (llama.cpp's library and its bindings) imports here."""
    import importlib.util

    return importlib.util.find_spec("llama_cpp") is not None


@dataclass(frozen=True)
class GGMLOptions:
    """How the llama.cpp context is built.

    `cells`: KV cells in all (tokens cached across every sequence, shared prefixes counted
    once); `batch_tokens`: most tokens one `decode` takes; `threads`: CPU threads (None:
    the model's, by default the cores this process may use); `sequences`: sequence ids
    (≤ 256).
    """

    cells: int = 8192
    batch_tokens: int = 512
    threads: int | None = None
    sequences: int = MAX_SEQUENCES

    def __post_init__(self) -> None:
        for name in ("cells", "batch_tokens", "sequences"):
            if getattr(self, name) < 1:
                raise GenerationError(f"GGMLOptions.{name} must be ≥ 1; got {getattr(self, name)}")
        if self.sequences > MAX_SEQUENCES:
            raise GenerationError(
                f"GGMLOptions.sequences must be ≤ {MAX_SEQUENCES} (llama.cpp's limit); "
                f"got {self.sequences}"
            )
        if self.threads is not None and self.threads < 1:
            raise GenerationError(f"GGMLOptions.threads must be ≥ 1; got {self.threads}")


@dataclass(frozen=True)
class GGMLConfig:
    """What the engine reads off a model's `config` (the fields it shares with HF configs)."""

    architecture: str
    vocab_size: int
    context_length: int
    eos_token_id: int | None
    bos_token_id: int | None
    num_hidden_layers: int
    hidden_size: int
    kv_bytes_per_token: int  # f16 keys and values of every layer
    num_parameters: int
    file_bytes: int


@dataclass(frozen=True)
class Feed:
    """Tokens of one sequence to run: `tokens` at positions `start, start + 1, …`; the
    logits of the last one come back."""

    seq: int
    tokens: list[int]
    start: int


class _Library:
    """The bindings, imported once, with llama.cpp's log routed to Python logging."""

    _lib: Any = None
    _log_callback: Any = None  # kept alive: C holds the pointer

    @classmethod
    def get(cls) -> Any:
        if cls._lib is None:
            try:
                import llama_cpp
            except ImportError as e:
                raise GGUFError(
                    "llama.cpp's library is not installed: pip install llama-cpp-python "
                    "(or `make llama-cpp`), or serve with --quant bf16/none (PyTorch)"
                ) from e

            @llama_cpp.llama_log_callback
            def route(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
                # ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5
                if level in (3, 4):
                    log.log(logging.WARNING if level == 3 else logging.ERROR,
                            "llama.cpp: %s", text.decode("utf-8", "replace").rstrip())  # fmt: skip

            cls._log_callback = route
            llama_cpp.llama_log_set(route, ctypes.c_void_p(0))
            llama_cpp.llama_backend_init()
            cls._lib = llama_cpp
        return cls._lib


def _threads(requested: int | None) -> int:
    if requested is not None:
        return requested
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class GGMLModel:
    """A llama.cpp model; after `open_context`, `decode` feeds tokens and returns logits,
    and the KV cells are addressed by (sequence id, positions)."""

    def __init__(self, lib: Any, model: Any, config: GGMLConfig, path: Path, threads: int):
        self._lib, self._model = lib, model
        self.config = config
        self.path = path
        self.threads = threads
        self.options: GGMLOptions | None = None
        self._ctx: Any = None
        self._batch: Any = None
        self._memory: Any = None
        self.cells = 0

    @classmethod
    def load(cls, path: str | Path, *, threads: int | None = None) -> GGMLModel:
        """Load a GGUF file's weights into llama.cpp (kept quantized as in the file).

        Raises:
            GGUFError: the library is missing, or llama.cpp cannot load the file.
        """
        lib = _Library.get()
        file = Path(path)
        if not file.is_file():
            raise GGUFError(f"{file}: no such GGUF file")
        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = 0
        # read, not mapped: llama.cpp repacks most K-quant matrices for its CPU kernels, and
        # with a mapping their original pages stay resident too (1.9 GiB vs 1.3 GiB measured
        # for Qwen2.5-Coder-1.5B's 1.04 GiB file)
        mparams.load_mode = lib.LLAMA_LOAD_MODE_NONE
        model = lib.llama_model_load_from_file(str(file).encode(), mparams)
        if not model:
            raise GGUFError(f"{file}: llama.cpp could not load it (see the log above)")
        vocab = lib.llama_model_get_vocab(model)
        eos, bos = lib.llama_vocab_eos(vocab), lib.llama_vocab_bos(vocab)
        arch = ctypes.create_string_buffer(64)
        lib.llama_model_meta_val_str(model, b"general.architecture", arch, 64)
        n_head = max(int(lib.llama_model_n_head(model)), 1)
        n_embd = int(lib.llama_model_n_embd(model))
        config = GGMLConfig(
            architecture=arch.value.decode(),
            vocab_size=int(lib.llama_vocab_n_tokens(vocab)),
            context_length=int(lib.llama_model_n_ctx_train(model)),
            eos_token_id=None if eos < 0 else int(eos),
            bos_token_id=None if bos < 0 else int(bos),
            num_hidden_layers=int(lib.llama_model_n_layer(model)),
            hidden_size=n_embd,
            kv_bytes_per_token=4 * int(lib.llama_model_n_layer(model))
            * int(lib.llama_model_n_head_kv(model)) * (n_embd // n_head),
            num_parameters=int(lib.llama_model_n_params(model)),
            file_bytes=file.stat().st_size,
        )  # fmt: skip
        return cls(lib, model, config, file, _threads(threads))

    def open_context(self, options: GGMLOptions) -> None:
        """(Re)build the context: `options.cells` KV cells (f16) in one unified pool.

        Raises:
            GGUFError: llama.cpp could not allocate it.
        """
        lib = self._lib
        self.close_context()
        cparams = lib.llama_context_default_params()
        # llama.cpp caps a batch at the context's cells and sizes its output buffer by the
        # larger of a batch and the sequence ids: give it room for both
        cparams.n_ctx = max(options.cells, options.batch_tokens)
        cparams.n_batch = cparams.n_ubatch = options.batch_tokens
        cparams.n_outputs_max = max(options.batch_tokens, options.sequences)
        cparams.n_seq_max = options.sequences
        cparams.n_threads = cparams.n_threads_batch = options.threads or self.threads
        cparams.kv_unified = True  # one pool of cells: a shared prefix is stored once
        cparams.no_perf = True
        ctx = lib.llama_init_from_model(self._model, cparams)
        if not ctx:
            raise GGUFError(f"{self.path}: llama.cpp could not make a context ({options})")
        self._ctx, self.options = ctx, options
        self._memory = lib.llama_get_memory(ctx)
        self._batch = lib.llama_batch_init(options.batch_tokens, 0, 1)
        self.cells = int(lib.llama_n_ctx(ctx))

    # ---- the forward ---------------------------------------------------------------------
    def decode(self, feeds: list[Feed]) -> torch.Tensor:  # (len(feeds), vocab) fp32
        """Run every feed's tokens in one batch (split into `batch_tokens` pieces); the
        logits of each feed's last token, in order.

        Raises:
            GenerationError: no context is open, no KV cell is free, or llama.cpp failed.
        """
        if self._ctx is None or self.options is None:
            raise GenerationError("GGMLModel.decode needs open_context() first")
        lib, batch = self._lib, self._batch
        items = [
            (tok, f.start + j, f.seq, j == len(f.tokens) - 1)
            for f in feeds
            for j, tok in enumerate(f.tokens)
        ]
        cap = self.options.batch_tokens
        vocab = self.config.vocab_size
        rows: list[np.ndarray] = []
        for lo in range(0, len(items), cap):
            chunk = items[lo : lo + cap]
            batch.n_tokens = len(chunk)
            outputs = 0
            for i, (tok, pos, seq, want) in enumerate(chunk):
                batch.token[i], batch.pos[i] = tok, pos
                batch.n_seq_id[i] = 1
                batch.seq_id[i][0] = seq
                batch.logits[i] = want
                outputs += want
            rc = lib.llama_decode(self._ctx, batch)
            if rc != 0:
                why = "no free KV cell" if rc == 1 else f"llama_decode returned {rc}"
                raise GenerationError(
                    f"llama.cpp could not run a batch of {len(chunk)} tokens: {why}"
                )
            if outputs:
                ptr = lib.llama_get_logits(self._ctx)
                rows.append(np.ctypeslib.as_array(ptr, shape=(outputs, vocab)).copy())
        return torch.from_numpy(np.concatenate(rows) if rows else np.zeros((0, vocab), np.float32))

    # ---- KV cells ------------------------------------------------------------------------
    def copy_cells(self, *, src: int, dst: int, start: int, end: int) -> None:
        """Let sequence `dst` see `src`'s cells at positions `[start, end)` (a tag, no copy)."""
        self._lib.llama_memory_seq_cp(self._memory, src, dst, start, end)

    def drop_cells(self, seq: int, start: int = 0, end: int = -1) -> None:
        """Untag `seq` from its cells at positions `[start, end)` (`end` −1: to the end);
        a cell no sequence sees is free again."""
        if not self._lib.llama_memory_seq_rm(self._memory, seq, start, end):
            raise GenerationError(f"llama.cpp could not drop cells {start}..{end} of seq {seq}")

    # ---- lifetime ------------------------------------------------------------------------
    def close_context(self) -> None:
        """Free the context and its KV cells (idempotent)."""
        if self._ctx is not None:
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._ctx)
            self._ctx = self._batch = self._memory = None
            self.cells = 0

    def close(self) -> None:
        """Free the context and the weights (idempotent)."""
        self.close_context()
        if self._model is not None:
            self._lib.llama_model_free(self._model)
            self._model = None

    def __del__(self) -> None:  # pragma: no cover — best effort at interpreter exit
        with contextlib.suppress(Exception):
            self.close()

    def eval(self) -> GGMLModel:
        """Nothing to switch (no dropout); here so the engine treats it like a module."""
        return self

    def describe(self) -> str:
        """One line: architecture, parameters, file size, threads."""
        c = self.config
        return (
            f"{c.architecture}, {c.num_parameters / 1e9:.2f} B parameters, "
            f"{c.file_bytes / 2**30:.2f} GiB GGUF kept quantized (llama.cpp's kernels), "
            f"{self.threads} threads"
        )
