"""Tokenizers: a BPE trained on real abstracts, Kimi's tiktoken folder format, chat prompts."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from kimmy_swarm.model.errors import CheckpointError, GenerationError, ModelConfigError
from kimmy_swarm.model.tokenizer import (
    DEFAULT_CHAT_TEMPLATE,
    HFTokenizer,
    TiktokenTokenizer,
    load_tokenizer,
    train_bpe_tokenizer,
)

PAPERS = Path(__file__).resolve().parents[3] / "shared/data/papers/iclr2017_citations_in_2018.json"
UNSEEN = "naïve café — 你好, мир 😀\ttabs  and\n\nnew lines; x² ≠ y₀ <b>tags</b>"


@pytest.fixture(scope="module")
def abstracts() -> list[str]:
    if not PAPERS.is_file():
        pytest.skip(f"shared corpus {PAPERS} is not on this machine")
    papers = json.loads(PAPERS.read_text(encoding="utf-8"))
    return [p["abstract"] for p in papers if p.get("abstract")]


@pytest.fixture(scope="module")
def bpe(abstracts: list[str]) -> HFTokenizer:
    return train_bpe_tokenizer(abstracts[:400], vocab_size=1000)


# ---- trained byte-level BPE -------------------------------------------------------------------
def test_trained_bpe_round_trips_unseen_text_and_compresses(
    bpe: HFTokenizer, abstracts: list[str]
) -> None:
    assert bpe.vocab_size == 1000
    held_out = abstracts[400:]
    assert len(held_out) >= 50
    for text in [*held_out, UNSEEN]:
        assert bpe.decode(bpe.encode(text)) == text
    n_bytes = sum(len(t.encode()) for t in held_out)
    n_ids = sum(len(bpe.encode(t)) for t in held_out)
    assert n_ids < 0.45 * n_bytes  # merges were learned (measured ≈ 0.33 tokens per byte)


def test_trained_bpe_special_tokens(bpe: HFTokenizer) -> None:
    assert (bpe.pad_token_id, bpe.bos_token_id, bpe.eos_token_id) == (0, 1, 2)
    assert bpe.encode("<|bos|>hi<|eos|>")[0] == 1
    assert bpe.encode("<|bos|>hi<|eos|>")[-1] == 2
    ids = bpe.encode("hi there", add_bos=True)
    assert ids[0] == 1 and ids[1:] == bpe.encode("hi there")
    assert bpe.decode(ids) == "<|bos|>hi there"
    assert bpe.decode(ids, skip_special_tokens=True) == "hi there"


def test_trained_bpe_save_load_round_trip(
    bpe: HFTokenizer, abstracts: list[str], tmp_path: Path
) -> None:
    bpe.save(tmp_path / "tok")
    config = json.loads((tmp_path / "tok/tokenizer_config.json").read_text())
    assert (config["pad_token"], config["bos_token"], config["eos_token"]) == (
        "<|pad|>", "<|bos|>", "<|eos|>",
    )  # fmt: skip
    loaded = load_tokenizer(tmp_path / "tok")
    assert isinstance(loaded, HFTokenizer)
    assert loaded.vocab_size == bpe.vocab_size
    assert (loaded.pad_token_id, loaded.bos_token_id, loaded.eos_token_id) == (0, 1, 2)
    for text in [*abstracts[400:420], UNSEEN]:
        assert loaded.encode(text, add_bos=True) == bpe.encode(text, add_bos=True)


def test_train_rejects_bad_arguments() -> None:
    with pytest.raises(ModelConfigError, match=r"vocab_size.*259.*100"):
        train_bpe_tokenizer(["a b c"], vocab_size=100)
    with pytest.raises(ModelConfigError, match="distinct special_tokens"):
        train_bpe_tokenizer(["a b c"], vocab_size=300, special_tokens=("<p>", "<b>", "<b>"))


def test_hf_folder_without_config_has_no_bos(bpe: HFTokenizer, tmp_path: Path) -> None:
    bpe.save(tmp_path)
    (tmp_path / "tokenizer_config.json").unlink()
    tok = load_tokenizer(tmp_path)
    assert tok.bos_token_id is None and tok.eos_token_id is None
    with pytest.raises(CheckpointError, match="no bos token"):
        tok.encode("x", add_bos=True)


def test_load_tokenizer_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError) as err:
        load_tokenizer(tmp_path)
    assert str(tmp_path) in str(err.value)
    assert "tokenizer.json" in str(err.value) and "tiktoken.model" in str(err.value)
    (tmp_path / "tokenizer.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"tokenizer\.json"):
        load_tokenizer(tmp_path)


# ---- Kimi's tiktoken format -------------------------------------------------------------------
MERGES = [b"th", b"the", b" the", "你好".encode(), b"world", "你好world".encode()]
N_BASE = 256 + len(MERGES)
NAMED = {0: "[BOS]", 1: "[EOS]", 2: "<|im_end|>", 3: "<|im_user|>", 4: "<|im_assistant|>",
         10: "<|im_system|>", 17: "<|im_middle|>", 255: "[PAD]"}  # fmt: skip


def write_kimi_folder(folder: Path, *, merges: list[bytes] = MERGES, **config: object) -> Path:
    """A tiny Kimi-layout folder: the 256 single bytes, a few merges, named specials."""
    folder.mkdir(parents=True, exist_ok=True)
    tokens = [bytes([b]) for b in range(256)] + merges
    lines = [f"{base64.b64encode(t).decode()} {rank}" for rank, t in enumerate(tokens)]
    (folder / "tiktoken.model").write_text("\n".join(lines) + "\n")
    n_base = len(tokens)
    decoder = {str(n_base + i): {"content": name, "special": True} for i, name in NAMED.items()}
    cfg = {
        "added_tokens_decoder": decoder,
        "bos_token": "[BOS]",
        "eos_token": "<|im_end|>",
        "pad_token": {"content": "[PAD]", "special": True},  # the AddedToken dict form
        "tokenizer_class": "TikTokenTokenizer",
        **config,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    return folder


def test_tiktoken_folder_loads_with_kimi_specials(tmp_path: Path) -> None:
    tok = load_tokenizer(write_kimi_folder(tmp_path))
    assert isinstance(tok, TiktokenTokenizer)
    assert tok.vocab_size == N_BASE + 256
    specials = (tok.bos_token_id, tok.eos_token_id, tok.pad_token_id)
    assert specials == (N_BASE, N_BASE + 2, N_BASE + 255)
    for i, name in NAMED.items():
        assert tok.encode(name) == [N_BASE + i]
    assert tok.encode(f"<|reserved_token_{N_BASE + 5}|>") == [N_BASE + 5]
    assert tok.encode(" the") == [N_BASE - 4]
    for text in (UNSEEN, "the theme of the thing", ""):
        assert tok.decode(tok.encode(text)) == text
    ids = tok.encode("<|im_user|>user<|im_middle|>Hi<|im_end|>", add_bos=True)
    assert ids[:2] == [N_BASE, N_BASE + 3] and ids[-1] == N_BASE + 2
    assert tok.decode(ids, skip_special_tokens=True) == "userHi"


def test_tiktoken_uses_kimis_split_pattern(tmp_path: Path) -> None:
    # Kimi's pattern makes a Han run a piece of its own; cl100k's keeps "你好world" together.
    kimi = load_tokenizer(write_kimi_folder(tmp_path / "kimi"))
    assert kimi.encode("你好world") == [259, 260]
    cl100k = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|\s+"
    other = load_tokenizer(write_kimi_folder(tmp_path / "other", pat_str=cl100k))
    assert other.encode("你好world") == [261]


def test_tiktoken_save_load_round_trip(tmp_path: Path) -> None:
    src = write_kimi_folder(tmp_path / "src")
    tok = load_tokenizer(src)
    tok.save(tmp_path / "dst")
    assert (tmp_path / "dst/tiktoken.model").read_bytes() == (src / "tiktoken.model").read_bytes()
    again = load_tokenizer(tmp_path / "dst")
    chat = tok.apply_chat_template([{"role": "user", "content": "the 你好 world"}])
    assert again.encode(chat) == tok.encode(chat)
    assert (again.bos_token_id, again.eos_token_id, again.pad_token_id) == (
        tok.bos_token_id, tok.eos_token_id, tok.pad_token_id,
    )  # fmt: skip


def test_tiktoken_file_rewritten_at_same_path_is_reread(tmp_path: Path) -> None:
    # tiktoken's own loader caches by path; a changed file must not be served stale.
    assert load_tokenizer(write_kimi_folder(tmp_path)).encode(" the") == [258]
    write_kimi_folder(tmp_path, merges=[b"th", b"the"])
    assert load_tokenizer(tmp_path).encode(" the") == [32, 257]


def test_tiktoken_bad_files(tmp_path: Path) -> None:
    folder = write_kimi_folder(tmp_path)
    model = folder / "tiktoken.model"
    good = model.read_text()
    model.write_text(good + "!!notbase64 999\n")
    with pytest.raises(CheckpointError, match=r"tiktoken.model:263: expected 'base64-token rank'"):
        load_tokenizer(folder)
    model.write_text(good.replace(" 261\n", " 300\n"))
    with pytest.raises(CheckpointError, match=r"ranks must be 0\.\.N-1"):
        load_tokenizer(folder)
    write_kimi_folder(folder, added_tokens_decoder={"7": {"content": "<x>"}})
    with pytest.raises(CheckpointError, match=r"id 7 .*collides with a BPE rank"):
        load_tokenizer(folder)


# ---- chat templates ---------------------------------------------------------------------------
CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello."},
    {"role": "tool", "content": "42"},
    {"role": "user", "content": "2+2?"},
]


def test_default_chat_template_exact_output(bpe: HFTokenizer) -> None:
    assert bpe.chat_template is None
    body = (
        "<|im_system|>system<|im_middle|>Be brief.<|im_end|>"
        "<|im_user|>user<|im_middle|>Hi<|im_end|>"
        "<|im_assistant|>assistant<|im_middle|>Hello.<|im_end|>"
        "<|im_system|>tool<|im_middle|>42<|im_end|>"
        "<|im_user|>user<|im_middle|>2+2?<|im_end|>"
    )
    assert bpe.apply_chat_template(CHAT) == body + "<|im_assistant|>assistant<|im_middle|>"
    assert bpe.apply_chat_template(CHAT, add_generation_prompt=False) == body


def test_config_chat_template_wins(tmp_path: Path) -> None:
    template = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
    tok = load_tokenizer(write_kimi_folder(tmp_path, chat_template=template))
    assert tok.apply_chat_template(CHAT[1:2]) == "[BOS][user]Hi"
    tok.save(tmp_path / "saved")
    assert load_tokenizer(tmp_path / "saved").chat_template == template


def test_chat_template_jinja_file_is_read(bpe: HFTokenizer, tmp_path: Path) -> None:
    bpe.save(tmp_path)
    template = "{% for m in messages %}<{{ m.content }}>{% endfor %}"
    (tmp_path / "chat_template.jinja").write_text(template)
    assert load_tokenizer(tmp_path).apply_chat_template(CHAT[:2]) == "<Be brief.><Hi>"


def test_chat_template_errors(tmp_path: Path) -> None:
    strict = "{% if messages[0].role != 'user' %}{{ raise_exception('user first') }}{% endif %}"
    tok = load_tokenizer(write_kimi_folder(tmp_path / "a", chat_template=strict))
    with pytest.raises(GenerationError, match="user first"):
        tok.apply_chat_template(CHAT)
    with pytest.raises(GenerationError, match=r"messages\[1\].*'role'"):
        tok.apply_chat_template([{"role": "user", "content": "x"}, {"content": "y"}])
    broken = load_tokenizer(write_kimi_folder(tmp_path / "b", chat_template="{% for %}"))
    with pytest.raises(CheckpointError, match="not valid Jinja"):
        broken.apply_chat_template(CHAT)
    assert "<|im_middle|>" in DEFAULT_CHAT_TEMPLATE
