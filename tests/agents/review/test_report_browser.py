"""report.html of a real offline review, opened in headless Chromium on a laptop screen."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimmy_swarm.agents.tools.corpus import Corpus
from tests.support.browser import LAPTOP, artifact_dir, browser_page

_CLIPPED = """() => [...document.querySelectorAll('td, th, p, li, blockquote, h1, h2, summary')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => e.tagName + ': ' + e.textContent.slice(0, 80))"""
_THEME_PROSE = """() => [...document.querySelectorAll('section[id^="theme-"] > p')]
  .map(p => p.textContent).join(' ')"""
_CITATIONS = """() => [...document.querySelectorAll('a.cite')]
  .map(a => ({text: a.textContent, href: a.getAttribute('href'), doc: a.dataset.doc}))"""


def test_review_page_fits_a_laptop_and_links_its_citations(
    iclr_attention_review: tuple[Any, Any], iclr: Corpus, tmp_path: Path
) -> None:
    _, outcome = iclr_attention_review
    out = outcome.out_dir
    claims = [json.loads(x) for x in (out / "claims.jsonl").read_text().splitlines()]
    kept = [c for c in claims if c["verdict"] == "supported"]
    shots = artifact_dir(tmp_path)
    with browser_page() as page:
        page.goto((out / "report.html").resolve().as_uri())
        assert page.evaluate("window.innerWidth") == LAPTOP["width"]
        # no horizontal scrolling, with the evidence lists open as well as closed
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.evaluate(_CLIPPED) == []
        page.screenshot(path=str(shots / "review_report_top.png"))
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert page.evaluate(_CLIPPED) == []
        page.screenshot(path=str(shots / "review_report_full.png"), full_page=True)
        # every citation is an author-year link to its record's URL
        cites = page.evaluate(_CITATIONS)
        assert len(cites) >= len(kept)
        for cite in cites:
            doc = iclr.get(cite["doc"])
            assert cite["href"] == doc.url and doc.url.startswith("https://openreview.net/")
            assert doc.authors[0].split()[-1] in cite["text"], cite
            assert any(ch.isdigit() for ch in cite["text"])  # "Zhang et al. (2017)"
        # each kept claim is stated once, and its checked passage is shown as its evidence
        prose = page.evaluate(_THEME_PROSE)
        marks = page.evaluate("[...document.querySelectorAll('mark')].map(m => m.textContent)")
        for c in kept:
            assert prose.count(c["claim"]) == 1, c["claim"]
            assert " ".join(c["passage"].split()) in marks
        headers = page.evaluate("[...document.querySelectorAll('th')].map(t => t.textContent)")
        assert "Supporting passage" not in headers and "Claim" not in headers
    assert (shots / "review_report_full.png").stat().st_size > 10_000
