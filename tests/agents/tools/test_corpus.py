"""Loading corpora: every reader, stable ids, skipped files, confinement to the root."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from kimmy_swarm.agents.tools.corpus import (
    Corpus,
    CorpusError,
    CorpusLimits,
    Document,
    PathOutsideRootError,
    UnknownDocumentError,
    load_corpus,
    safe_path,
)
from kimmy_swarm.swarm.errors import UserError

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
ICLR = SHARED_DATA / "papers" / "iclr2017_citations_in_2018.json"
needs_iclr = pytest.mark.skipif(not ICLR.exists(), reason="shared ICLR data not present")

BIB = r"""
@inproceedings{zhang2017understanding,
  title = {Understanding deep learning requires rethinking {generalization}},
  author = {Zhang, Chiyuan and Bengio, Samy and others},
  booktitle = {International Conference on Learning Representations},
  year = {2017},
  abstract = {Deep networks fit random labels.},
}
@article{noabstract,
  title = {A Title Only},
  author = {Ada Lovelace},
  journal = {Notes},
  year = 1843,
  doi = {10.1000/xyz},
}
@article{broken, title = {never closed
"""


def make_pdf(lines: list[str], title: str | None = None, password: str | None = None) -> bytes:
    """A one-page PDF with `lines` of text (Helvetica), written by hand."""
    content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({ln}) Tj T*" for ln in lines) + " ET"
    objs = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        "/Resources << /Font << /F1 5 0 R >> >> >>",
        f"<< /Length {len(content)} >>\nstream\n{content}\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, obj in enumerate(objs, 1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n{obj}\nendobj\n".encode())
    xref = out.tell()
    out.write(f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode())
    out.write("".join(f"{off:010d} 00000 n \n" for off in offsets).encode())
    trailer = f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    out.write(trailer.encode())
    data = out.getvalue()
    if title is None and password is None:
        return data
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    if title is not None:
        writer.add_metadata({"/Title": title})
    if password is not None:
        writer.encrypt(user_password=password, owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write(root / "notes" / "attention.md", "Intro line\n\n# Sparse Attention\n\nBody text.\n")
    write(root / "plain.txt", "\n\n  First line is the title  \nmore text\n")
    write(root / "refs.bib", BIB)
    records = [
        {
            "title": "Graph Nets",
            "abstract": "We study graphs.",
            "authors": "Peter Battaglia and Jess Hamrick",
            "year": "2018",
            "stars": 5,
        },
        {
            "title": "Paper Two",
            "text": "Body two.",
            "authors": ["Ian Goodfellow", "Yoshua Bengio*"],
            "url": "https://arxiv.org/abs/1406.2661v1",
        },
        "not an object",
    ]
    lines = [json.dumps(r) for r in records]
    lines.insert(2, "{bad json")
    write(root / "papers.jsonl", "\n".join(lines) + "\n")
    write(root / "one.json", json.dumps({"id": "custom/ID 1", "title": "Solo", "abstract": "x"}))
    write(root / "paper.pdf", make_pdf(["Sparse Attention for Long Documents", "We study it."]))
    write(root / "ignored.docx", b"binary")
    write(root / ".hidden" / "secret.md", "# Hidden\n")
    return root


def by_title(corpus: Corpus) -> dict[str, Document]:
    return {d.title: d for d in corpus}


def test_folder_reads_every_supported_type(mixed: Path) -> None:
    corpus = load_corpus(mixed)
    docs = by_title(corpus)
    assert corpus.root == mixed.resolve()
    assert set(docs) == {
        "Sparse Attention", "First line is the title", "Understanding deep learning requires "
        "rethinking generalization", "A Title Only", "Graph Nets", "Paper Two", "Solo",
        "Sparse Attention for Long Documents",
    }  # fmt: skip
    md = docs["Sparse Attention"]
    assert md.text == "Intro line\n\n# Sparse Attention\n\nBody text.\n"
    assert (md.id, md.source) == ("attention", "notes/attention.md")
    assert docs["First line is the title"].id == "plain"
    pdf = docs["Sparse Attention for Long Documents"]
    assert pdf.id == "paper" and "We study it." in pdf.text and pdf.meta["pages"] == 1
    # Sorted by relative path: deterministic order.
    assert [d.source.split("#")[0] for d in corpus] == sorted(
        d.source.split("#")[0] for d in corpus
    )
    assert all(".hidden" not in d.source for d in corpus)


def test_bibtex_entries(mixed: Path) -> None:
    corpus = load_corpus(mixed)
    zhang = corpus.get("zhang2017understanding")
    assert zhang.authors == ("Chiyuan Zhang", "Samy Bengio")
    assert zhang.year == 2017
    assert zhang.venue == "International Conference on Learning Representations"
    assert zhang.text == "Deep networks fit random labels."
    assert zhang.source == "refs.bib#zhang2017understanding"
    only = corpus.get("noabstract")
    assert only.text == "A Title Only" and only.year == 1843
    assert only.url == "https://doi.org/10.1000/xyz" and only.meta["entry_type"] == "article"
    assert any(s.source.startswith("refs.bib") and "BibTeX" in s.reason for s in corpus.skipped)


def test_json_records_fields_ids_and_skips(mixed: Path) -> None:
    corpus = load_corpus(mixed)
    graph = by_title(corpus)["Graph Nets"]
    assert graph.authors == ("Peter Battaglia", "Jess Hamrick")
    assert (graph.year, graph.text, graph.meta["stars"]) == (2018, "We study graphs.", 5)
    assert graph.id == "battaglia2018graph" and graph.source == "papers.jsonl#1"
    two = by_title(corpus)["Paper Two"]
    assert two.id == "1406.2661v1" and two.authors == ("Ian Goodfellow", "Yoshua Bengio")
    assert two.text == "Body two."
    assert corpus.get("custom-ID-1").source == "one.json"
    reasons = {s.source: s.reason for s in corpus.skipped}
    assert reasons["papers.jsonl#3"].startswith("invalid JSON on line 3")
    assert "not a JSON object" in reasons["papers.jsonl#4"]
    assert "ignored.docx" not in reasons  # ignored silently: the folder has supported files


@needs_iclr
def test_iclr_file_with_defaults() -> None:
    corpus = load_corpus(ICLR, defaults={"year": 2017, "venue": "ICLR 2017"})
    assert len(corpus) == 489
    assert [(s.source, s.reason) for s in corpus.skipped] == [
        ("iclr2017_citations_in_2018.json#238", "empty record")
    ]
    assert len(set(corpus.ids)) == 489
    first = corpus.get("Sy8gdB9xx")
    assert first.title == "Understanding deep learning requires rethinking generalization"
    assert first.text.startswith("Despite their massive size") and first.title not in first.text
    assert (first.year, first.venue, first.meta["decision"]) == (2017, "ICLR 2017", "Accept (Oral)")
    for doc in corpus:
        assert doc.url is not None and doc.url.endswith("?id=" + doc.id)
        assert not any("*" in a for a in doc.authors)


def test_ids_do_not_depend_on_file_order(tmp_path: Path) -> None:
    same = {"title": "Deep Nets", "abstract": "A", "authors": ["Ann Lee"], "year": 2020}
    other = {"title": "Deep Nets", "abstract": "B", "authors": ["Ann Lee"], "year": 2020}

    def ids(names: tuple[str, str]) -> dict[str, str]:
        root = tmp_path / "-".join(names)
        write(root / names[0], json.dumps(same))
        write(root / names[1], json.dumps(other))
        return {d.text: d.id for d in load_corpus(root)}

    first, second = ids(("a.json", "b.json")), ids(("b.json", "a.json"))
    assert first == second
    assert first["A"].startswith("lee2020deep-") and first["B"].startswith("lee2020deep-")
    assert first["A"] != first["B"]


def test_identical_documents_are_numbered(tmp_path: Path) -> None:
    rec = json.dumps({"title": "Twin", "abstract": "Same."})
    write(tmp_path / "c" / "x.jsonl", f"{rec}\n{rec}\n")
    ids = load_corpus(tmp_path / "c").ids
    assert len(set(ids)) == 2 and ids[1] == ids[0] + "-2"


def test_ids_are_sanitized_and_capped(tmp_path: Path) -> None:
    write(tmp_path / "c" / "r.json", json.dumps([{"id": "__ünïcode id/" + "x" * 90, "title": "T"}]))
    (doc,) = load_corpus(tmp_path / "c").documents
    assert doc.id.startswith("unicode-id-x") and len(doc.id) == 64


def test_unreadable_inputs_are_skipped_not_fatal(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "latin1.txt", "caf\xe9".encode("latin-1"))
    write(root / "empty.md", "   \n")
    write(root / "corrupt.pdf", b"%PDF-1.4 not really a pdf")
    write(root / "locked.pdf", make_pdf(["Secret"], password="pw"))
    write(root / "titled.pdf", make_pdf(["Body line one.", "Two."], title="Meta Title"))
    write(root / "broken.json", "[{]")
    write(root / "records.json", json.dumps([{"title": "No Title", "abstract": "  "}, {"x": 1}]))
    corpus = load_corpus(root)
    assert [d.title for d in corpus] == ["Meta Title"]
    reasons = {s.source: s.reason for s in corpus.skipped}
    assert reasons["latin1.txt"] == "not valid UTF-8 text (byte 0xe9 at offset 3)"
    assert reasons["empty.md"] == "empty file"
    assert reasons["corrupt.pdf"].startswith("unreadable PDF")
    assert reasons["locked.pdf"].startswith("encrypted PDF")
    assert reasons["broken.json"].startswith("invalid JSON") and "line 1" in reasons["broken.json"]
    assert reasons["records.json#1"] == reasons["records.json#2"] == "empty record"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_permission_denied_is_skipped(tmp_path: Path) -> None:
    locked = write(tmp_path / "c" / "locked.md", "# Locked\n")
    locked.chmod(0)
    try:
        corpus = load_corpus(tmp_path / "c")
    finally:
        locked.chmod(0o644)
    assert len(corpus) == 0 and corpus.skipped[0].reason == "permission denied"


def test_symlinks_outside_the_root_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# Secret\n")
    root = tmp_path / "c"
    write(root / "real.md", "# Real\n")
    (root / "link.md").symlink_to(outside / "secret.md")
    (root / "dirlink").symlink_to(outside, target_is_directory=True)
    (root / "dup.md").symlink_to(root / "real.md")
    corpus = load_corpus(root)
    assert [d.title for d in corpus] == ["Real"]
    reasons = {s.source: s.reason for s in corpus.skipped}
    assert reasons["link.md"] == reasons["dirlink"] == "outside the corpus root"
    assert reasons["dup.md"] == "symlink to real.md, which is read itself"


def test_a_hard_link_to_a_file_outside_the_root_is_skipped_and_reported(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# Secret key\n")
    root = tmp_path / "c"
    write(root / "real.md", "# Real\n")
    os.link(outside / "secret.md", root / "x.md")  # read as a document before
    write(root / "a.md", "# Twice inside\n")
    os.link(root / "a.md", root / "b.md")  # both names inside: read once
    corpus = load_corpus(root)
    assert sorted(d.title for d in corpus) == ["Real", "Twice inside"]
    reasons = {s.source: s.reason for s in corpus.skipped}
    assert reasons["x.md"].startswith(
        "a hard link (2 names for one file, 1 in the corpus): it may be a file outside the "
        "corpus root; not read"
    )
    assert reasons["b.md"] == "a hard link to a.md, which is read itself"
    allowed = load_corpus(root, limits=CorpusLimits(allow_hard_links=True))
    assert "Secret key" in [d.title for d in allowed]
    assert [d.title for d in load_corpus(root / "x.md")] == ["Secret key"]  # named: read


def test_empty_and_unsupported_folders_give_empty_corpora(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    empty = load_corpus(tmp_path / "empty")
    assert (len(empty), empty.skipped) == (0, [])
    write(tmp_path / "docs" / "a.docx", b"x")
    only_other = load_corpus(tmp_path / "docs")
    assert len(only_other) == 0
    assert only_other.skipped[0].source == "a.docx"
    assert "supported: .md" in only_other.skipped[0].reason


def test_bad_paths_and_defaults_raise_user_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=r"does not exist.*\.jsonl"):
        load_corpus(tmp_path / "missing")
    bad = write(tmp_path / "paper.docx", b"x")
    with pytest.raises(CorpusError, match=r"unsupported type '\.docx'; supported: \.md"):
        load_corpus(bad)
    with pytest.raises(CorpusError, match="defaults cannot set 'id'"):
        load_corpus(tmp_path, defaults={"id": "x"})
    with pytest.raises(CorpusError, match="not a year"):
        load_corpus(tmp_path, defaults={"year": "soon"})
    assert issubclass(CorpusError, UserError) and issubclass(PathOutsideRootError, UserError)


def test_defaults_fill_missing_fields_only(tmp_path: Path) -> None:
    recs = [
        {"title": "The Alpha", "abstract": "a", "year": 2016},
        {"title": "Beta", "abstract": "b"},
    ]
    path = write(tmp_path / "r.json", json.dumps(recs))
    corpus = load_corpus(path, defaults={"year": 2017, "venue": "ICLR 2017", "track": "main"})
    assert [(d.year, d.venue, d.meta["track"]) for d in corpus] == [
        (2016, "ICLR 2017", "main"),
        (2017, "ICLR 2017", "main"),
    ]
    assert corpus.ids == ["2016alpha", "2017beta"]  # no surname: year + first title word


def test_get_contains_and_unknown_ids(mixed: Path) -> None:
    corpus = load_corpus(mixed)
    assert "attention" in corpus and "nope" not in corpus and 3 not in corpus
    assert corpus.get("attention").title == "Sparse Attention"
    with pytest.raises(UnknownDocumentError, match=r"'atention'.*close ids: attention") as info:
        corpus.get("atention")
    assert info.value.suggestions[0] == "attention"
    with pytest.raises(UnknownDocumentError, match="the corpus is empty"):
        Corpus(root=mixed, documents=[]).get("x")


def test_safe_path(tmp_path: Path) -> None:
    write(tmp_path / "a" / "b.md", "x")
    assert safe_path(tmp_path, "a/b.md") == (tmp_path / "a" / "b.md").resolve()
    with pytest.raises(PathOutsideRootError, match=r"'\.\./x'.*outside the corpus root"):
        safe_path(tmp_path / "a", "../x")
    (tmp_path / "a" / "escape").symlink_to(tmp_path)
    with pytest.raises(PathOutsideRootError):
        safe_path(tmp_path / "a", "escape")


def test_year_parsing() -> None:
    from kimmy_swarm.agents.tools._readers import parse_year

    assert [parse_year(v) for v in (2017, 2017.0, "2017-05-01", "n.d.", True, 99)] == [
        2017,
        2017,
        2017,
        None,
        None,
        None,
    ]


@needs_iclr
def test_iclr_years_and_venue_come_from_the_file_name() -> None:
    corpus = load_corpus(ICLR)  # no defaults: the name says ICLR 2017 (collected in 2018)
    assert {(d.year, d.venue) for d in corpus} == {(2017, "ICLR 2017")}
    first = corpus.get("Sy8gdB9xx")
    assert first.meta["year_from"] == "file name 'iclr2017_citations_in_2018.json'"
    assert first.meta["venue_from"] == first.meta["year_from"]
    assert {d.year for d in load_corpus(ICLR, defaults={"year": 2016})} == {2016}  # defaults win


def test_years_from_the_record_its_venue_or_its_file_name(tmp_path: Path) -> None:
    recs = [
        {"title": "Own year", "abstract": "a", "year": 2015, "venue": "NeurIPS 2014"},
        {"title": "Venue year", "abstract": "b", "venue": "Proceedings of ICML 2016"},
        {"title": "No year", "abstract": "c"},
    ]
    write(tmp_path / "neurips-2019" / "accepted_in_2020.json", json.dumps(recs))
    docs = by_title(load_corpus(tmp_path))
    assert (docs["Own year"].year, docs["Own year"].venue) == (2015, "NeurIPS 2014")
    assert "year_from" not in docs["Own year"].meta
    assert docs["Venue year"].year == 2016
    assert docs["Venue year"].meta["year_from"] == "venue 'Proceedings of ICML 2016'"
    # the folder names the venue and its year; the file's "2020" is not a venue's
    assert (docs["No year"].year, docs["No year"].venue) == (2019, "NeurIPS 2019")
    plain = load_corpus(write(tmp_path / "other" / "citations_in_2018.json", json.dumps(recs[2:])))
    assert [(d.year, d.venue) for d in plain] == [(None, None)]
