"""`kimmy show RUN` for runs with recorded agent turns: the orchestrator's tree — each turn
(the model's text and tool calls), the tasks it spawned, and the sub-agents it created
with their system prompts."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.tree import Tree

from kimmy_swarm.swarm.events import AgentTurn
from kimmy_swarm.swarm.schema import Subtask, SubtaskResult

_ARG_CHARS = 100
#: Tool calls shown per turn (the rest are counted by tool).
_CALLS_SHOWN = 6


def _call_line(call: Mapping[str, Any]) -> str:
    fn = call.get("function") or {}
    name = str(fn.get("name", "?"))
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError:
        return f"{name}(<arguments not JSON>)"
    if not isinstance(args, dict):
        return f"{name}(…)"
    shown = []
    for key, value in args.items():
        if key == "inputs_list" and isinstance(value, list):
            text = f"[{len(value)} inputs]"
        else:
            text = json.dumps(value, ensure_ascii=False)
        shown.append(f"{key}={text if len(text) <= 40 else text[:37] + '…'}")
    line = f"{name}({', '.join(shown)})"
    return line if len(line) <= _ARG_CHARS else line[: _ARG_CHARS - 1] + "…"


def _spawned_line(ids: Sequence[str], subtasks: Mapping[str, Subtask],
                  results: Mapping[str, SubtaskResult]) -> str:  # fmt: skip
    by_role: dict[str, list[str]] = {}
    for key in ids:
        role = subtasks[key].role if key in subtasks else "?"
        by_role.setdefault(role, []).append(key)
    parts = []
    for role, keys in by_role.items():
        done = sum(1 for k in keys if k in results and results[k].status.value == "done")
        span = keys[0] if len(keys) == 1 else f"{keys[0]} … {keys[-1]}"
        parts.append(f"{len(keys)} × {role} ({span}; {done} done)")
    return "spawned " + ", ".join(parts)


def _decision(turn: AgentTurn) -> bool:
    """A turn recording the model's decision (the others record what its calls gave)."""
    first = turn.messages[0] if turn.messages else None
    return isinstance(first, dict) and first.get("role") == "assistant"


def _add_message(node: Tree, message: Mapping[str, Any]) -> None:
    content = str(message.get("content") or "").strip()
    if content:
        node.add(f"says: {' '.join(content.split())[:160]}", highlight=False)
    calls = list(message.get("tool_calls") or ())
    for call in calls[:_CALLS_SHOWN]:
        node.add(_call_line(call), highlight=False)
    if len(calls) > _CALLS_SHOWN:
        rest = Counter(str((c.get("function") or {}).get("name")) for c in calls[_CALLS_SHOWN:])
        node.add("… and " + ", ".join(f"{n} more {name}" for name, n in rest.items()))


def turn_tree(
    turns: Mapping[str, Sequence[AgentTurn]],
    subtasks: Mapping[str, Subtask],
    results: Mapping[str, SubtaskResult],
) -> Tree:
    """The agents' turns as a tree (one branch per agent that recorded turns)."""
    root = Tree("[bold]orchestration[/]")
    for agent, recorded in turns.items():
        decisions = [t for t in recorded if _decision(t)]
        role = subtasks[agent].role if agent in subtasks else "?"
        branch = root.add(f"[bold]{agent}[/] ({role}, {len(decisions)} turns)")
        created: dict[str, str] = {}
        for st in subtasks.values():
            if st.parent == agent and st.role_spec and st.role not in created:
                created[st.role] = str(st.role_spec.get("system_prompt", ""))
        if created:
            made = branch.add(f"created {len(created)} sub-agent(s)")
            for name, prompt in created.items():
                made.add(f"[cyan]{name}[/]: {' '.join(prompt.split())}", highlight=False)
        node = None
        for turn in recorded:
            if _decision(turn):
                node = branch.add(f"turn {decisions.index(turn) + 1} (attempt {turn.attempt})")
                _add_message(node, turn.messages[0])
            elif node is not None:
                errors = [m for m in turn.messages if isinstance(m, dict)
                          and str(m.get("content", "")).startswith("error:")]  # fmt: skip
                for m in errors[:3]:
                    node.add(f"[red]{' '.join(str(m['content']).split())[:140]}[/]")
            if turn.spawned and node is not None:
                node.add(_spawned_line(turn.spawned, subtasks, results))
    return root


def print_turns(
    console: Console,
    turns: Mapping[str, Sequence[AgentTurn]],
    subtasks: Sequence[Subtask],
    results: Mapping[str, SubtaskResult],
) -> None:
    """Print the tree when any agent recorded turns (nothing otherwise)."""
    if turns:
        console.print(turn_tree(turns, {s.id: s for s in subtasks}, results))


__all__ = ["print_turns", "turn_tree"]
