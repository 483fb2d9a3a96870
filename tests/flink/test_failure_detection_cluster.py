"""A real 2.3 cluster started by the lab's launcher with the edge failure detection: the JobManager runs the mapped
settings, and a SIGKILLed TaskManager leaves ``GET /taskmanagers`` by its failed heartbeat RPCs (interval × threshold:
measured here 2.3-3.7 s; Flink's own 10 s × 2 would take 10-20 s), not by the heartbeat timeout. The JobManager's log
names which of the two closed the connection: a wall-clock bound sized for a quiet machine stood in for that, and a busy
machine stretches the seconds, not the path (without the threshold, the timeout took rpi1 away 9.1 s after the kill,
from a heartbeat answered ~1 s before it). No network namespace: not the lab singleton."""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request

import pytest

from placement.flink.rest import FlinkRest
from placement.inventory.failure_detection import FailureDetection, flink_config
from placement.lab.flink import TaskManagerSpec
from support.flink import start_flink

pytestmark = pytest.mark.flink

# ResourceManager's reasons for closing a TaskExecutor connection (TaskManagerHeartbeatListener, Flink 1.19-2.x)
UNREACHABLE = "TaskManager with id {} is no longer reachable."
TIMED_OUT = "The heartbeat of TaskManager with id {} timed out."


def test_a_killed_taskmanager_is_gone_by_its_failed_heartbeat_rpcs(tmp_path):
    fd = FailureDetection()
    tms = (TaskManagerSpec("server", slots=1), TaskManagerSpec("rpi1", slots=1))
    with start_flink(tmp_path / "cluster", tms, jvm_flags=("-XX:TieredStopAtLevel=1",)) as cluster:
        with urllib.request.urlopen(cluster.rest_url + "/jobmanager/config", timeout=10) as r:
            running = {e["key"]: e["value"] for e in json.loads(r.read())}
        want = flink_config(fd)
        assert {k: running.get(k) for k in want} == {k: str(v) for k, v in want.items()}
        rest = FlinkRest(cluster.rest_url, timeout=5)
        time.sleep(2 * fd.heartbeat_interval / 1000)  # a heartbeat or two answered first
        killed = time.monotonic()
        os.killpg(cluster.taskmanagers["rpi1"].pid, signal.SIGKILL)
        while "rpi1" in {tm.id for tm in rest.taskmanagers()} and time.monotonic() - killed < 60:
            time.sleep(0.1)
        gone_after = time.monotonic() - killed
        log = cluster.jobmanager.log_file.read_text(errors="replace")
        print(
            f"rpi1 gone from /taskmanagers {gone_after:.2f} s after SIGKILL (interval × threshold "
            f"{fd.dead_process_detection_ms / 1000:.1f} s, heartbeat timeout {fd.heartbeat_timeout / 1000:.1f} s)"
        )
        assert UNREACHABLE.format("rpi1") in log and TIMED_OUT.format("rpi1") not in log
        assert "server" in {tm.id for tm in rest.taskmanagers()}
