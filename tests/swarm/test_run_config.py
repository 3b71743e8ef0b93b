"""`RunConfig`: validation, the settings recorded with a run, and their way back on resume."""

from __future__ import annotations

import dataclasses
import math

import pytest

from kimmy_swarm.swarm import ApprovalPolicy, Plan, RunConfig, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.limits import Backoff, RateLimit
from kimmy_swarm.swarm.steps import FailurePolicy
from kimmy_swarm.swarm.store import RunStore
from kimmy_swarm.swarm.transcript_capture import TranscriptCapture

#: A value other than the default for every field (the local executor: Ray's is tested apart).
NON_DEFAULT = {
    "max_concurrency": 7,
    "timeout_s": 12.5,
    "max_retries": 4,
    "failure_policy": FailurePolicy.CONTINUE,
    "rate_limit": RateLimit(600, 60.0),
    "max_subagents": 50,
    "max_total_tokens": 90_000,
    "deadline_s": 3_600.0,
    "max_depth": 5,
    "max_subtasks": 4_000,
    "adaptive": False,
    "backoff": Backoff(0.25, 8.0),
    "seed": 7,
    "executor": "local",
    "ray_address": "auto",
    "ray_hosts": 3,
    "transcripts": TranscriptCapture(content=False, max_chars=500),
    "temperature": 0.7,
    "stream": True,
    "approvals": ApprovalPolicy(tools=("git.*",), timeout_s=60.0, on_timeout="fail"),
}


def test_the_table_covers_every_field() -> None:
    assert set(NON_DEFAULT) == set(RunConfig.fields())
    default = RunConfig()
    changed = {k for k, v in NON_DEFAULT.items() if getattr(default, k) != v}
    assert changed == set(RunConfig.fields()) - {"executor"}


@pytest.mark.parametrize(
    "kw, match",
    [({"max_concurrency": 0}, "max_concurrency"), ({"max_concurrency": 2.5}, "max_concurrency"),
     ({"timeout_s": 0}, "timeout"), ({"timeout_s": math.nan}, "timeout"),
     ({"timeout_s": math.inf}, "timeout"), ({"max_retries": -1}, "max_retries"),
     ({"max_depth": -1}, "max_depth"), ({"failure_policy": "explode"}, "fail_fast"),
     ({"rate_limit": "many"}, "bad rate limit"), ({"max_subagents": 0}, "max_subagents"),
     ({"deadline_s": -1.0}, "deadline_s"), ({"max_subtasks": 0}, "max_subtasks"),
     ({"ray_hosts": 0}, "ray_hosts"), ({"seed": "x"}, "seed"), ({"executor": "k8s"}, "k8s"),
     ({"adaptive": "yes"}, "adaptive"), ({"transcripts": "some"}, "'some'.*full or off"),
     ({"transcripts": 3}, "transcripts must be"),
     ({"temperature": -0.1}, r"temperature must be a number >= 0 .* got -0.1"),
     ({"temperature": math.inf}, "temperature"), ({"temperature": "hot"}, "temperature")],
)  # fmt: skip
def test_bad_values_are_named(kw: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RunConfig(**kw)  # type: ignore[arg-type]


def test_a_rate_limit_may_be_written_as_text() -> None:
    assert RunConfig(rate_limit="600/m").rate_limit == RateLimit(600, 60.0)


def test_replace_refuses_names_that_are_not_settings() -> None:
    with pytest.raises(ConfigError, match=r"unknown run setting\(s\) \['concurrency'\]"):
        RunConfig().replace(concurrency=3)
    with pytest.raises(ConfigError, match="max_concurrency"):
        Swarm(concurrency=3)


def test_settings_are_plain_json_and_read_back_whole() -> None:
    config = RunConfig(**NON_DEFAULT)  # type: ignore[arg-type]
    settings = config.to_settings()
    assert settings["failure_policy"] == "continue"
    assert settings["rate_limit"] == {"calls": 600, "period_s": 60.0}
    assert settings["backoff"] == {"base_s": 0.25, "cap_s": 8.0}
    assert RunConfig.from_settings({**settings, "base_url": "http://x", "model": "m"}) == config


def test_runs_stored_with_the_nested_budget_read_back() -> None:
    old = {"max_concurrency": 4, "budget": {"max_subagents": 3, "deadline_s": 9.0}}
    config = RunConfig.from_settings(old)
    assert (config.max_concurrency, config.max_subagents, config.deadline_s) == (4, 3, 9.0)
    assert config.max_total_tokens is None


def test_swarm_keywords_are_run_config_fields() -> None:
    base = RunConfig(max_concurrency=5, seed=1)
    swarm = Swarm(config=base, max_retries=0)
    assert swarm.config == dataclasses.replace(base, max_retries=0)
    assert Swarm(rate_limit="10/s").config.rate_limit == RateLimit(10, 1.0)


async def test_every_field_survives_store_then_resume(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A run is stored with its whole config; a swarm built from the stored config resumes
    it with exactly that config (and records that it does)."""
    config = RunConfig(**NON_DEFAULT)  # type: ignore[arg-type]
    calls: list[str] = []

    def make() -> Swarm:
        swarm = Swarm(config=config, runs_dir=tmp_path)

        @swarm.role("w")
        async def work(ctx: SubtaskContext) -> str:
            calls.append(ctx.id)
            if ctx.id == "b" and len(calls) == 2:  # fails in the first session only
                raise ValueError("not yet")
            return ctx.id

        return swarm

    plan = Plan(goal="g", subtasks=[Subtask(id="a", role="w"), Subtask(id="b", role="w")])
    first = make()
    partial = await first.execute(plan, run_id="r1")
    first.close()
    assert partial.results["b"].status == "failed"
    with RunStore(tmp_path, create=False) as store:
        stored = store.load_run("r1")
    assert RunConfig.from_settings(stored.settings) == config
    again = Swarm(config=RunConfig.from_settings(stored.settings), runs_dir=tmp_path)
    again.add_role("w", make().workers["w"])
    result = await again.resume("r1")
    again.close()
    assert result.results["a"].output == "a" and result.results["b"].output == "b"
    assert calls == ["a", "b", "b"]  # `a` was not run again
    with RunStore(tmp_path, create=False) as store:
        events = list(store.events("r1"))
    started = [e for e in events if e.type == "run_started"]
    assert len(started) == 2
    assert all(RunConfig.from_settings(e.settings) == config for e in started)
