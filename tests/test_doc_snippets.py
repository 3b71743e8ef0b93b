"""Every example of the README and the docs runs as written.

Each Python block of `README.md` and `docs/*.md` runs in a fresh interpreter, in a folder
holding a copy of `examples/` (the sample corpora the examples name), and must exit 0. A
block that cannot run here says why in a comment right above it,
`<!-- snippet: not run: REASON -->` (a model server, a Ray cluster, a fragment of the block
before), and must still compile. The README's shell examples marked `# offline` run as
`kimmy` commands in the same kind of folder, and must exit 0.
"""

from __future__ import annotations

import ast
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
NOT_RUN = re.compile(r"<!--\s*snippet:\s*not run:\s*(.+?)\s*-->")


@dataclass(frozen=True)
class Snippet:
    page: Path
    line: int
    language: str
    code: str
    #: Why it is not run ("" when it is).
    not_run: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def snippets(page: Path) -> list[Snippet]:
    """The fenced blocks of a page, each with the marker above it, if any."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening or not opening.group(2):
            i += 1
            continue
        start = i
        body = []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        above = next((x for x in reversed(lines[:start]) if x.strip()), "")
        marker = NOT_RUN.search(above)
        code = textwrap.dedent("\n".join(body)) + "\n"
        found.append(
            Snippet(page, start + 1, opening.group(2), code, marker.group(1) if marker else "")
        )
        i += 1
    return found


PYTHON = [s for page in PAGES for s in snippets(page) if s.language == "python"]


def offline_commands(page: Path) -> list[tuple[str, list[str]]]:
    """The `kimmy` lines of a page's shell blocks whose comment says `offline`."""
    commands = []
    for snippet in snippets(page):
        if snippet.language != "bash":
            continue
        joined = snippet.code.replace("\\\n", " ")
        for line in joined.splitlines():
            command, _, comment = line.partition("  # ")
            words = shlex.split(command)
            if words and words[0] == "kimmy" and comment.strip().startswith("offline"):
                commands.append((f"{snippet.name} {' '.join(words[:3])}", words[1:]))
    return commands


@pytest.fixture
def sample_folder(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


def test_the_pages_have_examples_and_most_run() -> None:
    assert len(PYTHON) >= 10
    assert sum(1 for s in PYTHON if not s.not_run) > len(PYTHON) / 2
    assert len(offline_commands(ROOT / "README.md")) >= 3


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.name for s in PYTHON])
def test_a_python_example_runs_as_written(snippet: Snippet, sample_folder: Path) -> None:
    if snippet.not_run:
        # it cannot run here (it says why), but it is Python as written
        compile(snippet.code, snippet.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        assert len(snippet.not_run) > 10, f"{snippet.name}: say what it needs"
        return
    done = subprocess.run(
        [sys.executable, "-c", snippet.code],
        cwd=sample_folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"{snippet.name} failed:\n{_tail(done.stderr)}"


_COMMANDS = offline_commands(ROOT / "README.md")


@pytest.mark.parametrize("args", [a for _, a in _COMMANDS], ids=[n for n, _ in _COMMANDS])
def test_an_offline_readme_command_runs_as_written(args: list[str], sample_folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kimmy_swarm.cli", *args],
        cwd=sample_folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"kimmy {shlex.join(args)}:\n{_tail(done.stdout + done.stderr)}"
