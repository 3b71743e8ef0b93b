"""Model clients behind one `ChatModel` protocol (OpenAI chat-completions semantics).

- `OpenAIChat`: any OpenAI-compatible HTTP server (vLLM, SGLang, llama.cpp, …).
- `ScriptedChat`: a strict scripted model for tests.

Importing this package is cheap: it pulls in pydantic and httpx, never `openai` or torch.
"""

from swarm.llm.openai_chat import OpenAIChat
from swarm.llm.protocol import ChatModel
from swarm.llm.scripted import ScriptedChat, UnexpectedModelCall
from swarm.llm.types import (
    ChatResponse,
    FunctionCall,
    Message,
    TokenLogprob,
    ToolCall,
    TopLogprob,
)

__all__ = [
    "ChatModel",
    "ChatResponse",
    "FunctionCall",
    "Message",
    "OpenAIChat",
    "ScriptedChat",
    "TokenLogprob",
    "ToolCall",
    "TopLogprob",
    "UnexpectedModelCall",
]
