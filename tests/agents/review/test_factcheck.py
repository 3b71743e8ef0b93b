"""The offline fact-check checks a claim as written (`agents.review._factcheck`): the
attribution against the record, every number, negations, hedges and caveats; and the review
never states a share for a check that could not fail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimmy_swarm.agents import install
from kimmy_swarm.agents.review import review_roles
from kimmy_swarm.agents.review._factcheck import (
    attribution_problem,
    fact_check_summary,
    is_verbatim,
)
from kimmy_swarm.agents.review._prose import attribution, year_labels
from kimmy_swarm.agents.review.schemas import ClaimCheck
from kimmy_swarm.agents.review.tools import build_toolbox
from kimmy_swarm.agents.tools.corpus import Corpus
from kimmy_swarm.swarm import Swarm

PENG = {
    "authors": ["Xue Bin Peng", "Michiel van de Panne"],
    "year": 2017,
    "title": "Learning Locomotion Skills Using DeepRL",
    "status": "rejected",
}
CHE = "HJKkY35le"  # Mode Regularized Generative Adversarial Networks (5 authors, accepted)
CHE_SENTENCE = (
    "We introduce several ways of regularizing the objective, which can dramatically "
    "stabilize the training of GAN models."
)


@pytest.mark.parametrize(
    ("subject", "problem"),
    [
        ("Peng and van de Panne (2017, rejected submission)", ""),
        ("Peng and van de Panne, 2017, rejected submission", ""),  # the closing form
        ("Peng and Panne (2017, rejected submission)", "names 2 author(s)"),
        ("Peng et al. (2017, rejected submission)", "says 'et al.' of 2 author(s)"),
        ("Panne and Peng (2017, rejected submission)", "names 'panne' first"),
        ("Peng and van de Panne (2016, rejected submission)", "gives the year '2016'"),
        ("Peng and van de Panne (2017)", "cites a rejected submission as an accepted paper"),
        ("Peng and van de Panne (2017, workshop track)", "calls a rejected submission a"),
    ],
)
def test_the_attribution_is_checked_as_written(subject: str, problem: str) -> None:
    found = attribution_problem(subject, PENG)
    if not problem:
        assert found == ""
    else:
        assert problem in found
        assert found.endswith(
            "the record gives 'Peng and van de Panne (2017, rejected submission)'"
        )


def test_a_verbatim_claim_is_recognised() -> None:
    source = "We introduce several ways of regularizing."
    assert is_verbatim("Che et al. (2017) introduce several ways of regularizing.", source)
    assert is_verbatim("Similarly, Che et al. (2017) introduce X.", "We introduce X.")
    assert not is_verbatim("Che et al. (2017) introduce some ways of regularizing.", source)
    # a claim naming no source is word for word when it is the passage (it was never)
    same = "Several ways of regularizing exist."
    assert is_verbatim("Several ways of  regularizing exist.", same)
    assert not is_verbatim("Several ways of regularizing exist.", source)


def _checks(iclr: Corpus, claims: list[str], doc_id: str) -> list[dict[str, Any]]:
    swarm = Swarm(max_retries=0)
    install(swarm, review_roles(), build_toolbox(iclr))

    @swarm.role("fake_writer")
    async def fake_writer(ctx: Any) -> dict[str, Any]:
        listed = [{"id": f"t1.c{i}", "text": t, "cited": [doc_id]} for i, t in enumerate(claims)]
        return {"theme_id": "t1", "title": "T", "claims": listed}

    check = {"id": "check:t1", "role": "fact_checker", "inputs": {"theme_id": "t1"},
             "depends_on": ["write:t1"]}  # fmt: skip
    result = swarm.run_sync({"subtasks": [{"id": "write:t1", "role": "fake_writer"}, check]})
    return result.outputs["check:t1"]["checks"]


def test_the_fact_checker_flags_a_dropped_hedge_and_a_wrong_attribution(iclr: Corpus) -> None:
    copied = "Che et al. (2017) " + CHE_SENTENCE.removeprefix("We ")
    checks = _checks(
        iclr,
        [
            copied,
            copied.replace("which can dramatically stabilize", "which dramatically stabilize"),
            copied.replace("Che et al.", "Che and Li"),
        ],
        CHE,
    )
    assert [c["verdict"] for c in checks] == ["supported", "unsupported", "unsupported"]
    assert checks[0]["verbatim"] is True and " ".join(checks[0]["passage"].split()) == CHE_SENTENCE
    assert checks[0]["checked"] == ["attribution", "numbers", "polarity"]
    assert checks[1]["polarity"] == ["drops 'can'"] and "polarity" in checks[1]["reason"]
    assert checks[1]["verbatim"] is False and "wording" in checks[1]["checked"]
    assert "names 2 author(s) of the record's 5" in checks[2]["reason"]


def _check(verdict: str, verbatim: bool | None) -> ClaimCheck:
    return ClaimCheck(claim_id="c", verdict=verdict, verbatim=verbatim)  # type: ignore[arg-type]


def test_the_summary_never_gives_a_share_for_copies() -> None:
    copies = fact_check_summary([_check("supported", True)] * 34)
    assert copies.startswith("All 34 claims quote their paper's sentence word for word")
    # the number and caveat checks cannot fail on a copy: only the attribution is a check
    assert "could not fail on any of them" in copies and "“albeit”" in copies
    assert "The one check that could fail is that each claim names the right paper" in copies
    assert "authors, year and standing" in copies and "none failed" in copies
    assert "is still in the claim: none failed" not in copies  # the old, unfailable assurance
    assert "%" not in copies and "34 are supported" not in copies
    # the summaries' generated sentences are said to be unchecked, not passed
    assert "are not claims, and the fact-checker does not check them" in copies
    mixed = fact_check_summary([_check("supported", True)] * 3 + [_check("unsupported", False)])
    assert "3 quote their paper word for word and 1 rewords it" in mixed
    assert "1 failed and is listed under Flagged claims" in mixed
    assert "for a quoted claim those checks could not fail" in mixed
    assert "the fact-checker does not check them" in mixed
    # a model's fact-check says nothing of how it checked: the plain count
    model = fact_check_summary([_check("supported", None), _check("unsupported", None)])
    assert model == "Of the 2 claims checked, 1 are supported by the passages they cite."


def test_the_review_says_what_its_fact_check_checked(gan_review: Path) -> None:
    review = (gan_review / "review.md").read_text()
    claims = [json.loads(x) for x in (gan_review / "claims.jsonl").read_text().splitlines()]
    assert claims and all(c["verbatim"] for c in claims)  # the offline review quotes
    conclusion = review.split("## Conclusion", 1)[1].split("\n## ", 1)[0]
    assert f"All {len(claims)} claims quote their paper's sentence word for word" in conclusion
    assert "are supported by the passages they cite" not in review
    assert "compared each of" not in review and "and kept" not in review


def test_papers_cited_alike_get_letters_and_the_check_wants_them() -> None:
    li = ["Jiwei Li", "Alexander H. Miller", "Sumit Chopra"]
    docs = [
        ("b", li, 2017, "Learning through Dialogue Interactions by Asking Questions"),
        ("a", li, 2017, "Dialogue Learning With Human-in-the-Loop"),
        ("c", ["Ke Li", "Jitendra Malik"], 2017, "Learning to Optimize"),
        ("d", li, 2016, "Another year"),
    ]
    labels = year_labels(docs)
    assert labels == {"a": "a", "b": "b"}  # lettered by title, as the references list them
    assert attribution(li, 2017, "", label="a") == "Li et al. (2017a)"
    record = {"authors": li, "year": 2017, "title": "Dialogue Learning", "status": ""}
    assert attribution_problem("Li et al. (2017a)", record, label="a") == ""
    assert attribution_problem("Li et al., 2017a", record, label="a") == ""
    assert "2017b" in attribution_problem("Li et al. (2017a)", record, label="b")
    assert attribution_problem("Li et al. (2017)", record, label="a")  # ambiguous: fails


def test_the_review_tells_apart_papers_cited_alike(rl_review: Path) -> None:
    review = (rl_review / "review.md").read_text()
    html = (rl_review / "report.html").read_text()
    # "Dialogue Learning With Human-in-the-Loop" and "Learning through Dialogue
    # Interactions by Asking Questions" were both "Li et al. (2017)"
    body = review.split("## References", 1)[0]
    assert "Li et al. (2017)" not in body and "Li et al., 2017)" not in body
    assert "Li et al. (2017a)" in body and "Li et al. (2017b)" in body
    refs = review.split("## References", 1)[1]
    assert "(2017a). *Dialogue Learning With Human-in-the-Loop*" in refs
    assert "(2017b). *Learning through Dialogue Interactions by Asking Questions*" in refs
    assert "Li et al., 2017a" in html and "Li et al., 2017b" in html
    # "Frank S.He" is cited by his family name, never "S.He et al."
    assert "S.He et al." not in review and "He et al. (2017)" in review
    claims = [json.loads(x) for x in (rl_review / "claims.jsonl").read_text().splitlines()]
    assert all(c["verdict"] == "supported" for c in claims if "Li et al." in c["claim"])


def test_the_report_counts_word_for_word_quotes_apart(gan_review: Path) -> None:
    """report.html headlined "Claims supported: 21 / 21" for claims copied word for word,
    a check that cannot fail (the second blind reader, item 10)."""
    html = (gan_review / "report.html").read_text()
    claims = [json.loads(x) for x in (gan_review / "claims.jsonl").read_text().splitlines()]
    assert "Claims supported" not in html
    assert "Claims quoted word for word (attribution checked)" in html
    assert f"{len(claims)} / {len(claims)}" in html
