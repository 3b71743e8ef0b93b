"""What a stored pipeline run keeps so that `resume_pipeline` (and `kimmy resume`) can
rebuild the same roles and continue it.

A pipeline run records, under `PIPELINE_KEY` of its settings, a `PipelineRecord`: the
pipeline's own settings (a `PipelineSettings` of the pipeline named by its `kind`) and the
`ModelEndpoint` its sub-agents called. No secret is ever stored: the API key is not part of
the record, and the base URL keeps no credentials (`swarm.llm.redact_url`), so a run whose
URL held some is resumed with `--base-url` given again.

The record's settings are read by the pipeline that made the run (`read_record`), or by
whichever registered pipeline its `kind` names (`agents.pipelines.pipeline_record`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    InstanceOf,
    SerializeAsAny,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from swarm.errors import ConfigError
from swarm.llm import redact_url
from swarm.llm.capabilities import Capabilities

if TYPE_CHECKING:
    from swarm.llm.protocol import ChatModel

#: The key of a run's settings that holds its `PipelineRecord`.
PIPELINE_KEY = "pipeline"

EndpointKind = Literal["offline", "http", "local", "other"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelEndpoint(_Frozen):
    """How the run's sub-agents reached their model, without secrets.

    Attributes:
        kind: `offline` (the roles' procedures), `http` (an OpenAI-compatible server),
            `local` (a model served in the process, `--local SOURCE`), or `other` (a model
            object given by a library caller: it must be given again to resume).
        base_url: the server's URL, its credentials masked (`redact_url` runs on every
            value given, so nothing else can be stored).
        model: the model id (None: the first model the server lists).
        local: the `--local` source (smollm2, a .gguf file, a checkpoint folder).
        context_tokens: `--context-tokens`, when given.
        max_tokens: `--max-answer-tokens` (the most tokens one model call may generate), when given.
        capabilities: what the server honours, as probed or given by flags
            (`swarm.llm.capabilities`); a resumed run adapts the same way without probing
            again. None: not known (everything taken as honoured).
    """

    kind: EndpointKind = "offline"
    base_url: str | None = None
    model: str | None = None
    local: str | None = None
    context_tokens: int | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    capabilities: Capabilities | None = None

    @field_validator("base_url")
    @classmethod
    def _redacted(cls, value: str | None) -> str | None:
        return redact_url(value) if value is not None else None

    @field_validator("model")
    @classmethod
    def _named(cls, value: str | None) -> str | None:
        # `auto@<base_url>` is a client's name before the server told it the model: it
        # holds the unredacted URL and names no model.
        return None if value is None or value.startswith("auto@") else value

    @classmethod
    def of(cls, model: ChatModel | None) -> ModelEndpoint:
        """The endpoint of a model object: offline, an HTTP client's, or `other`."""
        if model is None:
            return cls()
        from swarm.llm import OpenAIChat

        if isinstance(model, OpenAIChat):
            return cls(
                kind="http",
                base_url=model.base_url,
                model=model.model,
                capabilities=model.capabilities,
            )
        return cls(kind="other")


class PipelineSettings(_Frozen):
    """A pipeline's settings as stored with its run: what a resume needs to rebuild the
    run's config (the model and the runs directory are given again).

    Each pipeline subclasses it with `kind: Literal["<its name>"]` and its own fields; the
    kinds tell the pipelines' records apart.
    """

    kind: str


class PipelineRecord(_Frozen):
    """Everything a stored pipeline run needs to be resumed (kept under `PIPELINE_KEY`).

    Its settings are an instance of the making pipeline's `Settings`: a record is read from
    a run's settings by `read_record` or `agents.pipelines.pipeline_record`, which know the
    kinds.
    """

    settings: SerializeAsAny[InstanceOf[PipelineSettings]]
    endpoint: ModelEndpoint = ModelEndpoint()


def stored_settings(settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pipeline settings in a run's stored settings, as stored (JSON, not validated:
    for a reader that needs one field of any pipeline's); empty for a run no pipeline made."""
    raw = settings.get(PIPELINE_KEY)
    inner = raw.get("settings") if isinstance(raw, Mapping) else None
    return inner if isinstance(inner, Mapping) else {}


def record_kind(settings: Mapping[str, Any]) -> str | None:
    """The `kind` of the pipeline that made a run, from its stored settings; None for a run
    no pipeline made (or a record with no kind)."""
    kind = stored_settings(settings).get("kind")
    return kind if isinstance(kind, str) else None


def parse_record(settings: Mapping[str, Any], kinds: Any) -> PipelineRecord | None:
    """The record in a run's settings, its settings validated as one of `kinds` (a settings
    class, or a discriminated union of them); None for a run no pipeline made.

    Raises:
        ConfigError: the record is there but not valid (stored by another version, or by a
            pipeline none of `kinds` is).
    """
    raw = settings.get(PIPELINE_KEY)
    if raw is None:
        return None
    try:
        if not isinstance(raw, Mapping):
            raise TypeError(f"a record is a JSON object, got {type(raw).__name__}")
        parsed = TypeAdapter(kinds).validate_python(raw.get("settings"))
        endpoint = ModelEndpoint.model_validate(raw.get("endpoint", {}))
    except (ValidationError, TypeError) as exc:
        raise ConfigError(f"the run's stored pipeline settings are not valid: {exc}") from None
    return PipelineRecord(settings=parsed, endpoint=endpoint)


__all__ = [
    "PIPELINE_KEY",
    "ModelEndpoint",
    "PipelineRecord",
    "PipelineSettings",
    "parse_record",
    "record_kind",
    "stored_settings",
]
