"""The rescale ILP honours ``policy.max_latency_ms``: the latency-bound family of :mod:`placement.solver.families`,
instantiated over the rescale model's counts and choices of parallelism, against the brute force of
``rescale_factories`` (every parallelism, every assignment, judged by the evaluator — the bound included)."""

from __future__ import annotations

import math
import random

import pytest
from rescale_factories import brute_force, edge_filter_space, key, random_space

from placement.costmodel.rescaled import RescaleSpace, build_space
from placement.solver.rescale import solve_rescale


def bounded(space: RescaleSpace, ms: float) -> RescaleSpace:
    """The same space with every source→sink path bounded by ``ms``."""
    doc = space.inventory.model_dump(mode="json", by_alias=True)
    doc["policy"]["max_latency_ms"] = ms
    inv = type(space.inventory).model_validate(doc)
    return build_space(inv, space.profile, rate_scale=space.rate_scale, placement_mode=space.placement_mode)


def worst(cost) -> float:
    return max((p.latency_ms for p in cost.paths), default=0.0)


def close(a, b) -> bool:
    return all(math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) for x, y in zip(a[:3], b[:3])) and a[3] == b[3]


def spaces():
    for seed in range(60):
        yield f"random {seed}", random_space(random.Random(seed))
    for seed in range(20):
        yield f"edge-filter {seed}", edge_filter_space(random.Random(seed))


def test_a_bound_below_the_free_optimum_s_latency_changes_the_plan_and_brute_force_agrees():
    tightened = rescaled = 0
    for name, space in spaces():
        free = solve_rescale(space)
        if free.plan.cost is None or worst(free.plan.cost) <= 0:
            continue
        bound = worst(free.plan.cost) - 0.5  # the free optimum breaks it
        tight = bounded(space, bound)
        best = brute_force(tight)
        result = solve_rescale(tight)
        if best.best is None:
            assert result.plan.status == "infeasible", (name, result.plan.status)
            assert result.plan.shortages and result.plan.shortages[0].kind == "latency", (name, result.plan.reason)
            continue
        assert result.plan.status == "optimal", (name, result.plan.reason)
        assert worst(result.plan.cost) <= bound + 1e-6, name
        assert not result.plan.cost.violations, (name, result.plan.cost.violations)
        assert close(key(result.plan.cost, result.parallelism), best.key), (
            name,
            key(result.plan.cost, result.parallelism),
            best.key,
        )
        tightened += 1
        rescaled += result.parallelism != free.parallelism
    assert tightened >= 8 and rescaled >= 8, (tightened, rescaled)  # measured: 11 and 11 of the 80


@pytest.mark.parametrize("seed", range(12))
def test_a_bound_the_free_optimum_meets_keeps_it(seed):
    space = random_space(random.Random(seed))
    free = solve_rescale(space)
    if free.plan.cost is None:
        return
    loose = solve_rescale(bounded(space, worst(free.plan.cost) + 1.0))
    assert loose.plan.status == "optimal"
    assert close(key(loose.plan.cost, loose.parallelism), key(free.plan.cost, free.parallelism))
