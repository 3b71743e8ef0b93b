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
    assert "could not have found it wrong" in copies and "none failed" in copies
    assert "%" not in copies and "34 are supported" not in copies
    assert "authors, year and standing" in copies and "“albeit”" in copies
    mixed = fact_check_summary([_check("supported", True)] * 3 + [_check("unsupported", False)])
    assert "3 quote their paper word for word and 1 rewords it" in mixed
    assert "1 failed and is listed under Flagged claims" in mixed
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
