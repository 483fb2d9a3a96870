"""The hard instance family (benchmarks/hard_jobs.py): it has the shapes it promises, every instance is feasible, and at
sizes small enough to enumerate, brute force (tests/planning/brute.py: no ILP, every leaf judged by the evaluator)
certifies the exact model and the fleet decomposition: same WAN, server CPU and latency."""

from __future__ import annotations

import pytest
from brute import brute_force, lexicographic_key
from hard_jobs import instance

from placement.costmodel import build_problem
from placement.profile.format import ShipStrategy
from placement.solver import solve
from placement.solver.fleet import solve_decomposed
from placement.solver.homes import homes

# (motif, subtasks, hosts): one lane (11 subtasks), a local join on one or two Pis, a cross-Pi union over two Pis,
# all with two servers of different sizes; and the three motifs mixed on three Pis
SMALL = [("lane", 8, 4), ("join", 6, 4), ("join", 12, 4), ("union", 10, 4), ("union", 10, 5)]
SEEDS = range(1, 13)


@pytest.mark.parametrize("motif,subtasks,hosts", SMALL)
def test_brute_force_certifies_the_exact_model_and_the_decomposition(motif, subtasks, hosts):
    agreed = 0
    for seed in SEEDS:
        pr = build_problem(*instance(subtasks, hosts, seed, servers=2, motifs=(motif,)))
        best, feasible, _ = brute_force(pr)
        assert best is not None and feasible > 0, f"seed {seed}: the generator promised a feasible instance"
        exact, decomposed = solve(pr), solve_decomposed(pr)
        assert exact.status == decomposed.status == "optimal", seed
        assert exact.cost.feasible and decomposed.cost.feasible
        assert lexicographic_key(exact.cost) == lexicographic_key(best), f"seed {seed}: exact ≠ brute force"
        assert lexicographic_key(decomposed.cost) == lexicographic_key(best), (
            f"seed {seed}: decomposition ≠ brute force"
        )
        for stage in decomposed.stages:  # the bound it reports never exceeds what the stage achieved
            assert stage.info.bound <= stage.info.objective + 1e-6
        agreed += 1
    assert agreed == len(SEEDS)


def test_instances_have_the_hard_shapes():
    inv, profile = instance(400, 40, seed=3)
    pr = build_problem(inv, profile)
    strategies = {e.ship_strategy for e in profile.edges}
    assert {ShipStrategy.FORWARD, ShipStrategy.HASH, ShipStrategy.BROADCAST, ShipStrategy.REBALANCE} <= strategies
    pis = [h for h in pr.edges]
    assert len({h.speed for h in pis}) >= 3  # Pis of several speeds
    assert len({(h.cores, h.speed) for h in pr.servers}) == len(pr.servers) >= 2  # servers of different sizes
    bandwidths = [h.uplink_mbit for h in pis]
    assert max(bandwidths) / min(bandwidths) >= 50  # links of very different bandwidths
    assert inv.pins.operators and inv.pins.forbid  # pins and forbids
    hm = homes(pr)
    # a union whose inputs come from two Pis: its subtasks can only run on a server
    union = next(v for v in profile.vertices if v.name.startswith("Union"))
    assert all(not hm.edge[(union.id, i)] for i in range(union.parallelism))
    # fan-out: Enrich feeds three operators; and a two-input operator that may stay on its Pi (the local join)
    enrich = next(v for v in profile.vertices if v.name.startswith("Enrich"))
    assert sum(1 for e in profile.edges if e.source == enrich.id) == 3
    fuse = next(v for v in profile.vertices if v.name.startswith("Fuse"))
    assert any(hm.edge[(fuse.id, i)] for i in range(fuse.parallelism))


def test_tight_pi_cpu_keeps_some_lanes_off_their_pi():
    """Not every lane can keep all its stateless work on its Pi: the Pi's cores run out, or one subtask's thread cannot
    keep up on it (the rules alone would let it stay: ``homes(thread=False)``). With the thread limit applied first,
    what is left on a Pi fits its cores on this instance (36 of its 57 Pis lose a subtask to its thread)."""
    pr = build_problem(*instance(600, 60, seed=2))
    rules, hm = homes(pr, thread=False), homes(pr)
    short = slow = 0  # Pis whose own subtasks need more cores than they have; Pis where some thread cannot keep up
    for h in pr.edges:
        local = [s for s in pr.subtasks if h.name in rules.edge[s.key]]
        short += sum(s.cores_on(h) for s in local) > pr.usable_cores(h)
        slow += any(not pr.keeps_up(s, h) for s in local)
        assert all(pr.keeps_up(s, h) for s in pr.subtasks if h.name in hm.edge[s.key])
    assert short == 25 and slow == 36


def test_every_generated_instance_is_feasible_and_solves():
    for seed in (1, 2):
        pr = build_problem(*instance(300, 30, seed))
        result = solve(pr)
        assert result.status == "optimal" and result.cost.feasible
