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
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    InstanceOf,
    SerializeAsAny,
    TypeAdapter,
    ValidationError,
)

from kimmy_swarm.swarm.errors import ConfigError
from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

#: The key of a run's settings that holds its `PipelineRecord`.
PIPELINE_KEY = "pipeline"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


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
    "PipelineRecord",
    "PipelineSettings",
    "parse_record",
    "record_kind",
    "stored_settings",
]
