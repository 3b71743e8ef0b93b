"""`AnalysisConfig`: what to analyse and how; `AnalysisSettings`: the same, as a run stores it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kimmy_swarm.agents.pipeline_record import PipelineSettings
from kimmy_swarm.agents.tools.mcp.config import McpConfig, as_mcp_config
from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.protocol import ChatModel


class AnalysisSettings(PipelineSettings):
    """`AnalysisConfig` as stored (paths absolute: a resume may run from elsewhere)."""

    kind: Literal["analysis"] = "analysis"
    datasets: tuple[str, ...]
    out: Path
    questions: tuple[str, ...] = ()
    max_concurrency: int = 64
    root: Path
    threads: int = 16
    fallback: bool = True
    briefs: bool = True
    #: The MCP servers whose tools the run's sub-agents may use, as stored: without the
    #: values of their `env` and `headers` (`McpConfig.without_secrets`).
    mcp: McpConfig | None = None
    #: Which calls wait for a person (`swarm.approvals`).
    approvals: ApprovalPolicy | None = None
    stream: bool = False


@dataclass(frozen=True)
class AnalysisConfig:
    """What to analyse and how (checked when made, before anything runs).

    Attributes:
        datasets: specs: `statsmodels:NAME`, `sklearn:NAME`, or .csv/.tsv/.parquet paths.
        out: the folder for report.md, report.html, findings.jsonl and figures/.
        questions: asked of every dataset (default: one general question).
        model: the model for the model policy (None: offline procedures).
        runs_dir: where the swarm stores the run (None: nowhere).
        max_concurrency: sub-agents in flight at most.
        root: file datasets must lie inside it (default: the working directory).
        threads: worker threads for procedures and tools (analyses run in parallel on them).
        fallback: with a model, a sub-agent (the planner too) whose model fails its
            subtask by its answers gets it done by its role's offline procedure, marked as
            such; False: that sub-agent fails (strict model mode).
        briefs: with a model, each sub-agent is given what its subtask needs (gathered with
            its role's tools) and answers under a JSON schema made for that subtask
            (`agents.brief`), as a small model needs; False: the model calls the tools itself.
        mcp: MCP servers whose tools the run's sub-agents may use (an `McpConfig`, or the
            path of an `{"mcpServers": …}` file); their tools are named `server.tool`.
        approvals: which tool calls wait for a person, and the orchestrator's plan past
            how many sub-agents (an `ApprovalPolicy`, or a mapping of its fields; None:
            only tools and roles that ask themselves).
        stream: the model calls stream their answers (`RunConfig.stream`): `kimmy show
            --follow` and the dashboard show them being written.

    Raises:
        ConfigError: no dataset, or a count below 1.
    """

    datasets: Sequence[str]
    out: Path
    questions: Sequence[str] = ()
    model: ChatModel | None = None
    runs_dir: Path | None = None
    max_concurrency: int = 64
    root: Path | None = None
    threads: int = 16
    fallback: bool = True
    briefs: bool = True
    mcp: McpConfig | None = None
    approvals: ApprovalPolicy | None = None
    stream: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mcp", as_mcp_config(self.mcp))
        if self.approvals is not None:
            object.__setattr__(self, "approvals", ApprovalPolicy.coerce(self.approvals))
        for name in ("datasets", "questions"):
            value = getattr(self, name)
            if isinstance(value, str):  # a str is a Sequence[str]: one letter per dataset
                raise ConfigError(f"{name} is a list of strings; got the string {value!r}")
        datasets = [str(d).strip() for d in self.datasets]
        if not datasets or not all(datasets):
            raise ConfigError(
                f"name at least one dataset (got {datasets!r}): 'statsmodels:NAME', "
                "'sklearn:NAME' or a .csv/.tsv/.parquet path"
            )
        object.__setattr__(self, "datasets", tuple(datasets))
        object.__setattr__(self, "questions", tuple(q.strip() for q in self.questions if q.strip()))
        object.__setattr__(self, "out", Path(self.out))
        if self.threads < 1 or self.max_concurrency < 1:
            raise ConfigError(
                f"threads and max_concurrency must be >= 1, got {self.threads} and "
                f"{self.max_concurrency}"
            )

    def settings(self) -> AnalysisSettings:
        """What a resume needs (the model and the runs directory are given again)."""
        return AnalysisSettings(
            datasets=tuple(self.datasets),
            out=self.out.expanduser().resolve(),
            questions=tuple(self.questions),
            max_concurrency=self.max_concurrency,
            root=(self.root or Path.cwd()).expanduser().resolve(),
            threads=self.threads,
            fallback=self.fallback,
            briefs=self.briefs,
            mcp=self.mcp.without_secrets() if self.mcp is not None else None,
            approvals=self.approvals,
            stream=self.stream,
        )

    @classmethod
    def from_settings(cls, settings: AnalysisSettings, **changes: Any) -> AnalysisConfig:
        """The config a run was stored with; `changes` set other fields (model, runs_dir)."""
        return cls(**{**settings.model_dump(exclude={"kind"}), **changes})


__all__ = ["AnalysisConfig", "AnalysisSettings"]
