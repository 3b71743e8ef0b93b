"""Model clients behind one `ChatModel` protocol (OpenAI chat-completions semantics).

- `OpenAIChat`: any OpenAI-compatible HTTP server (vLLM, SGLang, llama.cpp, …).
- `ScriptedChat`: a strict scripted model for tests.
- `BalancedChat`: several endpoints behind one model (least outstanding requests).
- `redact_url`: an endpoint URL with its credentials masked, for storing and printing.
- `Capabilities`, `probe_capabilities`, `probe_endpoint`, `capabilities_of`: what a server
  honours (structured output, tools, …), probed with tiny requests; the agent loop adapts.
- `LocalModel`: `model.serve`'s engine and server started in this process, spoken to
  through an `OpenAIChat` (needs the `model` and `serve` extras).

Importing this package is cheap: pydantic only. `OpenAIChat` (and with it httpx) is imported
on first use, so `import swarm` stays light for programs that never talk HTTP; `LocalModel`
likewise, and torch only when a `LocalModel` starts.
"""

from typing import TYPE_CHECKING, Any

from swarm.llm.balanced import BalancedChat
from swarm.llm.capabilities import (
    Capabilities,
    capabilities_of,
    probe_capabilities,
    probe_endpoint,
)
from swarm.llm.protocol import ChatModel
from swarm.llm.redact import redact_url
from swarm.llm.scripted import ScriptedChat, UnexpectedModelCall
from swarm.llm.types import (
    ChatResponse,
    FunctionCall,
    Message,
    TokenLogprob,
    ToolCall,
    TopLogprob,
)

if TYPE_CHECKING:
    from swarm.llm.local import LocalModel
    from swarm.llm.openai_chat import OpenAIChat


def __getattr__(name: str) -> Any:
    if name == "OpenAIChat":
        from swarm.llm.openai_chat import OpenAIChat

        return OpenAIChat
    if name == "LocalModel":
        from swarm.llm.local import LocalModel

        return LocalModel
    raise AttributeError(f"module 'swarm.llm' has no attribute {name!r}")


__all__ = [
    "BalancedChat",
    "Capabilities",
    "ChatModel",
    "ChatResponse",
    "FunctionCall",
    "LocalModel",
    "Message",
    "OpenAIChat",
    "ScriptedChat",
    "TokenLogprob",
    "ToolCall",
    "TopLogprob",
    "UnexpectedModelCall",
    "capabilities_of",
    "probe_capabilities",
    "probe_endpoint",
    "redact_url",
]
