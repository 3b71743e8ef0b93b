"""The literature-review pipeline: `run_review(ReviewConfig(corpus, topic, out))`.

A planner finds the relevant papers and their themes, one researcher per paper
extracts key findings with exact passages, one writer per theme writes its section,
fact-checkers verify every claim against its cited passage, a synthesizer writes the
introduction and conclusion. Output: review.md, references.bib, report.html, claims.jsonl.
`resume_review` continues a stored run; `ReviewGrader` scores a stored review run
(citation precision and theme coverage).
"""

from kimmy_swarm.agents.review.config import ReviewConfig
from kimmy_swarm.agents.review.grader import ReviewGrader
from kimmy_swarm.agents.review.pipeline import (
    EmptyCorpusError,
    ReviewOutcome,
    resume_review,
    run_review,
)
from kimmy_swarm.agents.review.planning import decompose
from kimmy_swarm.agents.review.roles import review_roles
from kimmy_swarm.agents.tools.search import Relevance

__all__ = [
    "EmptyCorpusError",
    "Relevance",
    "ReviewConfig",
    "ReviewGrader",
    "ReviewOutcome",
    "decompose",
    "resume_review",
    "review_roles",
    "run_review",
]
