"""The tokenizer of a GGUF file: llama.cpp's byte-level BPE rebuilt with `tokenizers`.

`tokenizer.ggml.model` "gpt2" (byte-level BPE) is read: `tokens`, `merges`, `token_type`,
the bos/eos/pad ids. CONTROL and USER_DEFINED tokens are matched in the text before BPE, as
llama.cpp does; CONTROL ones are special (left out by `decode(skip_special_tokens=True)`),
USER_DEFINED ones (Qwen2.5's `<tool_call>`) are not: llama.cpp always prints them, and
HF's tokenizer.json marks them non-special.

`tokenizer.ggml.pre` names how llama.cpp splits text into words before BPE; each supported
name maps to the regex llama.cpp uses for it (llama-vocab.cpp):

- "default", "gpt2": GPT-2's regex (`ByteLevel(use_regex=True)`);
- "smollm": single digits first, then GPT-2's regex;
- "qwen2": `QWEN2_PATTERN` (one digit per piece, letters with one leading non-letter), as
  HF's Qwen2 `tokenizer.json` does: a `Split` on it, then `ByteLevel` without its own regex.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tokenizers
from tokenizers import AddedToken, Regex, decoders, models, pre_tokenizers

from kimmy_swarm.model._gguf_metadata import GGUFMetadata
from kimmy_swarm.model.errors import GGUFError
from kimmy_swarm.model.tokenizer import HFTokenizer

__all__ = ["PRE_TOKENIZERS", "QWEN2_PATTERN", "gguf_pre_tokenizer", "read_gguf_tokenizer"]

#: llama.cpp's pre-tokenizer regex for `tokenizer.ggml.pre` "qwen2" (LLAMA_VOCAB_PRE_TYPE_QWEN2).
QWEN2_PATTERN = (
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
    r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
#: The `tokenizer.ggml.pre` values we split text for as llama.cpp does.
PRE_TOKENIZERS = ("default", "gpt2", "smollm", "qwen2")
# GGUF token types (llama.cpp `llama_token_type`) matched before BPE.
_CONTROL, _USER_DEFINED = 3, 4


def gguf_pre_tokenizer(path: Path, pre: str) -> pre_tokenizers.PreTokenizer:
    """The `tokenizers` pre-tokenizer that splits text as llama.cpp does for `pre`.

    Raises:
        GGUFError: `pre` is not one of `PRE_TOKENIZERS` (the message names the file).
    """
    if pre in ("default", "gpt2"):
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if pre == "smollm":  # llama.cpp: "\p{N}" (one digit per piece), then the GPT-2 regex
        return pre_tokenizers.Sequence(
            [
                pre_tokenizers.Digits(individual_digits=True),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
            ]
        )
    if pre == "qwen2":
        return pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    raise GGUFError(
        f"{path}: tokenizer.ggml.pre {pre!r} is not supported (supported: "
        f"{', '.join(PRE_TOKENIZERS)})"
    )


def read_gguf_tokenizer(meta: GGUFMetadata, chat_template: str | None) -> HFTokenizer:
    """A byte-level BPE (`tokenizers`) from `tokenizer.ggml.tokens` + `merges`.

    Raises:
        GGUFError: `tokenizer.ggml.model` is not "gpt2", the pre-tokenizer is not
            supported, or the tokens or merges are missing.
    """
    kind = meta.require("tokenizer.ggml.model")
    if kind != "gpt2":
        raise GGUFError(
            f"{meta.path}: tokenizer.ggml.model {kind!r} is not supported (supported: gpt2)"
        )
    tokens: list[str] = meta.require("tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in meta.require("tokenizer.ggml.merges")]
    types: list[int] = meta.get("tokenizer.ggml.token_type", [1] * len(tokens))
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = gguf_pre_tokenizer(meta.path, meta.get("tokenizer.ggml.pre", "default"))
    tok.decoder = decoders.ByteLevel()
    added = [
        AddedToken(t, special=kind == _CONTROL, normalized=False)
        for t, kind in zip(tokens, types, strict=True)
        if kind in (_CONTROL, _USER_DEFINED)
    ]
    tok.add_tokens(added)  # an AddedToken keeps its own `special`
    config: dict[str, Any] = {"add_bos_token": bool(meta.get("tokenizer.ggml.add_bos_token"))}
    for key, gguf_key in (("bos_token", "bos"), ("eos_token", "eos"), ("pad_token", "padding")):
        token_id = meta.get(f"tokenizer.ggml.{gguf_key}_token_id")
        if token_id is not None:
            config[key] = tokens[token_id]
    if chat_template is not None:
        config["chat_template"] = chat_template
    return HFTokenizer(tok, config)
