"""How a paper stands at its venue, from its record's `decision`: accepted, invited to the
workshop track, rejected or withdrawn — and how a review cites each.

A corpus of submissions (every ICLR 2017 submission on OpenReview) holds papers the venue
rejected; citing one as "ICLR 2017" would present it as a published paper. A review cites
a rejected submission as a submission ("Li et al. (2017, rejected submission)"; in the
references "Submitted to ICLR 2017; rejected") and a workshop paper as the workshop's.
A record without a decision is cited by its venue alone, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

#: A paper's standing: "" when its record says nothing of a decision.
Standing = Literal["accepted", "workshop", "rejected", "withdrawn", ""]

#: What an in-text citation adds after the year ("(2017, rejected submission)"); an
#: accepted paper (or one without a decision) gets nothing.
IN_TEXT: dict[str, str] = {
    "rejected": "rejected submission",
    "workshop": "workshop track",
    "withdrawn": "withdrawn submission",
}


def standing(decision: object) -> Standing:
    """The standing a record's decision gives ("Accept (Oral)" → "accepted", "Invite to
    Workshop Track" → "workshop", "Reject" → "rejected"); "" for none or one not known."""
    if not isinstance(decision, str):
        return ""
    low = decision.lower()
    if "workshop" in low:
        return "workshop"
    if "reject" in low:
        return "rejected"
    if "withdr" in low:
        return "withdrawn"
    if low.startswith("accept"):
        return "accepted"
    return ""


def standing_of(meta: Mapping[str, Any]) -> Standing:
    """The standing of a document by its metadata's `decision` field."""
    return standing(meta.get("decision"))


def in_text_status(status: str) -> str:
    """What a citation of a paper of this standing adds after its year ("" for none)."""
    return IN_TEXT.get(status, "")


def venue_note(venue: str | None, decision: object) -> str:
    """How a reference names where the paper stands: "ICLR 2017" (poster), "ICLR 2017
    (oral)", "ICLR 2017 Workshop Track", "Submitted to ICLR 2017; rejected"; the venue
    alone without a decision, and the decision alone without a venue."""
    status = standing(decision)
    where = venue or ""
    if status == "rejected":
        return f"Submitted to {where}; rejected" if where else "Rejected submission"
    if status == "withdrawn":
        return f"Submitted to {where}; withdrawn" if where else "Withdrawn submission"
    if status == "workshop":
        return f"{where} Workshop Track".strip()
    if status == "accepted" and "oral" in str(decision).lower() and where:
        return f"{where} (oral)"
    return where


__all__ = ["IN_TEXT", "Standing", "in_text_status", "standing", "standing_of", "venue_note"]
