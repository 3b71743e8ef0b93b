"""The review's conclusion, offline: the big themes, the most cited work, trends over the
years, and the open questions the papers name themselves.

Built from what the run produced — the sections' comparison rows (year, citation count) and
the claims the fact-checker kept — so every statement in it is a count over the run or a
checked claim quoted with its attribution.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from statistics import mean, median

from kimmy_swarm.agents.review._factcheck import fact_check_summary
from kimmy_swarm.agents.review._prose import in_sentence, is_miscellany, shorten
from kimmy_swarm.agents.review._section_prose import OPEN_QUESTIONS
from kimmy_swarm.agents.review.schemas import Claim, ClaimCheck, ComparisonRow, Section


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _themes(sections: Sequence[Section]) -> list[Section]:
    """The sections that are lines of research (not the "other work" miscellany)."""
    return [s for s in sections if not is_miscellany(s.title)] or list(sections)


def _sizes(sections: Sequence[Section]) -> str:
    themes = _themes(sections)
    ordered = sorted(themes, key=lambda s: -len(s.rows))[:3]
    named = [f"{in_sentence(s.title)} ({len(s.rows)})" for s in ordered]
    if len(sections) == 1:
        return (
            f"All {len(ordered[0].rows)} documents form one theme, {in_sentence(ordered[0].title)}."
        )
    if len(themes) == 1:
        return f"The one line of research the papers share is {named[0]}."
    return f"The largest themes, by documents, are {_and(named)}."


def _cited(sections: Sequence[Section], rows: dict[str, ComparisonRow]) -> str:
    counted = [r for r in rows.values() if r.citations is not None]
    if len(counted) < 2:
        return ""
    top = sorted(counted, key=lambda r: -(r.citations or 0))[:3]
    named = [f"“{shorten(r.title, 8)}” ({r.citations} citations)" for r in top]
    per_theme = {
        in_sentence(s.title): mean(r.citations for r in s.rows if r.citations is not None)
        for s in _themes(sections)
        if any(r.citations is not None for r in s.rows)
    }
    overall = mean(r.citations or 0 for r in counted)
    out = f"The most cited papers of the set are {_and(named)}."
    if len(per_theme) > 1:
        best = max(per_theme, key=lambda t: per_theme[t])
        out += (
            f" Per paper, {best} is cited most ({per_theme[best]:.0f} citations on average, "
            f"against {overall:.0f} over all {len(counted)} papers)."
        )
    return out


def _trend(sections: Sequence[Section], rows: dict[str, ComparisonRow]) -> str:
    years = Counter(r.year for r in rows.values() if r.year is not None)
    if not years:
        return "The records give no years, so no trend over time can be read from them."
    if len(years) == 1:
        (year,) = years
        return f"All papers are from {year}, so the set shows no trend over the years."
    first, last = min(years), max(years)
    out = (
        f"The papers span {first}–{last}: {years[first]} from {first} and {years[last]} "
        f"from {last}"
        + (f", with a peak of {years.most_common(1)[0][1]} in {years.most_common(1)[0][0]}."
           if years.most_common(1)[0][0] not in (first, last) else ".")
    )  # fmt: skip
    medians = {
        in_sentence(s.title): median(r.year for r in s.rows if r.year is not None)
        for s in _themes(sections)
        if any(r.year is not None for r in s.rows)
    }
    if len(medians) > 1 and max(medians.values()) > min(medians.values()):
        newest = max(medians, key=lambda t: medians[t])
        oldest = min(medians, key=lambda t: medians[t])
        out += (
            f" The most recent theme is {newest} (median year {medians[newest]:.0f}); the "
            f"oldest is {oldest} ({medians[oldest]:.0f})."
        )
    return out


def _open_questions(
    sections: Sequence[Section],
    kept: set[str],
    rows: dict[str, ComparisonRow],
    at_most: int = 3,
) -> str:
    """Up to `at_most` checked open questions: one per theme first (its most cited
    paper's), those of the most cited papers first (what the field reads most), then
    more."""

    def cites(claim: Claim) -> int:
        return max((rows[d].citations or 0 for d in claim.cited if d in rows), default=0)

    firsts: list[Claim] = []
    for section in sections:
        named = [c for c in section.claims if c.group == OPEN_QUESTIONS and c.id in kept]
        firsts += sorted(named, key=lambda c: -cites(c))[:1]
    picked = [c.text for c in sorted(firsts, key=lambda c: -cites(c))]
    for section in sections:
        picked += [
            c.text
            for c in section.claims
            if c.group == OPEN_QUESTIONS and c.id in kept and c.text not in picked
        ]
    if not picked:
        return "None of the passages read names an open question or a limitation."
    return "Open questions and limitations the papers name themselves: " + " ".join(
        picked[:at_most]
    )


def conclusion(sections: Sequence[Section], checks: Sequence[ClaimCheck]) -> str:
    """The conclusion of a review with these sections and fact-checks: paragraphs separated
    by a blank line (the set and its trends; the open questions and limitations; what the
    fact-check checked, `_factcheck.fact_check_summary`)."""
    if not sections:
        return "No document matched the topic, so there is nothing to synthesize."
    rows = {r.doc_id: r for s in sections for r in s.rows}
    kept = {c.claim_id for c in checks if c.verdict == "supported"}
    parts = [
        _sizes(sections),
        _cited(sections, rows),
        _trend(sections, rows),
        _open_questions(sections, kept, rows),
        fact_check_summary(checks),
    ]
    first = " ".join(p for p in parts[:3] if p)  # what the set is; then what it leaves open
    return "\n\n".join(p for p in (first, parts[3], parts[4]) if p)


__all__ = ["conclusion"]
