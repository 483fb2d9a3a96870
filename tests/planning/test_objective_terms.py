"""Every term of the ILP objective pinned by a fixed instance whose optimum is known by hand and by brute force.

The ILP writes each term as a linear expression (placement/solver/objectives.py); the evaluator
(placement/costmodel/evaluate.py) prices a plan directly. A term with a wrong coefficient makes the solver pick a
plan the evaluator prices higher — but only on an instance where the coefficient decides. So each case here is a
*bracket*: two instances whose operator sits just below and just above the break-even point of the term under test
(it emits 90 % / 110 % of what placing it at the edge saves, or the weight is 90 % / 110 % of the break-even weight).
A coefficient off by more than 10 % in either direction moves one of the pair to the wrong side and fails it.

Each solved case is checked three ways: the hand-computed figure, the brute-force optimum over every assignment
(planning_factories.brute_force), and every stage's objective value against the evaluator's price of the plan (a
term that is wrong but happens not to change the decision still shows up there).

Mutations of placement/solver/objectives.py these tests were shown to catch (each applied to a copy of the tree,
this file run, the copy restored), also with the stage-objective check switched off: a BROADCAST sender counted once
instead of once per receiver; a sender of each other strategy counted n_V times; what a receiver takes off its host's
uplink x2 and x0.5 for each strategy in turn, share 1 instead of 1/n_V on all-to-all edges, 0 on FORWARD; the server
CPU term zeroed, halved, negated, or 1 per subtask; the latency rows of FORWARD, GLOBAL, RESCALE, HASH, REBALANCE,
BROADCAST edges deleted one strategy at a time, all all-to-all rows deleted; every uplink delay halved (33 in all;
the rest of tests/planning misses 25 of them).
"""

from __future__ import annotations

import itertools

import pytest
from planning_factories import brute_force, close, inventory, problem, vertex
from planning_factories import profile as v1_profile

from placement.costmodel import PlacementProblem, evaluate
from placement.profile.format import JobProfile
from placement.solver import solve

S_OUT = 0.8  # Mbit/s per source subtask: 1000 records/s x 100 bytes
PIN = {"sources": {"Source: S": "rpi1"}}
BELOW, ABOVE = 0.9, 1.1  # an operator emitting 90 % / 110 % of what it receives: the two sides of the break-even


def source(parallelism: int = 1) -> dict:
    return vertex("Source: S", parallelism, rin=0, rout=1000, busy=100, bpr=100)


def emitting(name: str, parallelism: int, mbit_each: float, *, busy: float = 100) -> dict:
    """A vertex whose every subtask emits ``mbit_each`` Mbit/s (1000 records/s of the matching size)."""
    return vertex(name, parallelism, rin=1000, rout=1000, busy=busy, bpr=mbit_each * 1e6 / 8 / 1000)


def sink(parallelism: int = 1) -> dict:
    return vertex("Sink: T", parallelism, rout=0, busy=1)


def profile(vertices: list[dict], edges: list[tuple[str, str, str]]) -> JobProfile:
    """A profile whose every edge carries its own figures: what each upstream subtask puts on it, one copy per record
    (a BROADCAST edge delivers that to each receiver). Explicit, so no rule for splitting a vertex's bytes over its
    edges stands between the numbers here and the objective under test."""
    data = v1_profile(vertices, edges).model_dump(mode="json")
    by_id = {v["id"]: v for v in vertices}
    for e in data["edges"]:
        up = by_id[e["source"]]
        e["records_per_s"] = [s["records_out_per_s"] for s in up["subtasks"]]
        e["bytes_per_s"] = [s["records_out_per_s"] * up["bytes_per_record_out"] for s in up["subtasks"]]
    return JobProfile.model_validate(data)


def hosts(result, pr: PlacementProblem, name: str) -> list[str]:
    return [result.assignment[s.key] for s in pr.subtasks if s.vertex_name == name]


def assert_stage_objectives_price_the_plan(result, pr: PlacementProblem) -> None:
    """What the ILP says each stage costs is what the evaluator says the plan costs."""
    cost = evaluate(pr, result.assignment)
    figures = {"wan": cost.wan_mbit, "server_cpu": cost.server_cores, "latency": cost.latency_ms}
    if result.objective_mode == "weighted":
        w = pr.policy.weights
        figures = {"weighted": w.wan * cost.wan_mbit + w.server_cpu * cost.server_cores + w.latency * cost.latency_ms}
    for stage in result.stages:
        assert stage.info.objective is not None, stage
        assert stage.info.objective == pytest.approx(figures[stage.name], rel=1e-5, abs=1e-6), (
            f"stage {stage.name}: the ILP's objective {stage.info.objective} but the plan costs {figures[stage.name]}"
        )


def solve_checked(pr: PlacementProblem):
    """Solve, check against brute force (lexicographic) and the stage objectives; return the result."""
    result = solve(pr)
    assert result.status == "optimal" and result.cost.feasible, (result.status, result.reason)
    best, feasible = brute_force(pr)
    assert feasible > 0
    assert close(result.cost.wan_mbit, best.wan_mbit), (result.cost.wan_mbit, best.wan_mbit)
    assert close(result.cost.server_cores, best.server_cores), (result.cost.server_cores, best.server_cores)
    assert close(result.cost.latency_ms, best.latency_ms), (result.cost.latency_ms, best.latency_ms)
    assert_stage_objectives_price_the_plan(result, pr)
    return result


def weighted_brute_force(pr: PlacementProblem) -> float:
    """The least ``w·(WAN, server CPU, latency)`` over every feasible assignment."""
    w = pr.policy.weights
    keys = [s.key for s in pr.subtasks]
    best = None
    for combo in itertools.product([h.name for h in pr.hosts], repeat=len(keys)):
        cost = evaluate(pr, dict(zip(keys, combo)))
        if cost.feasible:
            value = w.wan * cost.wan_mbit + w.server_cpu * cost.server_cores + w.latency * cost.latency_ms
            best = value if best is None else min(best, value)
    assert best is not None
    return best


def weighted_value(pr: PlacementProblem, result) -> float:
    w, c = pr.policy.weights, result.cost
    return w.wan * c.wan_mbit + w.server_cpu * c.server_cores + w.latency * c.latency_ms


# ---- WAN: what the operator after an edge saves when it runs at the edge (the receiving side) ------------------------
# Source: S (pinned to rpi1) -X-> A -> Sink: T. A at the edge stops S's output crossing and sends its own instead.
# (source parallelism, A parallelism, Mbit/s each A subtask receives, Mbit/s crossing with A on the server)
RECEIVING = {
    "FORWARD": (2, 2, S_OUT, 2 * S_OUT),  # S_i -> A_i
    "HASH": (1, 2, S_OUT / 2, S_OUT),  # a half of S to each A subtask
    "REBALANCE": (1, 2, S_OUT / 2, S_OUT),
    "RESCALE": (1, 2, S_OUT / 2, S_OUT),  # one upstream subtask feeds both: the same as REBALANCE
    "BROADCAST": (1, 2, S_OUT, 2 * S_OUT),  # a full copy to each A subtask
    "GLOBAL": (2, 1, 2 * S_OUT, 2 * S_OUT),  # everything to A's subtask 0
}


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["shrinks", "grows"])
@pytest.mark.parametrize("strategy", list(RECEIVING))
def test_wan_received_share_per_ship_strategy(strategy, factor):
    n_s, n_a, received, crossing = RECEIVING[strategy]
    vs = [source(n_s), emitting("A", n_a, factor * received), sink()]
    es = [("Source: S", "A", strategy), ("A", "Sink: T", "REBALANCE")]
    pr = problem(inventory(pins=PIN), profile(vs, es))
    result = solve_checked(pr)
    if factor < 1:  # A shrinks what it receives: every A subtask at the edge, only A's output crosses
        assert hosts(result, pr, "A") == ["rpi1"] * n_a
        assert result.cost.wan_mbit == pytest.approx(factor * crossing)
    else:  # A grows it: A stays on the server, S's output crosses
        assert hosts(result, pr, "A") == ["server"] * n_a
        assert result.cost.wan_mbit == pytest.approx(crossing)


def test_rescale_feeds_its_own_block_of_downstream_subtasks():
    """Flink wires RESCALE pointwise: 2 sources feeding 4 subtasks send to 2 each (u_0 -> v_0, v_1; u_1 -> v_2, v_3).
    With the sources born on two Pis, each Pi can keep its own block, so only A's output crosses; an all-to-all
    reading of RESCALE would make every A subtask receive from both Pis and keep all four on the server."""
    vs = [source(2), emitting("A", 4, BELOW * S_OUT / 2), sink()]
    es = [("Source: S", "A", "RESCALE"), ("A", "Sink: T", "REBALANCE")]
    inv = inventory([{"name": "rpi1"}, {"name": "rpi2"}], pins={"sources": {"Source: S": ["rpi1", "rpi2"]}})
    pr = problem(inv, profile(vs, es))
    result = solve_checked(pr)
    assert hosts(result, pr, "A") == ["rpi1", "rpi1", "rpi2", "rpi2"]
    assert result.cost.link("rpi1").mbit == pytest.approx(BELOW * S_OUT)
    assert result.cost.link("rpi2").mbit == pytest.approx(BELOW * S_OUT)


# ---- WAN: what an operator at the edge sends over its output edge (the sending side, the fan-out) -------------------
# Source: S (rpi1) -FORWARD-> O -X-> V (a sink, on the server). O at the edge sends fan-out x its output instead of
# S's 0.8 Mbit/s crossing. (V's parallelism, fan-out: the copies of each record that leave)
SENDING = {
    "FORWARD": (1, 1),
    "HASH": (2, 1),
    "REBALANCE": (2, 1),
    "RESCALE": (2, 1),
    "BROADCAST": (2, 2),
    "GLOBAL": (2, 1),
}


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["below-break-even", "above-break-even"])
@pytest.mark.parametrize("strategy", list(SENDING))
def test_wan_sender_fan_out_per_ship_strategy(strategy, factor):
    n_v, fan_out = SENDING[strategy]
    o_out = factor * S_OUT / fan_out  # O at the edge then sends factor x 0.8 Mbit/s
    vs = [source(), emitting("O", 1, o_out), vertex("Sink: V", n_v, rout=0, busy=1)]
    es = [("Source: S", "O", "FORWARD"), ("O", "Sink: V", strategy)]
    pr = problem(inventory(pins=PIN), profile(vs, es))
    result = solve_checked(pr)
    assert hosts(result, pr, "O") == (["rpi1"] if factor < 1 else ["server"])
    assert result.cost.wan_mbit == pytest.approx(min(factor, 1.0) * S_OUT)


def test_broadcast_fan_out_of_the_four_vertex_instance():
    """source -FORWARD-> operator -BROADCAST x2-> sink: the operator at the edge would send two copies of its 0.8
    Mbit/s (1.6); on the server only the source's 0.8 crosses. A fan-out coefficient of 1 ties the two, and server
    CPU then picks the edge: 1.6 Mbit/s."""
    vs = [source(), emitting("O", 1, S_OUT), vertex("Sink: V", 2, rout=0, busy=1)]
    pr = problem(inventory(pins=PIN), profile(vs, [("Source: S", "O", "FORWARD"), ("O", "Sink: V", "BROADCAST")]))
    result = solve_checked(pr)
    assert hosts(result, pr, "O") == ["server"] and result.cost.wan_mbit == pytest.approx(0.8)
    # and the plan with O at the edge really costs 1.6: the optimum above is not an accident of the evaluator
    at_edge = {**result.assignment, ("o", 0): "rpi1"}
    assert evaluate(pr, at_edge).wan_mbit == pytest.approx(1.6)


# ---- server CPU ------------------------------------------------------------------------------------------------------
# Source: S (rpi1) -REBALANCE-> A (2 subtasks, each emitting what it receives) -FORWARD-> Sink: T (2). The Pi has room
# for one A subtask only. Every plan crosses 0.8 Mbit/s, so WAN ties; one A at the edge saves its server CPU but makes
# the plan's paths cross the WAN twice (latency 2 x 50 ms). Lexicographic order puts server CPU before latency: with a
# CPU term that is zero or points the wrong way, the latency stage keeps both A subtasks on the server.


def cpu_tie_instance(policy: dict | None = None, a_busy: float = 100) -> PlacementProblem:
    vs = [source(), emitting("A", 2, S_OUT / 2, busy=a_busy), sink(2)]
    es = [("Source: S", "A", "REBALANCE"), ("A", "Sink: T", "FORWARD")]
    return problem(inventory([{"name": "rpi1", "cores": 1, "task_slots": 4}], pins=PIN, policy=policy), profile(vs, es))


def test_server_cpu_breaks_a_wan_tie_before_latency():
    pr = cpu_tie_instance()
    result = solve_checked(pr)
    assert sorted(hosts(result, pr, "A")) == ["rpi1", "server"]
    assert result.cost.wan_mbit == pytest.approx(S_OUT)
    a, t, s = 0.1, 0.005, 0.1  # server cores: A subtask (busy 100 ms/s), sink subtask (the floor), source (on rpi1)
    assert result.cost.server_cores == pytest.approx(a + 2 * t)
    assert result.cost.latency_ms == pytest.approx(100)
    assert s > 0  # the source's CPU is the Pi's, never the server's
    assert result.cost.host("rpi1").cores_used == pytest.approx((s + a) / 0.3)


# Weighted: Source: S (rpi1) -FORWARD-> B -FORWARD-> Sink: T with B growing records by 10 % and busy 300 ms/s. B at the
# edge costs 0.08 Mbit/s more WAN and saves 0.3 server cores: break-even weight 0.08 / 0.3 per core.
B_BUSY, B_EXTRA_MBIT = 200, 0.1 * S_OUT  # 200 ms/s: 0.67 of a Pi core, so B's one thread keeps up on rpi1
CPU_BREAK_EVEN = B_EXTRA_MBIT / (B_BUSY / 1000)


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["wan-wins", "cpu-wins"])
def test_weighted_server_cpu_weight_at_its_break_even(factor):
    vs = [source(), emitting("B", 1, 1.1 * S_OUT, busy=B_BUSY), sink()]
    es = [("Source: S", "B", "FORWARD"), ("B", "Sink: T", "FORWARD")]
    policy = {"objective": "weighted", "weights": {"wan": 1, "server_cpu": factor * CPU_BREAK_EVEN, "latency": 0}}
    pr = problem(inventory(pins=PIN, policy=policy), profile(vs, es))
    result = solve(pr)
    assert result.status == "optimal" and result.objective_mode == "weighted"
    assert hosts(result, pr, "B") == (["server"] if factor < 1 else ["rpi1"])
    assert weighted_value(pr, result) == pytest.approx(weighted_brute_force(pr))
    assert_stage_objectives_price_the_plan(result, pr)


# ---- latency rows ----------------------------------------------------------------------------------------------------
# Only the weighted objective can trade latency against WAN; the Pi fits the sources and one of A's two subtasks.
# Placing one A at the edge saves WAN but makes the paths cross the 50 ms uplink twice (once on each side of A). The
# latency weight is set just below / above the break-even, so latency rows that are missing or mis-scaled tip one of the
# pair.
DELAY_MS = 50
PI_CORES_PER_SUBTASK = 0.1 / 0.3  # busy 100 ms/s of a server core on a speed-0.3 Pi


def pi_fitting_one_more(subtasks: int) -> dict:
    """An rpi1 (80 % usable cores) with room for ``subtasks`` + 1 subtasks of busy 100 ms/s, not + 2."""
    return {
        "name": "rpi1",
        "cores": (subtasks + 1.5) * PI_CORES_PER_SUBTASK / 0.8,
        "task_slots": 4,
        "delay": f"{DELAY_MS}ms",
    }


def latency_case(edge_into_a: str, edge_out_of_a: str, n_s: int, n_t: int, a_out: float) -> tuple[list, list]:
    vs = [source(n_s), emitting("A", 2, a_out), sink(n_t)]
    return vs, [("Source: S", "A", edge_into_a), ("A", "Sink: T", edge_out_of_a)]


# (S -> A strategy, A -> T strategy, S parallelism, T parallelism, A's Mbit/s each, WAN with A on the server,
#  WAN with one A at the edge): the second crossing is on the FORWARD rows (first case) or on A -> T (the others).
LATENCY = {
    "forward-rows": ("REBALANCE", "FORWARD", 1, 2, 0.1, S_OUT, S_OUT / 2 + 0.1),
    "hash-rows": ("FORWARD", "HASH", 2, 1, 0.2, 2 * S_OUT, S_OUT + 0.2),
    "rebalance-rows": ("FORWARD", "REBALANCE", 2, 1, 0.2, 2 * S_OUT, S_OUT + 0.2),
    "broadcast-rows": ("FORWARD", "BROADCAST", 2, 1, 0.2, 2 * S_OUT, S_OUT + 0.2),
    "global-rows": ("FORWARD", "GLOBAL", 2, 1, 0.2, 2 * S_OUT, S_OUT + 0.2),
    "rescale-rows": ("FORWARD", "RESCALE", 2, 1, 0.2, 2 * S_OUT, S_OUT + 0.2),  # pointwise, 2 -> 1
}


@pytest.mark.parametrize("factor", [BELOW, ABOVE], ids=["wan-wins", "latency-wins"])
@pytest.mark.parametrize("case", list(LATENCY))
def test_latency_rows_at_their_break_even(case, factor):
    into, out, n_s, n_t, a_out, wan_server, wan_one = LATENCY[case]
    break_even = (wan_server - wan_one) / DELAY_MS  # per ms: one more crossing of the 50 ms uplink vs the WAN saved
    policy = {"objective": "weighted", "weights": {"wan": 1, "server_cpu": 0, "latency": factor * break_even}}
    inv = inventory([pi_fitting_one_more(n_s)], pins=PIN, policy=policy)
    pr = problem(inv, profile(*latency_case(into, out, n_s, n_t, a_out)))
    result = solve(pr)
    assert result.status == "optimal"
    if factor < 1:  # latency is cheap: one A at the edge, the paths cross twice
        assert sorted(hosts(result, pr, "A")) == ["rpi1", "server"]
        assert (result.cost.wan_mbit, result.cost.latency_ms) == pytest.approx((wan_one, 2 * DELAY_MS))
    else:  # latency is dear: both A on the server, one crossing
        assert hosts(result, pr, "A") == ["server", "server"]
        assert (result.cost.wan_mbit, result.cost.latency_ms) == pytest.approx((wan_server, DELAY_MS))
    assert weighted_value(pr, result) == pytest.approx(weighted_brute_force(pr))
    assert_stage_objectives_price_the_plan(result, pr)
