"""The README's example outputs are what the commands write today: its quoted analysis
answer and review excerpt are compared, text for text (the README's line breaks and "> "
aside, "[…]" standing for what it leaves out), with a fresh offline run of each command.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main
from tests.rewards._fixtures import ICLR_JSON

README = Path(__file__).resolve().parent.parent / "README.md"


def _quotes() -> list[str]:
    """The README's block quotes, each as one line of text."""
    blocks, current = [], []
    for line in [*README.read_text().splitlines(), ""]:
        if line.startswith("> "):
            current.append(line[2:])
        elif current:
            blocks.append(" ".join(current))
            current = []
    return blocks


def _quoted(starting: str) -> str:
    (found,) = [q for q in _quotes() if q.startswith(starting)]
    return found


def _holds(excerpt: str, text: str) -> bool:
    """Whether `text` holds `excerpt`, its "[…]" standing for any text between its parts."""
    parts = [re.escape(p.strip()) for p in excerpt.split("[…]")]
    return re.search(r"\s.*?".join(parts), " ".join(text.split())) is not None


def test_the_readmes_analysis_answer_is_what_analyze_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    excerpt = _quoted("answer [statsmodels:spector]")
    code = main(["analyze", "statsmodels:spector", "--question", "What predicts the outcome?",
                 "--out", str(tmp_path / "out"), "--no-store"])  # fmt: skip
    said = capsys.readouterr().out
    assert code == 0, said
    assert _holds(excerpt, said), (excerpt, said)


@pytest.mark.skipif(not ICLR_JSON.exists(), reason=f"no corpus at {ICLR_JSON}")
def test_the_readmes_review_excerpt_is_what_review_writes(tmp_path: Path) -> None:
    code = main(["review", str(ICLR_JSON), "--topic", "generative adversarial networks",
                 "--out", str(tmp_path / "out"), "--no-store"])  # fmt: skip
    assert code == 0
    review = (tmp_path / "out" / "review.md").read_text()
    themes = ["missing modes and mode collapse", "energy-based GANs", "image generation",
              "inference", "density ratio estimation", "image synthesis"]  # fmt: skip
    assert "; ".join(themes) in " ".join(README.read_text().split())
    headings = [line[3:] for line in review.splitlines() if line.startswith("## ")]
    assert [h for h in headings if h.lower() in {t.lower() for t in themes}] == [
        f"{t[0].upper()}{t[1:]}" for t in themes
    ]
    excerpt = _quoted("4 papers from 2017.")
    assert _holds(excerpt, review), excerpt
