"""The literature review end to end: offline on the real corpus, bad input, the CLI."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import bibtexparser
import pytest

from kimmy_swarm.agents.review import EmptyCorpusError, ReviewConfig, run_review
from kimmy_swarm.agents.tools.corpus import Corpus, CorpusError, load_corpus
from kimmy_swarm.agents.tools.search import Relevance
from kimmy_swarm.cli.app import main
from tests.agents.review.conftest import ICLR_DEFAULTS, ICLR_JSON


def _claims(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "claims.jsonl").read_text().splitlines()]


_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")


def _assert_files_consistent(out: Path, corpus: Corpus) -> list[dict]:
    review = (out / "review.md").read_text()
    plain = _LINK.sub(r"\1", review)  # the review's text with its citation links as text
    claims = _claims(out)
    assert claims, "no claim was made"
    for c in claims:
        assert c["cited"] and all(d in corpus for d in c["cited"])
        if c["verdict"] == "supported":
            doc = corpus.get(c["doc_id"])
            assert doc.text[c["start"] : c["end"]] == c["passage"]  # quoted exactly
            assert c["claim"] in plain  # stated in the review exactly as it was checked
        else:  # flagged, never silently kept
            assert f"~~{c['claim']}~~" in review
    urls = {doc.url for doc in corpus if doc.url}
    assert all(url in urls for _, url in _LINK.findall(review))  # links go to the records
    bib = bibtexparser.parse_string((out / "references.bib").read_text())
    cited = {d for c in claims for d in c["cited"]}
    assert cited <= {e.key for e in bib.entries}
    HTMLParser().feed((out / "report.html").read_text())
    return claims


def test_review_of_the_iclr_corpus_offline(tmp_path: Path, iclr: Corpus) -> None:
    out = tmp_path / "review"
    outcome = run_review(
        ReviewConfig(
            corpus=ICLR_JSON,
            topic="reinforcement learning",
            out=out,
            defaults=ICLR_DEFAULTS,
        )
    )
    assert outcome.status == "completed" and outcome.problems == []
    assert outcome.documents == 489 and [s.reason for s in outcome.skipped] == ["empty record"]
    assert outcome.relevant >= 50 and outcome.themes >= 3
    assert outcome.subagents == 1 + outcome.relevant + 2 * outcome.themes + 1
    claims = _assert_files_consistent(out, iclr)
    assert outcome.files.claims == len(claims) and outcome.pass_rate >= 0.9
    review = (out / "review.md").read_text()
    for heading in ("## Introduction", "## Comparison", "## References", "## Conclusion"):
        assert heading in review
    assert review.count("\n## ") >= outcome.themes + 4


def test_width_scales_with_the_corpus(tmp_path: Path) -> None:
    outcome = run_review(
        ReviewConfig(
            corpus=ICLR_JSON,
            topic="neural network learning",
            out=tmp_path,
            max_papers=500,
            defaults=ICLR_DEFAULTS,
            # every paper that uses a word of the topic: the widest review of this corpus
            relevance=Relevance(min_score_ratio=0.0, min_coverage=0.0),
        )
    )
    assert outcome.relevant >= 400 and outcome.subagents >= 400
    assert outcome.peak_researchers >= 32  # researchers really ran side by side


def test_timeline_when_years_are_known(tmp_path: Path, dated_corpus: Path) -> None:
    out = tmp_path / "r"
    outcome = run_review(ReviewConfig(corpus=dated_corpus, topic="attention", out=out))
    review = (out / "review.md").read_text()
    timeline = review.split("## Timeline", 1)[1].split("\n## ", 1)[0]
    assert [f"**{y}**" in timeline for y in range(2014, 2018)] == [True] * 4
    assert "from 2014 to 2017" in review
    _assert_files_consistent(out, load_corpus(dated_corpus))
    assert outcome.status == "completed"


def test_empty_and_unreadable_corpora_say_why(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EmptyCorpusError, match="no readable document"):
        run_review(ReviewConfig(corpus=empty, topic="x", out=tmp_path / "o1"))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    (bad / "latin.txt").write_bytes(b"caf\xe9 \xff\xfe")
    with pytest.raises(EmptyCorpusError, match=r"broken\.pdf") as info:
        run_review(ReviewConfig(corpus=bad, topic="x", out=tmp_path / "o2"))
    assert "latin.txt" in str(info.value)
    with pytest.raises(CorpusError):
        run_review(ReviewConfig(corpus=tmp_path / "missing", topic="x", out=tmp_path / "o3"))


def test_topic_with_no_match_gives_a_partial_review(tmp_path: Path) -> None:
    out = tmp_path / "o"
    outcome = run_review(ReviewConfig(corpus=ICLR_JSON, topic="zygomorphic xylophones", out=out))
    assert outcome.relevant == 0 and outcome.files.claims == 0
    assert any("no document" in p for p in outcome.problems)
    review = (out / "review.md").read_text()
    assert "no document of the corpus matches" in review


def test_cli_review_and_its_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    code = main(
        [
            "review",
            str(ICLR_JSON),
            "--topic",
            "generative adversarial",
            "--out",
            str(out),
            "--year",
            "2017",
            "--max-papers",
            "30",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert str(out / "review.md") in printed
    # offline, every claim quotes its paper: the line says what was checked, not a 100% rate
    check = next(line for line in printed.splitlines() if line.startswith("fact-check: "))
    assert " quote their paper word for word, so only their attribution could fail " in check
    assert "every number, negation" not in check  # a copy keeps them: no check to boast of
    assert check.endswith("the summaries' own sentences are not checked")
    assert "%" not in check
    assert (out / "claims.jsonl").exists()
    # the run is stored like any other: `kimmy show` reads it back
    run_id = printed.split("  run ", 1)[1].split()[0]
    assert main(["show", run_id]) == 0
    shown = capsys.readouterr().out
    assert "researcher" in shown and "fact_checker" in shown and "synthesizer" in shown
    assert main(["review", str(tmp_path / "nope"), "--topic", "x"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["review", str(ICLR_JSON), "--max-papers", "0"]) == 2
    assert "got 0" in capsys.readouterr().err


def test_review_md_links_citations_and_reads_as_a_synthesis(
    iclr_attention_review: tuple[object, object], iclr: Corpus
) -> None:
    from kimmy_swarm.agents.review._prose import split_attribution

    _, outcome = iclr_attention_review
    out = outcome.out_dir  # type: ignore[attr-defined]
    review = (out / "review.md").read_text()
    kept = [c for c in _claims(out) if c["verdict"] == "supported"]
    for c in kept:  # the attribution in the text is the link to the record
        subject, _ = split_attribution(c["claim"])
        doc = iclr.get(c["cited"][0])
        assert f"[{subject}]({doc.url})" in review, c["claim"]
    assert sum(" reports that " in c["claim"] or " report that " in c["claim"] for c in kept) <= (
        len(kept) // 4
    )
    entries = bibtexparser.parse_string((out / "references.bib").read_text()).entries
    bib = {e.key: e for e in entries}
    for doc_id, entry in bib.items():
        assert entry.fields_dict["url"].value == iclr.get(doc_id).url
    references = review.split("## References", 1)[1]
    assert all(iclr.get(k).url in references for k in bib)
    themes = review.split("\n## ")[2 : 2 + outcome.themes]  # type: ignore[attr-defined]
    for theme in themes:
        synthesis = theme.split("\n\n")[1]
        assert re.match(r"\d+ papers? from 2017\.", synthesis), synthesis
    conclusion = review.split("## Conclusion", 1)[1].split("\n## ", 1)[0]
    # It opens with the lines of research by size; whether one or several are named is the
    # grouping's business (issue 37), so either wording will do.
    opening = (
        r"(The largest themes, by documents, are|The one line of research the papers share is)"
    )
    assert re.search(opening + r" [^.]*\(\d+\)", conclusion), conclusion
    assert "most cited papers" in conclusion
    top = max((iclr.get(c["cited"][0]) for c in kept), key=lambda d: d.meta["citations"])
    assert f"({top.meta['citations']} citations)" in conclusion
