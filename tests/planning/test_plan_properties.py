"""Property-based tests: on random jobs and clusters, every ILP plan satisfies every rule and capacity (checked by
the independent evaluator), is never worse than the greedy heuristic or all-on-server, and on instances small enough
to enumerate equals the brute-force optimum.

Derandomized: every run draws the same examples (CI cannot pass one day and fail the next on the same code), and the
examples random runs once found are pinned with ``@example`` (FOUND below). The objective's terms are pinned one by
one by fixed cases in test_objective_terms.py; these properties are the wide net around them."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from planning_factories import brute_force, close, inventory, problem, profile, vertex

from placement.solver import solve
from placement.solver.baselines import all_on_server, greedy

STRATEGIES = ["HASH", "REBALANCE", "RESCALE", "BROADCAST", "FORWARD", "GLOBAL"]


@st.composite
def instances(draw, max_vertices: int = 5, max_parallelism: int = 2, max_edges: int = 2):
    n_edge = draw(st.integers(1, max_edges))
    edges = [
        {
            "name": f"rpi{k + 1}",
            "cores": draw(st.sampled_from([0.5, 1, 2, 4])),
            "task_slots": draw(st.integers(1, 4)),
            "bandwidth": f"{draw(st.sampled_from([1, 5, 20, 100]))}mbit",
            "delay": f"{draw(st.sampled_from([5, 50]))}ms",
            "allow_stateful": draw(st.booleans()),
        }
        for k in range(n_edge)
    ]
    n = draw(st.integers(2, max_vertices))
    vs, es, par = [], [], []
    for k in range(n):
        p = draw(st.integers(1, max_parallelism))
        name = "Source: S" if k == 0 else f"V{k}"
        rin = 0 if k == 0 else draw(st.sampled_from([100, 1000, 5000]))
        vs.append(
            vertex(
                name,
                p,
                rin=rin,
                rout=draw(st.sampled_from([0, 100, 1000, 5000])),
                busy=draw(st.sampled_from([0, 10, 100, 400])),
                bpr=draw(st.sampled_from([10, 100, 400])),
                stateful=k > 0 and draw(st.booleans()),
            )
        )
        par.append(p)
        if k > 0:
            for u in sorted(draw(st.sets(st.integers(0, k - 1), min_size=1, max_size=2))):
                strategy = draw(st.sampled_from(STRATEGIES))
                if strategy == "FORWARD" and par[u] != p:
                    strategy = "HASH"
                es.append((vs[u]["name"], name, strategy))
    births = [draw(st.sampled_from([e["name"] for e in edges])) for _ in range(par[0])]
    inv = inventory(edges, pins={"sources": {"Source: S": births}})
    return problem(inv, profile(vs, es))


SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

# Examples random runs found (2 of 6 runs caught a BROADCAST fan-out coefficient of 1 with the first): kept for good.
FOUND = [
    # source -FORWARD-> operator -BROADCAST x2-> sink: optimum 0.8 Mbit/s (operator on the server); with fan-out 1
    # the ILP ties the two and puts the operator on the Pi, 1.6 Mbit/s
    problem(
        inventory([{"name": "rpi1"}], pins={"sources": {"Source: S": "rpi1"}}),
        profile(
            [
                vertex("Source: S", rin=0, rout=1000, busy=100),
                vertex("V1", rout=1000, busy=100),
                vertex("V2", 2, rout=0, busy=10),
            ],
            [("Source: S", "V1", "FORWARD"), ("V1", "V2", "BROADCAST")],
        ),
    ),
]


def pinned(test):
    for case in FOUND:
        test = example(case)(test)
    return test


@SETTINGS
@pinned
@given(instances())
def test_ilp_plans_are_feasible_and_never_worse_than_the_baselines(pr):
    result = solve(pr)
    baselines = [greedy(pr), all_on_server(pr)]
    if result.status == "infeasible":
        assert all(not b.cost.feasible for b in baselines), "a baseline found a plan the ILP called infeasible"
        assert result.reason
        return
    assert result.status == "optimal"
    assert result.cost.feasible, result.cost.violations
    for b in baselines:
        if b.cost.feasible:
            assert result.cost.wan_mbit <= b.cost.wan_mbit + 1e-6, (b.strategy, b.cost.wan_mbit, result.cost.wan_mbit)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@pinned
@given(instances(max_vertices=4, max_parallelism=2, max_edges=1))
def test_ilp_equals_brute_force_optimum(pr):
    # too big to enumerate: reject this example only (pytest.skip here would skip the whole test)
    assume(len(pr.hosts) ** len(pr.subtasks) <= 4096)
    best, feasible = brute_force(pr)
    result = solve(pr)
    if feasible == 0:
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert close(result.cost.wan_mbit, best.wan_mbit)
    assert close(result.cost.server_cores, best.server_cores, rel=1e-4)
    assert close(result.cost.latency_ms, best.latency_ms)
