"""Model clients behind one `ChatModel` protocol (OpenAI chat-completions semantics).

- `OpenAIChat`: any OpenAI-compatible HTTP server (vLLM, SGLang, llama.cpp, …).
- `ScriptedChat`: a strict scripted model for tests.
- `BalancedChat`: several endpoints behind one model (least outstanding requests).
- `redact_url`: an endpoint URL with its credentials masked, for storing and printing.
- `ModelEndpoint`, `connect`: how a model is reached (stored with a run, without secrets),
  and the one way to build its client: preflight, context length, capability probe, answer
  cap and call timeouts, as `kimmy` builds it.
- `ServerProfile`, `profile_of`: what a client knows of its server (capabilities, context
  length, one learned token estimate shared by its call timeouts and its token budget).
- `TokenBudget`, `TokenEstimate`, `shared_budget`, `context_tokens`: a prompt's tokens
  estimated without the server's tokenizer, corrected by its counts, and the room a call
  leaves; `context_overflow`, `ContextOverflow`: a server's "prompt too long" rejection read.
- `Capabilities`, `probe_capabilities`, `capabilities_of`: what a server honours
  (structured output, tools, …), probed with tiny requests; the agent loop adapts.
- `LocalModel`: `model.serve`'s engine and server started in this process, spoken to
  through an `OpenAIChat` (needs the `model` and `serve` extras).

Importing this package is cheap: pydantic only. `OpenAIChat` (and with it httpx) is imported
on first use, so `import kimmy_swarm.swarm` stays light for programs that never talk
HTTP; `LocalModel`
likewise, and torch only when a `LocalModel` starts.
"""

from typing import TYPE_CHECKING, Any

from kimmy_swarm.swarm.llm.balanced import BalancedChat
from kimmy_swarm.swarm.llm.budget import TokenBudget, TokenEstimate, context_tokens
from kimmy_swarm.swarm.llm.capabilities import Capabilities, capabilities_of, probe_capabilities
from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint, connect
from kimmy_swarm.swarm.llm.overflow import ContextOverflow, context_overflow
from kimmy_swarm.swarm.llm.protocol import ChatModel
from kimmy_swarm.swarm.llm.redact import redact_url
from kimmy_swarm.swarm.llm.scripted import ScriptedChat, UnexpectedModelCall
from kimmy_swarm.swarm.llm.server_profile import ServerProfile, profile_of, shared_budget
from kimmy_swarm.swarm.llm.types import (
    ChatResponse,
    FunctionCall,
    Message,
    TokenLogprob,
    ToolCall,
    TopLogprob,
)

if TYPE_CHECKING:
    from kimmy_swarm.swarm.llm.local import LocalModel
    from kimmy_swarm.swarm.llm.openai_chat import OpenAIChat


def __getattr__(name: str) -> Any:
    if name == "OpenAIChat":
        from kimmy_swarm.swarm.llm.openai_chat import OpenAIChat

        return OpenAIChat
    if name == "LocalModel":
        from kimmy_swarm.swarm.llm.local import LocalModel

        return LocalModel
    raise AttributeError(f"module 'kimmy_swarm.swarm.llm' has no attribute {name!r}")


__all__ = [
    "BalancedChat",
    "Capabilities",
    "ChatModel",
    "ChatResponse",
    "ContextOverflow",
    "FunctionCall",
    "LocalModel",
    "Message",
    "ModelEndpoint",
    "OpenAIChat",
    "ScriptedChat",
    "ServerProfile",
    "TokenBudget",
    "TokenEstimate",
    "TokenLogprob",
    "ToolCall",
    "TopLogprob",
    "UnexpectedModelCall",
    "capabilities_of",
    "connect",
    "context_overflow",
    "context_tokens",
    "probe_capabilities",
    "profile_of",
    "redact_url",
    "shared_budget",
]
