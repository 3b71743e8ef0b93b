"""Tokenizers of checkpoint folders (Kimi's tiktoken format, HF `tokenizer.json`) and a
byte-level BPE trainer for our own small models.

Kimi ships `tiktoken.model` ("base64(token bytes) rank" per line) and `tokenizer_config.json`;
`tokenization_kimi.py` splits text with `KIMI_PAT_STR` and puts 256 special-token ids right
after the BPE ranks, named by `added_tokens_decoder` (else `<|reserved_token_{id}|>`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import tiktoken
import tokenizers
from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from tokenizers import decoders, models, pre_tokenizers, trainers

from kimmy_swarm.model.errors import CheckpointError, GenerationError, ModelConfigError

__all__ = [
    "DEFAULT_CHAT_TEMPLATE",
    "KIMI_PAT_STR",
    "HFTokenizer",
    "TiktokenTokenizer",
    "Tokenizer",
    "load_tokenizer",
    "train_bpe_tokenizer",
]

TOKENIZER_JSON = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
TIKTOKEN_MODEL = "tiktoken.model"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
NUM_RESERVED_SPECIAL_TOKENS = 256

# `TikTokenTokenizer.pat_str` of Kimi's tokenization_kimi.py, read off several independent
# re-implementations that agree on it. Han runs are pieces of their own; other letters split
# at lower→upper case changes, with English contractions attached.
KIMI_PAT_STR = (
    r"[\p{Han}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# Used when a folder has no chat template: Kimi's turn layout, no implicit system prompt.
# Roles other than user/assistant are written as `<|im_system|>{role}<|im_middle|>`.
DEFAULT_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}<|im_user|>user<|im_middle|>"
    "{%- elif message['role'] == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- else -%}<|im_system|>{{ message['role'] }}<|im_middle|>"
    "{%- endif -%}{{ message['content'] }}<|im_end|>{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
)


class Tokenizer(ABC):
    """Text ↔ ids, the special-token ids the model needs, and the chat prompt format.

    `config` is the folder's `tokenizer_config.json` (bos/eos/pad token names,
    `chat_template`, Kimi's `added_tokens_decoder`, …), kept so that `save` writes it back.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        self.config = dict(config or {})

    @property
    def chat_template(self) -> str | None:
        """The Jinja template of the config (a named list's "default"), None when absent."""
        source = self.config.get("chat_template")
        if isinstance(source, list):  # [{"name": "default", "template": …}, …]
            named = {t.get("name"): t.get("template") for t in source if isinstance(t, dict)}
            source = named.get("default")
        return source if isinstance(source, str) else None

    @abstractmethod
    def _encode(self, text: str) -> list[int]: ...  # without bos

    @abstractmethod
    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        """Text of `ids`; special tokens are written out unless skipped."""

    @property
    @abstractmethod
    def vocab_size(self) -> int:
        """Number of ids, special tokens included."""

    @abstractmethod
    def token_to_id(self, token: str) -> int | None:
        """The id of one token (special or not), None when it is not in the vocabulary."""

    @abstractmethod
    def _save_files(self, folder: Path) -> None: ...

    def save(self, path: str | Path) -> Path:
        """Write the tokenizer files and `tokenizer_config.json` into folder `path`."""
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        self._save_files(folder)
        text = json.dumps(self.config, indent=2, ensure_ascii=False) + "\n"
        (folder / TOKENIZER_CONFIG).write_text(text, encoding="utf-8")
        return folder

    def encode(self, text: str, *, add_bos: bool = False) -> list[int]:
        """Ids of `text`; special-token strings in it become their single ids.

        Raises:
            CheckpointError: `add_bos` but the tokenizer has no bos token.
        """
        ids = self._encode(text)
        if add_bos:
            if self.bos_token_id is None:
                raise CheckpointError("add_bos=True but this tokenizer has no bos token")
            ids.insert(0, self.bos_token_id)
        return ids

    def _special_id(self, key: str) -> int | None:
        name = _token_name(self.config.get(key))
        return None if name is None else self.token_to_id(name)

    @property
    def bos_token_id(self) -> int | None:
        return self._special_id("bos_token")

    @property
    def eos_token_id(self) -> int | None:
        return self._special_id("eos_token")

    @property
    def pad_token_id(self) -> int | None:
        return self._special_id("pad_token")

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        *,
        add_generation_prompt: bool = True,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **variables: Any,
    ) -> str:
        """The prompt text for `messages` (`{"role", "content"}` dicts), rendered with the
        folder's Jinja `chat_template`, else `DEFAULT_CHAT_TEMPLATE`.

        `tools` (OpenAI's `{"type": "function", "function": {…}}` dicts) and any other
        `variables` are given to the template as they are, as transformers does (`tools`
        is None when there are none).

        Raises:
            GenerationError: a message is not a dict with a string "role", or the template
                rejected the conversation (its `raise_exception`).
            CheckpointError: the template is not valid Jinja or fails to render.
        """
        for i, m in enumerate(messages):
            if not isinstance(m, Mapping) or not isinstance(m.get("role"), str):
                raise GenerationError(
                    f"messages[{i}] must be a dict with a string 'role'; got {m!r}"
                )
        template = _compile_template(self.chat_template or DEFAULT_CHAT_TEMPLATE)
        tokens = {k: _token_name(self.config.get(k)) or "" for k in ("bos_token", "eos_token")}
        context = {**tokens, **variables, "tools": None if tools is None else list(tools)}
        try:
            return template.render(
                context, messages=messages, add_generation_prompt=add_generation_prompt
            )
        except TemplateError as e:
            raise CheckpointError(f"chat_template failed to render: {e}") from e


def _raise_from_template(message: str) -> NoReturn:
    raise GenerationError(f"chat_template rejected the messages: {message}")


@functools.lru_cache(maxsize=16)
def _compile_template(source: str) -> Any:
    # Like transformers: sandboxed, trim/lstrip blocks, `raise_exception`, JSON `tojson`.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise_from_template
    env.filters["tojson"] = lambda x, indent=None: json.dumps(x, ensure_ascii=False, indent=indent)
    try:
        return env.from_string(source)
    except TemplateError as e:
        raise CheckpointError(f"chat_template is not valid Jinja: {e}") from e


def _read_config(folder: Path) -> dict[str, Any]:
    """`tokenizer_config.json` of `folder` ({} when absent); a `chat_template.jinja` file
    beside it fills `chat_template` when the config has none."""
    file = folder / TOKENIZER_CONFIG
    data: Any = {}
    if file.is_file():
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise CheckpointError(f"{file}: not readable JSON ({e})") from e
    if not isinstance(data, dict):
        raise CheckpointError(f"{file}: expected a JSON object")
    jinja = folder / CHAT_TEMPLATE_FILE
    if "chat_template" not in data and jinja.is_file():
        data["chat_template"] = jinja.read_text(encoding="utf-8")
    return data


def _token_name(value: Any) -> str | None:
    """`"[BOS]"` or an AddedToken dict `{"content": "[BOS]", …}` → "[BOS]"."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


# ---- HF tokenizers -------------------------------------------------------------------------
class HFTokenizer(Tokenizer):
    """A `tokenizers.Tokenizer` (`tokenizer.json`); special tokens named by `config`."""

    def __init__(
        self, tokenizer: tokenizers.Tokenizer, config: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(config)
        self._tok = tokenizer
        self.config.setdefault("tokenizer_class", "PreTrainedTokenizerFast")

    @classmethod
    def from_folder(cls, path: str | Path) -> HFTokenizer:
        """Load `tokenizer.json` (+ optional `tokenizer_config.json`) from a folder."""
        file = Path(path) / TOKENIZER_JSON
        try:
            tok = tokenizers.Tokenizer.from_file(str(file))
        except Exception as e:  # tokenizers raises a bare Exception
            raise CheckpointError(f"{file}: not a readable tokenizers file ({e})") from e
        return cls(tok, _read_config(file.parent))

    def _encode(self, text: str) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        return self._tok.decode(list(ids), skip_special_tokens=skip_special_tokens)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def token_to_id(self, token: str) -> int | None:
        return self._tok.token_to_id(token)

    def _save_files(self, folder: Path) -> None:
        self._tok.save(str(folder / TOKENIZER_JSON))


def train_bpe_tokenizer(
    texts: Iterable[str],
    *,
    vocab_size: int,
    special_tokens: Sequence[str] = ("<|pad|>", "<|bos|>", "<|eos|>"),
) -> HFTokenizer:
    """Train a byte-level BPE (every byte string encodes; decode inverts encode exactly).

    Args:
        texts: the corpus, one document or line per item.
        vocab_size: most ids, special tokens included (a small corpus may give fewer).
        special_tokens: `(pad, bos, eos, *more)`; they get ids 0, 1, 2, … in this order.

    Raises:
        ModelConfigError: fewer than 3 or repeated special tokens, or a `vocab_size` with
            no room for the 256 byte tokens plus the special tokens.
    """
    specials = list(special_tokens)
    if len(specials) < 3 or len(set(specials)) != len(specials) or vocab_size < 256 + len(specials):
        raise ModelConfigError(
            "need 3+ distinct special_tokens (pad, bos, eos, …) and vocab_size ≥ 256 bytes + "
            f"{len(specials)} specials = {256 + len(specials)}; got {specials}, {vocab_size}"
        )
    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    names = dict(zip(("pad_token", "bos_token", "eos_token"), specials, strict=False))
    return HFTokenizer(tok, names)


# ---- tiktoken (Kimi) -------------------------------------------------------------------------
def _read_tiktoken_ranks(file: Path) -> dict[bytes, int]:
    """Parse a `tiktoken.model` file.

    Not `tiktoken.load.load_tiktoken_bpe`: it caches by path under the temp folder and
    serves the cached copy even after the file at that path has changed.
    """
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(file.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error) as e:
            raise CheckpointError(
                f"{file}:{n}: expected 'base64-token rank'; got {line[:60]!r}"
            ) from e
    if not ranks or sorted(ranks.values()) != list(range(len(ranks))):
        raise CheckpointError(f"{file}: ranks must be 0..N-1, each once ({len(ranks)} tokens)")
    return ranks


def _kimi_special_tokens(n_base: int, config: Mapping[str, Any]) -> dict[str, int]:
    """Ids n_base … n_base+255 (plus any other named id), named from `added_tokens_decoder`,
    else `<|reserved_token_{id}|>`."""
    named: dict[int, str] = {}
    for key, attrs in (config.get("added_tokens_decoder") or {}).items():
        name = _token_name(attrs)
        if not str(key).isdigit() or name is None:
            raise CheckpointError(
                f"added_tokens_decoder[{key!r}] must map an integer id to {{'content': str}}"
            )
        if int(key) < n_base:
            raise CheckpointError(
                f"added_tokens_decoder id {key} ({name!r}) collides with a BPE rank (< {n_base})"
            )
        named[int(key)] = name
    ids = sorted(set(range(n_base, n_base + NUM_RESERVED_SPECIAL_TOKENS)) | set(named))
    specials = {named.get(i, f"<|reserved_token_{i}|>"): i for i in ids}
    if len(specials) != len(ids):
        raise CheckpointError("added_tokens_decoder names one special token twice")
    return specials


class TiktokenTokenizer(Tokenizer):
    """Kimi's tokenizer: tiktoken BPE ranks, `KIMI_PAT_STR`, specials after the ranks.

    Special-token names come from `config["added_tokens_decoder"]`; a `config["pat_str"]`
    (our own key, written only when not Kimi's) overrides the split pattern.
    """

    def __init__(
        self,
        ranks: dict[bytes, int],
        config: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(config)
        self._ranks = ranks
        specials = _kimi_special_tokens(len(ranks), self.config)
        self._enc = tiktoken.Encoding(
            name="kimi",
            pat_str=self.config.get("pat_str", KIMI_PAT_STR),
            mergeable_ranks=ranks,
            special_tokens=specials,
        )
        self._special_ids = frozenset(specials.values())

    @classmethod
    def from_folder(cls, path: str | Path) -> TiktokenTokenizer:
        """Load `tiktoken.model` + `tokenizer_config.json` (specials, bos/eos/pad, template)."""
        folder = Path(path)
        return cls(_read_tiktoken_ranks(folder / TIKTOKEN_MODEL), _read_config(folder))

    def _encode(self, text: str) -> list[int]:
        # Long runs are not cut as in tokenization_kimi.py: tiktoken 0.14 is fast on them.
        return self._enc.encode(text, allowed_special="all")

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = False) -> str:
        if skip_special_tokens:
            ids = [i for i in ids if i not in self._special_ids]
        return self._enc.decode(list(ids))

    @property
    def vocab_size(self) -> int:
        return self._enc.n_vocab

    def token_to_id(self, token: str) -> int | None:
        try:
            return self._enc.encode_single_token(token)
        except KeyError:
            return None

    def _save_files(self, folder: Path) -> None:
        ranked = sorted(self._ranks.items(), key=lambda kv: kv[1])
        lines = [f"{base64.b64encode(t).decode()} {r}\n" for t, r in ranked]
        (folder / TIKTOKEN_MODEL).write_text("".join(lines), encoding="ascii")


def load_tokenizer(path: str | Path) -> Tokenizer:
    """The tokenizer of a folder: `tokenizer.json` (HF) when present, else `tiktoken.model`.

    Raises:
        CheckpointError: neither file is there (the message names the folder and both).
    """
    folder = Path(path)
    if (folder / TOKENIZER_JSON).is_file():
        return HFTokenizer.from_folder(folder)
    if (folder / TIKTOKEN_MODEL).is_file():
        return TiktokenTokenizer.from_folder(folder)
    raise CheckpointError(
        f"{folder} holds no tokenizer: looked for {TOKENIZER_JSON} and {TIKTOKEN_MODEL}"
    )
