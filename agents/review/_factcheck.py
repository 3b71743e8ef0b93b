"""What the offline fact-checker checks of a claim as written, and how a review reports it.

A claim of the offline review is a sentence of its paper with the grammatical person
changed ("We show X" → "Zhang et al. (2017) show X"). Comparing it with the sentence it was
copied from cannot fail, so a review that says "34/34 supported" of such claims reassures
falsely. What can still go wrong is checked as written:

- attribution (`attribution_problem`): the names are the cited paper's authors' family
  names in order, "et al." only for three or more authors, the year is the record's, and
  a rejected or workshop paper is cited as one ("(2017, rejected submission)"), and two
  papers cited alike are told apart by the letter the review gives each ("2017a");
- numbers, entities and polarity (`agents.tools.claims.check_claim`): every number and
  name of the claim is in the passage, and no negation, hedge or caveat of the passage is
  lost ("may", "albeit", "not").

`is_verbatim` says whether a claim only restates its passage; `fact_check_summary` says what
was checked, which checks could not fail (a copy keeps its passage's words, numbers and
caveats by construction: only its attribution can be wrong), and that the summaries' own
sentences are not checked — never a share that could not have been lower.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from kimmy_swarm.agents.review._prose import attribution, split_attribution, surname, third_person
from kimmy_swarm.agents.review._venue import in_text_status
from kimmy_swarm.agents.review.schemas import ClaimCheck

#: What every check looks at, by name (`ClaimCheck.checked`).
ATTRIBUTION, NUMBERS, POLARITY, WORDING = "attribution", "numbers", "polarity", "wording"

_SUBJECT = re.compile(
    r"^(?:[Tt]he paper by )?(?P<names>.+?)"
    r"(?: \((?P<inner>[^()]+)\)|, (?P<outer>(?:\d{4}|n\.d\.).*))$"
)


def _names(said: str) -> tuple[list[str], bool]:
    """The family names an attribution lists, and whether it ends in "et al."."""
    et_al = said.endswith(" et al.")
    said = said.removesuffix(" et al.")
    parts = re.split(r",\s*(?:and\s+)?|\s+(?:and|&)\s+", said)
    return [" ".join(p.split()) for p in parts if p.strip()], et_al


def attribution_problem(subject: str, doc: Mapping[str, Any], *, label: str = "") -> str:
    """Why `subject` ("Zhang et al. (2017)", "Zhang et al., 2017", "“title”") misattributes
    the document `doc` (`read_document`'s fields), or "" when it names it right; `label` is
    the letter the review gives the document to tell it from another cited alike
    ("a": "Li et al. (2017a)", `_prose.year_labels`), and the year must carry it."""
    expected = attribution(
        doc["authors"], doc["year"], doc["title"], doc.get("status", ""), label=label
    )
    if subject.startswith("“"):
        ok = subject.strip("“”").strip() in doc["title"]
        return "" if ok else f"names the title {subject}, not the cited document's"
    found = _SUBJECT.match(subject.strip())
    if found is None:
        return f"cannot be read as authors and year; the record gives {expected!r}"
    names, et_al = _names(found.group("names"))
    when = (found.group("inner") or found.group("outer") or "").strip()
    family = [surname(a).lower() for a in doc["authors"] if a.strip()]
    problem = _names_problem([n.lower() for n in names], et_al, family)
    year = (str(doc["year"]) if doc["year"] is not None else "n.d.") + label
    label = in_text_status(doc.get("status", ""))
    said_year, _, said_label = when.partition(", ")
    if not problem and said_year != year:
        problem = f"gives the year {said_year!r}, the record {year!r}"
    if not problem and said_label != label:
        problem = _standing_problem(said_label, label)
    return f"{problem}; the record gives {expected!r}" if problem else ""


def _standing_problem(said: str, label: str) -> str:
    if not said:
        return f"cites a {label} as an accepted paper"
    if not label:
        return f"calls a paper the record does not mark so a {said!r}"
    return f"calls a {label} a {said!r}"


def _names_problem(names: list[str], et_al: bool, family: list[str]) -> str:
    if not family:
        return "names authors the record does not have"
    if names[:1] != family[:1]:
        return f"names {names[0]!r} first, the record {family[0]!r}"
    if et_al:
        return "" if len(family) >= 3 else f"says 'et al.' of {len(family)} author(s)"
    if names != family:
        return f"names {len(names)} author(s) of the record's {len(family)}"
    return ""


def is_verbatim(claim: str, passage: str) -> bool:
    """Whether `claim` restates `passage` word for word, its attribution and the
    grammatical person aside (`_prose.third_person` of the passage gives the same words); a
    claim that names no source restates it when it is the passage."""
    subject, body = split_attribution(claim)
    if not passage:
        return False
    if not subject:
        return " ".join(claim.split()) == " ".join(passage.split())
    _, copied = split_attribution(third_person(passage, subject))
    return " ".join(body.split()) == " ".join(copied.split())


def _and(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


#: What the fact-checker never sees: the sentences a section's summary makes itself.
NOT_CHECKED = (
    "The summaries' own sentences (what the papers share, how their methods differ, the "
    "numbers set side by side on a benchmark) are not claims, and the fact-checker does not "
    "check them; they are built only from the papers' own words and numbers."
)


def fact_check_summary(checks: Sequence[ClaimCheck]) -> str:
    """What the fact-check did, in a few sentences: which checks could fail and how many
    claims failed them, and which could not. A claim that copies its passage word for word
    cannot fail the checks that compare it with that passage (its words, its numbers, its
    negations, hedges and caveats), so for such claims only the attribution is a real check;
    the summaries' own sentences are no claims and are said to be unchecked (`NOT_CHECKED`)."""
    n = len(checks)
    failed = sum(c.verdict != "supported" for c in checks)
    known = [c for c in checks if c.verbatim is not None]
    if n == 0:
        return "No claim was made, so nothing was fact-checked."
    if len(known) < n:  # a model's fact-check: it says nothing of how it checked
        return f"Of the {n} claims checked, {n - failed} are supported by the passages they cite."
    copies = sum(bool(c.verbatim) for c in checks)
    attributed = (
        "that each claim names the right paper: its authors, year and standing (accepted, "
        "workshop or rejected)"
    )
    flagged = (
        f"{failed} failed and {'is' if failed == 1 else 'are'} listed under Flagged claims"
        if failed
        else "none failed"
    )
    kept = "every number, negation, hedge and caveat of the passage (“may”, “albeit”, “not”)"
    if copies == n:
        return (
            f"All {n} claims quote their paper's sentence word for word (only “we” became the "
            "authors), so the checks that compare a claim with its passage — its words, and "
            f"that it keeps {kept} — could not fail on any of them. The one check that could "
            f"fail is {attributed}: {flagged}. {NOT_CHECKED}"
        )
    reworded = n - copies
    return (
        f"Of the {n} claims, {copies} quote their paper word for word and {reworded} "
        f"{'rewords' if reworded == 1 else 'reword'} it. For a reworded claim the "
        f"fact-checker checked that its words are in the passage and that it keeps {kept}; "
        "for a quoted claim those checks could not fail. For every claim it checked "
        f"{attributed}: {flagged}. {NOT_CHECKED}"
    )


__all__ = [
    "ATTRIBUTION",
    "NOT_CHECKED",
    "NUMBERS",
    "POLARITY",
    "WORDING",
    "attribution_problem",
    "fact_check_summary",
    "is_verbatim",
]
