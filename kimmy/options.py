"""What the `kimmy` commands share: option types, flag checks, the error line, the model client.

The model client is the flags parsed into a `swarm.llm.ModelEndpoint` (the API key, a
secret, beside it) and connected by `swarm.llm.connect`, as a library caller would.

Only typer is imported here (the model client loads `swarm.llm` when it is built), so every
command module can import this at its top and still start fast.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, overload

import typer

if TYPE_CHECKING:
    from collections.abc import Mapping

    from kimmy_swarm.swarm import ApprovalPolicy
    from kimmy_swarm.swarm.llm import Capabilities, LocalModel, ModelEndpoint, OpenAIChat

__all__ = [
    "DEFAULT_RUNS_DIR",
    "GROUP_HELP",
    "HELP_OPTIONS",
    "RENAMED_OPTIONS",
    "ApiKey",
    "ApprovalTimeout",
    "ApproveSpawnsOver",
    "ApproveTools",
    "BaseUrl",
    "CallTimeout",
    "ContextTokens",
    "Json",
    "Local",
    "MaxConcurrency",
    "MaxSubagents",
    "McpConfigFile",
    "ModelName",
    "NativeTools",
    "OnApprovalTimeout",
    "OnTimeout",
    "OutDir",
    "Probe",
    "ResumeOutDir",
    "RunArg",
    "RunsDir",
    "Stream",
    "StructuredOutput",
    "approval_policy",
    "at_least",
    "command_group",
    "deprecated_options",
    "fail",
    "int_option",
    "key_from_file",
    "model_client",
    "model_endpoint",
    "positive_seconds",
    "say_unused_model_flags",
    "stored_base_url",
]

#: Where runs are stored unless `--runs-dir` / `KIMMY_RUNS_DIR` say otherwise.
DEFAULT_RUNS_DIR = Path(".kimmy/runs")
#: The flags that print a command's help: `kimmy -h`, `kimmy run -h` as well as `--help`.
HELP_OPTIONS = ["-h", "--help"]

RunsDir = Annotated[
    Path,
    typer.Option(
        "--runs-dir",
        envvar="KIMMY_RUNS_DIR",
        help="Where runs are stored (SQLite).",
        file_okay=False,
    ),
]
#: A command's output folder: checked and created before the run, held by that run alone
#: while it writes (`kimmy.out_dir.hold_out`).
OutDir = Annotated[
    Path,
    typer.Option(
        "--out", help="Output folder (created; one run at a time writes into it).", file_okay=False
    ),
]
ResumeOutDir = Annotated[
    Path | None,
    typer.Option(
        "--out",
        help="Write the resumed run's files into this folder (stored with the run from "
        "then on) [default: the run's own --out].",
        file_okay=False,
    ),
]
Json = Annotated[bool, typer.Option("--json", help="JSON lines on stdout instead of a view.")]
McpConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--mcp-config",
        help='MCP servers whose tools sub-agents may use: an {"mcpServers": …} file '
        "(Claude Desktop's format); their tools are named server.tool.",
        dir_okay=False,
    ),
]
Stream = Annotated[
    bool,
    typer.Option(
        "--stream",
        help="Sub-agents' model calls stream their answers: watch them being written with "
        "kimmy show RUN --agent ID --follow, or in the dashboard (never stored: the store "
        "keeps whole answers).",
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", help="OpenAI-compatible API root [env KIMMY_BASE_URL]."),
]
Local = Annotated[
    str | None,
    typer.Option(
        "--local",
        help="Run the model in this process: an installed model's name (kimmy models "
        "list: smollm2, qwen2.5-coder-1.5b, …), a .gguf file, a checkpoint folder or an "
        "org/repo in the Hugging Face cache.",
    ),
]
ModelName = Annotated[str | None, typer.Option("--model", help="Model id [env KIMMY_MODEL].")]
ApiKey = Annotated[str | None, typer.Option("--api-key", help="API key [env KIMMY_API_KEY].")]
MaxTokens = Annotated[
    int | None,
    typer.Option(
        "--max-answer-tokens",
        min=1,
        help=(
            "The most tokens one model call may generate [default: each role's own, "
            "1024 for most]; for slow or weak models that ramble to the limit."
        ),
    ),
]
ContextTokens = Annotated[
    int | None,
    typer.Option(
        "--context-tokens",
        min=16,
        help=(
            "The model's context length (prompt + answer tokens) when the server does not "
            "say it at /models [default: the server's, else 4096]."
        ),
    ),
]


def positive_seconds(value: float | None) -> float | None:
    """A flag check for a number of seconds: positive and finite."""
    if value is not None and not (0 < value < float("inf")):
        raise typer.BadParameter(f"must be a positive number of seconds, got {value}")
    return value


CallTimeout = Annotated[
    float | None,
    typer.Option(
        "--call-timeout",
        callback=positive_seconds,
        help=(
            "A fixed limit in seconds for each call to the model server [default: adaptive: "
            "from the request's size and the speed the server has shown, 15 s to 30 min, "
            "at least 120 s until a call has finished; with --local, none: a call fails "
            "when the model's engine has made no progress for 5 min]."
        ),
    ),
]


StructuredOutput = Annotated[
    bool | None,
    typer.Option(
        "--structured-output/--no-structured-output",
        help=(
            "Whether the server enforces a response_format JSON schema [default: probed]. "
            "--no-structured-output: none is sent; the answer is asked for in the prompt and "
            "read from the first JSON object of the reply (llama.cpp's server)."
        ),
    ),
]
NativeTools = Annotated[
    bool | None,
    typer.Option(
        "--tools/--no-tools",
        help=(
            "Whether the server supports native tool calls [default: probed]. --no-tools: "
            "the tools are described in the prompt and called in plain text."
        ),
    ),
]
Probe = Annotated[
    bool,
    typer.Option(
        "--probe/--no-probe",
        help=(
            "Ask the server, with a few tiny requests (once per server and model), what it "
            "honours of what the two flags above do not say. --no-probe: take it to honour "
            "everything they do not say."
        ),
    ),
]


#: The argument naming a stored run (every command that takes one).
RunArg = Annotated[str, typer.Argument(metavar="RUN", help="Run id, unique prefix, or 'latest'.")]
#: `-k`: the rollouts of one task sampled together (rollouts, train parl).
GROUP_HELP = "Rollouts per task: GRPO's group."

#: Options renamed so that one name means one thing everywhere, by command: old → new. The
#: old name still works for one release, with a warning (`deprecated_options`).
RENAMED_OPTIONS: dict[str, dict[str, str]] = {
    "run": {"--max-tokens": "--token-budget"},
    "rollouts": {"--out": "--jsonl"},
    "train parl": {"--model": "--checkpoint", "--width": "--docs-per-task"},
}


def deprecated_options(argv: list[str]) -> list[str]:
    """A warning for each renamed option `argv` uses by its old name."""
    words = [a for a in argv if not a.startswith("-")]
    for size in (2, 1):
        command = " ".join(words[:size])
        if command in RENAMED_OPTIONS:
            break
    else:
        return []
    used = {a.split("=", 1)[0] for a in argv if a.startswith("--")}
    return [
        f"kimmy {command}: {old} is now {new}; the old name goes in the next release"
        for old, new in RENAMED_OPTIONS[command].items()
        if old in used
    ]


def at_least(low: int) -> Callable[[int | None], int | None]:
    """A flag check whose message names the bad value and what is allowed."""

    def check(value: int | None) -> int | None:
        if value is not None and value < low:
            raise typer.BadParameter(f"must be an integer ≥ {low}, got {value}")
        return value

    check.low = low  # type: ignore[attr-defined]  # the help shows it (a test checks)
    return check


MaxSubagents = Annotated[
    int | None,
    typer.Option(
        "--max-subagents",
        callback=at_least(1),
        help="Most sub-agents the run may create, spawned ones included.",
    ),
]
MaxConcurrency = Annotated[
    int | None,
    typer.Option("--max-concurrency", callback=at_least(1), help="Most sub-agents in flight."),
]


# --- approvals (`swarm.approvals`): the flags of the commands that start runs ----------


class OnTimeout(StrEnum):
    """What a call that waited `--approval-timeout` gets."""

    deny = "deny"
    approve = "approve"
    fail = "fail"


ApproveTools = Annotated[
    str | None,
    typer.Option(
        "--approve-tools",
        help="Tools whose every call waits for a person (kimmy approvals / approve / deny): "
        "NAME,… (server.tool for an MCP server's tool; git.* for all of one server's).",
    ),
]
ApproveSpawnsOver = Annotated[
    int | None,
    typer.Option(
        "--approve-spawns-over",
        callback=at_least(0),
        help="The orchestrator asks a person before spawning past N sub-agents.",
    ),
]
ApprovalTimeout = Annotated[
    float | None,
    typer.Option(
        "--approval-timeout",
        callback=positive_seconds,
        help="Seconds a call may wait for an answer [default: no limit].",
    ),
]
OnApprovalTimeout = Annotated[
    OnTimeout,
    typer.Option("--on-approval-timeout", help="What a call gets after --approval-timeout."),
]


def approval_policy(
    tools: str | None,
    spawns_over: int | None,
    timeout_s: float | None,
    on_timeout: OnTimeout | str = OnTimeout.deny,
) -> ApprovalPolicy | None:
    """The flags as one policy (None: no flag asks for approvals)."""
    if tools is None and spawns_over is None and timeout_s is None:
        return None
    from kimmy_swarm.swarm import ApprovalPolicy

    how = on_timeout.value if isinstance(on_timeout, OnTimeout) else on_timeout
    return ApprovalPolicy(
        tools=tools or (), spawns_over=spawns_over, timeout_s=timeout_s, on_timeout=how
    )


def int_option(help_text: str, *, low: int = 1) -> Any:
    """An integer option of at least `low` (click's range check and message)."""
    return typer.Option(help=help_text, min=low)


def key_from_file(path: Path, option: str = "--api-key-file") -> str:
    """A secret from the first line of a file (a mounted secret), for `option`.

    Raises:
        typer.Exit: the file cannot be read, or its first line is empty (one line, exit 2).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise fail(f"{option} {path}: cannot read it ({e})") from e
    key = lines[0].strip() if lines else ""
    if not key:
        raise fail(f"{option} {path}: the first line is empty; it holds the key")
    return key


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print the one error line `kimmy: error: MESSAGE` on stderr; returns the exit to raise
    (`raise fail(...)`), whose code is 2 (bad input) unless told otherwise."""
    print(f"kimmy: error: {message}", file=sys.stderr)
    return typer.Exit(code)


def command_group() -> typer.Typer:
    """The typer app of one command module, with the settings every `kimmy` command has."""
    return typer.Typer(
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": HELP_OPTIONS},
    )


def stored_base_url(stored: str | None) -> str | None:
    """The base URL a stored run names, to reach its model again on resume.

    Runs store the URL with its credentials masked (`swarm.llm.redact_url`). For one that
    had them: `KIMMY_BASE_URL` when it is that URL unmasked, else one error line (exit 2)
    asking for `--base-url` again.
    """
    from kimmy_swarm.swarm.llm.redact import MASK, redact_url

    if stored is None or MASK not in stored:
        return stored
    env = os.environ.get("KIMMY_BASE_URL")
    if env and redact_url(env.rstrip("/")) == stored:
        return env
    raise fail(
        f"the run's base URL {stored} had credentials, which are not stored; "
        "pass --base-url with them again (or set KIMMY_BASE_URL)"
    )


def say_unused_model_flags(flags: Mapping[str, Any]) -> None:
    """Say, on stderr, which of the model's flags were given to a run that has no model
    (they would do nothing, silently)."""
    given = [flag for flag, value in flags.items() if value is not None]
    if given:
        print(
            f"kimmy: no model is given, so {', '.join(given)} do nothing (the roles run their "
            "offline procedures); give --local MODEL or --base-url/--model for them to apply",
            file=sys.stderr,
        )


def model_endpoint(
    base_url: str | None,
    model: str | None,
    *,
    required: bool,
    local: str | None = None,
    context_tokens: int | None = None,
    max_tokens: int | None = None,
    capabilities: Capabilities | None = None,
) -> ModelEndpoint | None:
    """The model endpoint the flags name (the URL's credentials masked); None: offline.

    `required`: the command needs a model, so an HTTP endpoint even when no flag names one
    (`KIMMY_BASE_URL` then does, or `connect` says how to name one). Otherwise a model only
    when `--base-url` / `--model` or `KIMMY_BASE_URL` ask for model mode.
    """
    from kimmy_swarm.swarm.llm.endpoint import ModelEndpoint

    if local is not None:
        if base_url or model:
            raise fail(f"give one model: --base-url/--model or --local {local}, not both")
        return ModelEndpoint(
            kind="local", local=local, max_tokens=max_tokens, capabilities=capabilities
        )
    if not required and not (base_url or model or os.environ.get("KIMMY_BASE_URL")):
        return None
    return ModelEndpoint(
        kind="http", base_url=base_url, model=model, context_tokens=context_tokens,
        max_tokens=max_tokens, capabilities=capabilities,
    )  # fmt: skip


@overload
def model_client(
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    *,
    required: Literal[True],
    pool: int = ...,
    context_tokens: int | None = ...,
    local: str | None = ...,
    call_timeout: float | None = ...,
    max_tokens: int | None = ...,
    capabilities: Capabilities | None = ...,
    honours: Mapping[str, bool | None] | None = ...,
    probe: bool = ...,
    json_lines: bool = ...,
) -> OpenAIChat | LocalModel: ...


@overload
def model_client(
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    *,
    required: bool,
    pool: int = ...,
    context_tokens: int | None = ...,
    local: str | None = ...,
    call_timeout: float | None = ...,
    max_tokens: int | None = ...,
    capabilities: Capabilities | None = ...,
    honours: Mapping[str, bool | None] | None = ...,
    probe: bool = ...,
    json_lines: bool = ...,
) -> OpenAIChat | LocalModel | None: ...


def model_client(
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    *,
    required: bool,
    pool: int = 64,
    context_tokens: int | None = None,
    local: str | None = None,
    call_timeout: float | None = None,
    max_tokens: int | None = None,
    capabilities: Capabilities | None = None,
    honours: Mapping[str, bool | None] | None = None,
    probe: bool = False,
    json_lines: bool = False,
) -> OpenAIChat | LocalModel | None:
    """The model the flags (or `KIMMY_BASE_URL`, `KIMMY_MODEL`, `KIMMY_API_KEY`) name,
    connected as `swarm.llm.connect` does: one clear error line when it is unreachable.

    Args:
        required: the command needs a model (`kimmy run`, `kimmy resume`); see
            `model_endpoint`. Otherwise None when no flag asks for model mode.
        pool: the client's connection pool (the run's concurrency).
        context_tokens: the model's context length when the server's `/models` does not
            say it (`--context-tokens`); None: the server's, else the sub-agents' default.
        local: `--local SOURCE`: serve that model in this process instead; not with
            `--base-url` / `--model`.
        call_timeout: `--call-timeout`: a fixed limit per call to the server; None: limits
            that scale with each request and the server's speed (a `local` model's client
            keeps its fixed 600 s).
        max_tokens: `--max-answer-tokens`: the most tokens any call may generate.
        capabilities: what the server honours, as a stored run found it: not probed again.
        honours: `--structured-output` / `--tools` by capability name (None: not given).
        probe: ask an HTTP server what it honours of what `honours` does not say.
        json_lines: where the line saying what the server honours goes (see `say`).

    Raises:
        ConfigError: no server configured (when required) or a bad base URL.
        ModelError: the server cannot be reached or refuses the key.
    """
    endpoint = model_endpoint(
        base_url, model, required=required, local=local, context_tokens=context_tokens,
        max_tokens=max_tokens, capabilities=capabilities,
    )  # fmt: skip
    if endpoint is None:
        say_unused_model_flags({
            "--api-key": api_key, "--context-tokens": context_tokens,
            "--max-answer-tokens": max_tokens, "--call-timeout": call_timeout,
            "--structured-output": (honours or {}).get("structured_output"),
            "--tools/--no-tools": (honours or {}).get("tools"),
        })  # fmt: skip
        return None
    given = {name: value for name, value in (honours or {}).items() if value is not None}
    client = _connect(endpoint, base_url, api_key, given, probe, pool, call_timeout)
    if capabilities is None:
        probed = probe and endpoint.kind == "http"
        _say_capabilities(client, given, probed=probed, json_lines=json_lines)
    return client


def _connect(
    endpoint: ModelEndpoint,
    base_url: str | None,
    api_key: str | None,
    given: Mapping[str, bool],
    probe: bool,
    pool: int,
    call_timeout: float | None,
) -> OpenAIChat | LocalModel:
    """`swarm.llm.connect` in its own event loop; a local model that cannot be loaded is one
    error line (exit 2)."""
    from kimmy_swarm.swarm.llm.endpoint import connect

    connecting = connect(
        endpoint, base_url=base_url, api_key=api_key, probe=probe, given=given,
        max_connections=pool, timeout_s=call_timeout,
    )  # fmt: skip
    if endpoint.kind != "local":
        return asyncio.run(connecting)
    from kimmy_swarm.model.errors import (
        KimiModelError,  # the model side loads only for a local model
    )

    try:
        return asyncio.run(connecting)
    except KimiModelError as e:
        raise fail(f"--local {endpoint.local}: {e}") from e


def _say_capabilities(
    client: OpenAIChat | LocalModel, given: Mapping[str, bool], *, probed: bool, json_lines: bool
) -> None:
    """One line saying what the server honours and where each value came from, unless
    nothing was probed or given."""
    from kimmy_swarm.cli.summaries import say
    from kimmy_swarm.swarm.llm.capabilities import CAPABILITY_NAMES

    found = client.capabilities
    if found is None or not (probed or given):
        return
    how = dict.fromkeys(CAPABILITY_NAMES, "probed" if probed else "assumed")
    how.update({n: f"--{'' if v else 'no-'}{n.replace('_', '-')}" for n, v in given.items()})
    if given.get("tools") is False and "parallel_tool_calls" not in given:
        how["parallel_tool_calls"] = "--no-tools"
    say(f"model capabilities: {found.describe(how)}", json_lines)
