"""What plan.json records of a rescale (`RescalePlan.info`) for the joint plan and for each baseline's own plan.json
(benchmarks/rescale_lab.py applies all three): each records the parallelism *it* changes, not the joint plan's."""

from __future__ import annotations

from planning_factories import inventory, profile, vertex
from rescale_factories import _revalidate

from placement.costmodel.rescaled import build_space
from placement.planning.rescale import RescalePlan
from placement.solver.rescale import ds2_then_place, placement_alone, solve_rescale


def edge_filter_space():
    """rpi1 (4 cores of speed 0.3) is born 10 000 records/s; one Filter instance needs 0.5 server cores, so it keeps
    up on the Pi (ρ = 0.8) only with 3 instances — the joint plan raises it, both baselines keep 1 on the server."""
    inv = _revalidate(
        inventory([{"name": "rpi1", "bandwidth": "20mbit", "task_slots": 4}], pins={"sources": {"Source: S": "rpi1"}}),
        parallelism={"Filter": {"max": 8}},
    )
    prof = profile(
        [
            vertex("Source: S", 1, rin=0, rout=10_000, busy=50, bpr=200),
            vertex("Filter", 1, rin=10_000, rout=1_000, busy=500, bpr=100),
            vertex("Sink: K", 1, rin=1_000, rout=0, busy=20, bpr=0),
        ],
        [("Source: S", "Filter", "REBALANCE"), ("Filter", "Sink: K", "HASH")],
    )
    return build_space(inv, prof, rate_scale=1.0)


def test_each_plan_records_the_parallelism_it_changes():
    space = edge_filter_space()
    plan = RescalePlan(space, solve_rescale(space), (placement_alone(space), ds2_then_place(space)))
    joint = plan.info()
    assert joint.changed == {"Filter": [1, 3]}
    assert plan.info(plan.joint) == joint
    for baseline in plan.baselines:
        assert baseline.parallelism["filter"] == 1
        info = plan.info(baseline)
        assert info.changed == {}
        assert info.profiled_parallelism == joint.profiled_parallelism == {"source-s": 1, "filter": 1, "sink-k": 1}
        assert info.target_records_per_s == joint.target_records_per_s == {"source-s": 10_000}
