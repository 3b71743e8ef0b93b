"""`kimmy validate` and `kimmy run` check a plan file the same way: every malformed plan is
exit 2 and one line on stderr that names the problem, from both, before any server is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimmy_swarm.cli.app import main


def nested(depth: int, leaf: str = "1") -> str:
    return "[" * depth + leaf + "]" * depth


def plan_text(subtask: str) -> str:
    return '{"goal": "g", "subtasks": [' + subtask + "]}"


MALFORMED = {
    # deeper than Python's JSON parser goes: a RecursionError before
    "nested past the parser": (
        plan_text('{"id": "a", "role": "writer", "inputs": {"x": ' + nested(100_000) + "}}"),
        "nest too deeply; a plan may nest them at most 64 levels",
    ),
    # deeper than pydantic validates: a 2,000-character path before
    "nested past the limit": (
        plan_text('{"id": "a", "role": "writer", "inputs": {"x": ' + nested(300) + "}}"),
        "nest too deeply (at subtasks.0.inputs.x.0.0.0.0…)",
    ),
    "nested objects": (
        plan_text('{"id": "a", "role": "writer", "inputs": ' + '{"k": ' * 80 + "1" + "}" * 81),
        "nest too deeply (at subtasks.0.inputs.k.k.k.k.k…)",
    ),
    # `validate` said "valid", `run` refused it
    "unknown output schema": (
        plan_text('{"id": "a", "role": "writer", "output_schema": "Nope"}'),
        "unknown output schema(s) 'Nope' in subtasks 'a'; known schemas: Answer",
    ),
    # accepted as 1 / 30 before
    "bool retries": (
        plan_text('{"id": "a", "role": "writer", "max_retries": true}'),
        "subtasks.0.max_retries: Input should be a valid integer (got True)",
    ),
    "string timeout": (
        plan_text('{"id": "a", "role": "writer", "timeout_s": "30"}'),
        "subtasks.0.timeout_s: Input should be a valid number",
    ),
    # the last one silently won before
    "duplicate key": (
        plan_text('{"id": "a", "role": "writer", "id": "b"}'),
        "key 'id' appears twice in one JSON object",
    ),
    "duplicate nested key": (
        plan_text('{"id": "a", "role": "writer", "inputs": {"q": 1, "q": 2}}'),
        "key 'q' appears twice in one JSON object",
    ),
    # crashed when the run was stored (a traceback, exit 1)
    "lone surrogate": (
        plan_text('{"id": "a", "role": "writer", "instructions": "x\\ud800"}'),
        "subtasks.0.instructions: 'x\\ud800' holds a lone surrogate",
    ),
    # all accepted before (issue 35): limits wherever input enters
    "1 MB instructions": (
        plan_text('{"id": "a", "role": "writer", "instructions": "' + "x" * 1_000_000 + '"}'),
        "subtasks 'a' have instructions over 200,000 characters",
    ),
    "10 MB goal": (
        '{"goal": "' + "g" * 10_000_000 + '", "subtasks": [{"id": "a", "role": "writer"}]}',
        "the goal has 10,000,000 characters; at most 200,000 are allowed",
    ),
    "9 MB inputs": (
        plan_text('{"id": "a", "role": "writer", "inputs": {"x": "' + "x" * 9_000_000 + '"}}'),
        "subtasks 'a' have inputs over 8 MiB as JSON",
    ),
    "unknown parent": (
        plan_text('{"id": "a", "role": "writer", "parent": "ghost"}'),
        "unknown parents: 'a' names parent 'ghost'",
    ),
    "repeated dependency": (
        plan_text(
            '{"id": "a", "role": "writer"}, {"id": "b", "role": "writer", "depends_on": ["a", "a"]}'
        ),
        "repeated dependencies: 'b' lists 'a' more than once",
    ),
    # a ValueError traceback from json
    "huge number": (
        plan_text('{"id": "a", "role": "writer", "inputs": {"n": ' + "9" * 5000 + "}}"),
        "a number has more than 4300 digits",
    ),
}


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_plan_is_one_line_and_exit_2_from_both_commands(
    case: str,
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text, needle = MALFORMED[case]
    path = tmp_path / "plan.json"
    path.write_text(text)
    monkeypatch.setenv("KIMMY_BASE_URL", "http://127.0.0.1:9/v1")  # never asked
    extra = ["--runs-dir", str(tmp_path / "runs")] if command == "run" else []
    code = main([command, str(path), *extra])
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and "valid;" not in out, (out, err)
    assert len(lines) == 1 and lines[0].startswith("kimmy: error: "), err
    assert needle in lines[0]
    assert len(lines[0]) < 300


def test_what_validate_passes_is_what_run_runs(tmp_path: Path) -> None:
    """The output schema of the role (`Answer`) may be named; an int is a number."""
    plan = {"subtasks": [{"id": "a", "role": "writer", "output_schema": "Answer",
                          "timeout_s": 30, "max_retries": 0}]}  # fmt: skip
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    assert main(["validate", str(path)]) == 0
