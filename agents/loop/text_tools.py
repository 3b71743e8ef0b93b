"""Tool calls in plain text, for model servers that have none (`Capabilities.tools` False).

Some servers accept no `tools` (llama.cpp's server with most chat formats): they ignore the
list, or fail on the `tool` messages and `tool_calls` of a native conversation. With them
the agent loop speaks this protocol instead, in messages every server takes:

- the system message describes the tools, one JSON line each (name, description,
  parameters), and says how to call one: reply with ONLY `{"tool": NAME, "arguments": {…}}`;
- a reply that is such an object (read by `agents.loop.replies.parse_answer`: the first
  JSON object of the text, prose around it tolerated) calls that tool; any other reply is
  the final answer;
- the result goes back as a plain `user` message, "Result of tool NAME:\\n…".

Example:
    protocol = TextTools(toolbox.specs())
    system = role_prompt + protocol.instructions()
    call = protocol.parse_call(parse_answer(reply))      # a TextToolCall, or None
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TextToolCall", "TextTools"]


@dataclass(frozen=True)
class TextToolCall:
    """One tool call read from a reply: the tool's name and its arguments as JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True)
class TextTools:
    """The text protocol over one set of tools.

    Args:
        specs: the OpenAI `tools` list (`ToolBox.specs()`) the model may call.
    """

    specs: Sequence[Mapping[str, Any]]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(str(spec["function"]["name"]) for spec in self.specs)

    def instructions(self) -> str:
        """The text appended to the system message: the tools and how to call one."""
        lines = []
        for spec in self.specs:
            fn = spec["function"]
            described = {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
            }
            lines.append(json.dumps(described, ensure_ascii=False, separators=(",", ":")))
        return (
            "\n\n# Tools\nYou can call the tools below. To call one, reply with ONLY a JSON "
            'object {"tool": "<tool name>", "arguments": {<its arguments>}} and nothing else; '
            "its result comes back in the next message. Call one tool per reply. When you "
            "have what you need, reply with the final answer object instead.\n<tools>\n"
            + "\n".join(lines)
            + "\n</tools>"
        )

    def parse_call(self, value: Any) -> TextToolCall | None:
        """The tool call a decoded reply is, or None when it is not one (then it is the
        answer). A call is `{"tool": NAME}` with an optional `"arguments"` object; the
        `{"name": NAME, "arguments": {…}}` form that many models are trained on counts too
        when NAME is one of the tools. An unknown `tool` name is still a call: running it
        tells the model which tools there are."""
        if not isinstance(value, dict):
            return None
        keys = set(value)
        arguments = value.get("arguments", {})
        if not isinstance(arguments, dict) or not keys <= {"tool", "name", "arguments"}:
            return None
        name = value.get("tool")
        if "tool" in keys and "name" not in keys and isinstance(name, str):
            return TextToolCall(name, json.dumps(arguments, ensure_ascii=False))
        name = value.get("name")
        if keys == {"name", "arguments"} and name in self.names:
            return TextToolCall(str(name), json.dumps(arguments, ensure_ascii=False))
        return None

    @staticmethod
    def result_message(name: str, text: str, *, last: bool) -> dict[str, str]:
        """The tool's result (or its error) as a user message; `last`: no tool may be
        called after it, so it asks for the answer now."""
        content = f"Result of tool {name}:\n{text}"
        if last:
            content += (
                "\n\nNo more tool calls are possible: reply now with ONLY the final JSON answer."
            )
        return {"role": "user", "content": content}
