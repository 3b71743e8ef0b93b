"""The interpreter's documentation as training text: a real corpus, offline."""

from __future__ import annotations

from kimmy_swarm.model.python_docs import python_docs_texts


def test_python_docs_are_a_real_offline_corpus() -> None:
    texts = python_docs_texts()
    assert len(texts) > 50 and all(t.strip() for t in texts)
    assert sum(map(len, texts)) > 300_000  # ~465 KB of reference text
    assert any('The "for" statement' in t or "for_stmt" in t for t in texts)
    more = python_docs_texts(docstrings=True)
    assert more[: len(texts)] == texts and len(more) > len(texts)
    assert any(t.startswith("JSON (JavaScript Object Notation)") for t in more)
