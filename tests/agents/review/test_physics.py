"""The physics_researcher: sentences that state measured quantities come first."""

from __future__ import annotations

import json
from pathlib import Path

from kimmy_swarm.agents.review import ReviewConfig, run_review
from kimmy_swarm.agents.review.physics import quantities

ABSTRACT = (
    "We study the cosmic microwave background with a new bolometer array. "
    "The array operates at 0.3 K and observes at 150 GHz with a beam of 1.2 arcmin. "
    "We propose a calibration scheme that improves the stability of the readout. "
    "The measured temperature of the background is 2.7255 ± 0.0006 K, in agreement with "
    "earlier results. Our analysis also bounds the sum of neutrino masses below 0.12 eV."
)


def test_quantities_are_numbers_with_units() -> None:
    assert quantities(ABSTRACT) == ["0.3 K", "150 GHz", "2.7255 ± 0.0006 K", "0.12 eV"]
    assert quantities("We use 3 layers and 12 heads, and 5 × 10^-3 eV.") == ["5 × 10^-3 eV"]


def test_physics_review_reports_measurements(tmp_path: Path) -> None:
    corpus = tmp_path / "papers.jsonl"
    records = [
        {
            "id": "cmb1",
            "title": "A bolometer array for the CMB",
            "abstract": ABSTRACT,
            "authors": ["Ada Smith", "Bo Li"],
            "year": 2021,
        },
        {
            "id": "cmb2",
            "title": "Microwave background anisotropies",
            "abstract": "We measure the CMB anisotropy spectrum at 95 GHz and 150 GHz. "
            "The noise level reaches 3 μK per arcminute after 2 years of observation.",
            "authors": ["C. Ng"],
            "year": 2022,
        },
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    out = tmp_path / "out"
    outcome = run_review(
        ReviewConfig(
            corpus=corpus, topic="microwave background", out=out, researcher="physics_researcher"
        )
    )
    assert outcome.status == "completed" and outcome.peak_researchers >= 1
    claims = [json.loads(x) for x in (out / "claims.jsonl").read_text().splitlines()]
    texts = " ".join(c["claim"] for c in claims if c["verdict"] == "supported")
    # the quantity-laden sentences win over the qualitative "improves the stability" one
    assert "The array operates at 0.3 K and observes at 150 GHz" in texts
    assert "The noise level reaches 3 μK per arcminute after 2 years (Ng, 2022)." not in texts
    assert "reaches 3 μK per arcminute after 2 years of observation (Ng, 2022)." in texts
    assert "stability" not in texts
