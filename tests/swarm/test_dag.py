"""Plan validation (typed errors naming ids), DAG metrics, and reading plan files."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx
import pytest

from kimmy_swarm.swarm.dag import (
    build_graph,
    check_plan,
    critical_path,
    critical_path_length,
    topological_generations,
    validate_plan,
)
from kimmy_swarm.swarm.errors import (
    ConfigError,
    CycleError,
    DuplicateIdError,
    EmptyPlanError,
    PlanLimitError,
    PlanValidationError,
    UnknownDependencyError,
    UnknownRoleError,
    UnknownSchemaError,
    UserError,
)
from kimmy_swarm.swarm.planfile import load_plan, parse_plan
from kimmy_swarm.swarm.schema import Plan, Subtask


def plan(*specs: tuple[str, list[str]] | tuple[str, list[str], str], goal: str = "g") -> Plan:
    """A plan from `(id, depends_on[, role])` tuples."""
    subtasks = [
        Subtask(id=s[0], role=s[2] if len(s) > 2 else "r", depends_on=s[1])  # type: ignore[misc]
        for s in specs
    ]
    return Plan(goal=goal, subtasks=subtasks)


def assert_cycle_in_order(err: CycleError, p: Plan) -> None:
    """Each id in the printed cycle is a dependency of the next (wrapping around)."""
    cycle = list(err.cycle)
    by_id = p.by_id()
    for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True):
        assert a in by_id[b].depends_on, (a, b, cycle)
    assert " -> ".join([*cycle, cycle[0]]) in str(err)
    assert err.ids == tuple(cycle)


# --- validation errors -----------------------------------------------------------------


def test_valid_plan_passes_and_returns_the_graph() -> None:
    p = plan(("a", []), ("b", ["a"]), ("c", ["a", "b"]))
    graph = validate_plan(p, roles={"r"}, schemas=set())
    assert set(graph.edges) == {("a", "b"), ("a", "c"), ("b", "c")}


def test_three_cycle_printed_in_order() -> None:
    p = plan(("start", []), ("a", ["c", "start"]), ("b", ["a"]), ("c", ["b"]), ("after", ["c"]))
    with pytest.raises(CycleError) as info:
        check_plan(p)
    assert sorted(info.value.cycle) == ["a", "b", "c"]  # `start`, `after` are not on it
    assert_cycle_in_order(info.value, p)
    assert isinstance(info.value, PlanValidationError) and isinstance(info.value, UserError)


def test_one_cycle_among_two() -> None:
    p = plan(("a", ["b"]), ("b", ["a"]), ("x", ["y"]), ("y", ["z"]), ("z", ["x"]))
    with pytest.raises(CycleError) as info:
        check_plan(p)
    assert sorted(info.value.cycle) in (["a", "b"], ["x", "y", "z"])
    assert_cycle_in_order(info.value, p)


def test_self_dependency() -> None:
    p = plan(("ok", []), ("me", ["me", "ok"]))
    with pytest.raises(CycleError) as info:
        check_plan(p)
    assert info.value.ids == ("me",)
    assert "me -> me" in str(info.value)


def test_unknown_dependency_names_both_ids() -> None:
    p = plan(("a", []), ("b", ["a", "ghost"]))
    with pytest.raises(UnknownDependencyError) as info:
        check_plan(p)
    assert info.value.ids == ("b",)
    assert "'b' depends on 'ghost'" in str(info.value)


def test_duplicate_ids() -> None:
    p = plan(("a", []), ("b", []), ("a", []), ("b", ["a"]), ("c", []))
    with pytest.raises(DuplicateIdError) as info:
        check_plan(p)
    assert info.value.ids == ("a", "b")
    assert "'a'" in str(info.value) and "'b'" in str(info.value) and "'c'" not in str(info.value)


def test_unknown_role_lists_known_roles() -> None:
    p = plan(("a", [], "writer"), ("b", [], "wizard"), ("c", [], "wizard"))
    with pytest.raises(UnknownRoleError) as info:
        check_plan(p, roles={"writer", "researcher"})
    msg = str(info.value)
    assert info.value.ids == ("b", "c")
    assert "'wizard'" in msg and "'b'" in msg and "'c'" in msg
    assert "known roles: researcher, writer" in msg
    with pytest.raises(UnknownRoleError, match=r"\(none registered\)"):
        check_plan(p, roles=set())


def test_unknown_schema() -> None:
    p = Plan(
        subtasks=[
            Subtask(id="a", role="r", output_schema="Summary"),
            Subtask(id="b", role="r", output_schema="Nope"),
        ]
    )
    with pytest.raises(UnknownSchemaError) as info:
        check_plan(p, schemas={"Summary"})
    assert info.value.ids == ("b",)
    assert "'Nope'" in str(info.value) and "known schemas: Summary" in str(info.value)
    check_plan(p, schemas=None)  # None skips the check


def test_empty_plan() -> None:
    with pytest.raises(EmptyPlanError, match="no subtasks"):
        check_plan(Plan(goal="g"))


def test_limits_exceeded() -> None:
    p = plan(("a", []), ("b", ["a"]), ("c", ["a", "b"]))
    with pytest.raises(PlanLimitError, match="3 subtasks; at most 2"):
        check_plan(p, max_subtasks=2)
    check_plan(p, max_subtasks=3)
    with pytest.raises(PlanLimitError) as info:
        check_plan(p, max_dependencies=1)
    assert info.value.ids == ("c",)
    assert "'c'" in str(info.value) and "1 dependencies" in str(info.value)


def test_texts_and_inputs_have_limits() -> None:
    from kimmy_swarm.swarm.dag import MAX_INPUTS_BYTES, MAX_TEXT_CHARS

    check_plan(Plan(goal="g" * MAX_TEXT_CHARS, subtasks=[
        Subtask(id="a", role="r", instructions="i" * MAX_TEXT_CHARS)]))  # fmt: skip
    with pytest.raises(PlanLimitError, match="the goal has 200,001 characters"):
        check_plan(Plan(goal="g" * (MAX_TEXT_CHARS + 1), subtasks=[Subtask(id="a", role="r")]))
    long = Subtask(id="b", role="r", instructions="i" * (MAX_TEXT_CHARS + 1))
    with pytest.raises(PlanLimitError) as info:
        check_plan(Plan(subtasks=[Subtask(id="a", role="r"), long]))
    assert info.value.ids == ("b",)
    heavy = Subtask(id="c", role="r", inputs={"x": "é" * (MAX_INPUTS_BYTES // 2)})
    with pytest.raises(PlanLimitError, match="'c' have inputs over 8 MiB"):
        check_plan(Plan(subtasks=[heavy]))  # 2 bytes a character in UTF-8


def test_a_dependency_listed_twice_and_an_unknown_parent_are_refused() -> None:
    with pytest.raises(DuplicateIdError, match="'b' lists 'a' more than once") as info:
        check_plan(plan(("a", []), ("b", ["a", "a"])))
    assert info.value.ids == ("b",)
    stray = Plan(subtasks=[Subtask(id="a", role="r"), Subtask(id="b", role="r", parent="zz")])
    with pytest.raises(UnknownDependencyError, match="'b' names parent 'zz'"):
        check_plan(stray)
    spawned = Plan(subtasks=[Subtask(id="a", role="r"), Subtask(id="b", role="r", parent="a")])
    check_plan(spawned)  # a parent in the plan is fine


def test_size_is_checked_before_the_graph() -> None:
    # A plan over the limit is refused without looking at its (broken) edges.
    p = plan(("a", ["ghost"]), ("b", ["b"]))
    with pytest.raises(PlanLimitError):
        check_plan(p, max_subtasks=1)


def test_many_offenders_are_abbreviated() -> None:
    p = plan(*[(f"s{i}", [], "x") for i in range(20)])
    with pytest.raises(UnknownRoleError) as info:
        check_plan(p, roles={"r"})
    assert len(info.value.ids) == 20
    assert "(and 12 more)" in str(info.value)


def test_check_plan_is_linear_on_a_long_chain() -> None:
    n = 20_000  # a recursive DFS would overflow the stack here
    p = plan(("s0", []), *[(f"s{i}", [f"s{i - 1}"]) for i in range(1, n)])
    check_plan(p)


# --- metrics ---------------------------------------------------------------------------


def diamond() -> nx.DiGraph:
    #   a -> b -> d -> e
    #   a -> c ------> e
    p = plan(("a", []), ("b", ["a"]), ("c", ["a"]), ("d", ["b"]), ("e", ["d", "c"]))
    return build_graph(p.subtasks)


def test_topological_generations() -> None:
    assert topological_generations(diamond()) == [["a"], ["b", "c"], ["d"], ["e"]]
    wide = build_graph(plan(("z", []), ("y", []), ("x", ["z", "y"])).subtasks)
    assert topological_generations(wide) == [["y", "z"], ["x"]]


def test_critical_path_unweighted() -> None:
    g = diamond()
    assert critical_path(g) == ["a", "b", "d", "e"]
    assert critical_path_length(g) == 4.0
    assert critical_path(nx.DiGraph()) == []
    assert critical_path_length(nx.DiGraph()) == 0.0


def test_critical_path_weighted_prefers_heavy_branch() -> None:
    g = diamond()
    weights = {"a": 1.0, "b": 1.0, "c": 10.0, "d": 1.0, "e": 2.0}
    assert critical_path(g, weights) == ["a", "c", "e"]
    assert critical_path_length(g, weights) == 13.0


def test_critical_path_of_disconnected_graph() -> None:
    g = build_graph(plan(("a", []), ("b", ["a"]), ("x", []), ("y", ["x"]), ("z", ["y"])).subtasks)
    assert critical_path(g) == ["x", "y", "z"]
    assert critical_path_length(g, {"a": 5, "b": 5, "x": 1, "y": 1, "z": 1}) == 10.0


# --- plan files ------------------------------------------------------------------------


def test_parse_plan_from_text_bytes_and_dict() -> None:
    doc = {"goal": "g", "subtasks": [{"id": "a", "role": "r"}, {"id": "b", "role": "r"}]}
    expected = Plan.model_validate(doc)
    assert parse_plan(json.dumps(doc)) == expected
    assert parse_plan(json.dumps(doc).encode()) == expected
    assert parse_plan(doc) == expected


def test_bad_json_names_line_and_column() -> None:
    text = '{\n  "goal": "g",\n  "subtasks": [,]\n}'
    with pytest.raises(PlanValidationError, match=r"my\.json: not valid JSON: .* line 3 column 16"):
        parse_plan(text, source="my.json")


def test_non_utf8_bytes() -> None:
    with pytest.raises(PlanValidationError, match=r"not UTF-8|not valid JSON"):
        parse_plan(b"\xff\xfe{")


@pytest.mark.parametrize("doc, kind", [("[]", "list"), ("3", "int"), ('"x"', "str")])
def test_plan_must_be_an_object(doc: str, kind: str) -> None:
    with pytest.raises(PlanValidationError, match=f"JSON object .* got {kind}"):
        parse_plan(doc)


def test_pydantic_errors_summarized_in_one_line() -> None:
    doc = {
        "goal": "g",
        "subtasks": [
            {"id": "ok", "role": "r"},
            {"id": "bad", "role": "r", "timeout_s": -1},
            {"id": "also bad", "role": "r"},
            {"id": "x", "role": "r", "extra": 1},
            {"id": "y"},
        ],
    }
    with pytest.raises(PlanValidationError) as info:
        parse_plan(doc, source="p.json")
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("p.json: subtasks.1.timeout_s: ")
    assert "(got -1)" in msg
    assert msg.endswith("; and 1 more")  # 4 errors, 3 shown
    assert info.value.ids == ("bad", "also bad", "x", "y")


def test_long_bad_values_are_shortened() -> None:
    with pytest.raises(PlanValidationError) as info:
        parse_plan({"goal": ["x" * 500]})
    assert len(str(info.value)) < 200 and "..." in str(info.value)


def test_load_plan(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"subtasks": [{"id": "a", "role": "r"}]}))
    assert load_plan(path).subtasks[0].id == "a"
    assert load_plan(str(path)) == load_plan(path)


def test_load_plan_file_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigError, match="does not exist") as info:
        load_plan(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(ConfigError, match="is a directory"):
        load_plan(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    with pytest.raises(PlanValidationError, match=r"bad\.json: not valid JSON.*line 1 column 2"):
        load_plan(bad)
