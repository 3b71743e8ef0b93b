"""Kimmy Swarm runtime: plans as DAGs, an async scheduler for thousands of sub-agents,
model clients, durable runs and progress. `import kimmy_swarm.swarm` stays light (no torch).
"""

from kimmy_swarm.swarm.approval_policy import ApprovalPolicy
from kimmy_swarm.swarm.approval_records import Approval, ApprovalError, Decision
from kimmy_swarm.swarm.config import RunConfig
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.dag import (
    critical_path,
    critical_path_length,
    topological_generations,
    validate_plan,
)
from kimmy_swarm.swarm.errors import (
    ConfigError,
    CycleError,
    LimitError,
    ModelError,
    PlanValidationError,
    SpawnError,
    SwarmError,
    UserError,
)
from kimmy_swarm.swarm.event_fold import EventFold
from kimmy_swarm.swarm.events import Event, parse_event
from kimmy_swarm.swarm.journal import EventSink
from kimmy_swarm.swarm.limits import AdaptiveLimit, Backoff, Budget, RateLimit
from kimmy_swarm.swarm.planfile import load_plan, parse_plan
from kimmy_swarm.swarm.runtime import Swarm, new_run_id
from kimmy_swarm.swarm.scheduler import Scheduler
from kimmy_swarm.swarm.schema import (
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
from kimmy_swarm.swarm.steps import FailurePolicy
from kimmy_swarm.swarm.tasks import gather_all
from kimmy_swarm.swarm.transcript_capture import TranscriptCapture
from kimmy_swarm.swarm.transcripts import Transcript, read_transcript
from kimmy_swarm.swarm.worker import Worker

__version__ = "0.1.0"

__all__ = [
    "AdaptiveLimit",
    "Approval",
    "ApprovalError",
    "ApprovalPolicy",
    "Backoff",
    "Budget",
    "ConfigError",
    "CycleError",
    "Decision",
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
