"""Arbitrary JSON as a plan: the only outcomes are a valid run or a typed validation error."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kimmy_swarm.swarm import PlanValidationError, Swarm, parse_plan
from kimmy_swarm.swarm.context import SubtaskContext
from kimmy_swarm.swarm.schema import SubtaskStatus

IDS = ["a", "b", "c", "d"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
subtask_like = st.fixed_dictionaries(
    {"id": st.sampled_from(IDS) | st.text(max_size=4), "role": st.sampled_from(["w", "v", "x"])},
    optional={
        "depends_on": st.lists(st.sampled_from(IDS) | st.text(max_size=2), max_size=3)
        | json_values,
        "instructions": st.text(max_size=10) | json_values,
        "inputs": json_values,
        "timeout_s": st.floats(allow_nan=True, allow_infinity=True) | st.integers() | json_values,
        "max_retries": st.integers(-3, 5) | json_values,
        "output_schema": st.none() | st.text(max_size=3),
        "depth": st.integers(-1, 3),
        "surprise": json_values,
    },
)
plans = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"subtasks": st.lists(subtask_like | json_values, max_size=6) | json_values},
        optional={"goal": st.text(max_size=10) | json_values, "extra": json_values},
    ),
)


async def work(ctx: SubtaskContext) -> dict[str, object]:
    return {"id": ctx.id, "upstream": sorted(ctx.upstream)}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans)
@example({"subtasks": [{"id": "a", "role": "w", "timeout_s": float("inf")}]})
@example({"subtasks": [{"id": "a", "role": "w", "depends_on": ["a"]}]})
@example(
    {"subtasks": [{"id": "a", "role": "w", "depends_on": ["b", "b"]}, {"id": "b", "role": "v"}]}
)
def test_arbitrary_json_runs_or_raises_a_typed_validation_error(data: object) -> None:
    swarm = Swarm(roles={"w": work, "v": work}, max_retries=0, timeout_s=5)
    try:
        plan = parse_plan(json.dumps(data))
        result = swarm.run_sync(plan)
    except PlanValidationError as exc:
        assert str(exc)  # a message a person can read
        return
    assert set(result.results) == {s.id for s in plan.subtasks}
    for sub in plan.subtasks:
        res = result.results[sub.id]
        assert res.status is SubtaskStatus.DONE, res
        assert res.output == {"id": sub.id, "upstream": sorted(set(sub.depends_on))}
