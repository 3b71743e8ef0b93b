"""`agents.tools.authors`: author names from lists and BibTeX-style strings, and their parts
(given names, family name with its particles, suffix)."""

from __future__ import annotations

import pytest

from kimmy_swarm.agents.tools.authors import NameParts, family_name, name_parts, parse_authors


def test_author_parsing() -> None:
    assert parse_authors("Zhang, C. and Bengio, Samy") == ("C. Zhang", "Samy Bengio")
    assert parse_authors("A Lee, B Kim") == parse_authors("A Lee; B Kim") == ("A Lee", "B Kim")
    assert parse_authors(["X Y*", {"name": "Z W"}]) == ("X Y", "Z W")
    assert parse_authors("Smith, Jr, John and others", bibtex=True) == ("John Smith Jr",)
    assert parse_authors(None) == ()


@pytest.mark.parametrize(
    ("author", "given", "family", "suffix"),
    [
        ("Michiel van de Panne", "Michiel", "van de Panne", ""),
        ("Aäron van den Oord", "Aäron", "van den Oord", ""),
        ("Patrick van der Smagt", "Patrick", "van der Smagt", ""),
        ("Cicero Nogueira dos Santos", "Cicero Nogueira", "dos Santos", ""),
        ("Filip De Turck", "Filip", "De Turck", ""),
        ("Nicolas Le Roux", "Nicolas", "Le Roux", ""),
        ("Le Song", "Le", "Song", ""),  # a particle as the first word is a given name
        ("Quoc V. Le", "Quoc V.", "Le", ""),
        ("Soumyajit De", "Soumyajit", "De", ""),
        ("Guy L. Steele Jr.", "Guy L.", "Steele", "Jr."),
        ("Alexander G. Ororbia II", "Alexander G.", "Ororbia", "II"),
        ("Zhang, Chiyuan", "Chiyuan", "Zhang", ""),
        ("Chiyuan Zhang*", "Chiyuan", "Zhang", ""),
    ],
)
def test_name_parts_keep_particles_with_the_family_name(
    author: str, given: str, family: str, suffix: str
) -> None:
    assert name_parts(author) == NameParts(given, family, suffix)
    assert family_name(author) == family


def test_bibtex_names_keep_particles_and_suffixes_apart() -> None:
    assert name_parts("Michiel van de Panne").bibtex() == "van de Panne, Michiel"
    assert name_parts("Filip De Turck").bibtex() == "De Turck, Filip"
    assert name_parts("Guy L. Steele Jr.").bibtex() == "Steele, Jr., Guy L."
    assert name_parts("Samy Bengio").bibtex() == "Samy Bengio"


def test_a_list_item_naming_two_people_is_two_authors() -> None:
    # an ICLR 2017 record lists "Bert De Brabandere and Arnold W.M. Smeulders" as one author
    assert parse_authors(["Xu Jia", "Bert De Brabandere and Arnold W.M. Smeulders"]) == (
        "Xu Jia",
        "Bert De Brabandere",
        "Arnold W.M. Smeulders",
    )


def test_an_initial_glued_to_the_family_name_is_a_given_name() -> None:
    # "Frank S.He" in the ICLR 2017 records was cited "S.He et al. (2017)"
    assert name_parts("Frank S.He") == NameParts("Frank S.", "He")
    assert family_name("W.M.Smeulders") == "Smeulders"
    assert family_name("Arnold W.M. Smeulders") == "Smeulders"
    assert family_name("Joel Z Leibo") == "Leibo"
