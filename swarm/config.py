"""`RunConfig`: how a run is executed — the one object `Swarm`, the CLI and resume all use.

    config = RunConfig(max_concurrency=256, rate_limit="600/m", max_subagents=1_000)
    swarm = Swarm(config=config, runs_dir="runs")
    stored = RunConfig.from_settings(store.load_run(run_id).settings)
    later = stored.replace(max_concurrency=32)   # resume with one change

Every field is recorded with the run (`to_settings`, plain JSON) and read back whole
(`from_settings`), so a resumed run continues with exactly the settings it was made with,
except the ones the caller changes on purpose.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
from kimmy_swarm.swarm.dag import DEFAULT_MAX_SUBTASKS
from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.limits import Backoff, Budget, RateLimit
from kimmy_swarm.swarm.steps import FailurePolicy
from kimmy_swarm.swarm.transcript_capture import TranscriptCapture

#: The executors a swarm may use (`swarm.executors` builds the `ray` one).
EXECUTORS = ("local", "ray")
RAY_INSTALL_HINT = "pip install 'kimmy-swarm[ray]'"


def check_executor(name: object) -> str:
    """The executor name, checked: it is known, and Ray is installed for `ray`.

    Raises:
        ConfigError: an unknown name, or `ray` without Ray installed.
    """
    if name not in EXECUTORS:
        raise ConfigError(f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")
    if name == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError(f"executor 'ray' needs Ray, which is not installed: {RAY_INSTALL_HINT}")
    return str(name)


def _int_at_least(name: str, value: object, low: int, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        more = " or None" if optional else ""
        raise ConfigError(f"{name} must be an integer ≥ {low}{more}, got {value!r}")


@dataclass(frozen=True, slots=True)
class RunConfig:
    """How a run is executed. Validated on construction; errors name the bad value.

    Attributes:
        max_concurrency: most sub-agents in flight at once.
        timeout_s: seconds per subtask attempt (a subtask may set its own).
        max_retries: retries per subtask of retryable errors (a subtask may set its own).
        failure_policy: `skip_dependents` (default), `fail_fast` or `continue`.
        rate_limit: model calls per period across the swarm, e.g. `"600/m"`.
        max_subagents, max_total_tokens, deadline_s: the run budget (None: unlimited).
        max_depth: how deep dynamic spawning may nest.
        max_subtasks: the most subtasks a plan may have.
        adaptive: back off when the model server is overloaded (429/503, latency).
        backoff: retry delays (exponential with jitter).
        seed: seeds the retry jitter.
        executor: where sub-agents run: `local` (this process) or `ray` (host actors on a
            Ray cluster; needs `pip install 'kimmy-swarm[ray]'`). The scheduler, retries,
            budgets and the store stay in this process either way.
        ray_address: the Ray cluster to join (`auto`, `HOST:PORT`, `ray://…`); None: the
            running one or a new local one.
        ray_hosts: Ray host actors (default: one per node with CPUs).
        transcripts: what the store keeps of sub-agents' conversations (messages, answers,
            tool arguments and results, each cut at a stated size; `content=False` keeps
            sizes only). Default: from `KIMMY_TRANSCRIPTS` (`full` or `off`), full.
        temperature: the sampling temperature of every model call that sets none (0:
            greedy; None: the server's default, 1.0 for OpenAI-compatible servers).
        stream: sub-agents' model calls stream their answers (`stream=True`, where the
            client can): each piece goes to the run's sinks the moment it arrives, as a
            `token_delta` event (`Swarm.stream` yields them; never stored: the store keeps
            whole answers).
        approvals: which tool calls wait for a person, and for how long
            (`ApprovalPolicy`; a mapping of its fields is read as one). Default: none but
            those of tools and roles that ask themselves.
    """

    max_concurrency: int = 64
    timeout_s: float = 600.0
    max_retries: int = 2
    failure_policy: FailurePolicy = FailurePolicy.SKIP_DEPENDENTS
    rate_limit: RateLimit | None = None
    max_subagents: int | None = None
    max_total_tokens: int | None = None
    deadline_s: float | None = None
    max_depth: int = 3
    max_subtasks: int = DEFAULT_MAX_SUBTASKS
    adaptive: bool = True
    backoff: Backoff = field(default_factory=Backoff)
    seed: int | None = None
    executor: str = "local"
    ray_address: str | None = None
    ray_hosts: int | None = None
    transcripts: TranscriptCapture = field(default_factory=TranscriptCapture.from_env)
    temperature: float | None = None
    stream: bool = False
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)

    def __post_init__(self) -> None:
        object.__setattr__(self, "approvals", ApprovalPolicy.coerce(self.approvals))
        if self.temperature is not None and (
            isinstance(self.temperature, bool)
            or not isinstance(self.temperature, int | float)
            or not 0 <= self.temperature < math.inf
        ):
            raise ConfigError(
                f"temperature must be a number >= 0 (0: greedy) or None, got {self.temperature!r}"
            )
        if self.executor == "ray" and self.approvals.active:
            raise ConfigError(
                "approvals need the local executor (a sub-agent on a Ray host cannot wait "
                "for a person yet): drop --approve-* or use --executor local"
            )
        check_executor(self.executor)
        _int_at_least("max_concurrency", self.max_concurrency, 1)
        _int_at_least("max_retries", self.max_retries, 0)
        _int_at_least("max_depth", self.max_depth, 0)
        _int_at_least("max_subtasks", self.max_subtasks, 1)
        _int_at_least("ray_hosts", self.ray_hosts, 1, optional=True)
        if self.seed is not None and (type(self.seed) is not int):
            raise ConfigError(f"seed must be an integer or None, got {self.seed!r}")
        if not isinstance(self.timeout_s, int | float) or not 0 < self.timeout_s < math.inf:
            raise ConfigError(  # an infinite timeout cannot be armed
                f"timeout must be a positive finite number of seconds, got {self.timeout_s!r}"
            )
        if not isinstance(self.adaptive, bool):
            raise ConfigError(f"adaptive must be true or false, got {self.adaptive!r}")
        if not isinstance(self.stream, bool):
            raise ConfigError(f"stream must be true or false, got {self.stream!r}")
        Budget(self.max_subagents, self.max_total_tokens, self.deadline_s)  # checks them
        try:
            object.__setattr__(self, "failure_policy", FailurePolicy(self.failure_policy))
        except ValueError:
            allowed = ", ".join(p.value for p in FailurePolicy)
            raise ConfigError(
                f"unknown failure policy {self.failure_policy!r}; allowed: {allowed}"
            ) from None
        if isinstance(self.rate_limit, str):
            object.__setattr__(self, "rate_limit", RateLimit.parse(self.rate_limit))
        elif self.rate_limit is not None and not isinstance(self.rate_limit, RateLimit):
            raise ConfigError(
                f"rate_limit must be a RateLimit, a string like '600/m', or None; "
                f"got {self.rate_limit!r}"
            )
        if not isinstance(self.backoff, Backoff):
            raise ConfigError(f"backoff must be a Backoff, got {self.backoff!r}")
        if isinstance(self.transcripts, str):
            object.__setattr__(self, "transcripts", TranscriptCapture.parse(self.transcripts))
        elif not isinstance(self.transcripts, TranscriptCapture):
            raise ConfigError(
                f"transcripts must be a TranscriptCapture or 'full' / 'off', "
                f"got {self.transcripts!r}"
            )

    @property
    def budget(self) -> Budget:
        """What the run may spend (sub-agents, tokens, wall time)."""
        return Budget(self.max_subagents, self.max_total_tokens, self.deadline_s)

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of the settings, in order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with some settings changed (validated like a new config).

        Raises:
            ConfigError: a name is not a setting, or a value is bad.
        """
        unknown = sorted(set(changes) - set(self.fields()))
        if unknown:
            raise ConfigError(
                f"unknown run setting(s) {unknown}; allowed: {', '.join(self.fields())}"
            )
        return dataclasses.replace(self, **changes)

    def to_settings(self) -> dict[str, Any]:
        """Every setting as plain JSON (recorded with each run)."""
        out: dict[str, Any] = {}
        for name in self.fields():
            value = getattr(self, name)
            if isinstance(value, RateLimit | Backoff | TranscriptCapture | ApprovalPolicy):
                value = dataclasses.asdict(value)
            elif isinstance(value, FailurePolicy):
                value = value.value
            out[name] = value
        return json.loads(json.dumps(out))

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RunConfig:
        """The config recorded in a run's settings; other keys (the model's address, …)
        are ignored. Runs stored before the budget was flattened keep it under `budget`.

        Raises:
            ConfigError: a recorded value is not valid any more.
        """
        values: dict[str, Any] = {k: settings[k] for k in cls.fields() if k in settings}
        legacy = settings.get("budget")
        if isinstance(legacy, Mapping):
            for key in ("max_subagents", "max_total_tokens", "deadline_s"):
                values.setdefault(key, legacy.get(key))
        try:
            if isinstance(values.get("rate_limit"), Mapping):
                values["rate_limit"] = RateLimit(**values["rate_limit"])
            if isinstance(values.get("backoff"), Mapping):
                values["backoff"] = Backoff(**values["backoff"])
            if isinstance(values.get("transcripts"), Mapping):
                values["transcripts"] = TranscriptCapture(**values["transcripts"])
        except TypeError as exc:
            raise ConfigError(f"stored run settings are not valid: {exc}") from None
        return cls(**values)


__all__ = ["EXECUTORS", "RAY_INSTALL_HINT", "RunConfig", "check_executor"]
