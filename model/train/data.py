"""Training text: local corpora, and token streams cut into random training windows and fixed
evaluation windows (the interpreter's own documentation, offline: `model.python_docs`).

    texts = read_text_corpus(["notes/", "papers.json"])    # or python_docs_texts()
    data = tokenize_corpus(texts, tokenizer)              # docs joined with EOS
    train, held_out = data.split(0.1)
    x, y = train.batch(8, 128, generator)                 # (8, 128) inputs, next tokens
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from kimmy_swarm.model.errors import ModelConfigError

__all__ = [
    "TEXT_SUFFIXES",
    "TokenData",
    "TrainingCorpusError",
    "read_text_corpus",
    "tokenize_corpus",
]

TEXT_SUFFIXES = (".txt", ".md", ".rst")
JSON_SUFFIXES = (".json", ".jsonl")
#: String fields of a JSON record that hold text, joined in this order into one document.
JSON_TEXT_FIELDS = ("title", "abstract", "text")

SkipReporter = Callable[[Path, str], None]


class TrainingCorpusError(ModelConfigError):
    """A corpus path does not exist, or none of the given paths held readable text."""


# ---- local corpora --------------------------------------------------------------------------
def _warn_skip(path: Path, reason: str) -> None:
    warnings.warn(f"skipped {path}: {reason}", stacklevel=3)


def read_text_corpus(
    paths: Sequence[str | Path], *, on_skip: SkipReporter | None = None
) -> list[str]:
    """Read every document under `paths`: text files whole, JSON/JSONL records by field.

    Files: `.txt`/`.md`/`.rst` are one document each; `.json` (an object or a list of them)
    and `.jsonl` (one object a line) give one document per record, its string fields
    `title`, `abstract` and `text` joined. Folders are walked in sorted order; a symlink
    whose target lies outside the folder is skipped (reported), so a corpus folder cannot
    pull in files from elsewhere. Unreadable or unsupported files are reported through
    `on_skip(path, reason)` (default: a `UserWarning`) and skipped, not fatal.

    Raises:
        TrainingCorpusError: a path does not exist, or nothing readable was found (names the paths).
    """
    report = on_skip or _warn_skip
    if not paths:
        raise TrainingCorpusError(
            "no corpus paths given; pass files or folders of .txt/.md/.rst/.json"
        )
    texts: list[str] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise TrainingCorpusError(f"corpus path {str(path)!r} does not exist")
        files = _walk(path, report) if path.is_dir() else iter([path])
        for file in files:
            texts += _read_file(file, report)
    if not texts:
        shown = ", ".join(repr(str(p)) for p in paths)
        raise TrainingCorpusError(
            f"no readable text in {shown}; expected {', '.join(TEXT_SUFFIXES + JSON_SUFFIXES)} "
            "files with non-empty text"
        )
    return texts


def _walk(root: Path, report: SkipReporter) -> Iterator[Path]:
    """Files under `root` with a supported suffix, in sorted order; never leaves `root`."""
    yield from _walk_folder(root, root.resolve(), report, set())


def _walk_folder(folder: Path, top: Path, report: SkipReporter, seen: set[Path]) -> Iterator[Path]:
    real = folder.resolve()
    if real in seen:  # a symlink loop inside the root
        return
    seen.add(real)
    try:
        entries = sorted(folder.iterdir())
    except OSError as e:
        report(folder, f"folder not readable ({e.strerror or e})")
        return
    for entry in entries:
        if entry.is_symlink() and not entry.resolve().is_relative_to(top):
            report(entry, f"symlink to {entry.resolve()} leaves the corpus folder {top}")
        elif entry.is_dir():
            yield from _walk_folder(entry, top, report, seen)
        elif entry.suffix.lower() in TEXT_SUFFIXES + JSON_SUFFIXES:
            yield entry


def _read_file(file: Path, report: SkipReporter) -> list[str]:
    suffix = file.suffix.lower()
    if suffix not in TEXT_SUFFIXES + JSON_SUFFIXES:
        allowed = ", ".join(TEXT_SUFFIXES + JSON_SUFFIXES)
        report(file, f"unsupported file type {suffix or '(none)'!r}; allowed: {allowed}")
        return []
    try:
        raw = file.read_text(encoding="utf-8")
        if suffix == ".jsonl":
            records: list[Any] = [json.loads(line) for line in raw.splitlines() if line.strip()]
        elif suffix == ".json":
            data = json.loads(raw)
            records = data if isinstance(data, list) else [data]
        else:
            return [raw] if raw.strip() else []
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        report(file, f"not readable ({type(e).__name__}: {e})")
        return []
    texts = [t for rec in records if (t := _record_text(rec))]
    if not texts:
        report(file, f"no string {'/'.join(JSON_TEXT_FIELDS)} fields in its records")
    return texts


def _record_text(record: Any) -> str:
    if isinstance(record, str):
        return record.strip()
    if not isinstance(record, dict):
        return ""
    parts = [record.get(k) for k in JSON_TEXT_FIELDS]
    return "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())


# ---- token streams --------------------------------------------------------------------------
class _Encodes(Protocol):
    @property
    def eos_token_id(self) -> int | None: ...

    def encode(self, text: str) -> list[int]: ...


@dataclass(frozen=True)
class TokenData:
    """One long token stream (documents separated by `eos_id`) to cut windows from.

    Attributes:
        tokens: `[N]` int64 token ids.
        eos_id: the separator, used to split at a document boundary; None if unknown.
    """

    tokens: torch.Tensor  # (N,)
    eos_id: int | None = None

    def __post_init__(self) -> None:
        if self.tokens.ndim != 1:
            raise ModelConfigError(f"TokenData.tokens must be 1-D; got shape {self.tokens.shape}")

    def __len__(self) -> int:
        return int(self.tokens.numel())

    def split(self, eval_fraction: float) -> tuple[TokenData, TokenData]:
        """`(train, eval)`: the last `eval_fraction` of the stream held out, cut just after
        the EOS nearest to that point (within 10% of the stream) so few documents straddle
        the two parts.

        Raises:
            ModelConfigError: `eval_fraction` not in (0, 1).
        """
        if not 0.0 < eval_fraction < 1.0:
            raise ModelConfigError(f"eval_fraction must be in (0, 1); got {eval_fraction}")
        n = len(self)
        cut = round(n * (1.0 - eval_fraction))
        if self.eos_id is not None:
            ends = (self.tokens == self.eos_id).nonzero().flatten() + 1  # (n_docs,)
            near = ends[(ends - cut).abs() <= max(1, n // 10)]
            near = near[(near > 0) & (near < n)]
            if near.numel():
                cut = int(near[(near - cut).abs().argmin()])
        cut = min(max(cut, 1), n - 1)
        return TokenData(self.tokens[:cut], self.eos_id), TokenData(self.tokens[cut:], self.eos_id)

    def check_fits(self, seq_len: int, what: str) -> int:
        """How many window starts there are for `seq_len`; raises if the data is too short."""
        room = len(self) - seq_len  # windows are seq_len + 1 tokens: inputs and targets
        if seq_len < 1 or room < 1:
            raise ModelConfigError(
                f"{what}: seq_len {seq_len} needs at least {seq_len + 1} tokens; this data "
                f"has {len(self)} (use a shorter --seq-len or more text)"
            )
        return room

    def _windows(self, starts: torch.Tensor, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        idx = starts[:, None] + torch.arange(seq_len + 1)  # (B, T + 1)
        w = self.tokens[idx]  # (B, T + 1)
        return w[:, :-1].contiguous(), w[:, 1:].contiguous()  # (B, T), (B, T)

    def batch(
        self, batch_size: int, seq_len: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`batch_size` random windows: `(inputs [B, T], targets [B, T])`, targets shifted
        by one. Only `generator` is drawn from, so a run replays from its state."""
        room = self.check_fits(seq_len, "training batch")
        starts = torch.randint(0, room, (batch_size,), generator=generator)  # (B,)
        return self._windows(starts, seq_len)

    def eval_batches(
        self, batch_size: int, seq_len: int, n: int
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """`n` fixed batches whose windows are spread evenly over the stream, so every eval
        of a run scores the same tokens."""
        room = self.check_fits(seq_len, "eval batches")
        starts = torch.linspace(0, room - 1, n * batch_size).round().long()  # (n · B,)
        return [self._windows(s, seq_len) for s in starts.split(batch_size)]


def tokenize_corpus(texts: Iterable[str], tokenizer: _Encodes) -> TokenData:
    """Encode each document and join them into one stream, each followed by EOS (so the
    model learns where documents end, and `split` can cut at a boundary).

    Raises:
        ModelConfigError: the tokenizer has no EOS token.
        TrainingCorpusError: `texts` is empty.
    """
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ModelConfigError(f"{type(tokenizer).__name__} has no eos token to join documents")
    ids: list[int] = []
    for text in texts:
        ids += tokenizer.encode(text)
        ids.append(eos)
    if not ids:
        raise TrainingCorpusError("no documents to tokenize")
    return TokenData(torch.tensor(ids, dtype=torch.long), eos)
