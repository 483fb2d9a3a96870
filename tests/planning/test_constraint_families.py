"""Each ILP constraint family on a tiny instance whose optimum brute-force enumeration finds independently.

Every test also shows the family binds: without the limit (or with it relaxed) the optimum is different.
"""

from __future__ import annotations

import pytest
from planning_factories import brute_force, close, inventory, problem, profile, vertex

from placement.costmodel import evaluate
from placement.solver import SolverOptions, solve
from placement.solver.domains import restricted_domain

CHAIN = [
    vertex("Source: S", rin=0, rout=1000, busy=100, bpr=100),  # 0.8 Mbit/s
    vertex("A", rin=1000, rout=500, busy=100, bpr=100),  # 0.4 Mbit/s
    vertex("B", rin=500, rout=500, busy=100, bpr=20),  # 0.08 Mbit/s
    vertex("K", rin=500, rout=10, busy=50, bpr=50, stateful=True, state=1e6),
    vertex("Sink: T", rin=10, rout=0, busy=5, bpr=0),
]
CHAIN_EDGES = [("Source: S", "A", "FORWARD"), ("A", "B", "FORWARD"), ("B", "K", "HASH"), ("K", "Sink: T", "FORWARD")]
PINS = {"sources": {"Source: S": "rpi1"}}


def hosts_of(result, pr, name):
    return [result.assignment[s.key] for s in pr.subtasks if s.vertex_name == name]


def assert_matches_brute_force(pr):
    best, feasible = brute_force(pr)
    result = solve(pr)
    assert feasible > 0 and result.status == "optimal"
    assert close(result.cost.wan_mbit, best.wan_mbit), (result.cost.wan_mbit, best.wan_mbit)
    assert close(result.cost.server_cores, best.server_cores)
    assert close(result.cost.latency_ms, best.latency_ms)
    assert result.cost.feasible
    return result


def test_one_host_per_subtask_every_subtask_gets_exactly_one_host():
    pr = problem(inventory(pins=PINS), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(pr)
    assert set(result.assignment) == {s.key for s in pr.subtasks}
    assert all(h in {"server", "rpi1"} for h in result.assignment.values())


def test_cpu_capacity_limits_what_the_pi_takes():
    # rpi1 with 1 core at 80 %: 0.8 cores. Each of S, A, B costs 0.1 server cores = 0.333 Pi cores -> only S and A fit.
    tight = problem(inventory([{"name": "rpi1", "cores": 1}], pins=PINS), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(tight)
    assert hosts_of(result, tight, "A") == ["rpi1"] and hosts_of(result, tight, "B") == ["server"]
    assert result.cost.wan_mbit == pytest.approx(0.4)
    assert result.cost.host("rpi1").cores_used == pytest.approx(2 * 0.1 / 0.3)
    roomy = problem(inventory([{"name": "rpi1", "cores": 4}], pins=PINS), profile(CHAIN, CHAIN_EDGES))
    assert solve(roomy).cost.wan_mbit == pytest.approx(0.08)  # without the limit B goes to the Pi too


def test_task_slots_with_slot_sharing_count_per_vertex():
    # Both sources on rpi1 (2 slots): A has 3 subtasks fed by REBALANCE from rpi1 alone, so all three could go there,
    # but a slot holds one subtask of each vertex: at most 2 of A's 3 subtasks.
    vs = [
        vertex("Source: S", 2, rin=0, rout=1000, busy=10, bpr=100),
        vertex("A", 3, rout=100, busy=10, bpr=100),
        vertex("Sink: T", 1, rout=0, busy=1),
    ]
    es = [("Source: S", "A", "REBALANCE"), ("A", "Sink: T", "REBALANCE")]
    pins = {"sources": {"Source: S": "rpi1"}}
    two_slots = problem(inventory([{"name": "rpi1", "task_slots": 2}], pins=pins), profile(vs, es))
    result = assert_matches_brute_force(two_slots)
    assert sorted(hosts_of(result, two_slots, "A")) == ["rpi1", "rpi1", "server"]
    assert result.cost.host("rpi1").slots_used == 2
    three_slots = problem(inventory([{"name": "rpi1", "task_slots": 3}], pins=pins), profile(vs, es))
    assert hosts_of(solve(three_slots), three_slots, "A") == ["rpi1"] * 3


def test_task_slots_without_slot_sharing_count_every_subtask():
    vs = [
        vertex("Source: S", 2, rin=0, rout=1000, busy=10, bpr=100),
        vertex("A", 2, rout=100, busy=10, bpr=100),
        vertex("Sink: T", 1, rout=0, busy=1),
    ]
    es = [("Source: S", "A", "FORWARD"), ("A", "Sink: T", "REBALANCE")]
    pins = {"sources": {"Source: S": "rpi1"}}
    pr = problem(inventory([{"name": "rpi1", "task_slots": 3}], pins=pins, slot_sharing=False), profile(vs, es))
    result = assert_matches_brute_force(pr)
    assert hosts_of(result, pr, "A").count("rpi1") == 1  # 2 sources + 1 A = 3 slots
    assert result.cost.host("rpi1").slots_used == 3


def test_memory_capacity_limits_subtasks_on_the_pi():
    # 1 GiB per subtask, Pi 4 GiB at 80 % = 3276 MiB: three subtasks fit (S, A, B would be 3 -> fits; make it 2 GiB
    # each)
    pr = problem(inventory(pins=PINS, policy={"memory_per_subtask": "1400MiB"}), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(pr)
    assert hosts_of(result, pr, "A") == ["rpi1"] and hosts_of(result, pr, "B") == ["server"]
    assert result.cost.host("rpi1").memory_mib_used == pytest.approx(2800)


def test_wan_bandwidth_is_a_hard_limit_and_infeasibility_names_the_link():
    # Link of 0.5 Mbit/s (0.45 usable): the source alone sends 0.8, so A must run on the Pi...
    pr = problem(inventory([{"name": "rpi1", "bandwidth": "500kbit"}], pins=PINS), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(pr)
    assert hosts_of(result, pr, "A") == ["rpi1"]
    # ...and when A is forbidden there, nothing fits: the elastic re-solve names the link and the shortfall.
    stuck = problem(
        inventory([{"name": "rpi1", "bandwidth": "500kbit"}], pins={**PINS, "forbid": {"A": "rpi1"}}),
        profile(CHAIN, CHAIN_EDGES),
    )
    assert brute_force(stuck)[1] == 0
    failed = solve(stuck)
    assert failed.status == "infeasible" and failed.assignment is None
    assert [s.kind for s in failed.shortages] == ["link"]
    assert failed.shortages[0].needed == pytest.approx(0.8)
    assert failed.reason == (
        "link rpi1→server needs 0.8 Mbit/s, has 0.5 (0.45 usable); "
        "A is forbidden on rpi1 (pins.forbid), where its input is: drop the forbid to process it there"
    )


def test_cpu_shortage_is_named_when_the_pinned_source_does_not_fit():
    # four source threads of 0.2 server cores each keep up on a Pi (0.67 of a core) but need 2.67 of its 1 core
    vs = [vertex("Source: S", 4, rin=0, rout=1000, busy=200, bpr=10), vertex("Sink: T", rout=0, busy=1)]
    pr = problem(
        inventory([{"name": "rpi1", "cores": 1, "task_slots": 4}], pins=PINS),
        profile(vs, [("Source: S", "Sink: T", "REBALANCE")]),
    )
    failed = solve(pr)
    assert failed.status == "infeasible"
    assert failed.shortages[0].kind == "cpu" and failed.shortages[0].resource == "rpi1"
    assert failed.shortages[0].needed == pytest.approx(4 * 0.2 / 0.3)
    assert "host rpi1 needs 2.67 cores, has 1 (0.80 usable)" in failed.reason


def test_a_source_whose_thread_cannot_keep_up_where_it_is_born_is_named():
    """One source thread of 0.9 server cores needs 3 cores of its Pi (speed 0.3): no core count helps, and the plan
    says so naming the thread, with the same figures as a shortage."""
    vs = [vertex("Source: S", rin=0, rout=1000, busy=900, bpr=10), vertex("Sink: T", rout=0, busy=1)]
    pr = problem(
        inventory([{"name": "rpi1", "cores": 16}], pins=PINS), profile(vs, [("Source: S", "Sink: T", "FORWARD")])
    )
    failed = solve(pr)
    assert failed.status == "infeasible"
    assert failed.reason == (
        "Source: S (1/1) cannot keep up on rpi1: one thread would need 3.00 of a core, 0.80 usable, "
        "nor on any other host it may run on"
    )
    (short,) = failed.shortages
    assert (short.kind, short.resource, short.detail) == ("thread", "rpi1", "Source: S (1/1)")
    assert short.needed == pytest.approx(3.0) and short.usable == pytest.approx(0.8)


def test_sources_stay_where_their_data_is_born():
    pinned = problem(inventory(pins=PINS), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(pinned)
    assert hosts_of(result, pinned, "Source: S") == ["rpi1"]
    unpinned = problem(inventory(), profile(CHAIN, CHAIN_EDGES))  # no birth pin: born at the server side
    assert set(restricted_domain(unpinned)[("source-s", 0)]) == {"server"}
    result = assert_matches_brute_force(unpinned)
    assert set(result.assignment.values()) == {"server"} and result.cost.wan_mbit == 0


def test_sinks_and_stateful_operators_stay_on_servers_unless_allowed():
    default = problem(inventory(pins=PINS), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(default)
    assert hosts_of(result, default, "K") == ["server"] and hosts_of(result, default, "Sink: T") == ["server"]
    allowed = problem(inventory([{"name": "rpi1", "allow_stateful": True}], pins=PINS), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(allowed)
    assert hosts_of(result, allowed, "K") == ["rpi1"]  # the aggregate shrinks 0.08 Mbit/s to 0.004
    assert result.cost.wan_mbit == pytest.approx(10 * 50 * 8 / 1e6)
    sinks_too = problem(
        inventory([{"name": "rpi1", "allow_stateful": True, "allow_sinks": True}], pins=PINS),
        profile(CHAIN, CHAIN_EDGES),
    )
    result = assert_matches_brute_force(sinks_too)
    assert hosts_of(result, sinks_too, "Sink: T") == ["rpi1"] and result.cost.wan_mbit == 0


def test_user_pins_and_forbids():
    pinned = problem(inventory(pins={**PINS, "operators": {"A": "server"}}), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(pinned)
    assert hosts_of(result, pinned, "A") == ["server"] and result.cost.wan_mbit == pytest.approx(0.8)
    forbidden = problem(inventory(pins={**PINS, "forbid": {"B": ["rpi1"]}}), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(forbidden)
    assert hosts_of(result, forbidden, "B") == ["server"] and result.cost.wan_mbit == pytest.approx(0.4)
    # a pin overrides the server-only default for a stateful operator
    on_edge = problem(inventory(pins={**PINS, "operators": {"K": "rpi1"}}), profile(CHAIN, CHAIN_EDGES))
    result = assert_matches_brute_force(on_edge)
    assert hosts_of(result, on_edge, "K") == ["rpi1"]


def test_no_data_flows_down_into_an_edge_host():
    # A shrinks records, B inflates them, C shrinks them again. The Pi fits three subtasks; without the rule the
    # cheapest would be S, A and C on the Pi with B on the server (data going down to C).
    vs = [
        vertex("Source: S", rin=0, rout=1000, busy=100, bpr=100),
        vertex("A", busy=100, bpr=10),
        vertex("B", busy=100, bpr=1000),
        vertex("C", busy=100, bpr=1),
        vertex("Sink: T", rout=0, busy=1),
    ]
    es = [("Source: S", "A", "FORWARD"), ("A", "B", "FORWARD"), ("B", "C", "FORWARD"), ("C", "Sink: T", "FORWARD")]
    pr = problem(inventory([{"name": "rpi1", "cores": 1.25}], pins=PINS), profile(vs, es))
    down = {s.key: ("rpi1" if s.vertex_name in ("Source: S", "A", "C") else "server") for s in pr.subtasks}
    cost = evaluate(pr, down)
    assert any("data flows down into edge host rpi1" in v for v in cost.violations)
    result = assert_matches_brute_force(pr)
    assert hosts_of(result, pr, "C") == ["server"] and hosts_of(result, pr, "A") == ["rpi1"]
    assert result.cost.wan_mbit == pytest.approx(1000 * 10 * 8 / 1e6)


def test_all_to_all_input_from_two_pis_keeps_the_operator_on_the_server():
    vs = [
        vertex("Source: S", 2, rin=0, rout=1000, busy=10, bpr=100),
        vertex("A", 2, rout=10, busy=10, bpr=10),
        vertex("Sink: T", rout=0, busy=1),
    ]
    es = [("Source: S", "A", "HASH"), ("A", "Sink: T", "REBALANCE")]
    pr = problem(
        inventory([{"name": "rpi1"}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi2"]}}),
        profile(vs, es),
    )
    assert all(restricted_domain(pr)[("a", i)] == ["server"] for i in range(2))
    result = assert_matches_brute_force(pr)
    assert result.cost.link("rpi1").mbit == pytest.approx(0.8) and result.cost.link("rpi2").mbit == pytest.approx(0.8)


def test_broadcast_and_hash_traffic_from_one_pi():
    # Both sources on rpi1: the HASH consumer may go there; BROADCAST sends a full copy to each of 2 consumers.
    vs = [
        vertex("Source: S", 2, rin=0, rout=1000, busy=10, bpr=100),
        vertex("A", 2, rout=1000, busy=10, bpr=100),
        vertex("Sink: T", rout=0, busy=1),
    ]
    es = [("Source: S", "A", "BROADCAST"), ("A", "Sink: T", "REBALANCE")]
    pr = problem(
        inventory([{"name": "rpi1", "cores": 0.1, "task_slots": 4}], pins={"sources": {"Source: S": "rpi1"}}),
        profile(vs, es),
    )
    pr_cost = solve(pr).cost  # the Pi has no room for A: every record crosses twice (one copy per A subtask)
    assert pr_cost.wan_mbit == pytest.approx(2 * 2 * 0.8)
    assert_matches_brute_force(pr)


def test_latency_term_is_mean_wan_delay_over_source_to_sink_paths():
    vs = [
        vertex("Source: X", rin=0, rout=100, busy=10),
        vertex("Source: Y", rin=0, rout=100, busy=10),
        vertex("J", rout=10, busy=10, stateful=True),
        vertex("Sink: T", rout=0, busy=1),
    ]
    es = [("Source: X", "J", "HASH"), ("Source: Y", "J", "HASH"), ("J", "Sink: T", "FORWARD")]
    inv = inventory(
        [{"name": "rpi1", "delay": "10ms"}, {"name": "rpi2", "delay": "100ms"}],
        pins={"sources": {"Source: X": "rpi1", "Source: Y": "rpi2"}},
    )
    result = assert_matches_brute_force(problem(inv, profile(vs, es)))
    assert result.cost.latency_ms == pytest.approx((10 + 100) / 2)


def test_weighted_objective_can_trade_wan_for_server_cpu():
    # B inflates records and is CPU-heavy: lexicographic keeps it on the server (WAN first); a huge CPU weight moves it.
    vs = [
        vertex("Source: S", rin=0, rout=1000, busy=10, bpr=10),
        vertex("B", busy=200, bpr=100),  # 0.67 of a Pi core
        vertex("Sink: T", rout=0, busy=1),
    ]
    es = [("Source: S", "B", "FORWARD"), ("B", "Sink: T", "FORWARD")]
    lexi = problem(inventory(pins=PINS), profile(vs, es))
    assert hosts_of(solve(lexi), lexi, "B") == ["server"]
    weighted = problem(
        inventory(pins=PINS, policy={"objective": "weighted", "weights": {"wan": 1, "server_cpu": 100}}),
        profile(vs, es),
    )
    result = solve(weighted)
    assert result.objective_mode == "weighted" and hosts_of(result, weighted, "B") == ["rpi1"]


def test_cbc_and_highs_agree():
    pr = problem(inventory([{"name": "rpi1", "cores": 1}], pins=PINS), profile(CHAIN, CHAIN_EDGES))
    highs, cbc = solve(pr, SolverOptions(solver="highs")), solve(pr, SolverOptions(solver="cbc"))
    assert highs.solver == "highs" and cbc.solver == "cbc"
    assert cbc.status == "optimal" and cbc.cost.wan_mbit == pytest.approx(highs.cost.wan_mbit)
    assert cbc.cost.server_cores == pytest.approx(highs.cost.server_cores)
    assert all(st.info.gap is not None and st.info.gap <= 1e-4 for st in highs.stages + cbc.stages)
