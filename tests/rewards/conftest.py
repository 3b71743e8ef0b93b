"""Fixtures of the rewards tests: a registry of completion environments holding a fake one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kimmy_swarm.rewards import envs
from tests.rewards._fake_env import FAKE, FakeEnv


@pytest.fixture
def fake_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEnv]:
    """A registry holding only `FAKE` (the process's own registrations untouched)."""
    monkeypatch.setattr(envs, "_ENVS", {})
    env = FakeEnv()
    envs.register_env(FAKE, env)
    yield env
