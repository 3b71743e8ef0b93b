"""`function_tool`: the one builder of an OpenAI tool spec on the swarm side."""

from __future__ import annotations

from kimmy_swarm.swarm.llm.types import function_tool


def test_function_tool_is_the_openai_tools_entry() -> None:
    parameters = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    assert function_tool("search", "Search the corpus.", parameters) == {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the corpus.",
            "parameters": parameters,
        },
    }
