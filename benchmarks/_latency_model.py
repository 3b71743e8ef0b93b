"""A loopback OpenAI-compatible server that plays a competent model for a wide task, slowly.

It stands in for a real model in the wide-search benchmarks: every chat completion is held
for `ttft_s + completion_tokens / tokens_per_s` (completion tokens estimated from the text
it sends back, `chars_per_token` characters a token) before it is answered, so that a swarm's
parallelism shows in wall-clock time as it would against a real server. Requests are served
concurrently without a capacity limit (a server with an unbounded batch).

It answers by rules, the way a competent model would for this task. It is given the parsed
corpus records (`Paper`s) at start-up: it plays a model whose prompt already holds the
documents, so deciding a row needs no tool call.

(a) **orchestrator** — the request offers the `assign_task` tool. First turn:
    `create_subagent` (an `extractor`; the condition is in its system prompt), then the
    fan-out over `subagents` slices of the corpus (the papers it was given, in order): with
    `by_reference` and the `fan_out` tool offered, one `fan_out(all_documents, tasks=N)`
    call that lists no id; else the slices' ids written out, in one `assign_tasks` call
    (when offered) or one `assign_task` per slice (inputs `{"doc_ids": [...]}`); then
    `wait(ids="all")`. Later turns: a `wait` on what is still pending; with `by_reference`,
    `finish(table={"columns": …})`, which assembles the rows by reference; else
    `read_result` pages (offset/limit) for results whose digest in the `wait` result is not
    the full output, then `finish(answer=<Markdown table>)` retyping the rows of every
    result, in task order (first row of a title wins). Tool-call arguments are JSON
    strings, as OpenAI sends them.
(b) **sub-agent** — the request asks for a `json_schema` response format, or its system
    message says "You are a sub-agent": the `Inputs:` JSON of the user message gives
    `doc_ids` (and optionally `task`, a `WideTask` as JSON; the server's task otherwise;
    ids cut off by the sub-agent's prompt limit are lost, as for a model); the answer is
    `{"rows": [<row of each matching paper>]}` (for another schema: a value that fits it,
    its strings holding the rows as a Markdown table).
(c) **serial** — any other request whose user message has a `Document: <id>` (or
    `Documents: ...`) line: the same answer, for those documents; one call per document
    with `serial_messages`, each with the same per-call latency.

    with LatencyModelServer(papers, task, subagents=8) as srv:
        model = OpenAIChat(srv.base_url, srv.model_id)
        ...
        srv.calls  # Counter of requests by kind
"""

from __future__ import annotations

import json
import math
import re
import socket
import socketserver
import sys
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from kimmy_swarm.agents.orchestrator.corpus_view import chunks
from kimmy_swarm.agents.orchestrator.prompts import EXAMPLE_DONE
from kimmy_swarm.agents.widesearch import ExtractedRows, Paper, Row, WideTask, title_key
from kimmy_swarm.agents.widesearch.extract import EXTRACTOR_PROMPT

MODEL_ID = "latency-model"
_DOCUMENTS_LINE = re.compile(r"^\s*Documents?:\s*(.+?)\s*$", re.MULTILINE)
_INPUTS = "Inputs:\n"
_ASSIGNMENT = "Report the rows of the papers among `doc_ids` that meet the condition."


@dataclass(frozen=True, slots=True)
class Latency:
    """Per-call latency: time to first token, then decoding at `tokens_per_s`."""

    ttft_s: float = 0.3
    tokens_per_s: float = 40.0
    chars_per_token: float = 4.0

    def __post_init__(self) -> None:
        if self.ttft_s < 0 or self.tokens_per_s <= 0 or self.chars_per_token <= 0:
            raise ValueError(f"bad latency model {self}: ttft_s >= 0, the rest > 0")

    def tokens(self, text: str) -> int:
        return max(1, math.ceil(len(text) / self.chars_per_token))

    def seconds(self, completion_tokens: int) -> float:
        return self.ttft_s + completion_tokens / self.tokens_per_s


class RequestError(ValueError):
    """A request the rules cannot answer (answered 400, recorded in `srv.errors`)."""


# --- the rules -----------------------------------------------------------------------------


def serial_messages(task: WideTask, doc_id: str) -> list[dict[str, str]]:
    """The serial baseline's request for one document (rule (c))."""
    return [
        {"role": "system", "content": EXTRACTOR_PROMPT + '\nReply with JSON: {"rows": [...]}.'},
        {"role": "user", "content": f"{task.goal()}\n\nDocument: {doc_id}"},
    ]


def markdown_table(columns: Sequence[str], rows: Sequence[Row]) -> str:
    """Rows as a Markdown table (pipes in cells escaped)."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        cells = [str(r.get(c, "")).replace("|", "\\|").replace("\n", " ") for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _parse(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _find_rows(value: Any) -> list[dict[str, Any]] | None:
    """The `rows` of an extractor's whole output (a dict, JSON text, or under `output`).

    Only an object with `rows` and nothing else counts: a digest that keeps some rows and
    notes what it left out is not the whole output, so its pages are read instead.
    """
    value = _parse(value)
    if isinstance(value, dict):
        if isinstance(value.get("rows"), list) and set(value) == {"rows"}:
            return [r for r in value["rows"] if isinstance(r, dict)]
        if "output" in value:
            return _find_rows(value["output"])
    return None


@dataclass
class _Conversation:
    """What the orchestrator's tool results so far say about its sub-agents."""

    assigned: list[str]
    done: dict[str, list[dict[str, Any]] | None]  # id -> rows (None: digest only)
    failed: set[str]
    pages: dict[str, dict[int, str]]
    next_offset: dict[str, int | None]
    turns: int


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(tool name, arguments, parsed result) of every tool message, in order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or {}
            calls[c.get("id", "")] = (fn.get("name", ""), _parse(fn.get("arguments")) or {})
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id", ""), ("", {}))
            out.append((name, args if isinstance(args, dict) else {}, _parse(m.get("content"))))
    return out


def _page(conv: _Conversation, args: dict[str, Any], result: Any) -> None:
    tid = str(args.get("id", ""))
    offset = int(args.get("offset") or 0)
    if isinstance(result, dict):
        text = next((result[k] for k in ("text", "content", "page") if k in result), "")
        text = text if isinstance(text, str) else json.dumps(text)
        nxt = result.get("next_offset")
        total = result.get("total_chars", result.get("total"))
        if nxt is None and "next_offset" not in result:
            more = total is None or offset + len(text) < int(total)
            nxt = offset + len(text) if more and text else None
    else:
        text, nxt = str(result), (offset + len(str(result)) if result else None)
    conv.pages.setdefault(tid, {})[offset] = text
    conv.next_offset[tid] = int(nxt) if nxt is not None else None
    rows = _find_rows("".join(t for _, t in sorted(conv.pages[tid].items())))
    if rows is not None:
        conv.done[tid] = rows


def _own_turns(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's own conversation: what follows the worked example's turns, if any."""
    starts = [i for i, m in enumerate(messages) if m.get("role") == "user"
              and str(m.get("content") or "").startswith(EXAMPLE_DONE)]  # fmt: skip
    return messages[starts[-1] :] if starts else messages


def _conversation(messages: list[dict[str, Any]]) -> _Conversation:
    messages = _own_turns(messages)
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    conv = _Conversation([], {}, set(), {}, {}, turns)
    for name, args, result in _tool_results(messages):
        if name == "assign_task" and isinstance(result, dict) and "task_id" in result:
            conv.assigned.append(str(result["task_id"]))
        elif name in ("assign_tasks", "fan_out") and isinstance(result, dict):
            conv.assigned.extend(str(t) for t in result.get("task_ids") or [])
        elif name == "wait" and isinstance(result, dict):
            listed = [str(r.get("id")) for r in result.get("results") or []]
            for tid in [*listed, *map(str, result.get("pending") or [])]:
                if tid not in conv.assigned:  # the assign_task results said nothing usable
                    conv.assigned.append(tid)
            for r in result.get("results") or []:
                tid = str(r.get("id"))
                if r.get("status") != "done":
                    conv.failed.add(tid)
                elif conv.done.get(tid) is None:
                    conv.done[tid] = _find_rows(r.get("output"))
        elif name == "read_result":
            _page(conv, args, result)
    return conv


def _first_turn(
    ids: list[str], task: WideTask, subagents: int, *, fan_out: bool = False,
    by_reference: bool = False,
) -> list[tuple[str, dict[str, Any]]]:  # fmt: skip
    # The condition is said once, in the extractor's prompt; each assignment is short
    # (decoding the tool calls is what this turn's latency is made of).
    prompt = (
        f"{EXTRACTOR_PROMPT}\n\nThe condition: an ICLR 2017 paper {task.condition()}. "
        f"The columns: {', '.join(task.columns)}."
    )
    created = {
        "name": "extractor",
        "system_prompt": prompt,
        "tools": ["read_document"],
        "output_schema": ExtractedRows.model_json_schema(),
    }
    calls: list[tuple[str, dict[str, Any]]] = [("create_subagent", created)]
    parts = chunks(ids, per_task=None, tasks=subagents)
    if by_reference:  # the runtime has the ids: none is decoded
        fan = {"agent": "extractor", "task": _ASSIGNMENT, "all_documents": True}
        calls.append(("fan_out", {**fan, "tasks": len(parts)}))
    elif fan_out:  # one call for the whole fan-out, as a competent model would use it
        fan = {"agent": "extractor", "task": _ASSIGNMENT}
        calls.append(("assign_tasks", {**fan, "inputs_list": [{"doc_ids": p} for p in parts]}))
    else:
        for part in parts:
            args = {"agent": "extractor", "task": _ASSIGNMENT, "inputs": {"doc_ids": part}}
            calls.append(("assign_task", args))
    calls.append(("wait", {"ids": "all", "timeout_s": None}))
    return calls


def orchestrator_turn(
    messages: list[dict[str, Any]], task: WideTask, subagents: int, *, ids: list[str],
    fan_out: bool = False, by_reference: bool = False,
) -> list[tuple[str, dict[str, Any]]]:  # fmt: skip
    """The tool calls of the orchestrator's next turn (rule (a)), as (name, arguments);
    `ids`: the corpus's document ids; `fan_out`: the request offers `assign_tasks`, used
    for the first turn's assignments; `by_reference`: it offers `fan_out` (and `finish`
    with a table), used instead of writing ids and rows out."""
    conv = _conversation(messages)
    if conv.turns == 0:
        return _first_turn(ids, task, subagents, fan_out=fan_out, by_reference=by_reference)
    pending = [t for t in conv.assigned if t not in conv.done and t not in conv.failed]
    if pending:
        return [("wait", {"ids": pending, "timeout_s": None})]
    if by_reference:
        return [("finish", {"table": {"columns": list(task.columns)}})]
    unread = [t for t in conv.assigned if t in conv.done and conv.done[t] is None]
    reads = [
        ("read_result", {"id": t, "offset": conv.next_offset.get(t, 0), "limit": 4000})
        for t in unread
        if conv.next_offset.get(t, 0) is not None
    ]
    if reads:
        return reads
    merged: dict[str, Row] = {}
    for t in conv.assigned:
        for r in conv.done.get(t) or []:
            merged.setdefault(title_key(r.get("title", "")), r)
    return [("finish", {"answer": markdown_table(task.columns, list(merged.values()))})]


def _doc_ids_and_task(text: str, default: WideTask) -> tuple[list[str] | None, WideTask]:
    at = text.find(_INPUTS)
    if at >= 0:
        raw = text[at + len(_INPUTS) :]
        try:
            inputs, _ = json.JSONDecoder().raw_decode(raw)
        except json.JSONDecodeError:  # cut by the sub-agent's prompt limit: ids seen so far
            listed = re.search(r'"doc_ids"\s*:\s*\[([^\]]*)', raw)
            inputs = {"doc_ids": re.findall(r'"([^"]+)"', listed.group(1)) if listed else []}
        if isinstance(inputs, dict) and isinstance(inputs.get("doc_ids"), list):
            task = default
            if isinstance(inputs.get("task"), dict):
                task = WideTask.model_validate(inputs["task"])
            return [str(d) for d in inputs["doc_ids"]], task
    found = _DOCUMENTS_LINE.search(text)
    if found:
        return [d for d in re.split(r"[,\s]+", found.group(1)) if d], default
    return None, default


def _fitting(schema: dict[str, Any], text: str, root: dict[str, Any]) -> Any:
    """A value that fits a (pydantic) JSON schema: strings are `text`, numbers 0, lists []."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return _fitting(target, text, root)
    options = [s for s in schema.get("anyOf") or [] if s.get("type") != "null"]
    if options:
        return _fitting(options[0], text, root)
    kind = schema.get("type", "object")
    simple = {"string": text, "integer": 0, "number": 0, "boolean": False, "array": []}
    if kind in simple:
        return simple[kind]
    return {k: _fitting(s, text, root) for k, s in (schema.get("properties") or {}).items()}


# --- the server ----------------------------------------------------------------------------


class LatencyModelServer:
    """The simulated model on 127.0.0.1 (a free port); use it as a context manager.

    Args:
        papers: the corpus records the model "knows" (`agents.widesearch.load_papers`).
        task: the wide task it answers (a sub-agent's `inputs.task` overrides it).
        latency: the per-call latency model.
        subagents: how many extractors the orchestrator assigns (slices of the documents).
        by_reference: use the orchestrator's `fan_out` and `finish(table=…)` where offered
            (False: write the ids and the rows out, as before those tools).
    """

    def __init__(
        self,
        papers: Sequence[Paper],
        task: WideTask,
        *,
        latency: Latency | None = None,
        subagents: int = 8,
        by_reference: bool = True,
    ) -> None:
        if subagents < 1:
            raise ValueError(f"subagents must be >= 1, got {subagents}")
        self.papers = {p.id: p for p in papers}
        self.task = task
        self.latency = latency or Latency()
        self.subagents = subagents
        self.by_reference = by_reference
        self.model_id = MODEL_ID
        #: Requests answered, by kind: orchestrator, subagent, serial.
        self.calls: Counter[str] = Counter()
        self.completion_tokens = 0
        self.unknown_ids: set[str] = set()
        self.errors: list[BaseException] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        self._httpd = _HTTPServer(self)
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, cut pending delays and open connections."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by the client
                continue
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5.0)
        self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- answering (handler threads) -----------------------------------------------------

    def kind(self, body: dict[str, Any]) -> str:
        """`orchestrator`, `subagent` or `serial` (see the module docstring)."""
        names = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
        if "assign_task" in names:
            return "orchestrator"
        fmt = body.get("response_format") or {}
        system = " ".join(
            str(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"
        )
        if fmt.get("type") == "json_schema" or "You are a sub-agent" in system:
            return "subagent"
        return "serial"

    def rows(self, doc_ids: Sequence[str], task: WideTask) -> list[Row]:
        """The rows of the matching papers among `doc_ids` (unknown ids are noted, skipped)."""
        out = []
        for d in doc_ids:
            paper = self.papers.get(d)
            if paper is None:
                with self._lock:
                    self.unknown_ids.add(d)
            elif task.matches(paper):
                out.append(task.row(paper))
        return out

    def _rows_reply(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        users = [str(m.get("content")) for m in messages if m.get("role") == "user"]
        for text in users:
            doc_ids, task = _doc_ids_and_task(text, self.task)
            if doc_ids is not None:
                break
        else:
            raise RequestError("no 'Inputs:' JSON with doc_ids and no 'Document: <id>' line")
        rows = self.rows(doc_ids, task)
        schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
        if not schema or "rows" in (schema.get("properties") or {}):
            return json.dumps({"rows": rows})
        return json.dumps(_fitting(schema, markdown_table(task.columns, rows), schema))

    def answer(self, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The chat completion for one request, and how long to hold it."""
        kind = self.kind(body)
        content: str | None = None
        calls: list[tuple[str, dict[str, Any]]] = []
        if kind == "orchestrator":
            names = {(t.get("function") or {}).get("name") for t in body.get("tools") or []}
            calls = orchestrator_turn(
                body.get("messages") or [], self.task, self.subagents, ids=list(self.papers),
                fan_out="assign_tasks" in names,
                by_reference=self.by_reference and "fan_out" in names,
            )  # fmt: skip
        else:
            content = self._rows_reply(body)
        turn = sum(
            1 for m in _own_turns(body.get("messages") or []) if m.get("role") == "assistant"
        )
        wire = [
            {
                "id": f"call_{turn}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
        generated = content or "".join(
            c["function"]["name"] + c["function"]["arguments"] for c in wire
        )
        tokens = self.latency.tokens(generated)
        prompt = sum(
            self.latency.tokens(str(m.get("content") or "")) for m in body.get("messages") or []
        )
        with self._lock:
            self.calls[kind] += 1
            self.completion_tokens += tokens
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if wire:
            message["tool_calls"] = wire
        reply = {
            "id": f"chatcmpl-{kind}-{turn}",
            "object": "chat.completion",
            "model": body.get("model") or MODEL_ID,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if wire else "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": tokens,
                "total_tokens": prompt + tokens,
            },
        }
        return reply, self.latency.seconds(tokens)

    def _route(self, method: str, path: str, raw: bytes) -> tuple[int, Any, float]:
        if method == "GET" and path.split("?")[0] == "/v1/models":
            return 200, {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]}, 0.0
        if method != "POST" or path.split("?")[0] != "/v1/chat/completions":
            return 404, _error(f"no route for {method} {path}"), 0.0
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise RequestError("the request body is not a JSON object")
            reply, delay = self.answer(body)
        except (RequestError, ValueError, KeyError, TypeError) as exc:
            with self._lock:
                self.errors.append(exc)
            return 400, _error(f"{type(exc).__name__}: {exc}"), 0.0
        return 200, reply, delay


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "latency_model"}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers
    timeout = 60
    wbufsize = -1  # one write per response, Nagle off: no delayed-ACK stalls
    disable_nagle_algorithm = True
    server: _HTTPServer

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        with owner._lock:
            owner.in_flight += 1
            owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
        try:
            status, body, delay = owner._route(method, self.path, raw)
            if delay > 0 and owner._stopping.wait(delay):
                self.close_connection = True
                return
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        finally:
            with owner._lock:
                owner.in_flight -= 1

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the benchmark reads `srv.calls`, not a log."""


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024  # many sub-agents connect at once; the default (5) drops SYNs
    allow_reuse_address = True

    def __init__(self, owner: LatencyModelServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse-DNS lookup (getfqdn) that can stall.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "127.0.0.1", int(self.server_address[1])

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        with self.owner._lock:
            self.owner._connections.add(request)
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.owner._lock:
                self.owner._connections.discard(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away, or the server is stopping
        super().handle_error(request, client_address)


__all__ = [
    "MODEL_ID",
    "Latency",
    "LatencyModelServer",
    "RequestError",
    "markdown_table",
    "orchestrator_turn",
    "serial_messages",
]
