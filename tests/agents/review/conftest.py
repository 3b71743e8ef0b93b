"""The real ICLR 2017 corpus (read from ../shared, never copied) and small corpora."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents.tools.corpus import Corpus, load_corpus

ICLR = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "papers"
ICLR_JSON = ICLR / "iclr2017_citations_in_2018.json"
ICLR_DEFAULTS = {"year": 2017, "venue": "ICLR 2017"}


@pytest.fixture(scope="session")
def iclr() -> Corpus:
    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    return load_corpus(ICLR_JSON, defaults=ICLR_DEFAULTS)


@pytest.fixture
def dated_corpus(tmp_path: Path, iclr: Corpus) -> Path:
    """40 attention papers of the ICLR corpus as .jsonl, given years 2014–2017 in turn."""
    from kimmy_swarm.agents.tools.search import SearchIndex

    hits = SearchIndex(iclr.documents).search("attention", k=40)
    path = tmp_path / "dated.jsonl"
    with path.open("w") as f:
        for i, hit in enumerate(hits):
            doc = iclr.get(hit.doc_id)
            f.write(
                json.dumps(
                    {
                        "id": doc.id,
                        "title": doc.title,
                        "abstract": doc.text,
                        "authors": list(doc.authors),
                        "year": 2014 + i % 4,
                    }
                )
                + "\n"
            )
    return path


#: A small corpus: four notes on linear attention.
NOTES = [
    "Linear attention keeps a state of fixed size; the kernel trick makes it linear.",
    "The delta rule updates the linear attention state; 12 experiments show the gain.",
    "Gating of linear attention improves recall by 3 points on the benchmark.",
    "State space models are recurrent; they compete with linear attention at scale.",
]


@pytest.fixture(scope="module")
def notes_review(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """An offline review of `NOTES` in two themes, as `run_pipeline` ran it."""
    from kimmy_swarm.agents.pipeline import run_pipeline
    from kimmy_swarm.agents.review import ReviewConfig
    from kimmy_swarm.agents.review.pipeline import REVIEW

    tmp = tmp_path_factory.mktemp("review")
    corpus = tmp / "notes"
    corpus.mkdir()
    for i, text in enumerate(NOTES):
        (corpus / f"n{i}.md").write_text(f"# Note {i} on linear attention\n\n{text}\n")
    config = ReviewConfig(corpus=corpus, topic="linear attention", out=tmp / "out", themes=2)
    return run_pipeline(REVIEW, config)


def _iclr_review(tmp_path_factory: pytest.TempPathFactory, topic: str) -> Path:
    from kimmy_swarm.agents.review import ReviewConfig, run_review

    if not ICLR_JSON.exists():
        pytest.skip(f"the shared corpus is not at {ICLR_JSON}")
    out = tmp_path_factory.mktemp("iclr-review") / "out"
    run_review(ReviewConfig(corpus=ICLR_JSON, topic=topic, out=out, defaults=ICLR_DEFAULTS))
    return out


@pytest.fixture(scope="session")
def rl_review(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of an offline review of the ICLR corpus on reinforcement learning."""
    return _iclr_review(tmp_path_factory, "reinforcement learning")


@pytest.fixture(scope="session")
def gan_review(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of an offline review of the ICLR corpus on GANs."""
    return _iclr_review(tmp_path_factory, "generative adversarial networks")
