"""The `kimmy` app shell: `kimmy --help` lists every command of the table with its help, a
command loads only its own module (so `kimmy run` starts without torch or the agents'
libraries, `kimmy serve` without the agents), command modules import only typer and
`kimmy_swarm.cli.options` at their top, and the choices spelt out there agree with the
libraries'."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import COMMANDS, main

ROOT = Path(__file__).resolve().parents[2]
#: What the agents' pipelines and the model side import; `kimmy run` needs none of them.
HEAVY = {
    "torch", "numpy", "pandas", "scipy", "sklearn", "statsmodels", "matplotlib", "bm25s",
    "pypdf", "bibtexparser", "jinja2", "tokenizers", "fastapi", "uvicorn",
}  # fmt: skip


def _loaded_after(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter has loaded after `kimmy ARGV` (a help page)."""
    code = (
        "import json, sys\nfrom kimmy_swarm.cli.app import main\n"
        f"code = main({argv!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    code, modules = json.loads(out.stdout.splitlines()[-1])
    assert code == 0, out.stderr
    return set(modules)


def _tops(modules: set[str]) -> set[str]:
    """Top-level packages, ours by their name under the import root (`agents`, `swarm`, …)."""
    return {m.split(".")[1] if m.startswith("kimmy_swarm.") else m.split(".")[0] for m in modules}


def test_help_lists_every_command_with_its_help() -> None:
    out = subprocess.run(
        [sys.executable, "-P", "-m", "kimmy_swarm.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr
    listed = out.stdout.split("Commands:\n")[1].splitlines()
    assert [line.split()[0] for line in listed] == list(COMMANDS)
    assert all(len(line.split()) > 2 for line in listed)  # each with its one-line help
    assert "Run a plan: one sub-agent per subtask" in out.stdout


def test_run_help_loads_neither_torch_nor_the_agents_libraries() -> None:
    loaded = _loaded_after(["run", "--help"])
    assert not _tops(loaded) & HEAVY
    assert not {m for m in loaded if m.startswith("kimmy_swarm.cli.commands.")} - {
        "kimmy_swarm.cli.commands.runs"
    }
    assert "kimmy_swarm.agents" not in loaded  # the roles load when a run starts


def test_serve_and_train_help_load_no_agents_and_no_torch() -> None:
    for argv in (["serve", "--help"], ["train", "lm", "--help"], ["--help"]):
        tops = _tops(_loaded_after(argv))
        assert not tops & ({"agents", "rewards"} | HEAVY), argv


def test_validate_runs_without_torch_or_the_agents_libraries(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"subtasks": [{"id": "a", "role": "writer"}]}))
    tops = _tops(_loaded_after(["validate", str(plan)]))
    assert "agents" in tops and not tops & HEAVY


def _top_imports(path: Path) -> set[str]:
    top: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            top |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module)
    return top


@pytest.mark.parametrize(
    "path", [*sorted((ROOT / "kimmy" / "commands").glob("*.py")), ROOT / "kimmy" / "options.py"]
)
def test_command_modules_import_only_typer_and_kimmy_options_at_the_top(path: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"__future__"}
    third_party = {m for m in _top_imports(path) if m.split(".")[0] not in allowed}
    assert third_party <= {"typer", "kimmy_swarm.cli.options"}, path.name


def test_every_table_entry_names_a_command_of_its_module() -> None:
    import importlib

    import typer.main

    for name, module in COMMANDS.items():
        group = typer.main.get_group(importlib.import_module(module).app)
        assert name in group.commands, (name, module)


def test_choices_spelt_out_in_commands_agree_with_the_libraries() -> None:
    from kimmy_swarm.cli.commands.runs import FailurePolicyName
    from kimmy_swarm.cli.commands.train import Preset
    from kimmy_swarm.model.presets import PRESETS
    from kimmy_swarm.swarm import FailurePolicy

    assert [p.value for p in FailurePolicyName] == [p.value for p in FailurePolicy]
    assert [p.value for p in Preset] == list(PRESETS)


def test_no_args_prints_help_and_a_typo_suggests_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 0
    assert "Commands:" in capsys.readouterr().out
    assert main(["rn"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "kimmy: error: No such command 'rn'. Did you mean 'run', 'runs'?"
    assert main(["train", "lmm"]) == 2
    assert "Did you mean 'lm'?" in capsys.readouterr().err
