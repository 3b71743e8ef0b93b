"""The raw bytes each token id stands for, as xgrammar's RAW vocabulary needs them (byte-level
BPE, SentencePiece byte fallback, tiktoken); `structured.token_byte_strings` is the public name."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kimmy_swarm.model.tokenizer import HFTokenizer, TiktokenTokenizer, Tokenizer

__all__ = ["token_byte_strings"]


def _byte_level_chars() -> dict[str, int]:
    """Byte-level BPE's printable stand-in character for each byte (GPT-2 scheme): bytes
    that are printable Latin-1 stand for themselves, the others map to U+0100 onwards."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    char_of = {b: chr(b) for b in kept}
    for n, b in enumerate(b for b in range(256) if b not in char_of):
        char_of[b] = chr(0x100 + n)
    return {c: b for b, c in char_of.items()}


def _decoder_types(node: Any) -> set[str]:
    """All `type` names in a tokenizer.json `decoder` (Sequence decoders nest)."""
    if isinstance(node, Mapping):
        found = {node["type"]} if isinstance(node.get("type"), str) else set()
        for value in node.values():
            found |= _decoder_types(value)
        return found
    if isinstance(node, list):
        return set().union(*(_decoder_types(v) for v in node)) if node else set()
    return set()


def _hf_piece_bytes(piece: str, kind: str, byte_of: Mapping[str, int]) -> bytes:
    if kind == "byte_level":
        return bytes(byte_of[c] for c in piece) if all(c in byte_of for c in piece) else b""
    if kind == "sentencepiece" and len(piece) == 6 and piece.startswith("<0x"):
        return bytes([int(piece[3:5], 16)])  # byte-fallback token "<0x0A>"
    return piece.replace("\u2581", " ").encode("utf-8")  # "▁" is SentencePiece's space


def _hf_token_bytes(tokenizer: HFTokenizer) -> list[bytes]:
    tok = tokenizer._tok  # the wrapped `tokenizers.Tokenizer`; Tokenizer has no bytes API
    types = _decoder_types(json.loads(tok.to_str()).get("decoder"))
    kind = (
        "byte_level"
        if "ByteLevel" in types
        else "sentencepiece"
        if types & {"ByteFallback", "Metaspace"}
        else "plain"
    )
    byte_of = _byte_level_chars()
    added = tok.get_added_tokens_decoder()  # {id: AddedToken}
    out = []
    for i in range(tokenizer.vocab_size):
        if i in added:  # written out as is, or never text at all when special
            out.append(b"" if added[i].special else added[i].content.encode("utf-8"))
            continue
        piece = tok.id_to_token(i)
        out.append(b"" if piece is None else _hf_piece_bytes(piece, kind, byte_of))
    return out


def _tiktoken_token_bytes(tokenizer: TiktokenTokenizer) -> list[bytes]:
    enc = tokenizer._enc  # the wrapped `tiktoken.Encoding`
    out = []
    for i in range(tokenizer.vocab_size):
        if i in tokenizer._special_ids:
            out.append(b"")
            continue
        try:
            out.append(enc.decode_single_token_bytes(i))
        except KeyError:  # an id between the ranks and the specials
            out.append(b"")
    return out


def token_byte_strings(tokenizer: Tokenizer) -> list[bytes]:
    """The raw bytes each id stands for (`b""` for special tokens: never text).

    Exact for byte-level BPE (our trained tokenizers), SentencePiece byte fallback and
    tiktoken; for any other `Tokenizer` the decoded text of the single id (lossy where a
    token holds part of a character).
    """
    if isinstance(tokenizer, HFTokenizer):
        return _hf_token_bytes(tokenizer)
    if isinstance(tokenizer, TiktokenTokenizer):
        return _tiktoken_token_bytes(tokenizer)
    return [tokenizer.decode([i]).encode("utf-8") for i in range(tokenizer.vocab_size)]
