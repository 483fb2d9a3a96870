"""Vanilla placement on the real cluster: external-resource slot sharing groups put each subtask on its host's TM."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from placement.errors import PlacementError
from placement.lab.jobs import (
    BRANCHING_JOB,
    BRANCHING_VERTICES,
    IOT_SENSOR_JOB,
    NEXMARK_BIDS_JOB,
    NEXMARK_VERTICES,
)

pytestmark = [pytest.mark.flink, pytest.mark.timeout(600)]

# A plan's assignment: subtask i of each vertex -> host. Sources born on two hosts, the FORWARD chain after them
# leaves rpi1 at different stages per subtask, the keyed part runs on the server.
SPLIT = {
    "Source: Sensors": ["rpi1", "rpi1", "server"],
    "Parse": ["rpi1", "rpi1", "server"],
    "Filter": ["rpi1", "server", "server"],
    "Enrich": ["server", "server", "server"],
    "Window Aggregate": ["server"],
    "Sink: Readings": ["server"],
}
# The same job moved: keyed window and sink now on rpi1, the chain on the server.
MOVED = {
    "Source: Sensors": ["server", "server"],
    "Parse": ["server", "server"],
    "Filter": ["server", "server"],
    "Enrich": ["server", "server"],
    "Window Aggregate": ["rpi1"],
    "Sink: Readings": ["rpi1"],
}


def planned_counts(mapping: dict[str, list[str]]) -> dict[tuple[str, str], int]:
    return dict(Counter((vertex, host) for vertex, hosts in mapping.items() for host in hosts))


def max_key_total(rest, job_id: str, vertex_id: str) -> float:
    """The Window Aggregate's gauge: the largest per-sensor running total held in keyed state; 0 while a just
    restored job has not listed it yet (the callers poll until it is above 0)."""
    listed = rest.get(f"/jobs/{job_id}/vertices/{vertex_id}/subtasks/metrics")
    name = next((m["id"] for m in listed if m["id"].endswith(".maxKeyTotal")), None)
    if name is None:
        return 0.0
    return rest.vertex_metrics(job_id, vertex_id, [name], agg="max", refresh=1.0).get(name, 0.0)


def test_split_mapping_puts_every_subtask_on_its_hosts_taskmanager(flink_rest, lab_jobs_jar, flink_support):
    job = flink_support.submit_job(
        flink_rest, lab_jobs_jar, IOT_SENSOR_JOB, ["--rate", "100", "--placement", json.dumps(SPLIT)]
    )
    try:
        assert flink_rest.placement_counts(job.job_id) == planned_counts(SPLIT)
        # the chain is built once per lane: (rpi1,rpi1,rpi1,server) x1, (rpi1,rpi1,server,server) x1, (server...) x1
        names = Counter(v.name for v in job.details.vertices)
        assert names["Source: Sensors"] == 3 and names["Enrich"] == 3 and names["Window Aggregate"] == 1
        # each copy's subtasks all run on one TM (its slot sharing group's external resource)
        for v in job.details.vertices:
            assert len({s.taskmanager_id for s in flink_rest.subtasks(job.job_id, v.id)}) == 1, v
    finally:
        flink_support.cancel_job(job)


def test_keyed_window_state_survives_stop_with_savepoint_and_a_new_mapping(
    flink_rest, lab_jobs_jar, flink_support, tmp_path
):
    args = ["--sensors", "10", "--window-ms", "1000"]
    first_mapping = {**MOVED, "Window Aggregate": ["server"], "Sink: Readings": ["server"]}
    job = flink_support.submit_job(
        flink_rest, lab_jobs_jar, IOT_SENSOR_JOB, [*args, "--rate", "200", "--placement", json.dumps(first_mapping)]
    )
    window = job.vertex_ids["Window Aggregate"]
    assert flink_rest.placement(job.job_id)["Window Aggregate"] == ["server"]
    time.sleep(10)
    before = max_key_total(flink_rest, job.job_id, window)
    assert before > 60, before  # 10 sensors x ~12 alarms/s each, for ~10 s
    savepoint = flink_rest.stop_with_savepoint(job.job_id, tmp_path.as_uri())
    assert flink_rest.job_raw(job.job_id)["state"] == "FINISHED"

    # resumed at 1/40 of the rate: a fresh start could not reach `before` within the test's minute (~0.3 alarms/s/key)
    moved = flink_support.submit_job(
        flink_rest,
        lab_jobs_jar,
        IOT_SENSOR_JOB,
        [*args, "--rate", "5", "--placement", json.dumps(MOVED)],
        savepoint_path=savepoint,
        allow_non_restored_state=True,
    )
    try:
        assert flink_rest.placement_counts(moved.job_id) == planned_counts(MOVED)
        window = moved.vertex_ids["Window Aggregate"]
        deadline = time.monotonic() + 30
        after = 0.0
        while after == 0.0 and time.monotonic() < deadline:
            after = max_key_total(flink_rest, moved.job_id, window)
        assert after >= before, (before, after)  # the running totals continued from the savepoint
    finally:
        flink_support.cancel_job(moved)


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({**MOVED, "Window Aggregate": ["server", "rpi1"]}, "vanilla Flink cannot split 'Window Aggregate'"),
        ({k: v for k, v in MOVED.items() if k != "Parse"}, "no hosts for vertex 'Parse'"),
        ({**MOVED, "Prase": ["server"]}, "unknown vertex name(s) [Prase]"),
        ({**MOVED, "Filter": ["server"]}, "'Filter' has 1 subtasks but 'Source: Sensors' has 2"),
    ],
)
def test_a_mapping_vanilla_flink_cannot_honour_is_refused_at_submit(flink_rest, lab_jobs_jar, mapping, message):
    jar_id = flink_rest.upload_jar(lab_jobs_jar)
    with pytest.raises(PlacementError) as info:
        flink_rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=["--placement", json.dumps(mapping)])
    assert message in str(info.value) and "\n" not in str(info.value)
    assert not flink_rest.running_jobs()


def test_branching_job_runs_each_source_on_its_own_host_and_joins_on_the_server(
    flink_rest, lab_jobs_jar, flink_support
):
    mapping = {
        "Source: Cameras": ["rpi1"],
        "Detect Objects": ["rpi1"],
        "Source: Meters": ["server"],
        "Parse Meters": ["server"],
        "Join Frames Meters": ["server"],
        "Sink: Alerts": ["server"],
    }
    job = flink_support.submit_job(flink_rest, lab_jobs_jar, BRANCHING_JOB, ["--placement", json.dumps(mapping)])
    try:
        assert tuple(sorted(v.name for v in job.details.vertices)) == tuple(sorted(BRANCHING_VERTICES))
        assert flink_rest.placement_counts(job.job_id) == planned_counts(mapping)
        plan = flink_rest.plan(job.job_id)
        join = next(n for n in plan["nodes"] if n["id"] == job.vertex_ids["Join Frames Meters"])
        assert sorted(i["ship_strategy"] for i in join["inputs"]) == ["HASH", "HASH"]
        join_in = flink_support.wait_for_records(flink_rest, job.job_id, job.vertex_ids["Parse Meters"])
        assert join_in > 0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = flink_rest.vertex_metrics(
                job.job_id, job.vertex_ids["Join Frames Meters"], ["numRecordsIn"], refresh=1.0
            )
            if got.get("numRecordsIn", 0) > 0:
                break
        assert got["numRecordsIn"] > 0
    finally:
        flink_support.cancel_job(job)


def test_nexmark_job_runs_unpinned_with_its_vertices(flink_rest, lab_jobs_jar, flink_support):
    job = flink_support.submit_job(flink_rest, lab_jobs_jar, NEXMARK_BIDS_JOB, ["--rate", "200"])
    try:
        assert [(v.name, v.parallelism) for v in job.details.vertices] == list(
            zip(NEXMARK_VERTICES, [2, 2, 2, 2, 1, 1])
        )
        flink_support.wait_for_records(flink_rest, job.job_id, job.vertex_ids["Hot Items"], timeout=60)
        m = {
            n: flink_rest.vertex_metrics(job.job_id, job.vertex_ids[n], ["numRecordsIn", "numRecordsOut"], refresh=0.5)
            for n in ("Filter Auctions",)
        }
        kept = m["Filter Auctions"]["numRecordsOut"] / m["Filter Auctions"]["numRecordsIn"]
        assert 0.1 < kept < 0.45, kept  # every 5th auction id, plus the hot ones 0 and 5
    finally:
        flink_support.cancel_job(job)
