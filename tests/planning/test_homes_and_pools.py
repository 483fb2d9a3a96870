"""The compact domains (placement/solver/homes.py) equal the exact model's, and server pools generalised beyond
identical servers (placement/solver/server_pools.py, packing.py) keep the exact model's optimum."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hard_jobs import instance as hard_instance
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_factories import inventory, profile, vertex
from random_jobs import instance as random_instance
from test_plan_properties import instances

from placement.costmodel import build_problem
from placement.errors import Infeasible
from placement.inventory import Inventory
from placement.solver import SolverOptions, packing, solve
from placement.solver.domains import restricted_domain
from placement.solver.homes import homes
from placement.solver.ilp import _solve as solve_full_model
from placement.solver.packing import pack
from placement.solver.server_pools import pooled_problem, server_pools


def same_domains(pr) -> None:
    try:
        expected = {k: sorted(v) for k, v in restricted_domain(pr).items()}
    except Infeasible as exc:
        with pytest.raises(Infeasible) as got:
            homes(pr)
        assert str(got.value) == str(exc)
        return
    assert {k: sorted(v) for k, v in homes(pr).as_domain().items()} == expected


@st.composite
def small_jobs(draw):
    """The property tests' random jobs, with random pins and forbids and Pis that allow stateful operators or sinks."""
    pr = draw(instances(max_vertices=5, max_parallelism=3, max_edges=3))
    edges = [h.name for h in pr.edges]
    hosts = tuple(
        replace(h, allow_stateful=draw(st.booleans()), allow_sinks=draw(st.booleans())) if h.is_edge else h
        for h in pr.hosts
    )
    pin = draw(st.sampled_from([None, frozenset({"server"}), frozenset({edges[0]}), frozenset({"server", edges[0]})]))
    forbid = draw(st.sampled_from([frozenset(), frozenset({"server"}), frozenset({edges[-1]})]))
    last = pr.vertex_order[-1]
    subtasks = tuple(
        replace(
            s,
            pinned_to=pin if s.vertex_name == "V1" else s.pinned_to,
            forbidden=forbid if s.vertex_id == last and s.birth not in forbid else s.forbidden,
        )
        for s in pr.subtasks
    )
    return replace(pr, hosts=hosts, subtasks=subtasks)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(small_jobs())
def test_homes_equal_the_exact_models_domains(pr):
    same_domains(pr)


@pytest.mark.parametrize("gen,subtasks,hosts", [(hard_instance, 600, 60), (random_instance, 600, 60)])
def test_homes_equal_the_exact_models_domains_on_benchmark_instances(gen, subtasks, hosts):
    for seed in (1, 2):
        same_domains(build_problem(*gen(subtasks, hosts, seed)))


def test_a_subtask_fed_by_no_one_keeps_every_edge_host():
    """Downstream subtasks j > 0 of a GLOBAL edge receive nothing: no sender narrows them (the exception in homes)."""
    inv = inventory([{"name": "rpi1"}, {"name": "rpi2"}], pins={"sources": {"Source: S": "rpi1"}})
    pr = build_problem(
        inv,
        profile(
            [vertex("Source: S"), vertex("G", 3), vertex("Sink: O", 3)],
            [("Source: S", "G", "GLOBAL"), ("G", "Sink: O", "FORWARD")],
        ),
    )
    hm = homes(pr)
    assert hm.edge[("g", 0)] == ("rpi1",) and set(hm.edge[("g", 1)]) == {"rpi1", "rpi2"}
    same_domains(pr)


SERVERS = (
    {"name": "big", "cores": 4, "speed": 1.25, "task_slots": 4},
    {"name": "slow", "cores": 2, "speed": 0.5, "task_slots": 2},
)


def three_servers(**policy) -> Inventory:
    """rpi1, rpi2 and three servers of different sizes and speeds (``server``: 2 cores at speed 1, 3 slots)."""
    doc = inventory(
        [{"name": "rpi1", "cores": 2}, {"name": "rpi2", "cores": 2}],
        policy=policy or None,
        server={"cores": 2, "speed": 1.0, "task_slots": 3},
        pins={"sources": {"Source: S": ["rpi1", "rpi2", "rpi1", "rpi2"]}},
    ).model_dump(by_alias=True)
    for n, extra in enumerate(SERVERS):
        doc["hosts"].insert(1 + n, {**doc["hosts"][0], "address": f"10.0.0.{2 + n}", **extra})
    return Inventory.model_validate(doc)


JOB = profile(
    [
        vertex("Source: S", 4, rin=0, rout=2000, busy=100, bpr=200),
        vertex("P", 4, rout=2000, busy=300, bpr=100),
        vertex("W", 6, rin=1300, rout=50, busy=400, bpr=40, stateful=True),
        vertex("Sink: T", rout=0, busy=10),
    ],
    [("Source: S", "P", "FORWARD"), ("P", "W", "HASH"), ("W", "Sink: T", "REBALANCE")],
)


def test_servers_of_different_sizes_form_one_pool_and_keep_the_optimum():
    pr = build_problem(three_servers(), JOB)
    pools = server_pools(pr)
    assert [sorted(h.name for h in p.members) for p in pools] == [["big", "server", "slow"]]
    pool = pools[0].host
    assert pool.cores == pytest.approx(2 * 1.0 + 4 * 1.25 + 2 * 0.5) and pool.speed == 1.0 and pool.slots == 9
    pooled, full = solve(pr), solve_full_model(pr, SolverOptions())
    assert any("pools" in n for n in pooled.notes)
    assert pooled.status == full.status == "optimal" and pooled.cost.feasible
    assert pooled.cost.wan_mbit == pytest.approx(full.cost.wan_mbit)
    assert pooled.cost.server_cores == pytest.approx(full.cost.server_cores)
    assert pooled.cost.latency_ms == pytest.approx(full.cost.latency_ms)


def test_a_pin_naming_every_server_still_pools_one_naming_one_does_not():
    inv = three_servers()
    doc = inv.model_dump(by_alias=True)
    doc["pins"]["operators"] = {"W": ["server", "big", "slow", "rpi1"]}
    pools = server_pools(build_problem(Inventory.model_validate(doc), JOB))
    assert len(pools) == 1
    pooled = pooled_problem(build_problem(Inventory.model_validate(doc), JOB), pools)
    w = next(s for s in pooled.subtasks if s.vertex_name == "W")
    assert w.pinned_to == frozenset({pools[0].name, "rpi1"})
    doc["pins"]["operators"] = {"W": ["big", "server"]}  # slow is told apart: a pool of the other two
    pr = build_problem(Inventory.model_validate(doc), JOB)
    assert [sorted(h.name for h in p.members) for p in server_pools(pr)] == [["big", "server"]]
    result = solve(pr)
    assert result.cost.feasible and any("pools" in n for n in result.notes)
    assert {result.assignment[s.key] for s in pr.subtasks if s.vertex_name == "W"} <= {"big", "server"}


def test_packing_finds_what_greedy_misses():
    """Six subtasks of 0.55, 0.6, 0.35, 0.4, 0.2 and 0.3 server cores onto two servers of 1.2 usable cores: both greedy
    orders get stuck; the one packing (0.6 + 0.4 + 0.2 and 0.55 + 0.35 + 0.3) is found by the exact packing ILP."""
    base = inventory(
        [{"name": "rpi1"}], server={"cores": 1.5, "task_slots": 6}, pins={"sources": {"Source: S": "rpi1"}}
    )
    doc = base.model_dump(by_alias=True)
    doc["hosts"].insert(1, {**doc["hosts"][0], "name": "server2", "address": "10.0.0.2"})
    x = vertex("X", 6)
    for sub, busy in zip(x["subtasks"], (550, 600, 350, 400, 200, 300)):
        sub["busy_ms_per_s"] = busy
    pr = build_problem(
        Inventory.model_validate(doc), profile([vertex("Source: S"), x], [("Source: S", "X", "REBALANCE")])
    )
    items = [s for s in pr.subtasks if s.vertex_name == "X"]
    assert (
        packing._greedy(pr, items, pr.servers, True) is None and packing._greedy(pr, items, pr.servers, False) is None
    )
    packed = pack(pr, items, pr.servers)
    assert packed is not None
    for h in pr.servers:
        assert sum(s.server_cores for s in items if packed[s.key] == h.name) <= pr.usable_cores(h) + 1e-9
    extra = replace(items[4], index=6)  # 0.2 cores more than the 2.4 the two servers have: no packing exists
    assert pack(pr, [*items, extra], pr.servers) is None


def test_unpacked_pool_falls_back_to_the_full_model():
    """Seven subtasks of 0.55 server cores (3.85) fit the pool (4 usable) but one thread of 0.55 keeps up only on
    ``big`` (ρ = 0.5 of a core: 0.625 server cores there, 0.5 on ``server``, 0.25 on ``slow``), which holds four of
    them: the pooled plan does not pack, the full model decides — and finds that nothing fits, naming the short
    threads."""
    inv = three_servers(cpu_utilisation_target=0.5)
    h = vertex("H", 7, rin=8000, rout=10, busy=550, bpr=40, stateful=True)
    pr = build_problem(
        inv, profile([vertex("Source: S", 4, rin=0, rout=2000, busy=100, bpr=200), h], [("Source: S", "H", "HASH")])
    )
    pools = server_pools(pr)
    pooled = solve_full_model(pooled_problem(pr, pools), SolverOptions())
    assert pooled.status == "optimal"  # the relaxation has room
    result = solve(pr)
    assert result.status == "infeasible" and not any("pools" in n for n in result.notes)
    assert result.shortages[0].kind == "thread" and result.shortages[0].resource == "server"
    assert result.shortages[0].message.endswith("on server: one thread would need 0.55 of a core, 0.50 usable")
