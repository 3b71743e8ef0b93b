"""The role of each abstract sentence (`agents.review._sentence_roles`) and the researcher
that quotes a paper's results from its result sentences only, numbers first, each with its
caveat — on real ICLR 2017 abstracts (read from ../shared at run time)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import install
from kimmy_swarm.agents.review import review_roles
from kimmy_swarm.agents.review._sentence_roles import (
    caveat_follows,
    classify,
    shorten_keeping_caveat,
)
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.tools.corpus import Corpus
from kimmy_swarm.agents.tools.passages import sentences
from kimmy_swarm.swarm import Swarm

UNREAL = "SJ6yPD5xg"  # Reinforcement Learning with Unsupervised Auxiliary Tasks
ACGAN = "rJXTf9Bxg"  # Conditional Image Synthesis With Auxiliary Classifier GANs
BELLO = "rJY3vK9eg"  # Neural Combinatorial Optimization with Reinforcement Learning
CHE = "HJKkY35le"  # Mode Regularized Generative Adversarial Networks
UNREAL_BACKGROUND = (
    "Deep reinforcement learning agents have achieved state-of-the-art results by directly "
    "maximising cumulative reward."
)


def _roles(iclr: Corpus, doc_id: str) -> list[str]:
    return [r.role for r in classify([s.text for s in sentences(iclr.get(doc_id))])]


def test_an_abstract_moves_through_its_roles(iclr: Corpus) -> None:
    assert _roles(iclr, UNREAL) == [
        "background",  # "Deep reinforcement learning agents have achieved … results"
        "background",  # "However, environments contain …"
        "contribution",  # "In this paper, we introduce an agent …"
        "method",
        "contribution",  # "We also introduce a novel mechanism …"
        "result",  # "Our agent significantly outperforms …, averaging 880\% …"
    ]
    assert _roles(iclr, CHE)[0] == "limitation"  # "… highly unstable and prone to miss modes"
    assert _roles(iclr, BELLO)[-3:] == ["result", "result", "limitation"]  # "albeit …"
    assert _roles(iclr, ACGAN) == [
        "background",  # "… has been a long-standing challenge …"
        "contribution",
        "method",
        "method",
        "result",
        "result",  # "… more than twice as discriminable …"
        "result",  # "84.7% of the classes …"
    ]


def test_roles_are_deterministic_and_ordered(iclr: Corpus) -> None:
    texts = [s.text for d in list(iclr)[:60] for s in sentences(d)]
    assert classify(texts) == classify(texts)
    small = classify(["We propose a widget loader.", "It loads 3.5x faster than gadgets."])
    assert [r.role for r in small] == ["contribution", "result"]
    assert classify(["Widgets load slowly.", "We propose a loader."])[0].role == "background"


def test_a_caveat_is_never_cut_off() -> None:
    assert caveat_follows("These results, albeit still far from state-of-the-art, give insights.")
    assert not caveat_follows("These results give insights into widgets.")
    assert not caveat_follows("Widgets, albeit slow, load.")  # does not lean on a result
    long = " ".join(["word"] * 30) + ", albeit still far from state-of-the-art."
    assert shorten_keeping_caveat(long, 22).endswith("albeit still far from state-of-the-art.")
    assert shorten_keeping_caveat(" ".join(["word"] * 30), 22).endswith("word …")


def _notes(iclr: Corpus, doc_id: str, topic: str) -> dict[str, Any]:
    swarm = Swarm(max_retries=0)
    install(swarm, review_roles(), build_toolbox(iclr))
    task = {"id": "r", "role": "researcher", "inputs": {"doc_id": doc_id, "topic": topic}}
    return swarm.run_sync({"subtasks": [task]}).outputs["r"]


def _kinds(notes: dict[str, Any], kind: str) -> list[str]:
    return [f["passage"] for f in notes["findings"] if f["kind"] == kind]


def test_the_researcher_quotes_the_headline_result_not_the_background(iclr: Corpus) -> None:
    notes = _notes(iclr, UNREAL, "reinforcement learning")
    assert all(UNREAL_BACKGROUND not in f["passage"] for f in notes["findings"])
    (result,) = _kinds(notes, "result")
    assert "averaging 880\\% expert human performance" in result
    text = next(f["text"] for f in notes["findings"] if f["kind"] == "result")
    assert "880% expert human performance" in text and "10×" in text  # TeX shown plain
    assert notes["contribution"].startswith("In this paper, we introduce an agent")


def test_the_researcher_keeps_headline_numbers(iclr: Corpus) -> None:
    notes = _notes(iclr, ACGAN, "generative adversarial networks")
    results = _kinds(notes, "result")
    assert results[0] == (
        "In addition, 84.7% of the classes have samples exhibiting diversity comparable to "
        "real ImageNet data."
    )


def test_the_researcher_keeps_a_result_with_its_caveat(iclr: Corpus) -> None:
    notes = _notes(iclr, BELLO, "reinforcement learning")
    (result,) = _kinds(notes, "result")
    assert result.startswith("Without much engineering and heuristic designing")
    assert result.endswith(
        "These results, albeit still far from state-of-the-art, give insights into how neural "
        "networks can be used as a general tool for tackling combinatorial optimization problems."
    )
    finding = next(f for f in notes["findings"] if f["kind"] == "result")
    assert iclr.get(BELLO).text[finding["start"] : finding["end"]] == result


def test_the_researcher_names_the_limitation(iclr: Corpus) -> None:
    notes = _notes(iclr, CHE, "generative adversarial networks")
    (limitation,) = _kinds(notes, "open_question")
    assert "regarded as highly unstable and prone to miss" in " ".join(limitation.split())


def _table_row(review: str, doc_id: str) -> str:
    return next(line for line in review.splitlines() if f"[{doc_id}]" in line and "|" in line)


def test_the_reviews_report_results_and_limitations(gan_review: Path, rl_review: Path) -> None:
    gan = (gan_review / "review.md").read_text()
    rl = (rl_review / "review.md").read_text()
    assert "84.7% of the classes" in _table_row(gan, ACGAN)  # the key result is the number
    unreal = _table_row(rl, UNREAL)
    assert "880% expert human performance" in unreal and "have achieved" not in unreal
    assert "albeit still far from state-of-the-art" in _table_row(rl, BELLO)
    assert "albeit still far from state-of-the-art" in rl.split("## Comparison")[0]
    gan_conclusion = gan.split("## Conclusion", 1)[1].split("\n## ", 1)[0]
    assert "None of the passages read names an open question" not in gan_conclusion
    assert "prone to miss modes (Che et al., 2017)" in gan_conclusion
    claims = [json.loads(x) for x in (gan_review / "claims.jsonl").read_text().splitlines()]
    assert any(c["group"] == "Open questions" and c["cited"] == [CHE] for c in claims)


@pytest.mark.parametrize("doc_id", [UNREAL, ACGAN, BELLO, CHE])
def test_every_finding_is_an_exact_span(iclr: Corpus, doc_id: str) -> None:
    notes = _notes(iclr, doc_id, "learning")
    for f in notes["findings"]:
        assert iclr.get(doc_id).text[f["start"] : f["end"]] == f["passage"]


@pytest.mark.parametrize(
    "sentence",
    [
        # ReasoNet, Florensa et al., Oh et al., Zhai et al. (ICLR 2017): open problems the
        # papers name, once read as background or method
        "Teaching a computer to read a document and answer general questions pertaining to "
        "the document is a challenging yet unsolved problem.",
        "However, tasks with sparse rewards or long horizons continue to pose significant "
        "challenges.",
        "The ability to generalize from past experience to solve previously unseen tasks is a "
        "key research challenge in reinforcement learning (RL).",
        "From this view, we are also able to identify causes to the difficulty of training "
        "GANs and propose viable solutions.",
        "Training recurrent models remains challenging for long sequences.",
    ],
)
def test_a_named_open_problem_is_a_limitation(sentence: str) -> None:
    roled = classify(["We study a model.", sentence])
    assert roled[1].role == "limitation", roled[1]


def test_a_sentence_that_only_motivates_is_no_open_problem() -> None:
    roled = classify(
        [
            "Due to the difficulty in obtaining labels for such data, an unsupervised method "
            "is highly desirable.",
            "Deep reinforcement learning has achieved many impressive results in recent years.",
            "We propose a method.",
            "We show that our method eases the difficulty of training GANs on 3 datasets.",
        ]
    )
    assert [r.role for r in roled] == ["background", "background", "contribution", "result"]
