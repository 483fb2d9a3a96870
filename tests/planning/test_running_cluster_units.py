"""The pure parts of ``placement plan --running-cluster``: a running job's profile and where its subtasks run, priced
by the cost model as running load (the same :class:`RunningUse` a plan.json gives ``--running``), and what a run's
locations say of the inventory. The live read itself is tests/planning/test_running_cluster_flink.py."""

from __future__ import annotations

import pytest
from planning_factories import inventory, profile, vertex

from placement.collect.layout import SubtaskLocation, find_manifests
from placement.costmodel import build_problem
from placement.costmodel.model import RunningUse
from placement.costmodel.running import with_running
from placement.errors import BadInput
from placement.flink.rest import JobSummary
from placement.planning.cluster import labels, priced_uses
from placement.profile.rules import current_assignment, subtask_hosts
from placement.solver.methods import solve_with
from placement.solver.result import SolverOptions

STORED_RUN = (
    "tests/profile/data/latency-iot"  # a collected run of the lab IoT job, every subtask on TaskManager "server"
)


def three_stage():
    """Source (1000 records/s) → Work (1000/s of 50 B) → Sink: 0.1 + 0.2 + 0.05 busy cores at speed 1."""
    return profile(
        [
            vertex("Source: S", rin=0, rout=1000, busy=100, bpr=100),
            vertex("Work", busy=200, bpr=50),
            vertex("Sink: T", rout=0, busy=50),
        ],
        [("Source: S", "Work", "FORWARD"), ("Work", "Sink: T", "FORWARD")],
    )


def test_a_running_placement_is_priced_as_running_load_per_host_and_uplink():
    inv = inventory([{"name": "rpi1"}])  # rpi1: an rpi4b, speed 0.3
    placed = {("source-s", 0): "rpi1", ("work", 0): "rpi1", ("sink-t", 0): "server"}
    uses = priced_uses("live-a", three_stage(), placed, inv)
    # rpi1: (0.1 + 0.2) busy cores at speed 0.3, two subtasks of 256 MiB in one shared slot, and Work's output up the
    # uplink: 1000 records/s × 50 B × 8 = 0.4 Mbit/s
    assert uses["rpi1"] == [
        RunningUse("live-a", cores=pytest.approx(1.0), memory_mib=512, slots=1, mbit=pytest.approx(0.4))
    ]
    assert uses["server"] == [RunningUse("live-a", cores=pytest.approx(0.05), memory_mib=256, slots=1, mbit=0.0)]
    # all on the server: nothing on the Pi's uplink, nothing on the Pi
    alone = priced_uses("live-a", three_stage(), {k: "server" for k in placed}, inv)
    assert set(alone) == {"server"} and alone["server"][0].cores == pytest.approx(0.35)


def test_a_placement_that_misses_a_subtask_of_the_profile_names_the_job_and_the_subtask():
    inv = inventory([{"name": "rpi1"}])
    with pytest.raises(BadInput, match=r"running job live-a: where Sink: T \(1/1\) runs is not known"):
        priced_uses("live-a", three_stage(), {("source-s", 0): "rpi1", ("work", 0): "rpi1"}, inv)


def test_the_priced_load_makes_the_shortfall_name_the_running_job():
    inv = inventory([{"name": "rpi1", "bandwidth": "1mbit"}], pins={"sources": {"Source: B": "rpi1"}})
    placed = {("source-s", 0): "rpi1", ("work", 0): "rpi1", ("sink-t", 0): "server"}
    uses = priced_uses("live-a", three_stage(), placed, inv)
    b = profile(
        [vertex("Source: B", rin=0, rout=1000, busy=10, bpr=75), vertex("Sink: B", rout=0, busy=10)],
        [("Source: B", "Sink: B", "FORWARD")],
    )  # 0.6 Mbit/s raw, its sink not allowed on the Pi
    result = solve_with(with_running(build_problem(inv, b), uses), SolverOptions(), "auto")
    assert result.status == "infeasible"
    # 1 Mbit/s at 90 % headroom = 0.9, less the running job's 0.4: 0.5 usable for B's 0.6
    assert (
        "link rpi1→server needs 0.6 Mbit/s, has 1 (0.5 usable after running job live-a's 0.4 Mbit/s)" in result.reason
    )
    assert solve_with(build_problem(inv, b), SolverOptions(), "auto").status == "optimal"  # alone it fits


def test_a_run_on_a_taskmanager_the_inventory_does_not_know_is_named():
    ((_, manifest),) = find_manifests(STORED_RUN)
    inv = inventory([{"name": "rpi1"}])
    placed, unmatched = subtask_hosts(manifest, inv)
    assert not unmatched and set(placed.values()) == {"server"} and len(placed) == len(manifest.locations)
    assert current_assignment(manifest, inv) == placed
    moved = manifest.model_copy(
        update={
            "locations": [
                *manifest.locations[1:],
                SubtaskLocation(
                    vertex_id=manifest.locations[0].vertex_id,
                    subtask=0,
                    taskmanager_id="10.9.9.9:4711-abc",
                    host="10.9.9.9",
                ),
            ]
        }
    )
    placed, unmatched = subtask_hosts(moved, inv)
    assert [(u.taskmanager_id, u.host) for u in unmatched] == [("10.9.9.9:4711-abc", "10.9.9.9")]
    assert len(placed) == len(manifest.locations) - 1
    assert current_assignment(moved, inv) is None


def test_running_jobs_of_one_name_are_told_apart_by_their_ids():
    jobs = [
        JobSummary("a" * 32, "etl", "RUNNING"),
        JobSummary("b" * 32, "etl", "RUNNING"),
        JobSummary("c" * 32, "other", "RUNNING"),
    ]
    assert labels(jobs) == {"a" * 32: "etl (aaaaaaaa)", "b" * 32: "etl (bbbbbbbb)", "c" * 32: "other"}
