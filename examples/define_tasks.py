"""A swarm defined in Python, end to end, offline: a survey of the Python standard library.

    python examples/define_tasks.py [--limit N] [--out report.md] [--runs-dir DIR] [--json]

Three roles, each a decorated async function:
- `scout` lists the standard-library modules and *spawns* one `inspector` per module into
  the live DAG, feeding the `writer` (which therefore waits for all of them);
- `inspector` parses one module's source with `ast`: lines, functions, classes, public
  names, docstring coverage (its output is validated against `ModuleStats`);
- `writer` ranks the results and writes a Markdown report.

The run is stored (resumable; `kimmy show latest --runs-dir DIR`), and its progress is shown
live on a terminal. No model and no network are needed: the workers compute real answers.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib.util
import sys
import threading
from pathlib import Path

from pydantic import BaseModel

from kimmy_swarm.swarm import Plan, Subtask, SubtaskContext, Swarm
from kimmy_swarm.swarm.progress import make_progress


class ModuleStats(BaseModel):
    module: str
    lines: int
    functions: int
    classes: int
    public_names: int
    documented: int
    doc_coverage: float


def stdlib_sources(limit: int | None) -> list[tuple[str, str]]:
    """(module, source path) for standard-library modules written in Python."""
    out = []
    for name in sorted(sys.stdlib_module_names):
        if name.startswith("_") or name in {"antigravity", "this", "idlelib", "turtledemo"}:
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        out.append((name, spec.origin))
    return out[:limit] if limit else out


#: One `ast.parse` at a time: concurrent parses in threads can fail with "AST constructor
#: recursion depth mismatch" on CPython 3.11 (fixed in later releases).
_PARSE_LOCK = threading.Lock()


def analyse(module: str, path: str) -> ModuleStats:
    """Count what a module defines and how much of its public API has docstrings."""
    source = Path(path).read_text(encoding="utf-8", errors="replace")
    with _PARSE_LOCK:  # CPython 3.11's ast.parse is not thread-safe (gh-106905)
        tree = ast.parse(source)
    defs = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    public = [n for n in defs if not n.name.startswith("_")]
    documented = sum(1 for n in public if ast.get_docstring(n))
    return ModuleStats(
        module=module,
        lines=source.count("\n") + 1,
        functions=sum(1 for n in defs if not isinstance(n, ast.ClassDef)),
        classes=sum(1 for n in defs if isinstance(n, ast.ClassDef)),
        public_names=len(public),
        documented=documented,
        doc_coverage=round(documented / len(public), 4) if public else 1.0,
    )


def build_swarm(runs_dir: str | None, max_concurrency: int) -> Swarm:
    swarm = Swarm(max_concurrency=max_concurrency, runs_dir=runs_dir, max_subagents=5_000)

    @swarm.role("scout")
    async def scout(ctx: SubtaskContext) -> list[str]:
        modules = stdlib_sources(ctx.inputs.get("limit"))
        ctx.spawn(
            [
                Subtask(id=f"inspect:{name}", role="inspector", inputs={"path": path})
                for name, path in modules
            ],
            feeds=["write-report"],
        )
        return [name for name, _ in modules]

    @swarm.role("inspector", output=ModuleStats)
    async def inspector(ctx: SubtaskContext) -> ModuleStats:
        module = ctx.id.removeprefix("inspect:")
        return await asyncio.to_thread(analyse, module, ctx.inputs["path"])

    @swarm.role("writer")
    async def writer(ctx: SubtaskContext) -> str:
        stats = [
            ModuleStats(**r.output) for r in ctx.upstream_results.values() if r.role == "inspector"
        ]
        return render_report(stats)

    return swarm


def render_report(stats: list[ModuleStats]) -> str:
    total_lines = sum(s.lines for s in stats)
    public = sum(s.public_names for s in stats)
    documented = sum(s.documented for s in stats)
    lines = [
        "# The Python standard library, surveyed by a swarm",
        "",
        f"{len(stats)} modules, {total_lines:,} lines, {public:,} public functions and classes, "
        f"{documented / public:.1%} of them documented."
        if public
        else "",
        "",
        "## Largest modules",
        "",
        "| module | lines | functions | classes | doc coverage |",
        "|---|---:|---:|---:|---:|",
    ]
    for s in sorted(stats, key=lambda s: -s.lines)[:10]:
        lines.append(
            f"| {s.module} | {s.lines:,} | {s.functions} | {s.classes} | {s.doc_coverage:.0%} |"
        )
    lines += ["", "## Least documented (10+ public names)", ""]
    sparse = [s for s in stats if s.public_names >= 10]
    for s in sorted(sparse, key=lambda s: (s.doc_coverage, s.module))[:10]:
        lines.append(f"- {s.module}: {s.documented}/{s.public_names} documented")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="survey only the first N modules")
    parser.add_argument("--out", default="stdlib-survey.md", help="where to write the report")
    parser.add_argument("--runs-dir", default=".kimmy/runs", help="run store ('' for none)")
    parser.add_argument("--max-concurrency", type=int, default=64)
    parser.add_argument("--json", action="store_true", help="JSON-lines events on stdout")
    args = parser.parse_args(argv)

    swarm = build_swarm(args.runs_dir or None, args.max_concurrency)
    plan = Plan(
        goal="Survey the Python standard library: size, API surface, documentation coverage",
        subtasks=[
            Subtask(id="scout", role="scout", inputs={"limit": args.limit}),
            Subtask(id="write-report", role="writer", depends_on=["scout"]),
        ],
    )
    with make_progress(json=args.json) as progress:
        result = swarm.run_sync(plan, sinks=[progress])
    if not result.ok:
        print(
            f"run {result.run_id} ended {result.status.value}: {result.counts()}", file=sys.stderr
        )
        return 1
    Path(args.out).write_text(result.outputs["write-report"], encoding="utf-8")
    if not args.json:
        n = result.counts().get("done", 0)
        print(f"run {result.run_id}: {n} sub-agents done; report written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
