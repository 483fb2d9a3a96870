"""An edge TaskManager inside its own network namespace (the wrapper argv), registered with a root-side JobManager."""

from __future__ import annotations

import json
import time

import pytest

from placement.flink.rest import FlinkRest
from placement.lab.flink import TaskManagerSpec
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.netns import Namespaces, netns_available, ns_exec, run
from support import real_parts

NO_NETNS = netns_available()  # None, or why namespaces cannot be made here
pytestmark = [
    pytest.mark.flink,
    pytest.mark.netns,
    pytest.mark.timeout(600),
    real_parts.needs(NO_NETNS),  # a failure under strict mode (PLACEMENT_STRICT=1), else a skip
]


def tx_bytes(ns: str, interface: str) -> int:
    """Bytes the namespace's end of the veth has sent (towards the server side)."""
    return int(run(ns_exec(ns, ["cat", f"/sys/class/net/{interface}/statistics/tx_bytes"])).stdout)


def test_edge_taskmanager_in_a_namespace_runs_its_pinned_source_and_sends_over_the_veth(
    tmp_path, lab_jobs_jar, flink_support
):
    with Namespaces("pl-t") as nets:
        wire = nets.add("rpi1", "10.205.7.1", "10.205.7.2")
        tms = (
            TaskManagerSpec(
                "server", slots=2, address=wire.host_addr, external_resource="server", external_resource_amount=8
            ),
            TaskManagerSpec(
                "rpi1",
                slots=2,
                address=wire.ns_addr,
                external_resource="rpi1",
                external_resource_amount=8,
                wrapper=("ip", "netns", "exec", wire.ns),
            ),
        )
        with flink_support.start_flink(tmp_path / "cluster", tms, jobmanager_address=wire.host_addr) as cluster:
            rest = FlinkRest(cluster.rest_url)
            paths = {tm.id: tm.path for tm in rest.taskmanagers()}
            assert f"@{wire.ns_addr}:" in paths["rpi1"] and f"@{wire.host_addr}:" in paths["server"]
            mapping = {
                "Source: Sensors": ["rpi1"],
                "Parse": ["rpi1"],
                "Filter": ["server"],
                "Enrich": ["server"],
                "Window Aggregate": ["server"],
                "Sink: Readings": ["server"],
            }
            sent_before = tx_bytes(wire.ns, wire.ns_if)
            job = flink_support.submit_job(
                rest,
                lab_jobs_jar,
                IOT_SENSOR_JOB,
                ["--rate", "500", "--parallelism", "1", "--placement", json.dumps(mapping)],
            )
            assert rest.placement(job.job_id)["Parse"] == ["rpi1"]
            parse_bytes, deadline = 0.0, time.monotonic() + 60
            while parse_bytes < 50_000 and time.monotonic() < deadline:
                parse_bytes = rest.vertex_metrics(job.job_id, job.vertex_ids["Parse"], ["numBytesOut"], refresh=1.0)[
                    "numBytesOut"
                ]
            sent = tx_bytes(wire.ns, wire.ns_if) - sent_before
            # Parse's output crosses the veth to Filter on the server (plus RPC, heartbeats and the jar download)
            assert parse_bytes >= 50_000 and sent > parse_bytes, (parse_bytes, sent)
            flink_support.cancel_job(job)
