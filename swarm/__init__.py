"""Kimmy Swarm runtime: plans as DAGs, an async scheduler for thousands of sub-agents,
model clients, durable runs and progress. `import swarm` stays light (no torch).
"""

from swarm.config import RunConfig
from swarm.context import SubtaskContext
from swarm.dag import critical_path, critical_path_length, topological_generations, validate_plan
from swarm.errors import (
    ConfigError,
    CycleError,
    LimitError,
    ModelError,
    PlanValidationError,
    SpawnError,
    SwarmError,
    UserError,
)
from swarm.event_fold import EventFold
from swarm.events import Event, parse_event
from swarm.journal import EventSink
from swarm.limits import AdaptiveLimit, Backoff, Budget, RateLimit
from swarm.planfile import load_plan, parse_plan
from swarm.runtime import Swarm, new_run_id
from swarm.scheduler import Scheduler
from swarm.schema import (
    ErrorInfo,
    Plan,
    RunResult,
    RunStatus,
    Subtask,
    SubtaskResult,
    SubtaskStatus,
    Timings,
    Usage,
)
from swarm.steps import FailurePolicy
from swarm.tasks import gather_all
from swarm.transcript_capture import TranscriptCapture
from swarm.transcripts import Transcript, read_transcript
from swarm.worker import Worker

__version__ = "0.1.0"

__all__ = [
    "AdaptiveLimit",
    "Backoff",
    "Budget",
    "ConfigError",
    "CycleError",
    "ErrorInfo",
    "Event",
    "EventFold",
    "EventSink",
    "FailurePolicy",
    "LimitError",
    "ModelError",
    "Plan",
    "PlanValidationError",
    "RateLimit",
    "RunConfig",
    "RunResult",
    "RunStatus",
    "Scheduler",
    "SpawnError",
    "Subtask",
    "SubtaskContext",
    "SubtaskResult",
    "SubtaskStatus",
    "Swarm",
    "SwarmError",
    "Timings",
    "Transcript",
    "TranscriptCapture",
    "Usage",
    "UserError",
    "Worker",
    "__version__",
    "critical_path",
    "critical_path_length",
    "gather_all",
    "load_plan",
    "new_run_id",
    "parse_event",
    "parse_plan",
    "read_transcript",
    "topological_generations",
    "validate_plan",
]
