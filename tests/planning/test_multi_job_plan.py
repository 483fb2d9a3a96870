"""Several jobs planned together (issue 24), beside planning them one by one: the joint plan is never worse, and
where one job's plan takes what the next one needs — the Pi's CPU for the first job's reducer leaves the second job's
raw stream for the uplink — one-by-one finds nothing (or the jobs' separate plans oversubscribe the Pi) while the
joint plan fits. Jobs already running (``--running``) are fixed load that every planner fits around."""

from __future__ import annotations

import pytest
from multi_job_factories import job_profile, problems, random_instance
from planning_factories import inventory, vertex

from placement.costmodel import build_problem, evaluate
from placement.costmodel.jobs import combine, dir_names, unique_names
from placement.costmodel.running import uses_of, with_running
from placement.solver import solve
from placement.solver.baselines import greedy
from placement.solver.capacity import max_scale
from placement.solver.fleet import solve_decomposed
from placement.solver.one_by_one import each_alone, in_sequence


def reducing_job(tag: str, raw_mbit: float) -> object:
    """Source (born on rpi1) → Reduce (0.6 of a Pi core, 10:1) → Sink: reducing on the Pi saves ``raw_mbit`` − 1."""
    return job_profile(
        f"job-{tag}",
        [
            vertex(f"Source: {tag}", rin=0, rout=1000, busy=10, bpr=raw_mbit * 125),
            vertex(f"Reduce {tag}", rin=1000, rout=100, busy=180, bpr=1250),
            vertex(f"Sink: {tag}", rin=100, rout=0, busy=5),
        ],
        [(f"Source: {tag}", f"Reduce {tag}", "FORWARD"), (f"Reduce {tag}", f"Sink: {tag}", "FORWARD")],
    )


def contested():
    """rpi1: one core (0.8 usable: one reducer), a 14 Mbit/s uplink (12.6 usable). Job A sends 10 Mbit/s raw, job B
    30."""
    inv = inventory(
        [{"name": "rpi1", "cores": 1, "task_slots": 4, "bandwidth": "14mbit"}],
        pins={"sources": {"Source: A": "rpi1", "Source: B": "rpi1"}},
    )
    return inv, [reducing_job("A", 10), reducing_job("B", 30)]


def test_one_by_one_finds_nothing_where_the_joint_plan_fits():
    inv, profiles = contested()
    joint = combine(problems(inv, profiles))
    result = solve(joint.problem)
    assert result.status == "optimal"
    assert result.cost.wan_mbit == pytest.approx(10 + 1)  # B reduces on the Pi, A sends its raw stream
    where = joint.split(result.assignment)
    assert where["job-B"][("reduce-b", 0)] == "rpi1" and where["job-A"][("reduce-a", 0)] == "server"
    seq = in_sequence(joint)
    assert seq.failed == "job-B" and seq.cost is None  # A took the Pi's CPU for its reducer: B's 30 Mbit/s cannot go up
    assert seq.results["job-A"].cost.wan_mbit == pytest.approx(1)
    assert "after running job job-A's" in seq.reason
    alone = each_alone(joint)
    assert alone.failed is None and not alone.feasible  # both reduce on the Pi: its CPU oversubscribed
    assert any(v.startswith("host rpi1 needs 1.27 cores") for v in alone.cost.violations)
    # the other planners on the joint problem agree
    assert solve_decomposed(joint.problem).cost.wan_mbit == pytest.approx(11)
    assert not joint.problem.input_warnings  # the other job's pins are no typo of this one's vertices
    heuristic = greedy(joint.problem)  # offloads A's reducer first (the larger output): B's raw stream then overflows
    assert heuristic.status == "infeasible" and not evaluate(joint.problem, heuristic.assignment).feasible


def test_the_joint_plan_never_sends_more_than_one_by_one():
    compared = 0
    for seed in range(0, 120, 2):
        inv, profiles = random_instance(seed)
        joint = combine(problems(inv, profiles))
        result, seq = solve(joint.problem), in_sequence(joint)
        if seq.feasible:
            assert result.status == "optimal" and result.cost.wan_mbit <= seq.cost.wan_mbit + 1e-6, seed
            compared += 1
        if result.status == "infeasible":  # nothing fits jointly: one by one cannot fit either
            assert not seq.feasible, seed
    assert compared >= 15


def test_running_jobs_are_fixed_load_that_a_shortfall_names():
    inv, (a, b) = contested()
    pa, pb = build_problem(inv, a), build_problem(inv, b)
    plan_a = solve(pa)
    assert plan_a.cost.wan_mbit == pytest.approx(1)  # A alone reduces on the Pi
    running = uses_of(
        "job-A",
        {link.host: link.mbit for link in plan_a.cost.links},
        [(h.host, h.cores_used, h.memory_mib_used, h.slots_used) for h in plan_a.cost.hosts],
    )
    around = with_running(pb, running)
    rpi1 = around.host_by_name["rpi1"]
    assert around.usable_mbit(rpi1) == pytest.approx(12.6 - 1)
    assert around.usable_cores(rpi1) == pytest.approx(0.8 - (10 + 180) / 1000 / 0.3)
    assert rpi1.slots == 3  # A's one slot (slot sharing) off the four
    result = solve(around)
    assert result.status == "infeasible"
    link = next(s for s in result.shortages if s.kind == "link")
    assert link.message.endswith("after running job job-A's 1 Mbit/s)")
    assert solve_decomposed(around).status == "infeasible"
    # what is left for B: its raw stream at 11.6/30 of the rate, the reducer on the Pi at (0.8-0.633)/0.6
    capacity = max_scale(lambda x: with_running(build_problem(inv, b, _scaled(x)), running))
    assert capacity.scale == pytest.approx(11.6 / 30, rel=1e-3)


def _scaled(x: float):
    from placement.costmodel.model import PlanOptions

    return PlanOptions(rate_scale=x)


def test_max_rate_scales_every_job_together():
    inv, profiles = contested()
    build = lambda x: combine([(p.job.name, build_problem(inv, p, _scaled(x))) for p in profiles]).problem  # noqa: E731
    capacity = max_scale(build)
    # at 1× the joint plan needs 11 of 12.6 Mbit/s and the Pi's CPU binds: B's reducer (0.6) + two sources (0.067)
    # grow to 0.8 at 1.2×; the uplink (A raw 10 + B 1 = 11) reaches 12.6 at 1.145×
    assert capacity.status == "bounded" and capacity.scale == pytest.approx(12.6 / 11, rel=1e-3)


def test_job_names_and_directories_are_unique():
    assert unique_names(["iot", "iot", "join", "iot"]) == ["iot", "iot-2", "join", "iot-3"]
    assert dir_names(["a/b", "a b", "../x", "ok.job"]) == ["a-b", "a-b-2", "x", "ok.job"]


def test_jobs_never_share_a_slot():
    """Two one-vertex-wide jobs on a Pi with one slot: alone each fits, together they do not (with slot sharing one
    job's vertices share a slot, two jobs' do not)."""
    inv = inventory(
        [{"name": "rpi1", "cores": 4, "task_slots": 1, "bandwidth": "100mbit"}],
        pins={"sources": {"Source: A": "rpi1", "Source: B": "rpi1"}},
    )
    profiles = [reducing_job("A", 1), reducing_job("B", 1)]
    for _, pr in problems(inv, profiles):
        assert solve(pr).status == "optimal"
    joint = combine(problems(inv, profiles))
    result = solve(joint.problem)
    assert result.status == "infeasible"
    assert result.shortages[0].message == "host rpi1 needs 2 task slots, has 1"
