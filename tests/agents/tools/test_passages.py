"""Sentences, passages and quotes keep exact offsets into the document text."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kimmy_swarm.agents.tools.corpus import Document, load_corpus
from kimmy_swarm.agents.tools.passages import (
    PassageBoundsError,
    find_exact,
    read_passage,
    sentences,
    split_passages,
)
from kimmy_swarm.swarm.errors import UserError

SHARED_DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
ICLR = SHARED_DATA / "papers" / "iclr2017_citations_in_2018.json"

TRICKY = (
    "Models (e.g. LSTMs, i.e. recurrent nets) improve accuracy by 3.5 points on\n"
    "CIFAR-10. Zhang et al. (2017) show this. J. Smith agrees! Is it true? See Fig. 3 for\n"
    "details. The cost fell from 1.25 to 0.9.\n\n"
    "# Results\n"
    "Text under the heading.\n"
    "- first item. Second sentence of it\n"
    "- second item\n"
)


def doc(text: str, doc_id: str = "d") -> Document:
    return Document(id=doc_id, title="T", text=text)


def test_sentence_split_handles_abbreviations_decimals_and_markdown() -> None:
    d = doc(TRICKY)
    assert [p.text for p in sentences(d)] == [
        "Models (e.g. LSTMs, i.e. recurrent nets) improve accuracy by 3.5 points on\nCIFAR-10.",
        "Zhang et al. (2017) show this.",
        "J. Smith agrees!",
        "Is it true?",
        "See Fig. 3 for\ndetails.",
        "The cost fell from 1.25 to 0.9.",
        "# Results",
        "Text under the heading.",
        "- first item.",
        "Second sentence of it",
        "- second item",
    ]
    for p in sentences(d):
        assert d.text[p.start : p.end] == p.text and p.doc_id == "d"


def test_split_passages_groups_sentences_up_to_max_chars() -> None:
    d = doc(TRICKY)
    passages = split_passages(d, max_chars=80)
    assert all(len(p.text) <= 80 for p in passages)
    assert passages[3].text.startswith("# Results")  # a heading starts a new passage
    assert all(d.text[p.start : p.end] == p.text for p in passages)
    assert [p.start for p in passages] == sorted(p.start for p in passages)
    # Together the passages cover every non-space character exactly once.
    covered = "".join(p.text for p in passages)
    assert "".join(covered.split()) == "".join(d.text.split())
    whole = split_passages(d, max_chars=10_000)
    assert len(whole) == 2 and whole[1].text.startswith("# Results")


def test_long_sentences_are_cut_at_whitespace() -> None:
    d = doc("word " * 300 + "end")
    parts = split_passages(d, max_chars=100)
    assert len(parts) > 10 and all(len(p.text) <= 100 for p in parts)
    assert all(not p.text.startswith(" ") and not p.text.endswith(" ") for p in parts)
    unbroken = doc("x" * 250)
    assert [len(p.text) for p in sentences(unbroken, max_chars=100)] == [100, 100, 50]
    with pytest.raises(ValueError, match="max_chars must be at least 1, got 0"):
        split_passages(d, max_chars=0)


def test_read_passage_bounds() -> None:
    d = doc("0123456789")
    assert read_passage(d, 2, 5).text == "234"
    assert read_passage(d, 10, 10).text == ""
    for start, end in ((-1, 3), (5, 2), (0, 11), (1.0, 2)):
        with pytest.raises(PassageBoundsError, match=r"document 'd' of length 10"):
            read_passage(d, start, end)  # type: ignore[arg-type]
    assert issubclass(PassageBoundsError, ValueError) and issubclass(PassageBoundsError, UserError)


def test_find_exact_exact_then_whitespace_and_quote_normalized() -> None:
    d = doc("We say “deep\n  nets” work — mostly.\nDeep nets work.")
    exact = find_exact(d, "Deep nets work")
    assert exact is not None and exact.start == d.text.index("Deep nets work")
    loose = find_exact(d, '  "deep nets" work - mostly ')
    assert loose is not None and loose.text == "“deep\n  nets” work — mostly"
    assert d.text[loose.start : loose.end] == loose.text
    assert find_exact(d, "deep nets fail") is None
    assert find_exact(d, "   ") is None


@pytest.mark.skipif(not ICLR.exists(), reason="shared ICLR data not present")
def test_offsets_are_exact_on_every_iclr_abstract() -> None:
    corpus = load_corpus(ICLR)
    for d in corpus:
        sents = sentences(d)
        assert sents, d.id
        for p in [*sents, *split_passages(d)]:
            assert d.text[p.start : p.end] == p.text and p.text == p.text.strip()
        assert all(a.end <= b.start for a, b in pairwise(sents)), d.id


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("ab C.!? \n\t#-3")), max_size=120),
    st.integers(1, 40),
)
def test_spans_are_ordered_trimmed_and_exact(text: str, max_chars: int) -> None:
    d = doc(text)
    for group in (sentences(d), sentences(d, max_chars=max_chars), split_passages(d)):
        for p in group:
            assert p.text and p.text == p.text.strip() and d.text[p.start : p.end] == p.text
        assert all(a.end <= b.start for a, b in pairwise(group))
    assert all(len(p.text) <= max_chars for p in split_passages(d, max_chars=max_chars))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab \n’'-")), min_size=1, max_size=60), st.data())
def test_find_exact_finds_every_substring(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    quote = text[start:end]
    found = find_exact(doc(text), quote)
    if not quote.strip():
        assert found is None
    else:
        assert found is not None and text[found.start : found.end] == found.text
        assert found.text == quote.strip()
