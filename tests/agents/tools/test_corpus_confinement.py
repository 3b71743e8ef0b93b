"""Corpus loading stays inside its root and its caps: symlink loops, links swapped in after
the walk, oversized files (issue 17, items 10-12)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kimmy_swarm.agents.tools import _corpus_files, corpus
from kimmy_swarm.agents.tools.corpus import (
    CorpusError,
    CorpusLimits,
    PathOutsideRootError,
    load_corpus,
    safe_path,
)
from kimmy_swarm.swarm.errors import UserError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_safe_path_raises_its_own_error_for_loops_and_nul_bytes(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for bad in ("loop", "a/x.md", "x\0y.md"):
        with pytest.raises(PathOutsideRootError, match=r"cannot be resolved.*only paths") as info:
            safe_path(tmp_path, bad)
        assert repr(bad) in str(info.value)
    assert issubclass(PathOutsideRootError, UserError)


def test_symlink_loops_are_skipped_and_reported(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "real.md", "# Real\n")
    (root / "self.md").symlink_to(root / "self.md")
    (root / "ping.txt").symlink_to(root / "pong.txt")
    (root / "pong.txt").symlink_to(root / "ping.txt")
    (root / "sub").mkdir()
    (root / "sub" / "up.md").symlink_to("../sub/up.md")
    docs = load_corpus(root)
    assert [d.title for d in docs] == ["Real"]
    reasons = {s.source: s.reason for s in docs.skipped}
    assert reasons == dict.fromkeys(
        ("self.md", "ping.txt", "pong.txt", "sub/up.md"), "symlink loop"
    )


def test_a_link_swapped_in_after_the_walk_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# Secret\n\nouter content\n")
    write(outside / "deep" / "paper.md", "# Secret too\n")
    root = tmp_path / "c"
    write(root / "paper.md", "# Paper\n")
    write(root / "deep" / "paper.md", "# Deep\n")
    write(root / "kept.md", "# Kept\n")
    write(root / "other.md", "# Other\n")
    write(root / ".store" / "inner.md", "# Inner\n")  # hidden: read only through the link
    (root / "link.md").symlink_to(root / ".store" / "inner.md")

    before = load_corpus(root)
    assert sorted(d.title for d in before) == ["Deep", "Inner", "Kept", "Other", "Paper"]

    def walk_then_swap(where: Path) -> tuple[list, list]:
        listed = _corpus_files.walk(where)
        # between the check and the read: a file, a folder and a link's target become links
        (root / "paper.md").unlink()
        (root / "paper.md").symlink_to(outside / "secret.md")
        os.rename(root / "deep", tmp_path / "old-deep")
        (root / "deep").symlink_to(outside / "deep", target_is_directory=True)
        (root / ".store" / "inner.md").unlink()
        (root / ".store" / "inner.md").symlink_to(outside / "secret.md")
        return listed

    monkeypatch.setattr(corpus, "walk", walk_then_swap)
    docs = load_corpus(root)
    assert sorted(d.title for d in docs) == ["Kept", "Other"]
    assert all("Secret" not in d.title and "outer" not in d.text for d in docs)
    reasons = {s.source: s.reason for s in docs.skipped}
    for source in ("paper.md", "deep/paper.md", "link.md"):
        assert reasons[source].startswith("changed into a symlink"), (source, reasons)


def test_files_over_the_caps_are_skipped_unread(tmp_path: Path) -> None:
    root = tmp_path / "c"
    huge = write(root / "huge.txt", "# Huge\n")
    os.truncate(huge, 64 << 20)  # sparse: a 64 MiB file that takes no disk
    default_cap = write(root / "just-over.txt", "# Over\n")
    os.truncate(default_cap, CorpusLimits().max_file_bytes + 1)
    for name in ("a.md", "b.md", "c.md"):
        write(root / name, f"# {name}\n" + "x" * 90)
    docs = load_corpus(root)
    assert sorted(d.source for d in docs) == ["a.md", "b.md", "c.md"]
    reasons = {s.source: s.reason for s in docs.skipped}
    assert reasons["huge.txt"] == (
        f"the file is {64 << 20} bytes, over the {16 * 2**20}-byte cap of "
        "CorpusLimits.max_file_bytes; not read"
    )
    assert "max_file_bytes" in reasons["just-over.txt"]

    small = load_corpus(root, limits=CorpusLimits(max_file_bytes=1000, max_corpus_bytes=250))
    assert [d.source for d in small] == ["a.md", "b.md"]
    reasons = {s.source: s.reason for s in small.skipped}
    assert reasons["c.md"] == (
        "its 97 bytes would bring the corpus to 291 bytes, over the 250-byte cap of "
        "CorpusLimits.max_corpus_bytes; not read"
    )
    assert "1000-byte cap of CorpusLimits.max_file_bytes" in reasons["huge.txt"]


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "16M"])
def test_bad_limits_are_user_errors(bad: object) -> None:
    with pytest.raises(CorpusError, match=r"CorpusLimits.max_file_bytes must be a positive int"):
        CorpusLimits(max_file_bytes=bad)  # type: ignore[arg-type]


def test_a_fifo_is_not_opened_for_long(tmp_path: Path) -> None:
    root = tmp_path / "c"
    write(root / "ok.md", "# Ok\n")
    os.mkfifo(root / "pipe.txt")
    docs = load_corpus(root)
    assert [d.title for d in docs] == ["Ok"]
    assert {s.source: s.reason for s in docs.skipped} == {"pipe.txt": "not a regular file"}
