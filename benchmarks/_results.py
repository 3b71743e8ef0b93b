"""Where a benchmark's results page goes: printed, or written only where `--out` says.

The pages under `benchmarks/results/` are the committed figures the docs quote. A run
without `--out` prints its page and writes nothing into the repository, so a trial run
never replaces them; `--out benchmarks/results/NAME.md` regenerates one on purpose. The
experiments, which write a page and a plot, take `--out-dir` the same way: without it they
write into a new temporary folder and say where.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


def add_out_option(parser: argparse.ArgumentParser, page: str) -> None:
    """`--out PATH` (default: none, print only) for a script whose committed page is `page`."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"write the page to PATH (the committed one is benchmarks/results/{page}); "
        "without it the page is printed and nothing is written",
    )


def add_out_dir_option(parser: argparse.ArgumentParser) -> None:
    """`--out-dir DIR` (default: a new temporary folder) for a script that writes several files."""
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="where the .md and .png go (the committed ones: benchmarks/results); "
        "without it, a new temporary folder",
    )


def out_dir(path: Path | None) -> Path:
    """The folder to write into: `path`, or a new temporary one (named on stdout)."""
    if path is not None:
        return path
    tmp = Path(tempfile.mkdtemp(prefix="kimmy-bench-"))
    print(
        f"no --out-dir: writing into {tmp} (--out-dir benchmarks/results updates the repo's)",
        file=sys.stderr,
    )
    return tmp


def publish(text: str, out: Path | None, *, echo: bool = True) -> None:
    """Print the page (unless `echo` is False: stdout carries JSON) and write it to `out`
    when given; "wrote PATH" goes to stderr."""
    if echo:
        print(text)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}", file=sys.stderr)
