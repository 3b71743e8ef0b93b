"""The offline docstring corpus: read from sources (never imported), loadable as a corpus."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kimmy_swarm.agents.tools.corpus import load_corpus
from kimmy_swarm.agents.tools.docstring_corpus import write_docstring_corpus


@pytest.fixture(scope="module")
def stdlib_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docstrings")
    assert write_docstring_corpus(out, limit=60, include_site_packages=False) == 60
    return out


def test_one_markdown_file_per_module(stdlib_dir: Path) -> None:
    files = sorted(stdlib_dir.glob("*.md"))
    assert len(files) == 60
    names = [f.stem for f in files]
    assert not {"this", "antigravity"} & set(names)
    parts = {part for name in names for part in name.split(".")}
    assert not any(part.startswith("_") or part in ("test", "idlelib") for part in parts)
    for f in files:
        text = f.read_text(encoding="utf-8")
        heading, _, body = text.partition("\n\n")
        assert heading == f"# {f.stem}" and len(body.strip()) >= 300


def test_loads_as_a_corpus(stdlib_dir: Path) -> None:
    corpus = load_corpus(stdlib_dir)
    assert len(corpus) == 60 and corpus.skipped == []
    assert sorted(d.title for d in corpus) == sorted(f.stem for f in stdlib_dir.glob("*.md"))


def test_limit_keeps_the_longest_and_output_is_deterministic(tmp_path: Path) -> None:
    all_dir, top_dir = tmp_path / "all", tmp_path / "top"
    total = write_docstring_corpus(all_dir, limit=None, include_site_packages=False)
    assert total > 60
    assert write_docstring_corpus(top_dir, limit=10, include_site_packages=False) == 10
    # Every file is "# name\n\n" + docstring + "\n": its length minus the name's ranks them.
    length = {f.stem: len(f.read_text(encoding="utf-8")) - len(f.stem) for f in all_dir.iterdir()}
    longest = sorted(length, key=lambda n: (-length[n], n))[:10]
    assert sorted(f.stem for f in top_dir.glob("*.md")) == sorted(longest)
    for f in top_dir.glob("*.md"):
        assert f.read_bytes() == (all_dir / f.name).read_bytes()


def test_site_packages_add_packages_and_their_submodules(tmp_path: Path) -> None:
    n = write_docstring_corpus(tmp_path, min_chars=100, limit=None)
    names = {f.stem for f in tmp_path.glob("*.md")}
    assert n == len(names)
    assert "numpy" in names  # numpy/__init__.py has a long module docstring
    site = names - _stdlib_names(tmp_path / "std")
    assert any(name.startswith("pandas.") for name in site)  # submodules, not just packages
    assert all(name.count(".") < 3 for name in site)  # at most SITE_DEPTH levels
    assert not any(".tests" in name or ".test." in name for name in site)


def _stdlib_names(out: Path) -> set[str]:
    write_docstring_corpus(out, min_chars=100, limit=None, include_site_packages=False)
    return {f.stem for f in out.glob("*.md")}


def test_nothing_is_imported(tmp_path: Path) -> None:
    code = (
        "import sys; "
        "from kimmy_swarm.agents.tools.docstring_corpus import write_docstring_corpus as w; "
        "before = set(sys.modules); w(sys.argv[1], limit=None); "
        "print(sorted(m for m in set(sys.modules) - before if not m.startswith('encodings')))"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    )
    assert out.stdout.strip() == "[]"


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        write_docstring_corpus("/nonexistent-never-written", limit=-1)
