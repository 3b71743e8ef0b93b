"""A GGUF file's tokenizer: llama.cpp's pre-tokenizer regexes (`tokenizer.ggml.pre`) rebuilt
with `tokenizers`, and which added tokens are special.

The "qwen2" pieces are checked twice: hand-written expectations for the cases where its
regex differs from GPT-2's (one digit per piece, a letter run takes one leading symbol,
contractions in any case, newline runs), and the Python `regex` module's `findall` on the
same pattern over more texts.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import regex
from tokenizers import decoders, pre_tokenizers

from kimmy_swarm.model._gguf_tokenizer import PRE_TOKENIZERS, QWEN2_PATTERN, gguf_pre_tokenizer
from kimmy_swarm.model.errors import GGUFError
from kimmy_swarm.model.gguf_loader import load_gguf_tokenizer
from tests.support.gguf_files import write_tokenizer_gguf


def pieces(pre: str, text: str) -> list[str]:
    """The words `pre` splits `text` into, byte-level symbols mapped back to text."""
    byte_level = decoders.ByteLevel()
    split = gguf_pre_tokenizer(Path("t.gguf"), pre).pre_tokenize_str(text)
    return [byte_level.decode([piece]) for piece, _ in split]


@pytest.mark.parametrize(
    ("text", "qwen2", "gpt2"),
    [
        ("abc 12345", ["abc", " ", "1", "2", "3", "4", "5"], ["abc", " 12345"]),
        ("3.14e-10", ["3", ".", "1", "4", "e", "-", "1", "0"], ["3", ".", "14", "e", "-", "10"]),
        ("$foo(bar)", ["$foo", "(bar", ")"], ["$", "foo", "(", "bar", ")"]),
        ("DON'T we'Re", ["DON", "'T", " we", "'Re"], ["DON", "'", "T", " we", "'", "Re"]),
        ("x  = 1;\n\n  y", ["x", " ", " =", " ", "1", ";\n\n", " ", " y"],
         ["x", " ", " =", " 1", ";", "\n\n ", " y"]),
        ("a\r\n\r\nb", ["a", "\r\n\r\n", "b"], ["a", "\r\n\r", "\n", "b"]),
        ("naïve 日本語 🤖", ["naïve", " 日本語", " 🤖"], ["naïve", " 日本語", " 🤖"]),
    ],
)  # fmt: skip
def test_qwen2_splits_as_its_regex_not_as_gpt2(
    text: str, qwen2: list[str], gpt2: list[str]
) -> None:
    assert pieces("qwen2", text) == qwen2
    assert pieces("gpt2", text) == gpt2


TEXTS = (
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n",
    "Numbers: 1234567890, 3.14159, -42, 0x1F, 2025-12-06",
    "Ünïcödé: naïve café — 日本語のテキスト, 한국어, 🤖👍🏽, Ελληνικά",
    "spaces    and\ttabs\t\tand\n\n\nnewlines   \n  trailing   ",
    "It's, we'RE, I'LL, you'd, they've, don't; 'quoted' \"double\"",
    "a+b==c&&d||e!=f;x->y::z  // comment /* block */\r\n",
)


@pytest.mark.parametrize("text", TEXTS)
def test_qwen2_pieces_equal_the_regex_findall(text: str) -> None:
    assert pieces("qwen2", text) == regex.findall(QWEN2_PATTERN, text)


def test_smollm_splits_digits_then_as_gpt2() -> None:
    assert pieces("smollm", "abc 12345") == ["abc", " ", "1", "2", "3", "4", "5"]
    assert pieces("smollm", "$foo") == pieces("gpt2", "$foo") == ["$", "foo"]


# ---- whole tokenizers, from GGUF files of tokenizer metadata only --------------------------
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>"]
VOCAB = [*SPECIALS, *sorted(pre_tokenizers.ByteLevel.alphabet()), "Ġt"]
MERGES = ["Ġ t"]
TYPES = [3, 3, 3, 4] + [1] * (len(VOCAB) - len(SPECIALS))  # CONTROL ×3, USER_DEFINED, NORMAL


def test_an_unknown_pre_tokenizer_is_refused_by_name(tmp_path: Path) -> None:
    write_tokenizer_gguf(tmp_path / "p.gguf", VOCAB, MERGES, pre="falcon", types=TYPES)
    with pytest.raises(GGUFError) as info:
        load_gguf_tokenizer(tmp_path / "p.gguf")
    supported = ", ".join(PRE_TOKENIZERS)
    assert str(info.value) == (
        f"{tmp_path / 'p.gguf'}: tokenizer.ggml.pre 'falcon' is not supported (supported: "
        f"{supported})"
    )


def test_user_defined_tokens_are_matched_but_not_special(tmp_path: Path) -> None:
    """llama.cpp matches CONTROL and USER_DEFINED tokens before BPE; it prints a
    USER_DEFINED one (Qwen2.5's `<tool_call>`) even where it leaves CONTROL ones out."""
    write_tokenizer_gguf(tmp_path / "t.gguf", VOCAB, MERGES, pre="qwen2", types=TYPES)
    tok = load_gguf_tokenizer(tmp_path / "t.gguf")
    ids = tok.encode("<|im_start|>a <tool_call>1 t<|im_end|>")
    a, space, one, t = (VOCAB.index(c) for c in ("a", "Ġ", "1", "Ġt"))
    assert ids == [1, a, space, 3, one, t, 2]
    assert tok.decode(ids, skip_special_tokens=True) == "a <tool_call>1 t"
    assert tok.decode(ids) == "<|im_start|>a <tool_call>1 t<|im_end|>"
    assert tok.chat_template is not None and tok.eos_token_id == 2
