"""The joint plan against its baselines — placement alone (today's parallelism) and DS2 → ILP (CAPSys's sequence) —
on instances built to show where choosing both at once wins, and never worse on random ones."""

from __future__ import annotations

import random

import pytest
from planning_factories import inventory, profile, vertex
from rescale_factories import _revalidate, random_space

from placement.costmodel.rescaled import build_space
from placement.solver.rescale import (
    ds2_parallelism,
    ds2_then_place,
    placement_alone,
    solve_rescale,
)

RAW_MBIT = 10_000 * 200 * 8 / 1e6  # the source's stream: 10 000 records/s of 200 B = 16 Mbit/s
FILTERED_MBIT = 1_000 * 100 * 8 / 1e6  # the filter's output: 1 000 records/s of 100 B = 0.8 Mbit/s


def edge_filter(bandwidth: str = "20mbit", pi_slots: int = 4, filter_p: int = 1, filter_busy: float = 500.0):
    """rpi1 (rpi4b: 4 cores of speed 0.3) is born 10 000 records/s; a stateless filter behind a REBALANCE keeps a
    tenth of them. At busy 500 ms/s for 10 000 records/s on a server core, one filter instance on the Pi needs
    0.5/0.3 = 1.67 cores of a thread — it keeps up (ρ = 0.8) only with 3 instances (0.56 each)."""
    inv = inventory(
        [{"name": "rpi1", "bandwidth": bandwidth, "task_slots": pi_slots}], pins={"sources": {"Source: S": "rpi1"}}
    )
    inv = _revalidate(inv, parallelism={"Filter": {"max": 8}})
    prof = profile(
        [
            vertex("Source: S", 1, rin=0, rout=10_000, busy=50, bpr=200),
            vertex(
                "Filter", filter_p, rin=10_000 / filter_p, rout=1_000 / filter_p, busy=filter_busy / filter_p, bpr=100
            ),
            vertex("Sink: K", 1, rin=1_000, rout=0, busy=20, bpr=0),
        ],
        [("Source: S", "Filter", "REBALANCE"), ("Filter", "Sink: K", "HASH")],
    )
    return build_space(inv, prof)


def where(result, vertex_id: str) -> list[str]:
    return sorted(result.plan.assignment[s.key] for s in result.problem.by_vertex[vertex_id])


def test_raising_parallelism_on_the_pi_keeps_the_filter_at_the_edge():
    space = edge_filter()
    joint, alone, ds2 = solve_rescale(space), placement_alone(space), ds2_then_place(space)
    assert joint.plan.status == "optimal"
    assert joint.parallelism["filter"] == 3 and where(joint, "filter") == ["rpi1"] * 3
    assert joint.plan.cost.wan_mbit == pytest.approx(FILTERED_MBIT, rel=0.02)  # payload + Flink's framing
    # DS2 sizes the filter for a server core: λ = 20 000 records/s, 10 000 / (20 000 · 0.8) → 1 instance
    assert ds2_parallelism(space)[space.group_of["filter"].id] == 1
    for baseline in (alone, ds2):
        assert baseline.plan.status == "optimal" and baseline.parallelism["filter"] == 1
        assert where(baseline, "filter") == ["server"]  # one instance cannot keep up on the Pi
        assert baseline.plan.cost.wan_mbit == pytest.approx(RAW_MBIT, rel=0.02)
        assert joint.plan.cost.wan_mbit < baseline.plan.cost.wan_mbit / 15


def test_joint_plan_holds_the_rate_where_the_baselines_cannot():
    space = edge_filter(bandwidth="10mbit")  # 9 Mbit/s usable: the raw 16 Mbit/s stream does not fit
    joint, alone, ds2 = solve_rescale(space), placement_alone(space), ds2_then_place(space)
    assert joint.plan.status == "optimal" and joint.parallelism["filter"] == 3
    for baseline in (alone, ds2):
        assert baseline.plan.status == "infeasible"
        assert "link rpi1→server needs 16.0 Mbit/s" in baseline.plan.reason


def test_lowering_parallelism_fits_the_filter_into_the_pis_slots():
    # profiled at 4 light instances (0.1 cores of the Pi's thread each at 1 instance: 0.33 ≤ 0.8 keeps up),
    # but the Pi has 2 task slots: today's parallelism sends half the raw stream to the server
    space = edge_filter(pi_slots=2, filter_p=4, filter_busy=100.0)
    joint, alone, ds2 = solve_rescale(space), placement_alone(space), ds2_then_place(space)
    assert joint.parallelism["filter"] == 1 and where(joint, "filter") == ["rpi1"]
    assert joint.plan.cost.wan_mbit == pytest.approx(FILTERED_MBIT, rel=0.02)
    assert alone.parallelism["filter"] == 4 and where(alone, "filter") == ["rpi1", "rpi1", "server", "server"]
    assert alone.plan.cost.wan_mbit == pytest.approx(RAW_MBIT / 2 + FILTERED_MBIT / 2, rel=0.02)
    assert ds2.parallelism["filter"] == 1 and ds2.plan.cost.wan_mbit == pytest.approx(joint.plan.cost.wan_mbit)


def lexicographic(r):
    c = r.plan.cost
    return (round(c.wan_mbit, 6), round(c.server_cores, 6), round(c.latency_ms, 6))


@pytest.mark.parametrize("seed", range(0, 60, 3))
def test_joint_is_never_worse_than_either_baseline(seed):
    space = random_space(random.Random(seed))
    joint = solve_rescale(space)
    for baseline in (placement_alone(space), ds2_then_place(space)):
        if baseline.plan.status == "infeasible":
            continue
        assert joint.plan.status == "optimal", (baseline.strategy, joint.plan.reason)
        assert lexicographic(joint) <= lexicographic(baseline), baseline.strategy


def test_when_nothing_fits_the_shortfall_is_named():
    space = edge_filter(bandwidth="0.5mbit")  # 0.45 Mbit/s usable: not even the filtered stream fits
    joint = solve_rescale(space)
    assert joint.plan.status == "infeasible" and joint.parallelism is None
    (short,) = joint.plan.shortages
    assert (short.kind, short.resource) == ("link", "rpi1→server")
    assert short.needed == pytest.approx(FILTERED_MBIT, rel=0.02) and short.usable == pytest.approx(0.45)  # 3 on the Pi
