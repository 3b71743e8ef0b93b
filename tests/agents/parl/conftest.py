"""A small corpus of our own for the PARL environment: 8 notes, half on attention."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimmy_swarm.agents.parl import SpawnEnv, SpawnTask, make_spawn_tasks
from kimmy_swarm.agents.tools.corpus import load_corpus

TOPICS = ("attention", "convolution")


def write_notes(folder: Path, n: int = 8) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        topic = TOPICS[i % 2]
        text = f"# Note {i} on models\n\nThis note studies {topic} layers in small networks.\n"
        (folder / f"n{i}.md").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def env(tmp_path: Path) -> SpawnEnv:
    with SpawnEnv(load_corpus(write_notes(tmp_path / "notes"))) as env:
        yield env


@pytest.fixture
def task(env: SpawnEnv) -> SpawnTask:
    return make_spawn_tasks(env.corpus, count=1, width=4, seed=3)[0]
