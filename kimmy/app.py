"""`kimmy`: the command line of Kimmy Swarm — the typer app, its table of commands, and
`main`, which turns every user error into one line and an exit code.

Each command lives in a module under `kimmy.commands`, named in `COMMANDS`; a module is
imported only when one of its commands runs or a help page lists it, so `kimmy serve` never
imports the agents and `kimmy run` never imports torch.

Exit codes: 0 the run completed; 1 it finished with failed or skipped subtasks (or a spent
budget); 2 bad input (one line on stderr naming the bad value and what is allowed);
130 interrupted by Ctrl-C (SIGINT), 143 stopped by SIGTERM: in both cases everything
finished so far is stored, and `kimmy resume RUN` continues (`kimmy.interrupts`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperGroup

from kimmy_swarm.cli.interrupts import Interrupted, interrupted_message
from kimmy_swarm.cli.options import HELP_OPTIONS, deprecated_options, fail
from kimmy_swarm.swarm.errors import ModelError, SwarmError, UserError

__all__ = ["COMMANDS", "KimmyGroup", "app", "main"]

#: Every `kimmy` command, in the order `kimmy --help` lists them, and the module that holds
#: it (each module has a typer `app` with its commands).
COMMANDS: dict[str, str] = {
    "run": "kimmy_swarm.cli.commands.runs",
    "resume": "kimmy_swarm.cli.commands.runs",
    "runs": "kimmy_swarm.cli.commands.runs",
    "show": "kimmy_swarm.cli.commands.runs",
    "validate": "kimmy_swarm.cli.commands.runs",
    "approvals": "kimmy_swarm.cli.commands.approvals",
    "approve": "kimmy_swarm.cli.commands.approvals",
    "deny": "kimmy_swarm.cli.commands.approvals",
    "swarm": "kimmy_swarm.cli.commands.solve",
    "review": "kimmy_swarm.cli.commands.pipelines",
    "analyze": "kimmy_swarm.cli.commands.pipelines",
    "demo": "kimmy_swarm.cli.commands.pipelines",
    "rewards": "kimmy_swarm.cli.commands.rewards",
    "rollouts": "kimmy_swarm.cli.commands.rewards",
    "models": "kimmy_swarm.cli.commands.models",
    "serve": "kimmy_swarm.cli.commands.serve",
    "dashboard": "kimmy_swarm.cli.commands.dashboard",
    "mcp": "kimmy_swarm.cli.commands.mcp",
    "train": "kimmy_swarm.cli.commands.train",
}

# click's UsageError (typer ≥ 0.29 vendors click; older typer uses click itself): the base of
# every bad-flag / bad-argument error, found through the public `typer.BadParameter`.
_UsageError: type[Exception] = typer.BadParameter.__mro__[1]


@functools.cache
def _module_group(module: str) -> TyperGroup:
    """The click group of a command module's typer app (imports the module)."""
    group = typer.main.get_group(importlib.import_module(module).app)
    _show_ranges(group)
    return group


def _show_ranges(command: Any) -> None:
    """Add to each option's help the lower bound its check enforces (`options.at_least`),
    so a user reads the rule before breaking it."""
    for sub in getattr(command, "commands", {}).values():
        _show_ranges(sub)
    for param in getattr(command, "params", ()):
        low = getattr(param.callback, "low", None)
        if low is not None and f"≥ {low}" not in (param.help or ""):
            param.help = f"{(param.help or '').rstrip()} (≥ {low})".lstrip()


class _CommandTable(MutableMapping[str, Any]):
    """`COMMANDS` as the group's commands: a command's module loads on first lookup."""

    def __init__(self) -> None:
        self._added: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._added:
            return self._added[name]
        if name not in COMMANDS:
            raise KeyError(name)
        return _module_group(COMMANDS[name]).commands[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._added[name] = command

    def __delitem__(self, name: str) -> None:
        del self._added[name]

    def __iter__(self) -> Iterator[str]:
        return iter({**dict.fromkeys(COMMANDS), **self._added})

    def __len__(self) -> int:
        return len(set(COMMANDS) | set(self._added))


class KimmyGroup(TyperGroup):
    """The `kimmy` group: its commands come from `COMMANDS`, each module imported only when
    one of its commands is looked up (to run it, or for a help page that lists it)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = _CommandTable()

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: nothing is imported

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands:
            return None
        # not `.get`: it would hide a KeyError raised while the module loads
        return self.commands[cmd_name]


app = typer.Typer(
    cls=KimmyGroup,
    name="kimmy",
    help="Kimmy Swarm: run DAGs of sub-agents against a model server, durably.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    # click hands a group's help option names down to the contexts of its commands: set
    # here, `-h` works on `kimmy` and on every command of the table
    context_settings={"help_option_names": HELP_OPTIONS},
)


def _print_version(value: bool) -> None:
    """`kimmy --version`: the installed distribution's version, from its metadata."""
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        print(f"kimmy-swarm {version('kimmy-swarm')}")
    except PackageNotFoundError:  # run from a source tree that was never installed
        print("kimmy-swarm (version unknown: the package is not installed)")
    raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Print nothing on stdout (progress, summaries, answers); errors still go to "
            "stderr, and the exit code tells the outcome.",
        ),
    ] = False,
) -> None:
    if quiet:  # until `main` returns: stdout, and the progress view (on stderr) with it
        from kimmy_swarm.cli.command_work import QUIET

        _QUIET.enter_context(contextlib.redirect_stdout(_QUIET.enter_context(_devnull())))
        QUIET.on = True
        _QUIET.callback(setattr, QUIET, "on", False)


#: What `--quiet` holds open while the command runs (closed by `main`).
_QUIET = contextlib.ExitStack()


def _devnull() -> Any:
    return open(os.devnull, "w", encoding="utf-8")  # closed by _QUIET


def _raw_value(argv: list[str], exc: Exception) -> str | None:
    """The text the user gave for the flag a usage error is about, if any."""
    opts = getattr(getattr(exc, "param", None), "opts", None) or []
    for i, arg in enumerate(argv):
        for opt in opts:
            if arg == opt and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(opt + "="):
                return arg[len(opt) + 1 :]
    return None


def _error(message: str, code: int = 2) -> int:
    return fail(message, code).exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point of `kimmy`: one line per user error, no tracebacks, set exit codes."""
    for warning in deprecated_options(sys.argv[1:] if argv is None else argv):
        print(warning, file=sys.stderr)
    with _QUIET:  # `--quiet`: stdout is back once the command ended
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        code = app(args=argv, prog_name="kimmy", standalone_mode=False)
    except _UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            with contextlib.suppress(BrokenPipeError):
                print(exc.format_message())  # type: ignore[attr-defined]
            return 0
        message = exc.format_message().replace("\n", " ")  # type: ignore[attr-defined]
        value = _raw_value(sys.argv[1:] if argv is None else argv, exc)
        if value is not None and repr(value) not in message and f" {value}" not in message:
            message += f" (got {value!r})"
        return _error(message)
    except Interrupted as exc:  # SIGINT or SIGTERM, while a command's work ran
        print(exc, file=sys.stderr)
        return exc.exit_code
    except (KeyboardInterrupt, typer.Abort):  # click turns Ctrl-C into Abort
        print(interrupted_message(), file=sys.stderr)
        return 130
    except typer.Exit as exc:
        return exc.exit_code
    except (UserError, ModelError) as exc:
        return _error(str(exc))
    except SwarmError as exc:
        return _error(f"{type(exc).__name__}: {exc}", 1)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    if code == 130:  # typer turns Ctrl-C into exit code 130 itself
        print(interrupted_message(), file=sys.stderr)
    return code if isinstance(code, int) else 0
