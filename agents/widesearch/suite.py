"""The wide-task suite: goals in words over the ICLR 2017 corpus, each with its `WideTask`.

Each goal is phrased as a person would type it — differently from the presets' generated
goals (`WideTask.goal`) — and its task is written out here, not read from the words, so the
ground truth (`WideTask.ground_truth`) does not depend on the offline goal reader. The goals
cover conditions on phrases (in the title, the abstract or either), decisions, rating and
citation thresholds, ranks, e-mail domains and author counts, and columns among every field
the records have.

    for goal in WIDE_SUITE.values():
        truth = goal.task.ground_truth(papers)
        score = grade_answer(goal.task, answer_of(goal.words), truth)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kimmy_swarm.agents.widesearch.task import FieldFilter, WideTask


@dataclass(frozen=True)
class SuiteGoal:
    """One goal of the suite: its name, its words and the task they ask for."""

    name: str
    words: str
    task: WideTask


def _f(field: str, op: str, value: float) -> FieldFilter:
    return FieldFilter(field=field, op=op, value=value)  # type: ignore[arg-type]


def _goal(name: str, words: str, **task: Any) -> SuiteGoal:
    return SuiteGoal(name, words, WideTask(name=name, **task))


#: The suite, by name (figures for the 489 usable records are in `tests/agents/widesearch`).
WIDE_SUITE: dict[str, SuiteGoal] = {
    g.name: g
    for g in (
        _goal(
            "dropout_citations",
            "Which ICLR 2017 papers mention 'dropout' in the title or abstract? Give each "
            "one's title, first author and citation count.",
            phrases=("dropout",),
            columns=("title", "first_author", "citations"),
        ),
        _goal(
            "variational_ratings",
            'Find all submissions whose abstract mentions "variational", with their title, '
            "decision and mean rating.",
            phrases=("variational",),
            where="abstract",
            columns=("title", "decision", "rating"),
        ),
        _goal(
            "accepted_neural_titles",
            "I need every accepted paper whose title contains 'neural', with its first author "
            "and rank.",
            phrases=("neural",),
            where="title",
            decision="Accept",
            columns=("title", "first_author", "rank"),
        ),
        _goal(
            "rejected_lstm",
            'List the rejected submissions that mention "LSTM" or "long short-term memory", '
            "with title and number of authors.",
            phrases=("lstm", "long short-term memory"),
            decision="Reject",
            columns=("title", "n_authors"),
        ),
        _goal(
            "google_rl",
            "Give me every paper with an author at a google.com address that mentions "
            "'reinforcement learning', with title, all authors and citations.",
            phrases=("reinforcement learning",),
            email_domains=("google.com",),
            columns=("title", "authors", "citations"),
        ),
        _goal(
            "adversarial_rated_8",
            'Which papers rated 8 or higher mention "adversarial"? List title, rating and '
            "decision.",
            phrases=("adversarial",),
            filters=(_f("rating", ">=", 8.0),),
            columns=("title", "rating", "decision"),
        ),
        _goal(
            "single_author",
            "Tabulate all single-author submissions: title, author, decision and citation count.",
            filters=(_f("n_authors", "==", 1.0),),
            columns=("title", "authors", "decision", "citations"),
        ),
        _goal(
            "eight_authors",
            "List every paper with at least 8 authors: title, first author, number of authors "
            "and e-mail domains.",
            filters=(_f("n_authors", ">=", 8.0),),
            columns=("title", "first_author", "n_authors", "emails"),
        ),
        _goal(
            "oral_generalization",
            "Find every oral paper that mentions 'generalization', with title, first author "
            "and OpenReview link.",
            phrases=("generalization",),
            decision="Accept (Oral)",
            columns=("title", "first_author", "url"),
        ),
        _goal(
            "workshop_transfer",
            "Which papers whose abstract mentions 'transfer learning' were invited to the "
            "workshop track? Title and first author.",
            phrases=("transfer learning",),
            where="abstract",
            decision="Invite to Workshop Track",
            columns=("title", "first_author"),
        ),
        _goal(
            "gan_titles",
            "List every submission whose title mentions 'GAN' or 'GANs', with its authors and "
            "rating.",
            phrases=("gan", "gans"),
            where="title",
            columns=("title", "authors", "rating"),
        ),
        _goal(
            "berkeley_policy",
            "Every paper with an author from berkeley.edu whose abstract mentions 'policy', "
            "with title and citations.",
            phrases=("policy",),
            where="abstract",
            email_domains=("berkeley.edu",),
            columns=("title", "citations"),
        ),
        _goal(
            "over_100_citations",
            "List papers with more than 100 citations: title, first author, decision, citations.",
            filters=(_f("citations", ">", 100.0),),
            columns=("title", "first_author", "decision", "citations"),
        ),
        _goal(
            "pruning_quantization",
            'Find the papers mentioning "pruning" or "quantization" with their title, rating '
            "and rank.",
            phrases=("pruning", "quantization"),
            columns=("title", "rating", "rank"),
        ),
        _goal(
            "poster_rnn",
            'Which poster papers mention "recurrent neural network", and who is the first '
            "author? Include the title and the citation count.",
            phrases=("recurrent neural network",),
            decision="Accept (Poster)",
            columns=("title", "first_author", "citations"),
        ),
        _goal(
            "word_embeddings_domains",
            "List every paper whose abstract mentions 'word embeddings' with title, first "
            "author, decision and e-mail domains.",
            phrases=("word embeddings",),
            where="abstract",
            columns=("title", "first_author", "decision", "emails"),
        ),
        _goal(
            "low_rated_deep_learning",
            "Give a table of the submissions rated below 4 that mention 'deep learning': "
            "title, rating, decision.",
            phrases=("deep learning",),
            filters=(_f("rating", "<", 4.0),),
            columns=("title", "rating", "decision"),
        ),
        _goal(
            "cmu_stanford_optimization",
            "List every paper with an author at cmu.edu or stanford.edu that mentions "
            "'optimization', with the title and the first author.",
            phrases=("optimization",),
            email_domains=("cmu.edu", "stanford.edu"),
            columns=("title", "first_author"),
        ),
        _goal(
            "two_author_attention",
            "Which papers have exactly two authors and mention 'attention'? Give the title and "
            "the authors.",
            phrases=("attention",),
            filters=(_f("n_authors", "==", 2.0),),
            columns=("title", "authors"),
        ),
        _goal(
            "accepted_learning_to",
            "Find every accepted paper whose title mentions 'learning to', with its first "
            "author and citations, sorted by citations descending.",
            phrases=("learning to",),
            where="title",
            decision="Accept",
            columns=("title", "first_author", "citations"),
            sort_by="citations",
            descending=True,
        ),
        _goal(
            "meta_learning",
            "List all papers that mention 'meta-learning' or 'learning to learn', with title, "
            "decision and rating.",
            phrases=("meta-learning", "learning to learn"),
            columns=("title", "decision", "rating"),
        ),
        _goal(
            "rejected_50_citations",
            "Which rejected papers have 50 or more citations? Title, first author, citations.",
            decision="Reject",
            filters=(_f("citations", ">=", 50.0),),
            columns=("title", "first_author", "citations"),
        ),
        _goal(
            "small_team_convolutional",
            "List all papers with fewer than 3 authors whose abstract mentions "
            '"convolutional", with title and number of authors.',
            phrases=("convolutional",),
            where="abstract",
            filters=(_f("n_authors", "<", 3.0),),
            columns=("title", "n_authors"),
        ),
        _goal(
            "speech",
            "Find every paper whose title or abstract mentions 'speech', with title, first "
            "author, decision, citations and rating.",
            phrases=("speech",),
            columns=("title", "first_author", "decision", "citations", "rating"),
        ),
        _goal(
            "facebook_papers",
            "List every paper with an author at fb.com, with its title, decision and citation "
            "count.",
            email_domains=("fb.com",),
            columns=("title", "decision", "citations"),
        ),
        _goal(
            "top20_network",
            "Which papers ranked in the top 20 mention 'network'? Give title, rank and rating.",
            phrases=("network",),
            filters=(_f("rank", "<=", 20.0),),
            columns=("title", "rank", "rating"),
        ),
        _goal(
            "semi_supervised_spread",
            "List every submission whose abstract mentions 'semi-supervised', with its title, "
            "its first author and the standard deviation of its ratings.",
            phrases=("semi-supervised",),
            where="abstract",
            columns=("title", "first_author", "variance"),
        ),
        _goal(
            "accepted_image_rated_7",
            "Find the accepted papers with a rating of at least 7 whose abstract mentions "
            "'image', with title and rating.",
            phrases=("image",),
            where="abstract",
            decision="Accept",
            filters=(_f("rating", ">=", 7.0),),
            columns=("title", "rating"),
        ),
    )
}


def suite_goal_of(goal: str) -> SuiteGoal | None:
    """The suite goal whose words `goal` is (whitespace aside), if any."""
    wanted = " ".join(goal.split())
    return next((g for g in WIDE_SUITE.values() if " ".join(g.words.split()) == wanted), None)


__all__ = ["WIDE_SUITE", "SuiteGoal", "suite_goal_of"]
