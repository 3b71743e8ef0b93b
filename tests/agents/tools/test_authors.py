"""`agents.tools.authors.parse_authors`: author names from lists and BibTeX-style strings."""

from __future__ import annotations

from kimmy_swarm.agents.tools.authors import parse_authors


def test_author_parsing() -> None:
    assert parse_authors("Zhang, C. and Bengio, Samy") == ("C. Zhang", "Samy Bengio")
    assert parse_authors("A Lee, B Kim") == parse_authors("A Lee; B Kim") == ("A Lee", "B Kim")
    assert parse_authors(["X Y*", {"name": "Z W"}]) == ("X Y", "Z W")
    assert parse_authors("Smith, Jr, John and others", bibtex=True) == ("John Smith Jr",)
    assert parse_authors(None) == ()
