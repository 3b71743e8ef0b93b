"""`kimmy show RUN --agent ID`: one sub-agent's conversation, attempt by attempt.

Each model call shows the messages it added to the conversation (system prompt, task, the
model's earlier answers, tool results, repair prompts), then the model's answer (text, tool
calls, finish reason) with tokens and latency; tool calls their arguments and result or
error; an invalid answer the problems the repair turn showed the model. `--json` prints the
`swarm.transcripts.Transcript` as one JSON object.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.panel import Panel
from rich.text import Text

from kimmy_swarm.swarm.store import RunStore
from kimmy_swarm.swarm.transcripts import (
    ApprovalEntry,
    AttemptTranscript,
    Entry,
    FinishedEntry,
    ModelCallEntry,
    RetryEntry,
    StepEntry,
    ToolCallEntry,
    Transcript,
    read_transcript,
)

_ROLE_STYLE = {"system": "magenta", "user": "cyan", "assistant": "green", "tool": "yellow"}


def show_transcript(runs_dir: Path, run_id: str, subtask_id: str, *, json_lines: bool) -> None:
    with RunStore(runs_dir, create=False) as store:
        transcript = read_transcript(store, run_id, subtask_id)
    if json_lines:
        print(transcript.model_dump_json())
        return
    print_transcript(Console(), transcript)


def print_transcript(console: Console, t: Transcript) -> None:
    """The transcript, readable: a heading, then each attempt's entries in order."""
    print_heading(console, t)
    for attempt in t.attempts:
        print_entries(console, attempt)


def print_heading(console: Console, t: Transcript) -> None:
    """The transcript's heading: the sub-agent, its role and status, its task."""
    console.print(
        Text.assemble(
            ("sub-agent ", "bold"), (t.subtask_id, "bold cyan"), f" (role {t.role}) ",
            (t.status.value, "bold"), f" · run {t.run_id}",
        )
    )  # fmt: skip
    if t.parent:
        console.print(f"spawned by {t.parent}")
    if t.instructions:
        console.print(Text(f"task: {t.instructions}", style="dim"))
    if t.capture is False:
        console.print("[yellow]content capture was off for this run: sizes only[/]")
    elif t.capture is None:
        console.print("[yellow]this run was stored before transcripts: calls without content[/]")
    if not t.attempts:
        console.print("not started")


def print_entries(
    console: Console, attempt: AttemptTranscript, *, start: int = 0, rule: bool = True
) -> None:
    """One attempt's entries from the `start`-th on (`kimmy show --follow` prints them as
    they come), after the attempt's rule when `rule`."""
    if rule:
        console.rule(f"attempt {attempt.attempt}" if attempt.attempt else "not started")
    shown_results = {e.call_id for e in attempt.entries if isinstance(e, ToolCallEntry)}
    call_no = sum(isinstance(e, ModelCallEntry) for e in attempt.entries[:start])
    for entry in attempt.entries[start:]:
        if isinstance(entry, ModelCallEntry):
            call_no += 1
            _print_call(console, entry, call_no, shown_results)
        else:
            console.print(_line(entry))


def _print_call(
    console: Console, call: ModelCallEntry, number: int, shown_results: set[str | None]
) -> None:
    if call.messages is not None and call.first_message == 0 and number > 1:
        console.print(Text("a new conversation starts (rebuilt, or a digest call)", style="dim"))
    for i, msg in enumerate(call.messages or ()):
        role = msg.get("role") if isinstance(msg, dict) else None
        if i == 0 and call.first_message > 0 and role == "assistant":
            continue  # the previous call's answer, shown with that call
        if role == "tool" and msg.get("tool_call_id") in shown_results:
            continue  # the tool's result, shown with the tool call
        console.print(_message(msg, call.first_message + i))
    head = f"model call {number}: {call.latency_s:.2f}s, {call.usage.prompt_tokens:,} prompt + "
    head += f"{call.usage.completion_tokens:,} completion tokens"
    if call.request:
        offered = call.request.get("tools")
        if offered:
            head += f"; tools offered: {', '.join(map(str, offered))}"
        if call.request.get("response_format"):
            head += f"; answer constrained to {call.request['response_format']}"
    if call.error is not None:
        console.print(Panel(f"{call.error.type}: {call.error.message}", title=head, style="red"))
        return
    console.print(Panel(_answer(call.response), title=head, title_align="left", style="green"))


def _message(msg: Any, position: int) -> Panel:
    if not isinstance(msg, dict):
        return Panel(Text(json.dumps(msg)), title=f"#{position}")
    role = str(msg.get("role", "?"))
    body: list[Any] = []
    content = msg.get("content")
    if isinstance(content, str):
        body.append(Text(content))
    elif "chars" in msg:
        body.append(Text(f"[{msg['chars']:,} characters, not captured]", style="dim"))
    for call in msg.get("tool_calls") or ():
        if isinstance(call, dict):
            fn = call.get("function") or {}
            body.append(Text(f"→ {fn.get('name', '?')}({fn.get('arguments', '')})", style="bold"))
        else:
            body.append(Text(f"→ {call}", style="bold"))
    title = f"#{position} {role}"
    if msg.get("tool_call_id"):
        title += f" (result of {msg['tool_call_id']})"
    return Panel(
        Group(*body), title=title, title_align="left", border_style=_ROLE_STYLE.get(role, "white")
    )


def _answer(response: dict[str, Any] | None) -> Group:
    if response is None:
        return Group(Text("(no answer recorded)", style="dim"))
    parts: list[Any] = []
    content = response.get("content")
    if isinstance(content, str) and content:
        parts.append(Text(content))
    elif "chars" in response:
        parts.append(Text(f"[{response['chars']:,} characters, not captured]", style="dim"))
    for call in response.get("tool_calls") or ():
        args = call.get("arguments")
        parts.append(
            Text(f"→ {call.get('name')}({args if args is not None else '…'})", style="bold")
        )
    parts.append(Text(f"finish reason: {response.get('finish_reason')}", style="dim"))
    return Group(*parts)


def _line(entry: Entry) -> Text | Panel:
    if isinstance(entry, ToolCallEntry):
        head = f"tool {entry.tool} (step {entry.step}, {entry.latency_s * 1000:.1f} ms)"
        body = [
            Text(
                f"arguments: {entry.arguments}"
                if entry.arguments is not None
                else "arguments: (not captured)"
            )
        ]
        if entry.error is not None:
            body.append(Text(f"error: {entry.error}", style="red"))
        elif entry.result is not None:
            body.append(Text(f"result: {entry.result}"))
        return Panel(
            Group(*body),
            title=head,
            title_align="left",
            border_style="red" if entry.error else "yellow",
        )
    if isinstance(entry, StepEntry):
        if entry.outcome == "invalid":
            return Text(f"step {entry.step}: invalid answer: {entry.error}", style="bold red")
        if entry.outcome == "fallback":
            return Text(
                f"step {entry.step}: the model failed ({entry.error}); the role's offline "
                "procedure takes over",
                style="bold yellow",
            )
        tools = f" ({', '.join(entry.tools)})" if entry.tools else ""
        return Text(f"step {entry.step} [{entry.policy}]: {entry.outcome}{tools}", style="dim")
    if isinstance(entry, ApprovalEntry):
        return _approval_line(entry)
    if isinstance(entry, RetryEntry):
        return Text(
            f"retry in {entry.delay_s:.1f}s after {entry.error.type}: {entry.error.message}",
            style="yellow",
        )
    assert isinstance(entry, FinishedEntry)
    text = f"finished: {entry.status.value}"
    if entry.error is not None:
        text += f" ({entry.error.type}: {entry.error.message})"
    if entry.output is not None:
        return Panel(Text(entry.output), title=text, title_align="left", border_style="blue")
    return Text(text, style="bold")


def _approval_line(entry: ApprovalEntry) -> Text:
    args = json.dumps(entry.arguments) if entry.arguments is not None else ""
    if entry.verdict is None:
        return Text(f"{entry.call_id}: {entry.tool} waits for approval {args}", style="magenta")
    how = "approved" if entry.verdict == "approve" else "denied"
    edit = f" with arguments {args}" if entry.arguments is not None else ""
    why = f": {entry.reason}" if entry.reason else ""
    return Text(f"{entry.call_id}: {how} by {entry.by}{edit}{why}", style="bold magenta")


__all__ = ["print_entries", "print_heading", "print_transcript", "show_transcript"]
