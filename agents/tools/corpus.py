"""A corpus of documents loaded from a folder or a file, with stable ids and confined paths.

`load_corpus` reads Markdown, text, PDF, BibTeX, JSON Lines and JSON files. Nothing in a
file's content is fatal: an unreadable file or record becomes a `Skipped` entry that the
pipeline reports. Ids are stable: they come from the record, its URL or its authors, year
and title, never from the order in which files were read.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from kimmy_swarm.agents.tools._corpus_files import (
    FileRef,
    HardLinks,
    open_reason,
    open_under,
    read_capped,
    walk,
)
from kimmy_swarm.agents.tools._readers import (
    SUPPORTED_SUFFIXES,
    RawRecord,
    parse_year,
    venue_of_name,
)
from kimmy_swarm.agents.tools._readers import read_file as _read_file
from kimmy_swarm.agents.tools.authors import parse_authors
from kimmy_swarm.swarm.errors import UserError

__all__ = [
    "MAX_ID_LENGTH",
    "SUPPORTED_SUFFIXES",
    "Corpus",
    "CorpusError",
    "CorpusLimits",
    "Document",
    "PathOutsideRootError",
    "Skipped",
    "UnknownDocumentError",
    "load_corpus",
    "safe_path",
    "sanitize_id",
]

MAX_ID_LENGTH = 64
_DEFAULT_FIELDS = ("authors", "year", "venue", "url")
_NOT_DEFAULTABLE = frozenset({"id", "title", "text", "source", "meta"})
_TITLE_SKIP = frozenset({"a", "an", "the", "on", "of", "in", "for", "to", "and", "towards"})
_ID_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


class CorpusError(UserError):
    """The corpus path is missing, or is a file of an unsupported type."""


class PathOutsideRootError(UserError):
    """A path resolves outside the corpus root, or cannot be resolved safely inside it (a
    symlink loop, a NUL byte)."""


class UnknownDocumentError(UserError):
    """No document has the requested id; the message lists up to 5 close ids."""

    def __init__(self, doc_id: str, known: Sequence[str] = ()) -> None:
        close = difflib.get_close_matches(doc_id, list(known), n=5, cutoff=0.6)
        if close:
            hint = f"; close ids: {', '.join(close)}"
        elif known:
            hint = f"; ids look like: {', '.join(sorted(known)[:3])}"
        else:
            hint = "; the corpus is empty"
        super().__init__(f"no document with id {doc_id!r} among {len(known)} documents{hint}")
        self.doc_id = doc_id
        self.suggestions: tuple[str, ...] = tuple(close)


@dataclass(frozen=True, slots=True)
class CorpusLimits:
    """How much `load_corpus` reads; a file past a cap is skipped (and reported), unread.

    Attributes:
        max_file_bytes: largest file read, 16 MiB by default: a long paper as PDF is a few
            MiB, a .jsonl of some thousand abstracts a few more.
        max_corpus_bytes: bytes read over all files, 1 GiB by default; files are read in
            source order, and one that would pass the cap is skipped (smaller later ones may
            still fit).
        allow_hard_links: read a file of a corpus folder that has more than one name (a hard
            link). Off by default: such a file may be the same file as one outside the
            folder (`ln /home/me/.ssh/id_rsa corpus/x.txt`), which a symlink check cannot
            see; it is skipped and reported like a symlink out of the root.
    """

    max_file_bytes: int = 16 * 2**20
    max_corpus_bytes: int = 2**30
    allow_hard_links: bool = False

    def __post_init__(self) -> None:
        for name in ("max_file_bytes", "max_corpus_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise CorpusError(f"CorpusLimits.{name} must be a positive int, got {value!r}")


@dataclass(frozen=True, slots=True)
class Document:
    """One paper or file. `text` is the abstract or body; `title` is kept apart from it."""

    id: str
    title: str
    text: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    source: str = ""  # relative path, or "file.jsonl#12" / "refs.bib#key"
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def plain_meta(self) -> dict[str, Any]:
        """The metadata fields that are plain values (text, numbers, booleans, null, lists
        of text or numbers): what a tool or a prompt shows of them."""
        return {k: v for k, v in self.meta.items() if _plain(v)}


def _plain(value: Any) -> bool:
    if isinstance(value, str | int | float | bool) or value is None:
        return True
    return isinstance(value, list) and all(isinstance(x, str | int | float) for x in value)


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file or record that gave no document, and why."""

    source: str
    reason: str


@dataclass
class Corpus:
    """The loaded documents, in file order, and what was skipped. Treat it as read-only."""

    root: Path
    documents: list[Document]
    skipped: list[Skipped] = field(default_factory=list)
    _index: dict[str, Document] = field(default_factory=dict, init=False, repr=False, compare=False)
    _index_key: tuple[int, int] = field(default=(0, -1), init=False, repr=False, compare=False)

    def _by_id(self) -> dict[str, Document]:
        key = (id(self.documents), len(self.documents))
        if key != self._index_key:
            self._index = {d.id: d for d in self.documents}
            self._index_key = key
        return self._index

    def get(self, doc_id: str) -> Document:
        """The document with this id.

        Raises:
            UnknownDocumentError: no such id; the message suggests close ones.
        """
        doc = self._by_id().get(doc_id)
        if doc is None:
            raise UnknownDocumentError(doc_id, self.ids)
        return doc

    @property
    def ids(self) -> list[str]:
        """Document ids in corpus order."""
        return [d.id for d in self.documents]

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self) -> Iterator[Document]:
        return iter(self.documents)

    def __contains__(self, doc_id: object) -> bool:
        return isinstance(doc_id, str) and doc_id in self._by_id()


def safe_path(root: Path, relative: str | Path) -> Path:
    """`root / relative`, resolved (symlinks followed), if it stays inside `root`.

    Raises:
        PathOutsideRootError: the path, or a symlink on it, leads outside `root`, or it
            cannot be resolved (a symlink loop, a NUL byte, a name too long).
    """
    try:
        base = Path(root).resolve()
        target = (base / relative).resolve()
    except (RuntimeError, ValueError, OSError) as exc:  # RuntimeError: a loop (Python < 3.13)
        raise PathOutsideRootError(
            f"path {str(relative)!r} under {str(root)!r} cannot be resolved ({exc}); only "
            f"paths that resolve, without symlink loops or NUL bytes, inside the root are allowed"
        ) from exc
    if not target.is_relative_to(base):
        raise PathOutsideRootError(
            f"path {str(relative)!r} resolves to {str(target)!r}, outside the corpus root "
            f"{str(base)!r}; only paths inside the root are allowed"
        )
    return target


# --- reading -------------------------------------------------------------------------------


def _supported_types() -> str:
    return ", ".join(SUPPORTED_SUFFIXES)


def _read_bytes(
    root_fd: int, ref: FileRef, limits: CorpusLimits, used: int, links: HardLinks | None
) -> bytes | str:
    """The bytes of the file `ref` under the root, or why it is skipped (`links`: the hard
    links check; None: a file with more than one name is read like any)."""
    target, rel = ref
    room = min(limits.max_file_bytes, limits.max_corpus_bytes - used)
    try:
        fd = open_under(root_fd, target)
        refusal = None if links is None else links.refusal(fd, rel)
        if refusal is not None:  # checked on the open file: a name swapped since cannot dodge it
            os.close(fd)
            return refusal
        got = read_capped(fd, room)
    except OSError as exc:
        return open_reason(exc)
    if isinstance(got, bytes):
        return got
    if got < 0:  # a FIFO named x.txt would block the read forever
        return "not a regular file"
    if got > limits.max_file_bytes:
        cap, field_name = f"{limits.max_file_bytes}-byte cap", "max_file_bytes"
        return f"the file is {got} bytes, over the {cap} of CorpusLimits.{field_name}; not read"
    cap, field_name = f"{limits.max_corpus_bytes}-byte cap", "max_corpus_bytes"
    return (
        f"its {got} bytes would bring the corpus to {used + got} bytes, over the {cap} of "
        f"CorpusLimits.{field_name}; not read"
    )


def _read_all(
    root: Path,
    files: list[FileRef],
    skipped: list[Skipped],
    limits: CorpusLimits,
    *,
    links_ok: bool,
) -> list[RawRecord]:
    records: list[RawRecord] = []
    used = 0
    links = None if links_ok else HardLinks(root, (target for target, _ in files))
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        skipped += [Skipped(rel, open_reason(exc)) for _, rel in files]
        return records
    try:
        for target, rel in files:
            data = _read_bytes(root_fd, (target, rel), limits, used, links)
            if isinstance(data, str):
                skipped.append(Skipped(rel, data))
                continue
            used += len(data)
            result = _read_file(data, rel)
            records += result.records
            skipped += [Skipped(src, reason) for src, reason in result.skipped]
    finally:
        os.close(root_fd)
    return records


# --- ids -----------------------------------------------------------------------------------


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def sanitize_id(raw: str, *, max_length: int = MAX_ID_LENGTH) -> str:
    """`raw` as an id matching `[A-Za-z0-9][A-Za-z0-9_.-]*`, at most `max_length` chars."""
    text = _ID_BAD.sub("-", _ascii(raw))
    text = re.sub(r"^[^A-Za-z0-9]+", "", text)[:max_length].rstrip("-._")
    return text or "doc"


def _slug(text: str) -> str:
    return sanitize_id(_ascii(text).lower())


def _word(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", _ascii(text).lower())


def _id_from_url(url: str) -> str | None:
    parts = urlsplit(url)
    ids = parse_qs(parts.query).get("id")
    if ids and ids[0].strip():
        return ids[0].strip()
    segments = [s for s in parts.path.split("/") if s]
    if not segments:
        return None
    return re.sub(r"\.(pdf|html?)$", "", segments[-1], flags=re.IGNORECASE) or None


def _base_id(rec: RawRecord) -> str:
    if rec.id:
        return sanitize_id(rec.id)
    if rec.url and (from_url := _id_from_url(rec.url)):
        return sanitize_id(from_url)
    if rec.whole_file and not rec.authors:
        return _slug(rec.stem)
    surname = _word(rec.authors[0].split()[-1]) if rec.authors else ""
    words = [_word(w) for w in rec.title.split()]
    first = next((w for w in words if w and w not in _TITLE_SKIP), "")
    base = f"{surname}{rec.year or ''}{first}"
    return sanitize_id(base) if base else _slug(rec.stem)


def _assign_ids(records: list[RawRecord]) -> list[str]:
    """Unique ids for `records`, independent of their order (case-insensitively unique)."""
    bases = [_base_id(r) for r in records]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, base in enumerate(bases):
        groups[base.lower()].append(i)
    ids = list(bases)
    for members in groups.values():
        if len(members) > 1:
            for i in members:
                digest = hashlib.sha1((records[i].title + records[i].text).encode()).hexdigest()
                ids[i] = f"{sanitize_id(bases[i], max_length=MAX_ID_LENGTH - 7)}-{digest[:6]}"
    # Same title and text (or a suffixed id equal to another's base): number them, in an
    # order fixed by id and source rather than by file order.
    used: set[str] = set()
    final = list(ids)
    for i in sorted(range(len(ids)), key=lambda i: (ids[i].lower(), records[i].source)):
        candidate, n = ids[i], 1
        while candidate.lower() in used:
            n += 1
            suffix = f"-{n}"
            candidate = sanitize_id(ids[i], max_length=MAX_ID_LENGTH - len(suffix)) + suffix
        used.add(candidate.lower())
        final[i] = candidate
    return final


# --- loading -------------------------------------------------------------------------------


def _check_defaults(defaults: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(defaults or {})
    for key in out:
        if key in _NOT_DEFAULTABLE:
            raise CorpusError(
                f"defaults cannot set {key!r}; allowed: {', '.join(_DEFAULT_FIELDS)}, "
                "or any other key (it fills `meta`)"
            )
    if "year" in out and parse_year(out["year"]) is None:
        raise CorpusError(f"defaults year {out['year']!r} is not a year such as 2017")
    return out


def _document(rec: RawRecord, doc_id: str, defaults: Mapping[str, Any]) -> Document:
    meta = dict(rec.meta)
    for key, value in defaults.items():
        if key not in _DEFAULT_FIELDS:
            meta.setdefault(key, value)
    return Document(
        id=doc_id,
        title=rec.title,
        text=rec.text,
        authors=rec.authors,
        year=rec.year,
        venue=rec.venue,
        url=rec.url,
        source=rec.source,
        meta=meta,
    )


def _apply_defaults(rec: RawRecord, defaults: Mapping[str, Any]) -> None:
    if not rec.authors and "authors" in defaults:
        rec.authors = parse_authors(defaults["authors"])
    if rec.year is None and "year" in defaults:
        rec.year = parse_year(defaults["year"])
    if rec.venue is None and defaults.get("venue") is not None:
        rec.venue = str(defaults["venue"])
    if rec.url is None and defaults.get("url") is not None:
        rec.url = str(defaults["url"])


def _infer_dates(rec: RawRecord) -> None:
    """A year (and venue) for a record that lacks one, from its venue ("ICLR 2017") or from
    the name of its file or folders ("iclr2017_citations_in_2018.json" -> ICLR 2017, 2017);
    `meta["year_from"]` / `meta["venue_from"]` say where each came from."""
    if rec.year is None and rec.venue and (year := parse_year(rec.venue)) is not None:
        rec.year = year
        rec.meta.setdefault("year_from", f"venue {rec.venue!r}")
    named = venue_of_name(rec.source)
    if named is None:
        return
    name = rec.source.split("#", 1)[0]
    if rec.venue is None:
        rec.venue = named[0]
        rec.meta.setdefault("venue_from", f"file name {name!r}")
    if rec.year is None:
        rec.year = named[1]
        rec.meta.setdefault("year_from", f"file name {name!r}")


def load_corpus(
    path: str | Path,
    *,
    defaults: Mapping[str, Any] | None = None,
    limits: CorpusLimits = CorpusLimits(),
) -> Corpus:
    """Load every supported file under a folder (recursively), or one file.

    Hidden files and folders are ignored; symlinks that lead outside the root, loop or are
    broken are skipped, never followed; so are a folder's hard-linked files (more than one
    name: see `CorpusLimits.allow_hard_links`). Files are opened relative to the root without
    following symlinks, so a name swapped for a link after the walk is skipped, not read.
    Files past the `limits` are skipped unread. A folder with no readable document gives an
    empty corpus, not an error. Every skipped file is in `Corpus.skipped`, with the reason.

    Args:
        path: a folder, or one .md/.markdown/.txt/.pdf/.bib/.jsonl/.json file.
        defaults: values for fields a record lacks, e.g. {"year": 2017, "venue": "ICLR 2017"};
            keys other than authors/year/venue/url fill `meta`. A record that still lacks a
            year takes it from its venue when that names one, then from its file's name
            when that names a venue and its year ("iclr2017_citations_in_2018.json":
            ICLR 2017); `meta["year_from"]` says which.
        limits: the per-file and per-corpus byte caps (16 MiB and 1 GiB by default).

    Raises:
        CorpusError: `path` does not exist, is a file of an unsupported type, or `defaults`
            sets a field that cannot have a default.
    """
    given = Path(path).expanduser()
    fills = _check_defaults(defaults)
    if not isinstance(limits, CorpusLimits):
        raise CorpusError(f"load_corpus limits must be CorpusLimits, got {limits!r}")
    if not given.exists():
        raise CorpusError(
            f"corpus path {str(given)!r} does not exist; give a folder or a file of type "
            f"{_supported_types()}"
        )
    if given.is_dir():
        root = given.resolve()
        files, notes = walk(root)
        skipped = [Skipped(source, reason) for source, reason in notes]
    elif given.suffix.lower() in SUPPORTED_SUFFIXES and given.is_file():
        resolved = given.resolve()
        root, files, skipped = resolved.parent, [(resolved.name, given.name)], []
    else:
        raise CorpusError(
            f"corpus file {str(given)!r} has an unsupported type {given.suffix!r}; "
            f"supported: {_supported_types()}"
        )
    # a file named by the user is read whatever its links; a folder's files are not
    links_ok = limits.allow_hard_links or not given.is_dir()
    records = _read_all(root, files, skipped, limits, links_ok=links_ok)
    for rec in records:
        _apply_defaults(rec, fills)
        _infer_dates(rec)
    ids = _assign_ids(records)
    documents = [_document(rec, doc_id, fills) for rec, doc_id in zip(records, ids, strict=True)]
    return Corpus(root=root, documents=documents, skipped=skipped)
