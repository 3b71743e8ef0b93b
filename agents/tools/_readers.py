"""File-format readers for `corpus.load_corpus`: one file in, raw records and skip notes out.

Readers parse the bytes `corpus.py` read (confined to the corpus root, capped in size); they
open nothing themselves. They never raise for bad content: a file or record that cannot be
used becomes a `(source, reason)` note, so one corrupt PDF never stops a corpus of hundreds
of papers. Ids, defaults and `Document` objects are built by `corpus.py`; this module only
parses."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from kimmy_swarm.agents.tools._front_matter import split_header
from kimmy_swarm.agents.tools.authors import parse_authors

__all__ = [
    "SUPPORTED_SUFFIXES",
    "FileRead",
    "RawRecord",
    "parse_year",
    "read_file",
    "record_from_mapping",
    "venue_of_name",
]

SUPPORTED_SUFFIXES = (".md", ".markdown", ".txt", ".pdf", ".bib", ".jsonl", ".json")

_EMPTY = "empty record"
_RECORD_KEYS = frozenset({"title", "abstract", "text", "authors", "author", "year", "venue", "url"})
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_YEAR = re.compile(r"(?<!\d)([12]\d{3})(?!\d)")
_BIB_KEY = re.compile(r"\s*@\w+\s*[{(]\s*([^,\s]+)\s*,")
#: Venues a collection's file name may name, as they are written ("iclr2017" -> "ICLR 2017").
_VENUES = {
    v.lower(): v
    for v in (
        "AAAI", "ACL", "AISTATS", "CHI", "COLING", "COLT", "CoRL", "CVPR", "ECCV", "EMNLP",
        "ICASSP", "ICCV", "ICLR", "ICML", "ICRA", "IJCAI", "Interspeech", "IROS", "JMLR", "KDD",
        "NAACL", "NeurIPS", "NIPS", "SIGIR", "TACL", "TMLR", "UAI", "WWW",
    )
}  # fmt: skip
# A venue directly followed by its year ("iclr2017", "ICLR_2017", "neurips-2019"), not any
# year of the name: "iclr2017_citations_in_2018" was collected in 2018 but is ICLR 2017's.
_VENUE_YEAR = re.compile(
    r"(?<![a-z])(" + "|".join(sorted(_VENUES, key=len, reverse=True)) + r")[ _.-]?"
    r"((?:19|20)\d{2})(?!\d)",
    re.IGNORECASE,
)


@dataclass(slots=True)
class RawRecord:
    """One document as parsed, before defaults and ids are applied."""

    source: str
    title: str
    text: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    venue: str | None = None
    url: str | None = None
    id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    stem: str = ""  # the file stem: the id of a whole-file document without authors
    whole_file: bool = False  # .md/.txt/.pdf (one document per file), not a record


@dataclass(slots=True)
class FileRead:
    """What one file gave: its records and `(source, reason)` notes for what was skipped."""

    records: list[RawRecord] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def read_file(data: bytes, rel: str) -> FileRead:
    """Parse the content `data` of one corpus file; `rel`, its path relative to the corpus
    root (the source), gives its type (by suffix) and stem."""
    name = PurePosixPath(rel)
    reader = _READERS.get(name.suffix.lower())
    if reader is None:
        return FileRead(skipped=[(rel, f"unsupported file type {name.suffix!r}")])
    return reader(data, rel, name.stem)


# --- field parsing -------------------------------------------------------------------------


def parse_year(value: Any) -> int | None:
    """A year from an int, a float like 2017.0, or text such as "2017" or "2017-05-01"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return value if 1000 <= value <= 2999 else None
    if isinstance(value, str) and (m := _YEAR.search(value)):
        return int(m.group(1))
    return None


def venue_of_name(path: str) -> tuple[str, int] | None:
    """The venue and year a file's name or folders name, nearest first: ("ICLR 2017", 2017)
    for "papers/iclr2017_citations_in_2018.json"; None when no part names a known venue
    directly followed by a year."""
    for part in reversed(PurePosixPath(path.split("#", 1)[0]).parts):
        if found := _VENUE_YEAR.search(part):
            venue, year = found.groups()
            return f"{_VENUES[venue.lower()]} {year}", int(year)
    return None


def _text_field(value: Any) -> str:
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else str(value).strip()


def record_from_mapping(obj: Mapping[str, Any], source: str, stem: str) -> RawRecord | str:
    """A record from a JSON object, or the reason it is skipped."""
    title = " ".join(_text_field(obj.get("title")).split())
    abstract = _text_field(obj.get("abstract"))
    body = _text_field(obj.get("text"))
    text = abstract or body
    if (not title and not text) or (title == "No Title" and not text):
        return _EMPTY
    meta = {k: v for k, v in obj.items() if k not in _RECORD_KEYS and k != "id"}
    if abstract and body:  # the abstract is the text; keep the other one
        meta["text"] = obj.get("text")
    year = parse_year(obj.get("year"))
    if year is None and obj.get("year") not in (None, ""):
        meta["year"] = obj.get("year")  # unparseable: kept rather than lost
    raw_id = _text_field(obj.get("id"))
    return RawRecord(
        source=source,
        title=title,
        text=text or title,
        authors=parse_authors(obj.get("authors", obj.get("author"))),
        year=year,
        venue=_text_field(obj.get("venue")) or None,
        url=_text_field(obj.get("url")) or None,
        id=raw_id or None,
        meta=meta,
        stem=stem,
    )


# --- readers -------------------------------------------------------------------------------


def _decode(data: bytes) -> str | UnicodeDecodeError:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return exc
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _decode_reason(exc: UnicodeDecodeError) -> str:
    bad = exc.object[exc.start : exc.start + 1].hex()
    return f"not valid UTF-8 text (byte 0x{bad} at offset {exc.start})"


def _title_of_text(text: str) -> str:
    lines = text.split("\n")
    if lines and lines[0].strip() == "---":  # skip YAML front matter
        end = next((i for i, ln in enumerate(lines[1:], 1) if ln.strip() == "---"), 0)
        lines = lines[end + 1 :]
    for line in lines:
        if m := _HEADING.match(line):
            return m.group(1).strip()
    first = next((ln for ln in lines if ln.strip()), "")
    return first.strip().lstrip("#").strip()


def _read_text(data: bytes, rel: str, stem: str) -> FileRead:
    """A .md/.txt file: one document, its fields from the YAML front matter or `Key: value`
    lines at its top (`_front_matter`), its text what follows them."""
    text = _decode(data)
    if isinstance(text, UnicodeDecodeError):
        return FileRead(skipped=[(rel, _decode_reason(text))])
    if not text.strip():
        return FileRead(skipped=[(rel, "empty file")])
    header = split_header(text)
    fields, body = header.fields, header.body
    title = " ".join(_text_field(fields.get("title")).split()) or _title_of_text(body)
    if not body.strip() and not title:
        return FileRead(skipped=[(rel, "empty file")])
    meta: dict[str, Any] = {k: v for k, v in fields.items() if k not in _RECORD_KEYS | {"id"}}
    if fields.get("abstract"):
        meta["abstract"] = fields["abstract"]
    year = parse_year(fields.get("year"))
    if year is None and fields.get("year") not in (None, ""):
        meta["year"] = fields["year"]  # unparseable: kept rather than lost
    meta.update(header.notes)
    record = RawRecord(
        source=rel,
        title=title,
        text=body if body.strip() else title,
        authors=parse_authors(fields.get("authors")),
        year=year,
        venue=_text_field(fields.get("venue")) or None,
        url=_text_field(fields.get("url")) or None,
        id=_text_field(fields.get("id")) or None,
        meta=meta,
        stem=stem,
        whole_file=True,
    )
    return FileRead(records=[record])


def _read_pdf(data: bytes, rel: str, stem: str) -> FileRead:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            return FileRead(skipped=[(rel, "encrypted PDF (a password is required)")])
        pages = [page.extract_text() or "" for page in reader.pages]
        meta_title = reader.metadata.title if reader.metadata else None
    # pypdf raises many exception types on damaged input; each becomes a skip note naming it.
    except Exception as exc:  # noqa: BLE001
        return FileRead(skipped=[(rel, f"unreadable PDF: {type(exc).__name__}: {exc}")])
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        return FileRead(skipped=[(rel, "PDF has no extractable text (scanned images?)")])
    title = " ".join(str(meta_title or "").split()) or _title_of_text(text)
    record = RawRecord(
        source=rel,
        title=title,
        text=text,
        stem=stem,
        whole_file=True,
        meta={"pages": len(pages)},
    )
    return FileRead(records=[record])


def _read_records(items: list[tuple[str, Any]], stem: str, out: FileRead) -> FileRead:
    for source, obj in items:
        if not isinstance(obj, Mapping):
            out.skipped.append((source, f"record is not a JSON object (got {type(obj).__name__})"))
            continue
        rec = record_from_mapping(obj, source, stem)
        if isinstance(rec, str):
            out.skipped.append((source, rec))
        else:
            out.records.append(rec)
    return out


def _read_jsonl(data: bytes, rel: str, stem: str) -> FileRead:
    text = _decode(data)
    if isinstance(text, UnicodeDecodeError):
        return FileRead(skipped=[(rel, _decode_reason(text))])
    out = FileRead()
    items: list[tuple[str, Any]] = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            items.append((f"{rel}#{lineno}", json.loads(line)))
        except json.JSONDecodeError as exc:
            out.skipped.append((f"{rel}#{lineno}", f"invalid JSON on line {lineno}: {exc.msg}"))
    return _read_records(items, stem, out)


def _read_json(data: bytes, rel: str, stem: str) -> FileRead:
    text = _decode(data)
    if isinstance(text, UnicodeDecodeError):
        return FileRead(skipped=[(rel, _decode_reason(text))])
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        reason = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        return FileRead(skipped=[(rel, reason)])
    if isinstance(data, list):
        items = [(f"{rel}#{i}", obj) for i, obj in enumerate(data, 1)]
    elif isinstance(data, Mapping):
        items = [(rel, data)]
    else:
        reason = f"JSON is neither an array of records nor one object (got {type(data).__name__})"
        return FileRead(skipped=[(rel, reason)])
    return _read_records(items, stem, FileRead())


def _bib_value(value: Any) -> str:
    # Inner braces protect capitalisation in BibTeX ("{LSTM}"); they are not text.
    return " ".join(str(value).replace("{", "").replace("}", "").split())


def _read_bib(data: bytes, rel: str, stem: str) -> FileRead:
    import bibtexparser
    from bibtexparser.middlewares import LatexDecodingMiddleware

    text = _decode(data)
    if isinstance(text, UnicodeDecodeError):
        return FileRead(skipped=[(rel, _decode_reason(text))])
    library = bibtexparser.parse_string(text, append_middleware=[LatexDecodingMiddleware()])
    out = FileRead()
    for block in library.failed_blocks:
        error = getattr(block, "error", None)
        lines = str(error or "").strip().splitlines()
        detail = lines[0] if lines else "syntax error"
        key = _BIB_KEY.match(block.raw or "")
        where = f"{rel}#{key.group(1)}" if key else rel
        out.skipped.append((where, f"bad BibTeX entry at line {block.start_line}: {detail}"))
    for entry in library.entries:
        fields = {k.lower(): _bib_value(f.value) for k, f in entry.fields_dict.items()}
        obj: dict[str, Any] = {"entry_type": entry.entry_type}
        obj.update({k: v for k, v in fields.items() if k not in ("author", "journal", "booktitle")})
        obj["venue"] = fields.get("journal") or fields.get("booktitle")
        if not fields.get("url") and fields.get("doi"):
            obj["url"] = f"https://doi.org/{fields['doi']}"
        obj["id"] = entry.key
        rec = record_from_mapping(obj, f"{rel}#{entry.key}", stem)
        if isinstance(rec, str):
            out.skipped.append((f"{rel}#{entry.key}", rec))
            continue
        rec.authors = parse_authors(fields.get("author"), bibtex=True)
        out.records.append(rec)
    return out


_READERS: dict[str, Callable[[bytes, str, str], FileRead]] = {
    ".md": _read_text,
    ".markdown": _read_text,
    ".txt": _read_text,
    ".pdf": _read_pdf,
    ".bib": _read_bib,
    ".jsonl": _read_jsonl,
    ".json": _read_json,
}
