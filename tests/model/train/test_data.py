"""Training text: the ICLR abstracts, a corpus folder with symlinks
that leave it, unreadable and empty corpora, and the token stream's split and windows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from kimmy_swarm.model.errors import KimiModelError, ModelConfigError
from kimmy_swarm.model.tokenizer import train_bpe_tokenizer
from kimmy_swarm.model.train.data import (
    TokenData,
    TrainingCorpusError,
    read_text_corpus,
    tokenize_corpus,
)

ROOT = Path(__file__).resolve().parents[3]
ICLR_JSON = ROOT.parent / "shared" / "data" / "papers" / "iclr2017_citations_in_2018.json"
needs_iclr = pytest.mark.skipif(not ICLR_JSON.exists(), reason=f"no corpus at {ICLR_JSON}")


@needs_iclr
def test_papers_json_gives_one_document_per_record_title_then_abstract() -> None:
    records = json.loads(ICLR_JSON.read_text(encoding="utf-8"))
    texts = read_text_corpus([ICLR_JSON])
    usable = [r for r in records if (r.get("title") or "").strip() or (r.get("abstract") or "")]
    assert len(texts) == len(usable) > 400
    first = texts[0]
    assert first.startswith("Understanding deep learning requires rethinking generalization\n\n")
    assert "Despite their massive size" in first  # the abstract follows the title


def test_folder_walk_reads_supported_files_in_order_and_stays_inside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.txt").write_text("SECRET FILE", encoding="utf-8")
    (outside / "dir" / "deep.txt").write_text("SECRET DIR", encoding="utf-8")
    root = tmp_path / "corpus"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha text", encoding="utf-8")
    (root / "sub" / "b.md").write_text("# beta\n", encoding="utf-8")
    (root / "c.jsonl").write_text(
        '{"text": "gamma"}\n\n{"title": "T", "abstract": "delta", "id": 3}\n', encoding="utf-8"
    )
    (root / "d.rst").write_text("   \n", encoding="utf-8")  # empty: no document
    (root / "e.py").write_text("print('not a corpus file')", encoding="utf-8")
    (root / "f.json").write_text("{not json", encoding="utf-8")
    (root / "g.txt").write_bytes(b"\xff\xfe\xfa not utf-8")
    (root / "link_in.txt").symlink_to(root / "a.txt")  # inside the root: read
    (root / "link_out.txt").symlink_to(outside / "secret.txt")
    (root / "sub" / "dir_out").symlink_to(outside / "dir", target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)  # a cycle inside the root
    skipped: list[tuple[str, str]] = []
    texts = read_text_corpus([root], on_skip=lambda p, why: skipped.append((p.name, why)))
    assert texts == ["alpha text", "gamma", "T\n\ndelta", "alpha text", "# beta\n"]
    names = dict(skipped)
    assert set(names) == {"f.json", "g.txt", "link_out.txt", "dir_out"}
    assert "leaves the corpus folder" in names["link_out.txt"]
    assert "not readable" in names["f.json"] and "UnicodeDecodeError" in names["g.txt"]
    with pytest.warns(UserWarning, match="skipped .*f.json"):  # default reporter
        assert read_text_corpus([root / "f.json", root / "a.txt"]) == ["alpha text"]


def test_missing_path_or_nothing_readable_is_a_typed_error_naming_the_path(
    tmp_path: Path,
) -> None:
    with pytest.raises(TrainingCorpusError, match=r"nope\.txt' does not exist"):
        read_text_corpus([tmp_path / "nope.txt"])
    (tmp_path / "x.py").write_text("code", encoding="utf-8")
    (tmp_path / "y.json").write_text('[{"url": "no text fields"}]', encoding="utf-8")
    skipped: list[Path] = []
    with pytest.raises(TrainingCorpusError, match=f"no readable text in '{tmp_path}'") as info:
        read_text_corpus([tmp_path], on_skip=lambda p, why: skipped.append(p))
    assert isinstance(info.value, ModelConfigError) and isinstance(info.value, KimiModelError)
    assert skipped == [tmp_path / "y.json"]  # .py is not a corpus file: ignored, not reported
    with pytest.raises(TrainingCorpusError, match="no corpus paths"):
        read_text_corpus([])


def _stream() -> tuple[TokenData, list[str], object]:
    docs = [f"document {i}: " + "words and more words " * (3 + i % 5) for i in range(40)]
    tok = train_bpe_tokenizer(docs, vocab_size=300)
    return tokenize_corpus(docs, tok), docs, tok


def test_documents_are_joined_with_eos_and_split_at_a_boundary() -> None:
    data, docs, tok = _stream()
    eos = tok.eos_token_id  # type: ignore[attr-defined]
    assert data.eos_id == eos and int((data.tokens == eos).sum()) == len(docs)
    pieces = torch.tensor_split(data.tokens, (data.tokens == eos).nonzero().flatten() + 1)
    assert [tok.decode(p[:-1].tolist()) for p in pieces[:-1]] == docs  # type: ignore[attr-defined]
    train, held = data.split(0.25)
    assert len(train) + len(held) == len(data)
    assert int(train.tokens[-1]) == eos  # the cut is just after a document's EOS
    assert abs(len(held) / len(data) - 0.25) < 0.05
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ModelConfigError, match="eval_fraction"):
            data.split(bad)


def test_batches_are_seeded_windows_and_eval_batches_are_fixed() -> None:
    data, _, _ = _stream()
    x, y = data.batch(4, 16, torch.Generator().manual_seed(3))
    assert x.shape == y.shape == (4, 16) and x.dtype == torch.long
    assert torch.equal(x[:, 1:], y[:, :-1])  # targets are the next tokens
    stream = data.tokens.tolist()
    for row in x.tolist():  # each window is a contiguous slice of the stream
        assert any(stream[i : i + 16] == row for i in range(len(stream) - 16))
    x2, _ = data.batch(4, 16, torch.Generator().manual_seed(3))
    x3, _ = data.batch(4, 16, torch.Generator().manual_seed(4))
    assert torch.equal(x, x2) and not torch.equal(x, x3)
    evals = data.eval_batches(2, 16, 3)
    again = data.eval_batches(2, 16, 3)
    assert len(evals) == 3 and all(
        torch.equal(a[0], b[0]) for a, b in zip(evals, again, strict=True)
    )
    assert torch.equal(evals[0][0][0], data.tokens[:16])  # spread from the very start …
    assert torch.equal(evals[-1][1][-1], data.tokens[-16:])  # … to the very end
    short = TokenData(torch.arange(10))
    with pytest.raises(ModelConfigError, match="seq_len 10 needs at least 11 tokens"):
        short.batch(1, 10, torch.Generator())
