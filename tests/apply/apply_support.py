"""Helpers for the apply tests: inventories pointing at real sshd "hosts", plan directories, the keyed-count probe.

The hosts ``server`` and ``rpi1`` are sshd servers in network namespaces ``pp-server`` / ``pp-rpi1`` (addresses in
10.204.0.0/16); they share this machine's filesystem, so a file apply writes "on the JobManager host" is visible
here. The Flink cluster is the shared test cluster (127.0.0.1) whose TaskManagers have the resource ids ``server``
and ``rpi1`` and each the external resource of its own name.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import yaml

from placement.flink.rest import FlinkRest
from placement.lab.jobs import IOT_SENSOR_JOB
from support import plan_dirs
from support.sshd import SshHost

REPO = Path(__file__).resolve().parents[2]

PLACEMENT = [str(Path(sys.executable).parent / "placement")]
JOB_NAME = "pp-apply-iot"
# 10 sensors, 2 source subtasks at 200/s, 1 s windows: ~12 alarms/s per sensor go into the keyed running totals.
JOB_ARGS = [
    "--sensors",
    "10",
    "--window-ms",
    "1000",
    "--rate",
    "200",
    "--window-parallelism",
    "2",
    "--job-name",
    JOB_NAME,
]
VERTICES = ["Source: Sensors", "Parse", "Filter", "Enrich", "Window Aggregate", "Sink: Readings"]
# `placement apply --settle 2` in tests whose subject is not the settle: the step still runs (the audit's "watch") and
# still fails the apply on a restart, but the default 10 s adds 8 s to every apply and these tests read the job
# RUNNING on its plan, its keyed state carried over, themselves right after (test_apply_fleet.py settles 1 s)
SETTLE = ("--settle", "2")
PER_KEY_RATE_MAX = (
    16.0  # alarms/s one sensor gains at most (12 on average, ~13 for the busiest of 10): a fresh start's ceiling
)

# The running job's graph: chain parallelism 2, window and sink 2.
PLACED = {  # two lanes: (rpi1 x4) and (rpi1, rpi1, rpi1, server); keyed part on the server
    "Source: Sensors": ["rpi1", "rpi1"],
    "Parse": ["rpi1", "rpi1"],
    "Filter": ["rpi1", "rpi1"],
    "Enrich": ["rpi1", "server"],
    "Window Aggregate": ["server", "server"],
    "Sink: Readings": ["server", "server"],
}
MOVED = {  # everything on the server but the sources' first two stages
    "Source: Sensors": ["rpi1", "rpi1"],
    "Parse": ["rpi1", "rpi1"],
    "Filter": ["server", "server"],
    "Enrich": ["server", "server"],
    "Window Aggregate": ["server", "server"],
    "Sink: Readings": ["server", "server"],
}
ALL_SERVER = {v: ["server", "server"] for v in VERTICES}


@dataclass(frozen=True)
class SshLab:
    hosts: dict[str, SshHost]  # host name -> sshd
    known_hosts: Path  # all hosts' keys
    client_key: Path
    down_address: str  # an address of our own namespace where no sshd listens


def write_inventory(
    path: Path,
    lab: SshLab,
    *,
    rest_url: str,
    home: Path,
    savepoint_dir: Path,
    mode: str = "vanilla",
    jar: Path | None = None,
    program_args: Sequence[str] = JOB_ARGS,
    known_hosts: Path | None = None,
    addresses: Mapping[str, str] | None = None,
    name: str = "pp-apply",
    flink: Mapping[str, object] | None = None,
) -> Path:
    """``flink``: more keys of the inventory's ``flink:`` section (``network``, ``failure_detection``)."""
    addresses = {h: s.address for h, s in lab.hosts.items()} | dict(addresses or {})
    doc = {
        "version": 1,
        "name": name,
        "ssh": {
            "user": "root",
            "port": 22,
            "key": str(lab.client_key),
            "known_hosts": str(known_hosts or lab.known_hosts),
        },
        "hosts": [
            {
                "name": "server",
                "address": addresses["server"],
                "role": "server",
                "cores": 4,
                "memory": "4GiB",
                "task_slots": 4,
            },
            {"name": "rpi1", "address": addresses["rpi1"], "role": "edge", "model": "rpi4b"},
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {
            "rest_url": rest_url,
            "home": str(home),
            "jobmanager": "server",
            "placement_mode": mode,
            "savepoint_dir": savepoint_dir.as_uri(),
            "scheduler_dir": str(home / "placement" / "scheduler"),
            **dict(flink or {}),
        },
        "job": {
            "name": JOB_NAME,
            "entry_class": IOT_SENSOR_JOB,
            "program_args": list(program_args),
            **({"jar": str(jar)} if jar else {}),
        },
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def write_plan_dir(
    out: Path,
    inventory_path: Path,
    mapping: Mapping[str, Sequence[str]],
    *,
    mode: str | None = None,
    vertex_ids: Mapping[str, str] | None = None,
) -> Path:
    """A plan directory as `placement plan --out` writes it (plan.json, schedulercfg, vanilla/<host>.yaml) for a
    mapping."""
    return plan_dirs.write_plan_dir(out, inventory_path, mapping, job=JOB_NAME, mode=mode, vertex_ids=vertex_ids)


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PLACEMENT, *args], capture_output=True, text=True, timeout=timeout, check=False)


def running_job(rest: FlinkRest, name: str = JOB_NAME) -> str:
    jobs = [j for j in rest.running_jobs() if j.name == name]
    assert len(jobs) == 1, jobs
    return jobs[0].id


def max_key_total(rest: FlinkRest, job_id: str) -> float:
    """The Window Aggregate's gauge: the largest per-sensor running total in keyed state (0 until a window fired)."""
    vertex = rest.job(job_id).vertex_named("Window Aggregate").id
    listed = rest.get(f"/jobs/{job_id}/vertices/{vertex}/subtasks/metrics")
    names = [m["id"] for m in listed if m["id"].endswith(".maxKeyTotal")]
    if not names:
        return 0.0
    return rest.vertex_metrics(job_id, vertex, names[:1], agg="max", refresh=1.0).get(names[0], 0.0)


def wait_key_total(rest: FlinkRest, job_id: str, at_least: float, timeout: float = 40.0) -> float:
    deadline = time.monotonic() + timeout
    value = 0.0
    while time.monotonic() < deadline:
        value = max_key_total(rest, job_id)
        if value >= at_least:
            return value
        time.sleep(0.5)
    return value


def assert_keyed_state_continued(rest: FlinkRest, job_id: str, before: float, since: float) -> float:
    """The running totals continue from ``before`` (taken before the redeploy at monotonic time ``since``).

    A job started from scratch gains at most PER_KEY_RATE_MAX per second per sensor, so within the time it has run
    (since its own start, and at most since ``since``) it could not have reached ``before``; the restored job is there
    at once (savepoint) or within one checkpoint interval (a failover to the last checkpoint).
    """
    assert before > 0
    value = wait_key_total(rest, job_id, before)
    elapsed = min(time.monotonic() - since, job_age(rest, job_id))
    assert value >= before, f"keyed totals restarted: {value} < {before}"
    assert PER_KEY_RATE_MAX * elapsed < before, f"test too slow to tell a restore from a fresh start ({elapsed:.0f}s)"
    return value


def read_audit(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def job_age(rest: FlinkRest, job_id: str) -> float:
    return time.time() - rest.job_raw(job_id)["start-time"] / 1000.0


def let_totals_grow(rest: FlinkRest, job_id: str, min_total: float = 450.0, timeout: float = 90.0) -> float:
    """Wait until the busiest sensor's running total is ``min_total`` (a fresh start would need ``min_total /
    PER_KEY_RATE_MAX`` seconds to get there, far longer than a restore takes); returns it. A job restored from
    an earlier test's savepoint is there at once."""
    value = wait_key_total(rest, job_id, min_total, timeout=timeout)
    assert value >= min_total, f"keyed totals grew to only {value} in {timeout:.0f}s"
    return value


def assert_in_order(text: str, marks: Sequence[str], start: str = "steps:") -> None:
    """Every mark occurs in ``text`` after ``start`` and after the mark before it."""
    at = text.find(start)
    assert at >= 0, (start, text)
    for mark in marks:
        found = text.find(mark, at)
        assert found >= 0, f"{mark!r} not found in order in:\n{text}"
        at = found + len(mark)


def fleet_profile(path: Path, name: str, vertex_ids: Mapping[str, str] | None = None) -> Path:
    """A profile of the apply tests' IoT job (vertex ids as the hand-made plans make them up, or ``vertex_ids``),
    ~200 records/s of 100 bytes per source subtask: what the running placement puts on the uplink can be computed."""

    def vid(vertex: str) -> str:
        return (vertex_ids or {}).get(vertex) or plan_dirs.made_up_id(vertex)

    edges = [("FORWARD", a, b) for a, b in pairwise(VERTICES[:4])]
    edges += [("HASH", VERTICES[3], VERTICES[4]), ("FORWARD", VERTICES[4], VERTICES[5])]
    doc = {
        "job": {"name": name, "origin": "synthetic"},
        "vertices": [
            {
                "id": vid(v),
                "name": v,
                "parallelism": 2,
                "stateful": v == "Window Aggregate",
                "state_bytes": 0.0,
                "bytes_per_record_out": 100,
                "subtasks": [
                    {
                        "index": i,
                        "records_in_per_s": 0 if k == 0 else 200,
                        "records_out_per_s": 0 if k == 5 else 200,
                        "busy_ms_per_s": 20,
                    }
                    for i in range(2)
                ],
            }
            for k, v in enumerate(VERTICES)
        ],
        "edges": [{"source": vid(a), "target": vid(b), "ship_strategy": s} for s, a, b in edges],
    }
    path.write_text(json.dumps(doc))
    return path


# STAND-IN for Flink's bin/taskmanager.sh (the wheel ships no bin/*.sh): it stops the TaskManager whose pid it
# knows and starts a new one from its home's conf/ the way placement.lab.flink does
TM_CTL = '''"""Stand-in for Flink's bin/taskmanager.sh (stop|start) on a test "host"; written by the apply tests."""
import os, signal, subprocess, sys, time
from pathlib import Path
sys.path.insert(0, {repo!r})
from placement.flink.home import find_flink_home
from placement.lab.flink import TaskManagerSpec, _memory_flags, taskmanager_argv

HOME = Path(__file__).resolve().parents[1]
PIDFILE = HOME / "taskmanager.pid"


def alive(pid):
    try:
        state = Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def stop():
    if not PIDFILE.exists():
        return
    pid = int(PIDFILE.read_text())
    with __import__("contextlib").suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)
    PIDFILE.unlink()


def start():
    home = find_flink_home()
    conf = HOME / "conf"
    jvm, dyn = _memory_flags(home, "GET_TM_RESOURCE_PARAMS", conf)
    jvm = [*jvm, *{flags!r}]  # the JIT's first tier only, as the test's cluster was started (quick_start)
    argv = taskmanager_argv(home, TaskManagerSpec({rid!r}), conf, HOME / "taskmanager.log", jvm, dyn)
    with open(HOME / "taskmanager.out", "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    PIDFILE.write_text(str(proc.pid))


{{"stop": stop, "start": start}}[sys.argv[1]]()
'''


def install_taskmanager_script(home: Path, resource_id: str, pid: int, jvm_flags: tuple[str, ...] = ()) -> None:
    """``<home>/bin/taskmanager.sh`` (the stand-in) for the TaskManager ``resource_id`` that runs as ``pid``."""
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "tm_ctl.py").write_text(TM_CTL.format(repo=str(REPO), rid=resource_id, flags=jvm_flags))
    script = bin_dir / "taskmanager.sh"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} "$(dirname "$0")/tm_ctl.py" "$@"\n')
    script.chmod(0o755)
    (home / "taskmanager.pid").write_text(str(pid))


def kill_from_pidfile(pidfile: Path) -> None:
    """End the TaskManager a stand-in started (not the cluster's child, so the cluster's stop misses it)."""
    with contextlib.suppress(OSError, ValueError):
        os.killpg(int(pidfile.read_text()), signal.SIGKILL)
