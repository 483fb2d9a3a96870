"""Several jobs planned together (issue 24): the joint model's optimum is the brute-force optimum over every
combination of the jobs' plans, on a few hundred small random instances — 2–3 jobs, the six ship strategies, births,
pins and forbids, Pis whose uplinks, CPU and slots the jobs compete for. The enumerator
(:mod:`multi_job_factories`) adds the jobs' loads up itself; it shares nothing with the joint model."""

from __future__ import annotations

import pytest
from multi_job_factories import STRATEGIES, better, joint_brute_force, problems, random_instance

from placement.costmodel import evaluate
from placement.costmodel.jobs import combine
from placement.solver import solve
from placement.solver.fleet import solve_decomposed

CHUNKS = 15
PER_CHUNK = 20  # 300 instances


def figures(cost) -> tuple[float, float, float]:
    return (cost.wan_mbit, cost.server_cores, cost.latency_ms)


def same(a, b) -> bool:
    return not better(a, b) and not better(b, a)


def check(seed: int, decompose: bool, servers: int = 1) -> str:
    inv, profiles = random_instance(seed, servers)
    named = problems(inv, profiles)
    best, _, feasible = joint_brute_force(named)
    jp = combine(named)
    result = solve(jp.problem)
    if best is None:
        assert result.status == "infeasible", f"seed {seed}: brute force finds no plan, the model {result.status}"
        assert result.shortages or result.reason, seed
        return "infeasible"
    assert result.status == "optimal", f"seed {seed}: {result.status} {result.reason}"
    assert result.cost.feasible
    assert same(figures(result.cost), best), f"seed {seed}: model {figures(result.cost)} ≠ brute force {best}"
    # split back: each job's part is a plan of that job alone, and the parts add up to the joint figures
    parts = jp.split(result.assignment)
    costs = [evaluate(pr, parts[name]) for name, pr in named]
    assert all(c.feasible for c in costs), seed
    assert same(tuple(map(sum, zip(*(figures(c) for c in costs)))), best), seed
    if decompose:
        decomposed = solve_decomposed(jp.problem)
        assert decomposed.status == "optimal" and same(figures(decomposed.cost), best), f"seed {seed}: decomposition"
    return "optimal"


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_joint_model_equals_brute_force(chunk):
    outcomes = [check(seed, decompose=seed % 3 == 0) for seed in range(chunk * PER_CHUNK, (chunk + 1) * PER_CHUNK)]
    assert "optimal" in outcomes  # every chunk has instances that fit


@pytest.mark.parametrize("chunk", range(3))
def test_pooled_servers_are_packed_with_per_job_slots(chunk):
    """Two identical servers of one or two slots: the exact model solves them as one pool and packs its plan onto
    them, the decomposition too — either way no server holds more slots than it has, counted per job."""
    outcomes = [check(seed, decompose=True, servers=2) for seed in range(1000 + chunk * 20, 1000 + (chunk + 1) * 20)]
    assert "optimal" in outcomes


def test_the_instances_cover_what_the_issue_asks():
    strategies, jobs, infeasible, competing = set(), set(), 0, 0
    for seed in range(0, CHUNKS * PER_CHUNK, 3):
        inv, profiles = random_instance(seed)
        jobs.add(len(profiles))
        strategies |= {e.ship_strategy.value for p in profiles for e in p.edges}
        named = problems(inv, profiles)
        best, plan, _ = joint_brute_force(named)
        if best is None:
            infeasible += 1
            continue
        # the jobs compete: each job's best alone, added up, is not a joint plan (a shared capacity binds)
        alone = [joint_brute_force([n])[0] for n in named]
        if better(tuple(map(sum, zip(*alone))), best):
            competing += 1
    assert strategies == set(STRATEGIES) and jobs == {2, 3}
    assert infeasible >= 5 and competing >= 10, (infeasible, competing)
