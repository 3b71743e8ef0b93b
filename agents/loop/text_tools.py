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

    def instructions(self, *, several: bool = False) -> str:
        """The text appended to the system message: the tools and how to call one (with
        `several`, how to call several in one reply, for an agent that only calls tools)."""
        lines = []
        for spec in self.specs:
            fn = spec["function"]
            described = {
                "name": fn["name"],
                "description": fn.get("description", ""),
                "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
            }
            lines.append(json.dumps(described, ensure_ascii=False, separators=(",", ":")))
        how = (
            "Call one tool per reply. When you have what you need, reply with the final "
            "answer object instead."
        )
        if several:
            how = (
                "To call several in one reply, write one such object per line; they run in "
                "order and their results come back together. Every reply calls tools."
            )
        return (
            "\n\n# Tools\nYou can call the tools below. To call one, reply with ONLY a JSON "
            'object {"tool": "<tool name>", "arguments": {<its arguments>}} and nothing else; '
            f"its result comes back in the next message. {how}\n<tools>\n"
            + "\n".join(lines)
            + "\n</tools>"
        )

    def parse_calls(self, text: str | None) -> list[TextToolCall]:
        """Every tool call in a reply, in order: each top-level JSON object of the text that
        is a call (`parse_call`), or each call of a top-level JSON array — for an agent that
        may call several tools per reply. Prose and fences around them are passed over."""
        decoder = json.JSONDecoder()
        body = text or ""
        calls: list[TextToolCall] = []
        at = 0
        while at < len(body):
            if body[at] not in "{[":
                at += 1
                continue
            try:
                value, end = decoder.raw_decode(body, at)
            except json.JSONDecodeError:
                at += 1
                continue
            items = value if isinstance(value, list) else [value]
            found = [c for c in (self.parse_call(v) for v in items) if c is not None]
            calls += found
            at = end if found or isinstance(value, list) else at + 1
        return calls

    @staticmethod
    def conversation(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """A conversation with native tool calls in this protocol's form, for a server
        without them: an assistant turn's calls become its text (one call object a line);
        tool results become user messages "Result of tool NAME:…"; consecutive user
        messages are joined (chat templates want turns to alternate)."""
        names: dict[str, str] = {}
        out: list[dict[str, Any]] = []
        for message in messages:
            role = message.get("role")
            if role == "assistant" and message.get("tool_calls"):
                lines = [str(message.get("content") or "").strip()]
                for call in message["tool_calls"]:
                    fn = call.get("function") or {}
                    names[str(call.get("id"))] = str(fn.get("name"))
                    try:
                        arguments = json.loads(fn.get("arguments") or "{}")
                    except json.JSONDecodeError:
                        arguments = fn.get("arguments")
                    lines.append(json.dumps({"tool": fn.get("name"), "arguments": arguments},
                                            ensure_ascii=False))  # fmt: skip
                out.append({"role": "assistant", "content": "\n".join(x for x in lines if x)})
                continue
            if role == "tool":
                name = names.get(str(message.get("tool_call_id")), "?")
                result = f"Result of tool {name}:\n{message.get('content')}"
                message = {"role": "user", "content": result}
            if message.get("role") == "user" and out and out[-1].get("role") == "user":
                joined = f"{out[-1]['content']}\n\n{message.get('content')}"
                out[-1] = {"role": "user", "content": joined}
                continue
            out.append(dict(message))
        return out

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
