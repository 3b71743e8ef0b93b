"""`ReviewConfig`: what to review and how; `ReviewSettings`: the same, as a run stores it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kimmy_swarm.agents.pipeline_record import PipelineSettings
from kimmy_swarm.agents.tools.mcp.config import McpConfig, as_mcp_config
from kimmy_swarm.agents.tools.search import Relevance
from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
from kimmy_swarm.swarm.errors import ConfigError

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.protocol import ChatModel

RESEARCHER_ROLES = ("researcher", "physics_researcher")


class ReviewSettings(PipelineSettings):
    """`ReviewConfig` as stored (paths absolute: a resume may run from elsewhere)."""

    kind: Literal["review"] = "review"
    corpus: Path
    topic: str
    out: Path
    max_papers: int = 200
    themes: int | None = None
    max_concurrency: int = 64
    threads: int = 8
    defaults: dict[str, Any] | None = None
    researcher: str = "researcher"
    relevance: Relevance = Relevance()
    fallback: bool = True
    briefs: bool = True
    #: The MCP servers whose tools the run's sub-agents may use, as stored: without the
    #: values of their `env` and `headers` (`McpConfig.without_secrets`).
    mcp: McpConfig | None = None
    #: Which calls wait for a person (`swarm.approvals`).
    approvals: ApprovalPolicy | None = None
    stream: bool = False


@dataclass(frozen=True)
class ReviewConfig:
    """What to review and where the files go (checked when made, before anything runs).

    Attributes:
        corpus: a folder of .md/.txt/.pdf files, a .bib, .jsonl or .json file.
        topic: what the review is about (empty: every document, up to `max_papers`).
        out: the output folder (created).
        model: the model sub-agents call (None: the offline procedures).
        runs_dir: where the swarm stores the run (None: nowhere).
        max_papers: the most documents reviewed (one researcher each).
        themes: the number of themes (None: chosen from the number of documents).
        max_concurrency: sub-agents in flight at most.
        threads: worker threads for procedures and tools.
        defaults: metadata for records that lack it, e.g. {"year": 2017}.
        researcher: the role reading each paper: `researcher`, or `physics_researcher`
            (it reports the sentences that state measured quantities first).
        relevance: when a document is relevant to the topic (`agents.tools.search.Relevance`:
            a BM25 score threshold and the topic's key words); `max_papers` only caps.
        fallback: with a model, a sub-agent (the planner too) whose model fails its
            subtask by its answers gets it done by its role's offline procedure, marked as
            such (`agents.fallback`); False: that sub-agent fails (strict model mode).
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
        ConfigError: a count below 1 or an unknown researcher role.
    """

    corpus: Path
    topic: str
    out: Path
    model: ChatModel | None = None
    runs_dir: Path | None = None
    max_papers: int = 200
    themes: int | None = None
    max_concurrency: int = 64
    threads: int = 8
    defaults: Mapping[str, Any] | None = None
    researcher: str = "researcher"
    relevance: Relevance = field(default_factory=Relevance)
    fallback: bool = True
    briefs: bool = True
    mcp: McpConfig | None = None
    approvals: ApprovalPolicy | None = None
    stream: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mcp", as_mcp_config(self.mcp))
        if self.approvals is not None:
            object.__setattr__(self, "approvals", ApprovalPolicy.coerce(self.approvals))
        object.__setattr__(self, "corpus", Path(self.corpus))
        if isinstance(self.relevance, Mapping):  # as stored in `ReviewSettings`
            object.__setattr__(self, "relevance", Relevance(**self.relevance))
        if not isinstance(self.relevance, Relevance):
            raise ConfigError(f"relevance must be a Relevance, got {self.relevance!r}")
        object.__setattr__(self, "out", Path(self.out))
        if self.max_papers < 1:
            raise ConfigError(f"max_papers must be >= 1, got {self.max_papers}")
        if self.themes is not None and self.themes < 1:
            raise ConfigError(
                f"themes must be >= 1, or None to choose from the corpus; got {self.themes}"
            )
        if self.researcher not in RESEARCHER_ROLES:
            raise ConfigError(
                f"unknown researcher role {self.researcher!r}; "
                f"use one of {', '.join(RESEARCHER_ROLES)}"
            )
        if self.threads < 1 or self.max_concurrency < 1:
            raise ConfigError(
                f"threads and max_concurrency must be >= 1, got {self.threads} and "
                f"{self.max_concurrency}"
            )

    def settings(self) -> ReviewSettings:
        """What a resume needs (the model and the runs directory are given again)."""
        return ReviewSettings(
            corpus=self.corpus.expanduser().resolve(),
            topic=self.topic,
            out=self.out.expanduser().resolve(),
            max_papers=self.max_papers,
            themes=self.themes,
            max_concurrency=self.max_concurrency,
            threads=self.threads,
            defaults=dict(self.defaults) if self.defaults is not None else None,
            researcher=self.researcher,
            relevance=self.relevance,
            fallback=self.fallback,
            briefs=self.briefs,
            mcp=self.mcp.without_secrets() if self.mcp is not None else None,
            approvals=self.approvals,
            stream=self.stream,
        )

    @classmethod
    def from_settings(cls, settings: ReviewSettings, **changes: Any) -> ReviewConfig:
        """The config a run was stored with; `changes` set other fields (model, runs_dir)."""
        return cls(**{**settings.model_dump(exclude={"kind"}), **changes})


__all__ = ["RESEARCHER_ROLES", "ReviewConfig", "ReviewSettings"]
