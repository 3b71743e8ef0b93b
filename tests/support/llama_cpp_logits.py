"""llama.cpp as a reference for our Llama: every position's logits, and greedy continuations.

    if (reason := LlamaCppReference.available()) is None:
        ref = LlamaCppReference(gguf_path)
        logits = ref.logits(ids)  # (T, V) float32, row t predicts token t + 1
        more = ref.greedy(ids, 32)  # 32 argmax tokens, one decode call each (KV cache)
        ref.close()

Token ids go in as they are: the caller tokenizes (with our tokenizer), so both sides see
the same ids and llama.cpp adds no BOS of its own.

Two bindings are tried in order: `llama_cpp_py_sync` (a prebuilt llama.cpp wheel, CFFI
ABI mode; we drive llama.h directly through its `_lib`/`_ffi` so that *every* token's
logits come back, not just the last one's) and `llama_cpp` (llama-cpp-python, with
`logits_all=True`). Both run on the CPU: two threads for batches, one for single-token
steps, KV cache in float32.

`write_f32_gguf` copies a GGUF file with every tensor dequantized to float32 (by `gguf`,
llama.cpp's own reader, independently of `model.gguf_loader`): on such a file llama.cpp
computes in float32 as we do, whereas on quantized weights its CPU kernels also round the
activations to 8 bits before each dot product (Q4_1 weights meet Q8_1 activations, Q8_0
meet Q8_0), which moves logits by up to ~2 on SmolLM2.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["LlamaCppReference", "write_f32_gguf"]

_BACKENDS = ("llama_cpp_py_sync", "llama_cpp")
_GGML_F32 = 0  # ggml_type GGML_TYPE_F32
_INSTALL_HINT = (
    "pip install llama-cpp-py-sync cffi (a prebuilt llama.cpp wheel; its library needs "
    "glibc >= 2.38), or pip install llama-cpp-python (builds llama.cpp from source)"
)
_quiet_log: Any = None  # the no-op llama.cpp log callback; kept alive while the lib is


def _import(name: str) -> tuple[Any | None, str | None]:
    """The module `name` with its llama.cpp shared library loaded, or None and why not.

    `llama_cpp_py_sync` imports without its library and dlopens `libllama.so` only when a
    model is made; that load is what fails on an older glibc (the wheel is tagged
    manylinux2014 but its library needs GLIBC_2.38), so it is tried here, up front.
    """
    try:
        module = importlib.import_module(name)
        if name == "llama_cpp_py_sync":
            importlib.import_module("llama_cpp_py_sync._cffi_bindings").get_lib()
        return module, None
    except Exception as e:  # noqa: BLE001 - ImportError, or a library that fails to load
        why = str(e).split("  Additionally,")[0]
        return None, f"{name}: {type(e).__name__}: {why}"


def _silence_py_sync() -> None:
    """Route llama.cpp's log (model loading, graph details: thousands of lines on stderr)
    to a no-op; `llama_cpp_py_sync` leaves it on even with `verbose=False`."""
    global _quiet_log
    if _quiet_log is None:
        bindings = importlib.import_module("llama_cpp_py_sync._cffi_bindings")
        ffi, lib = bindings.get_ffi(), bindings.get_lib()
        _quiet_log = ffi.callback("ggml_log_callback", lambda level, text, data: None)
        lib.llama_log_set(_quiet_log, ffi.NULL)


class LlamaCppReference:
    """One llama.cpp model and context (CPU, `n_threads` threads) for a GGUF file."""

    def __init__(
        self,
        path: str | Path,
        *,
        n_ctx: int = 2048,
        n_batch: int = 512,
        n_threads: int = 2,
        n_threads_decode: int = 1,
        f32_kv_cache: bool = True,
        backend: str | None = None,
    ) -> None:
        """Load `path`. `backend` forces one of `_BACKENDS`; by default the first that
        loads is used. `f32_kv_cache` keeps keys and values in float32 (llama.cpp's default
        is float16, which alone moves SmolLM2's logits by ~0.03).

        `n_threads` run batches (prompts, `logits`); a single-token decode (each `greedy`
        step) uses `n_threads_decode`: ggml's threads spin at each of the ~1,000 graph
        nodes' barriers, so two threads on two cores shared with another process made a
        135M-model token take 0.5-3 s instead of 0.05 s (measured).

        Raises:
            ImportError: no binding loads (the message says what to install).
        """
        self.path, self.n_ctx, self.n_batch = str(path), n_ctx, n_batch
        errors: list[str] = []
        for name in (backend,) if backend else _BACKENDS:
            module, error = _import(name)
            if module is None:
                errors.append(error or name)
                continue
            self.backend = name
            if name == "llama_cpp_py_sync":
                _silence_py_sync()
                kv = {"type_k": "f32", "type_v": "f32"} if f32_kv_cache else {}
                self._llm = module.Llama(
                    self.path,
                    n_ctx=n_ctx,
                    n_batch=n_batch,
                    n_threads=n_threads_decode,
                    n_threads_batch=n_threads,
                    verbose=False,
                    **kv,
                )
                self._lib, self._ffi, self._ctx = self._llm._lib, self._llm._ffi, self._llm._ctx
                self.n_vocab = int(self._llm.n_vocab)
            else:
                kv = {"type_k": _GGML_F32, "type_v": _GGML_F32} if f32_kv_cache else {}
                self._llm = module.Llama(
                    self.path,
                    n_ctx=n_ctx,
                    n_batch=n_batch,
                    n_ubatch=n_batch,
                    n_threads=n_threads_decode,
                    n_threads_batch=n_threads,
                    logits_all=True,
                    verbose=False,
                    **kv,
                )
                self.n_vocab = int(self._llm.n_vocab())
            return
        raise ImportError(f"no llama.cpp binding loads ({'; '.join(errors)}); {_INSTALL_HINT}")

    @staticmethod
    def available() -> str | None:
        """None when a binding loads, else why none does and what to pip install."""
        errors = []
        for name in _BACKENDS:
            module, error = _import(name)
            if module is not None:
                return None
            errors.append(error or name)
        return f"no llama.cpp binding loads ({'; '.join(errors)}); {_INSTALL_HINT}"

    # ---- llama_cpp_py_sync: llama.h through cffi -----------------------------------------
    def _clear(self) -> None:
        """Empty the KV cache (the context's memory), so the next token is at position 0."""
        lib = self._lib
        if hasattr(lib, "llama_get_memory") and hasattr(lib, "llama_memory_clear"):
            lib.llama_memory_clear(lib.llama_get_memory(self._ctx), True)
        elif hasattr(lib, "llama_kv_self_clear"):
            lib.llama_kv_self_clear(self._ctx)
        else:
            lib.llama_kv_cache_clear(self._ctx)

    def _decode(self, tokens: list[int], n_past: int) -> np.ndarray:  # (len(tokens), V)
        """Decode `tokens` at positions n_past… in `n_batch` chunks; all their logits."""
        lib, ffi = self._lib, self._ffi
        out = np.empty((len(tokens), self.n_vocab), dtype=np.float32)  # (T, V)
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start : start + self.n_batch]
            batch = lib.llama_batch_init(len(chunk), 0, 1)
            try:
                batch.n_tokens = len(chunk)
                for i, token in enumerate(chunk):
                    batch.token[i] = token
                    batch.pos[i] = n_past + start + i
                    batch.n_seq_id[i] = 1
                    batch.seq_id[i][0] = 0
                    batch.logits[i] = 1  # every position's logits
                rc = lib.llama_decode(self._ctx, batch)
                if rc != 0:
                    raise RuntimeError(f"llama_decode failed with code {rc}")
                # One output row per token, in batch order: (len(chunk), V) float32.
                ptr = lib.llama_get_logits(self._ctx)
                rows = np.frombuffer(ffi.buffer(ptr, len(chunk) * self.n_vocab * 4), np.float32)
                out[start : start + len(chunk)] = rows.reshape(len(chunk), self.n_vocab)
            finally:
                lib.llama_batch_free(batch)
        return out

    # ---- the two calls -------------------------------------------------------------------
    def logits(self, tokens: list[int]) -> np.ndarray:  # (T, V) float32
        """The logits after each of `tokens` (row t predicts token t + 1), from an empty
        KV cache, in `n_batch`-token decode calls."""
        if not tokens or len(tokens) > self.n_ctx:
            raise ValueError(f"need 1..{self.n_ctx} tokens, got {len(tokens)}")
        if self.backend == "llama_cpp_py_sync":
            self._clear()
            return self._decode(list(tokens), 0)
        self._llm.reset()  # n_tokens = 0; eval() then drops the cache from position 0
        self._llm.eval(list(tokens))
        return np.array(self._llm.scores[: len(tokens)], dtype=np.float32)  # (T, V)

    def greedy(self, tokens: list[int], n: int) -> list[int]:
        """The `n` argmax tokens after `tokens`: the prompt in one pass from an empty KV
        cache, then each new token fed alone at the next position."""
        if not tokens or len(tokens) + n > self.n_ctx:
            raise ValueError(f"need 1 + {len(tokens)} + {n} tokens <= n_ctx={self.n_ctx}")
        out: list[int] = []
        if self.backend == "llama_cpp_py_sync":
            self._clear()
            last = self._decode(list(tokens), 0)[-1]  # (V,)
            for i in range(n):
                out.append(int(np.argmax(last)))
                if i + 1 < n:
                    last = self._decode(out[-1:], len(tokens) + i)[-1]  # (V,)
            return out
        self._llm.reset()
        self._llm.eval(list(tokens))
        for i in range(n):
            out.append(int(np.argmax(self._llm.scores[self._llm.n_tokens - 1])))
            if i + 1 < n:
                self._llm.eval(out[-1:])
        return out

    def close(self) -> None:
        """Free the model and context now rather than at garbage collection."""
        close = getattr(self._llm, "close", None)
        if close is not None:
            close()


def write_f32_gguf(src: str | Path, dst: str | Path) -> Path:
    """Copy GGUF `src` to `dst` with every tensor dequantized to float32 (same metadata,
    `general.file_type` ALL_F32). For SmolLM2-135M: ~0.5 GB, a few seconds."""
    from gguf import GGUFReader, GGUFValueType, GGUFWriter
    from gguf.quants import dequantize

    reader = GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    writer = GGUFWriter(str(dst), arch=arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.file_type"):
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), kind, sub)
    writer.add_file_type(0)  # LLAMA_FTYPE_ALL_F32
    for t in reader.tensors:
        # GGUF lists dims innermost first; numpy wants them outermost first.
        shape = [int(d) for d in reversed(t.shape.tolist())]
        weights = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
        writer.add_tensor(t.name, weights.reshape(shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(dst)
