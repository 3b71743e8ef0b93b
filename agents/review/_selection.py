"""Which of the papers about a topic a review keeps when `max_papers` caps them.

Every paper `search_corpus` returns is about the topic (`agents.tools.topicality`); the cap
only decides how many a review can read. It keeps the papers the field reads most: the
most cited first, and among equally cited ones an accepted paper before a workshop one
before a rejected or withdrawn one, then the search's own order. A corpus without
citations or decisions is cut in the search's order, as before. The kept papers stay in
the search's order (best match first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: How a standing ranks among equally cited papers (lower first); "" has no decision.
_STANDING_RANK = {"accepted": 0, "": 1, "workshop": 2, "rejected": 3, "withdrawn": 4}


def _weight(hit: Mapping[str, Any], position: int) -> tuple[int, int, int]:
    citations = hit.get("citations")
    cited = citations if isinstance(citations, int) and citations >= 0 else 0
    return (-cited, _STANDING_RANK.get(str(hit.get("status") or ""), 1), position)


def most_read(hits: Sequence[Mapping[str, Any]], limit: int) -> list[Mapping[str, Any]]:
    """The `limit` hits the field reads most (see the module), in their search order.

    Raises:
        ValueError: `limit` < 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    ranked = sorted(range(len(hits)), key=lambda i: _weight(hits[i], i))[:limit]
    return [hits[i] for i in sorted(ranked)]


__all__ = ["most_read"]
