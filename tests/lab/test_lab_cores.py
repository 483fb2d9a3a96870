"""Per-thread CPU caps (placement.lab.cores): which threads are task threads, and a real cap on a real busy thread
in a real cgroup v1 cpu controller (the lab's), nested under a parent quota as the edge TaskManager's is; and what
``lab measure`` counts as a host's CPU (its TaskManager JVM's, in the host's own cores)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from placement.lab import cores, measure
from placement.lab.runner import lab_cgroups
from placement.lab.topology import CGROUP_ROOT, NS_PREFIX
from support import real_parts

NO_CGROUP = (
    None
    if os.geteuid() == 0 and (CGROUP_ROOT / "cpu.cfs_quota_us").exists()
    else "needs root and the cgroup v1 cpu controller"
)


def test_task_threads_are_told_by_their_truncated_names():
    names = ["Source: Bids", "Currency Convert", "Hot Items", "Sink: HotItems"]
    for comm in ("Source: Bids (1", "Currency Conver", "Hot Items (1/2)", "Sink: HotItems "):
        assert cores.is_task_thread(comm, names), comm
    for comm in ("Flink Netty Ser", "java", "Hot Items", "OutputFlusher f", ""):
        assert not cores.is_task_thread(comm, names), comm


def remove_cgroup(cgroup: Path) -> None:
    """rmdir a cgroup once the kernel has moved its killed processes out (a moment after they were reaped)."""
    for _ in range(50):
        try:
            cgroup.rmdir()
            return
        except OSError:
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    return measure.cpu_seconds([pid])[pid]


@real_parts.needs(NO_CGROUP)
def test_a_busy_task_thread_is_held_to_one_slow_core_and_lab_down_order_removes_its_cgroup():
    parent = CGROUP_ROOT / f"{NS_PREFIX}test-cores"
    parent.mkdir(exist_ok=True)
    proc = None
    try:
        (parent / "cpu.cfs_period_us").write_text("100000")
        (parent / "cpu.cfs_quota_us").write_text("80000")  # the TaskManager's quota: 0.8 of a core
        # a thread can only rename itself (or one of its own process): the busy process names its thread as Flink
        # names a task's
        proc = subprocess.Popen(
            [sys.executable, "-c", "open('/proc/self/comm', 'w').write('Hot Items (1/1)')\nwhile True: pass"]
        )
        (parent / "cgroup.procs").write_text(str(proc.pid))
        deadline = time.monotonic() + 10
        while Path(f"/proc/{proc.pid}/comm").read_text().strip() != "Hot Items (1/1)" and time.monotonic() < deadline:
            time.sleep(0.05)
        capped = cores.cap_task_threads(parent, ["Hot Items"], 0.1, pids=[proc.pid])
        assert capped == [proc.pid]
        assert (parent / f"thread-{proc.pid}" / "cpu.cfs_quota_us").read_text().strip() == "10000"
        time.sleep(0.5)
        before, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(3)
        used = (cpu_seconds(proc.pid) - before) / (time.monotonic() - t0)
        assert 0.05 < used < 0.15, f"{used:.3f} cores"  # one core of 0.1, not the TaskManager's 0.8
        # the lab's cleanup order: the thread's cgroup before its parent
        found = [p for p in lab_cgroups() if p.is_relative_to(parent)]
        assert found == [parent / f"thread-{proc.pid}", parent]
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        for cg in [p for p in lab_cgroups() if p.is_relative_to(parent)]:
            remove_cgroup(cg)
    assert not parent.exists()


# a TaskManager stand-in whose CPU two threads spend: its main thread and one named as HotSpot names its C2 compiler's
JIT_AND_TASK = r"""
import ctypes, threading
def compiler():
    ctypes.CDLL(None).prctl(15, b"C2 CompilerThread0", 0, 0, 0)  # PR_SET_NAME; Linux keeps "C2 CompilerThre"
    while True:
        pass
threading.Thread(target=compiler, daemon=True).start()
while True:
    pass
"""


@real_parts.needs(NO_CGROUP)
def test_lab_measure_counts_the_taskmanager_of_a_hosts_cgroup_only_in_the_hosts_own_cores_and_its_jit_apart():
    host = CGROUP_ROOT / f"{NS_PREFIX}test-measure"
    host.mkdir(exist_ok=True)
    procs: list[subprocess.Popen] = []
    try:
        (host / "cpu.cfs_period_us").write_text("100000")
        (host / "cpu.cfs_quota_us").write_text("20000")  # the host's quota: 0.2 of a core here
        # a busy process whose command line runs TaskManagerRunner (as a TaskManager JVM's does), and a busy one that
        # does not (as the JobManager beside the server's TaskManager): only the first is the host's TaskManager. The
        # TaskManager's CPU is spent by two threads, one named as HotSpot names its C2 compiler's
        procs = [
            subprocess.Popen([sys.executable, "-c", code, arg])
            for code, arg in (
                (JIT_AND_TASK, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"),
                ("while True: pass", "StandaloneSessionClusterEntrypoint"),
            )
        ]
        for proc in procs:
            (host / "cgroup.procs").write_text(str(proc.pid))
        assert measure.taskmanager_pids(host) == [procs[0].pid]
        time.sleep(0.5)
        state = {"hosts": [{"name": "rpi9", "role": "edge", "cgroup": str(host), "speed": 0.25}]}  # no uplink to count
        links, [rpi9] = measure.measure_window(state, 3.0)
        assert links == []
        assert (rpi9.host, rpi9.processes, rpi9.speed) == ("rpi9", 1, 0.25)
        # the two share the quota: the TaskManager gets about half of 0.2 cores, never more than all of it
        assert 0.04 < rpi9.server_cores <= 0.21, rpi9
        assert rpi9.host_cores == rpi9.server_cores / 0.25
        # the JIT compiler's thread is shown apart (the two threads share the GIL: about half each), and what the
        # plan predicts is the rest
        assert 0.2 < rpi9.compiler_server_cores / rpi9.server_cores < 0.8, rpi9
        assert rpi9.steady_host_cores == pytest.approx((rpi9.server_cores - rpi9.compiler_server_cores) / 0.25)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        remove_cgroup(host)
    assert not host.exists()
