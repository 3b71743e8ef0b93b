"""One vocabulary across the command line: every command's options are walked, and the same
thing has the same name (and help) everywhere, every option says what it is for, and the
commands that reach a model or run a swarm take the same flags for it."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

import pytest
import typer.core
import typer.main

from kimmy_swarm.cli.app import app, main
from kimmy_swarm.cli.options import RENAMED_OPTIONS

#: Option names whose meaning belongs to one command family, with why they may differ.
PER_COMMAND = {
    "--host": "the address a server binds (serve, dashboard, mcp --http)",
    "--port": "the port a server binds",
    "--api-key-file": "serve/mcp --http: the key clients must send",
    "--api-key": "the key sent to a model server, or (serve) the key required of clients",
    "--seed": "what the seed draws: retry jitter of a run, or a training run's weights/tasks",
    "--steps": "optimizer steps of a training run",
    "--lr": "learning rate of a training run",
    "--resume": "train: continue from the last checkpoint",
    "--reason": "approve/deny: why, kept with the decision",
    "--json": "JSON on stdout: lines of a view, or one object of a report",
    "--store": "store the run durably",
    "--year": "the year of corpus records that give none",
    "--corpus": "documents: a run's corpus, or the tasks' documents of train parl",
    "--out": "a folder written: a run's files, or a training run's checkpoints",
    "--tiny": "a tiny random model: in-process (swarm) or served (serve)",
}
#: Flags every command that reaches a model server takes, with --base-url.
MODEL_FLAGS = {
    "--base-url",
    "--model",
    "--api-key",
    "--local",
    "--context-tokens",
    "--call-timeout",
}
#: Flags every command that runs a swarm takes.
RUN_FLAGS = {"--runs-dir", "--json", "--stream", "--max-concurrency"}
SWARM_COMMANDS = ("run", "swarm", "review", "analyze")


def _commands() -> list[tuple[str, Any]]:
    """Every command as `kimmy` builds it (sub-commands of groups by their full name)."""
    root = typer.main.get_command(app)
    found = []
    for name in root.list_commands(None):  # `kimmy`'s group needs no context to list
        command = root.get_command(None, name)
        if hasattr(command, "commands"):  # a group: train lm, train parl, models list, …
            found += [(f"{name} {sub}", c) for sub, c in command.commands.items()]
        else:
            found.append((name, command))
    return found


def _help(option: Any) -> str:
    """An option's help without the range `kimmy` adds to it (`(≥ N)`)."""
    return re.sub(r"\s*\(≥ \d+\)$", "", option.help or "").strip()


def _renamed(command: str, opt: str) -> bool:
    """Whether `opt` is the old name of a renamed option of `command` (a deprecated alias)."""
    return opt in RENAMED_OPTIONS.get(command, {})


def _options(command: Any) -> list[Any]:
    return [p for p in command.params if isinstance(p, typer.core.TyperOption)]


def test_every_option_says_what_it_is_for() -> None:
    missing = [
        f"{name} {'/'.join(p.opts)}"
        for name, command in _commands()
        for p in _options(command)
        if not _help(p)
    ]
    assert not missing, f"options without help: {missing}"


def test_a_name_means_one_thing_everywhere() -> None:
    uses: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for name, command in _commands():
        for p in _options(command):
            if p.hidden:
                continue
            for opt in p.opts:
                if not _renamed(name, opt):
                    uses[opt][_help(p)].append(name)
    differing = {
        opt: dict(helps) for opt, helps in uses.items() if len(helps) > 1 and opt not in PER_COMMAND
    }
    assert not differing, f"one name, several meanings (or wordings): {differing}"


def test_commands_that_reach_a_model_take_the_same_model_flags() -> None:
    lacking = {}
    for name, command in _commands():
        opts = {o for p in _options(command) for o in p.opts}
        if "--base-url" in opts and not opts >= MODEL_FLAGS:
            lacking[name] = sorted(MODEL_FLAGS - opts)
    assert not lacking, f"model flags missing: {lacking}"


def test_commands_that_run_a_swarm_take_the_same_run_flags() -> None:
    by_name = dict(_commands())
    lacking = {}
    for name in SWARM_COMMANDS:
        opts = {o for p in _options(by_name[name]) for o in p.opts}
        if not opts >= RUN_FLAGS:
            lacking[name] = sorted(RUN_FLAGS - opts)
    assert not lacking, f"run flags missing: {lacking}"


def test_a_checked_range_is_shown_in_the_help() -> None:
    """An integer option with a lower bound says it in its help (`≥ N`) or through click's
    range (`x>=N`), so a user sees the rule before breaking it."""
    hidden = []
    for name, command in _commands():
        for p in _options(command):
            low = getattr(p.callback, "low", None)
            if low is None:
                continue
            text = p.help or ""
            if f"≥ {low}" not in text and f">={low}" not in text:
                hidden.append(f"{name} {p.opts[0]} (≥ {low})")
    assert not hidden, f"ranges enforced but not shown: {hidden}"


def test_a_renamed_option_works_by_its_old_name_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`run --max-tokens` (a run's budget, where every other --max-tokens-like flag caps one
    call) is `--token-budget`; `train parl --model` (a checkpoint, where --model is a
    server's model id everywhere else) is `--checkpoint`; `train parl --width` (documents,
    where --width is sub-agents elsewhere) is `--docs-per-task`. The old names still parse."""
    assert main(["run", "no-such-plan.json", "--max-tokens", "100"]) == 2  # the plan is missing
    err = capsys.readouterr().err
    assert "kimmy run: --max-tokens is now --token-budget" in err
    assert "no-such-plan.json" in err  # and the option itself was taken
    assert main(["run", "no-such-plan.json", "--token-budget", "100"]) == 2
    assert "is now" not in capsys.readouterr().err
    by_name = dict(_commands())
    for command, renames in RENAMED_OPTIONS.items():
        opts = {o for p in _options(by_name[command]) for o in p.opts}
        for old, new in renames.items():
            assert {old, new} <= opts, (command, old, new)


def test_every_argument_naming_a_run_is_called_run() -> None:
    named = {
        (name, p.name, p.metavar)
        for name, command in _commands()
        for p in command.params
        if not isinstance(p, typer.core.TyperOption)
        and "'latest'" in (getattr(p, "help", "") or "")
    }
    assert named and all(metavar == "RUN" for _, _, metavar in named), named


def test_model_flags_given_without_a_model_are_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    """Offline, a model's flags do nothing: the command says so instead of ignoring them."""
    code = main(["analyze", "statsmodels:longley", "--out", str(tmp_path / "a"), "--no-store",
                 "--max-answer-tokens", "64", "--call-timeout", "5"])  # fmt: skip
    err = capsys.readouterr().err
    assert code in (0, 1)
    assert "no model is given, so --max-answer-tokens, --call-timeout do nothing" in err
    main(["analyze", "statsmodels:longley", "--out", str(tmp_path / "b"), "--no-store"])
    assert "no model is given" not in capsys.readouterr().err


def test_quiet_prints_nothing_but_errors(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    args = ["analyze", "statsmodels:longley", "--no-store"]
    assert main(["-q", *args, "--out", str(tmp_path / "a")]) == 0
    assert capsys.readouterr() == ("", "")  # no summary, no answer, no progress lines
    assert main(["--quiet", "analyze", "statsmodels:longly", "--no-store"]) == 2
    assert "could not be loaded" in capsys.readouterr().err  # errors still said
    assert main([*args, "--out", str(tmp_path / "b")]) == 0  # stdout is back afterwards
    out = capsys.readouterr().out
    assert "answer [statsmodels:longley]" in out
