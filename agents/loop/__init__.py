"""The agent loop: one model turn after another until an answer, for sub-agents and the
orchestrator alike.

- `policy`: `run_model_policy`, a sub-agent's loop (tool calls, one repair turn, the step
  limit), adapted to what its model's server honours;
- `opening`: its opening conversation (`task_messages`; `subtask_opening` reduces upstream
  results that do not fit to a digest);
- `attempt`: `Attempt`, one attempt of one sub-agent (what its procedure and the loop work
  with; every tool call recorded through it);
- `chat`: `chat_within_budget`, one model call whose rejection as too long teaches the token
  budget and is made again where it can be made to fit (the sub-agent's loop and the
  orchestrator's `ModelTurns` both call their model through it);
- `replies`: the JSON in a model's text (`parse_answer`, `first_json_value`);
- `text_tools`: tool calls in plain text, for servers without native ones;
- `tool_calls`: `Call = (name, arguments)` and its conversions (`calls_response`);
- `errors`: `AgentStepLimitError`, and `error_text` (how an error is shown to the model).
"""

from kimmy_swarm.agents.loop.attempt import Attempt
from kimmy_swarm.agents.loop.chat import MaxTokens, OnOverflow, Rejection, chat_within_budget
from kimmy_swarm.agents.loop.errors import MAX_ERROR_CHARS, AgentStepLimitError, error_text
from kimmy_swarm.agents.loop.opening import MAX_SHOWN_CHARS, subtask_opening, task_messages
from kimmy_swarm.agents.loop.policy import run_model_policy
from kimmy_swarm.agents.loop.replies import first_json_value, json_values, parse_answer
from kimmy_swarm.agents.loop.text_tools import TextToolCall, TextTools
from kimmy_swarm.agents.loop.tool_calls import Call, as_call, calls_response, tool_call

__all__ = [
    "MAX_ERROR_CHARS",
    "MAX_SHOWN_CHARS",
    "AgentStepLimitError",
    "Attempt",
    "Call",
    "MaxTokens",
    "OnOverflow",
    "Rejection",
    "TextToolCall",
    "TextTools",
    "as_call",
    "calls_response",
    "chat_within_budget",
    "error_text",
    "first_json_value",
    "json_values",
    "parse_answer",
    "run_model_policy",
    "subtask_opening",
    "task_messages",
    "tool_call",
]
