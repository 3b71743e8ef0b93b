"""Who wrote a .md/.txt paper of a folder corpus, and when: YAML front matter or `Key: value`
lines at its top (before or after a first heading) fill its authors, year, venue and title,
and its text is what follows them."""

from __future__ import annotations

from pathlib import Path

from kimmy_swarm.agents.tools.corpus import load_corpus

FILES = {
    "attention.md": (
        "---\ntitle: Attention Is All You Need\nauthors: [Ashish Vaswani, Noam Shazeer]\n"
        "year: 2017\nvenue: NeurIPS\nkeywords: [attention]\n---\n\n# Attention\n\n"
        "We propose the Transformer.\n"
    ),
    "resnet.txt": (
        "Title: Deep Residual Learning\nAuthors: Kaiming He, Xiangyu Zhang\nYear: 2016\n\n"
        "We present residual nets.\n"
    ),
    "adam.md": (
        "# Adam: A Method\nAuthor: Diederik Kingma and Jimmy Ba\nDate: 2014-12-22\n\n"
        "An optimizer.\n"
    ),
    "plain.txt": "Plain text about nothing.\nNote: not a field.\n",
    "broken.md": "---\ntitle: [unclosed\n---\nBody text.\n",
    "rule.md": "---\n\nA text that opens with a rule it never closes.\n",
}


def test_front_matter_and_key_lines_fill_the_fields(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    docs = {d.source: d for d in load_corpus(tmp_path)}
    attention = docs["attention.md"]
    assert attention.title == "Attention Is All You Need"
    assert attention.authors == ("Ashish Vaswani", "Noam Shazeer")
    assert (attention.year, attention.venue, attention.id) == (
        2017,
        "NeurIPS",
        "vaswani2017attention",
    )
    assert attention.meta == {"keywords": ["attention"]}
    assert attention.text == "# Attention\n\nWe propose the Transformer."  # no front matter
    resnet = docs["resnet.txt"]
    assert (resnet.title, resnet.authors, resnet.year) == (
        "Deep Residual Learning", ("Kaiming He", "Xiangyu Zhang"), 2016,
    )  # fmt: skip
    assert resnet.text == "We present residual nets."
    adam = docs["adam.md"]
    assert (adam.title, adam.authors, adam.year) == (
        "Adam: A Method", ("Diederik Kingma", "Jimmy Ba"), 2014,
    )  # fmt: skip
    assert adam.text == "# Adam: A Method\n\nAn optimizer."
    # no header: the file as it was, its title its first line
    plain = docs["plain.txt"]
    assert (plain.authors, plain.year, plain.id) == ((), None, "plain")
    assert plain.text == FILES["plain.txt"] and plain.title == "Plain text about nothing."
    # front matter that is not YAML stays text, with a note; an unclosed rule is text
    broken = docs["broken.md"]
    assert broken.text == FILES["broken.md"] and broken.authors == ()
    assert broken.meta["front_matter"].startswith("not valid YAML on line 2")
    assert docs["rule.md"].text == FILES["rule.md"]
