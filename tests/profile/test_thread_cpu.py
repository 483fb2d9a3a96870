"""Issue 23: each TaskManager JVM's CPU per thread (placement.collect.threads) and what profile makes of it
(placement.profile.threads, placement.profile.tm_cpu): a vertex's share of its TaskManager's CPU follows its task
threads' CPU time, not its busy time. The listing is read for real from a process of this test (its threads named
as Flink names task threads); the calibration from a recorded history whose figures follow by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from test_tm_cpu import SECONDS, T0, inventory, write_job

from placement.collect.layout import (
    THREAD_SCHEMA,
    RunVertex,
    find_manifests,
    read_manifest,
    thread_writer,
    write_manifest,
)
from placement.collect.threads import (
    PROCESS_ROW,
    PROCESS_TID,
    ThreadSampler,
    parse_thread_stats,
    thread_stats_argv,
)
from placement.costmodel import build_problem, evaluate
from placement.errors import PlacementError
from placement.profile.pipeline import build_profile
from placement.profile.threads import names_of, thread_cpu
from placement.remote import LocalExecutor

# A process that listens on a port (as a TaskManager on its data port) and runs two named threads: one spinning
# ("Map (1/2)#0", as Flink names subtask 0 of a vertex "Map" of parallelism 2) and one asleep.
_CHILD = r"""
import ctypes, socket, sys, threading, time
libc = ctypes.CDLL(None)
def named(name, work):
    def run():
        libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the thread's name in /proc
        work()
    threading.Thread(target=run, daemon=True).start()
def spin():
    while True:
        sum(range(1000))
named("Map (1/2)#0", spin)
named("Sink: A very long name (1/1)#0", lambda: time.sleep(3600))
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(3600)
"""


@pytest.fixture
def listening_jvm_stand_in():
    proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        yield proc, port
    finally:
        proc.kill()
        proc.wait()


def test_the_threads_of_the_process_listening_on_the_data_port_are_read_with_their_names_and_cpu(
    listening_jvm_stand_in,
):
    proc, port = listening_jvm_stand_in
    executor = LocalExecutor("here")

    def listing() -> list[tuple[int, str, int]]:
        return parse_thread_stats(executor.run(thread_stats_argv(port), check=True, mutates=False).stdout)

    # the process's own CPU, read by the test around each listing and between them: a busy machine gives the spinner
    # less of the second, so its share is checked against what its process used, not against the wall clock
    around_start = _process_cpu_s(proc.pid)
    first = listing()
    between_start = _process_cpu_s(proc.pid)
    time.sleep(1.0)
    between_end = _process_cpu_s(proc.pid)
    second = listing()
    around_end = _process_cpu_s(proc.pid)
    names = {name for _, name, _ in second}
    # the kernel keeps 15 characters of a name: the long one is cut, as a long vertex name is
    assert {"Map (1/2)#0", "Sink: A very lo"} <= names
    before = {tid: ns for tid, _, ns in first}
    spun = next(ns - before[tid] for tid, name, ns in second if name == "Map (1/2)#0") / 1e9
    slept = next(ns - before[tid] for tid, name, ns in second if name == "Sink: A very lo") / 1e9
    print(
        f"spinning thread {spun:.3f} s; its process {between_end - between_start:.3f} s between the listings, "
        f"{around_end - around_start:.3f} s around them"
    )
    assert between_end - between_start > 0.05, "the child never got the CPU to spin"
    # the spinning thread used all its process used (the other threads sleep), the sleeping one none; two clock ticks
    # of slack each side, as the kernel counts whole ticks per thread and per process
    slack = 2 / os.sysconf("SC_CLK_TCK")
    assert between_end - between_start - slack <= spun <= around_end - around_start + slack
    assert slept < 0.05


# A process on a port whose main thread keeps starting threads that spin ~30 ms and end: what a JVM that sees one CPU
# does with each async task (no common pool: a thread per task). No thread lives through two readings a second apart.
_SHORT_LIVED_CHILD = r"""
import socket, threading, time
def spin_briefly():
    end = time.monotonic() + 0.03
    while time.monotonic() < end:
        sum(range(1000))
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True)
while True:
    t = threading.Thread(target=spin_briefly); t.start(); t.join()
    time.sleep(0.02)
"""


def _process_cpu_s(pid: int) -> float:
    """The process's own CPU seconds (utime + stime, ended threads included), read by the test, not the sampler."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_cpu_of_threads_that_ended_between_two_readings_is_the_taskmanagers_own():
    proc = subprocess.Popen([sys.executable, "-c", _SHORT_LIVED_CHILD], stdout=subprocess.PIPE, text=True)
    try:
        port = int(proc.stdout.readline())
        sampler = ThreadSampler({"tm": (LocalExecutor("here"), port)}, clock=time.time)
        # the process's CPU read around the two samples and between them: what the sampler saw lies in between
        around_start = _process_cpu_s(proc.pid)
        rows = sampler.sample()
        between_start = _process_cpu_s(proc.pid)
        time.sleep(2.0)
        between_end = _process_cpu_s(proc.pid)
        rows += sampler.sample()
        around_end = _process_cpu_s(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert sampler.notes == []
    table = pa.Table.from_pylist(rows, schema=THREAD_SCHEMA)
    whole = [r for r in rows if r["tid"] == PROCESS_TID]
    assert [r["thread"] for r in whole] == [PROCESS_ROW, PROCESS_ROW]  # one per reading
    got = thread_cpu(table, 0, {}, {})["tm"]
    listed = thread_cpu(table.filter(pc.not_equal(table["tid"], PROCESS_TID)), 0, {}, {})["tm"]
    # spinning 30 of every ~50 ms (about 0.6 of a core on an idle machine, less on a busy one), all of it in threads
    # no reading saw twice: the threads listed show almost none of what the process used, the whole-process row all.
    # The rates are over the sampler's own window (its readings' timestamps), in CPU seconds here: a busy machine
    # stretches the listing's command, which the test's wall clock would count and the sampler's does not.
    window_s = (whole[1]["ts_ms"] - whole[0]["ts_ms"]) / 1000
    used = between_end - between_start
    slack = 2 / os.sysconf("SC_CLK_TCK")
    print(
        f"process {used:.3f} s between the samples, {around_end - around_start:.3f} s around them; other: "
        f"{got.other * window_s:.3f} s with the whole process, {listed.other * window_s:.3f} s from the threads"
    )
    assert used > 0.1, "the child never got the CPU to spin"
    assert listed.other * window_s < 0.25 * used
    assert used - slack <= got.other * window_s <= around_end - around_start + slack


def test_a_port_nobody_listens_on_is_a_note_not_a_failure():
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]  # bound, not listening
        sampler = ThreadSampler({"tm1": (LocalExecutor("here"), free)}, clock=time.time)
        assert sampler.sample() == [] and sampler.sample() == []
    assert sampler.notes == [
        f"per-thread CPU of TaskManager tm1 not recorded: no process of this user listens on port {free}"
    ]


def test_the_listing_parses_names_with_spaces_and_parentheses():
    text = (
        "100\n"
        "4242 (Source: Gen (1/) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0\n"  # a cut name with a parenthesis in it
        "4243 (flink-rate-limi) S 1 2 3 4 5 6 7 8 9 10 7 3 0 0\n"
        "garbage\n"
        "process 4241 (java) S 1 2 3 4 5 6 7 8 9 10 900 100 0 0\n"
    )  # the whole process, ended threads in it
    assert parse_thread_stats(text) == [
        (4242, "Source: Gen (1/", 3_000_000_000),
        (4243, "flink-rate-limi", 100_000_000),
        (PROCESS_TID, PROCESS_ROW, 10_000_000_000),
    ]
    with pytest.raises(PlacementError):
        parse_thread_stats("")


@pytest.mark.parametrize(
    "comm, name, index, parallelism, expected",
    [
        ("Map (1/2)#0", "Map", 0, 2, True),
        ("Map (1/2)#12", "Map", 0, 2, True),  # a restarted attempt
        ("Map (2/2)#0", "Map", 0, 2, False),  # the other subtask
        ("Map (1/2)#0", "Map", 0, 3, False),
        ("Mapper (1/2)#0", "Map", 0, 2, False),
        ("Parse Meters (1", "Parse Meters", 0, 1, True),  # cut inside the subtask's number
        ("Source: Cameras", "Source: Cameras", 0, 1, True),  # cut right after the name
        ("Source: Cameras", "Source: Cameras2", 0, 1, True),  # the first 15 characters agree: both are candidates
        ("C2 CompilerThre", "C2", 0, 1, False),
    ],
)
def test_a_task_threads_kernel_name_is_matched_to_its_vertex(comm, name, index, parallelism, expected):
    assert names_of(comm, name, index, parallelism) is expected


def _thread_rows(tm: str, threads: dict[tuple[int, str], float], seconds: int = SECONDS) -> list[dict]:
    """A row per thread per second; each thread's counter grows at its cores."""
    return [
        {
            "ts_ms": T0 + k * 1000,
            "taskmanager_id": tm,
            "tid": tid,
            "thread": name,
            "cpu_time_ns": int(1e9 + k * cores * 1e9),
        }
        for k in range(seconds)
        for (tid, name), cores in threads.items()
    ]


def test_thread_cpu_per_vertex_splits_a_shared_name_by_charge_and_leaves_the_rest_but_the_jit_to_the_taskmanager():
    rows = _thread_rows(
        "tm",
        {
            (1, "Map (1/2)#0"): 0.2,
            (2, "Map (2/2)#0"): 0.1,
            (3, "A long vertex n"): 0.3,
            (4, "C2 CompilerThre"): 0.05,
            (5, "OutputFlusher f"): 0.01,
        },
    )
    rows += _thread_rows("tm", {(6, "Sink (1/1)#0"): 0.5}, seconds=1)  # seen once: not a rate
    on_tm = [
        ("map", "Map", 0, 2),
        ("map", "Map", 1, 2),
        ("a", "A long vertex name", 0, 1),
        ("b", "A long vertex name too", 0, 1),
        ("sink", "Sink", 0, 1),
    ]
    got = thread_cpu(
        pa.Table.from_pylist(rows, schema=THREAD_SCHEMA), 0, {"tm": on_tm}, {"tm": {"a": 0.3, "b": 0.1, "map": 0.2}}
    )["tm"]
    assert got.vertices == pytest.approx({"map": 0.3, "a": 0.225, "b": 0.075})
    assert got.other == pytest.approx(0.01) and got.compiler == pytest.approx(0.05) and got.unmatched == ("sink",)


def test_what_the_whole_process_used_beyond_its_listed_threads_is_the_taskmanagers_own():
    threads = {(1, "Map (1/1)#0"): 0.2, (4, "C2 CompilerThre"): 0.05, (5, "OutputFlusher f"): 0.01}
    on_tm = {"tm": [("map", "Map", 0, 1)]}
    rows = _thread_rows("tm", {**threads, (PROCESS_TID, PROCESS_ROW): 0.41})
    got = thread_cpu(pa.Table.from_pylist(rows, schema=THREAD_SCHEMA), 0, on_tm, {"tm": {"map": 0.2}})["tm"]
    # 0.41 - 0.2 - 0.05 - 0.01: 0.15 of ended threads, the TaskManager's; the task thread and the JIT keep theirs
    assert got.vertices == pytest.approx({"map": 0.2}) and got.compiler == pytest.approx(0.05)
    assert got.other == pytest.approx(0.16)
    without = thread_cpu(
        pa.Table.from_pylist(_thread_rows("tm", threads), schema=THREAD_SCHEMA), 0, on_tm, {"tm": {"map": 0.2}}
    )["tm"]
    assert without.other == pytest.approx(0.01)  # a history recorded before the process's row: as before


def _history_with_threads(root: Path, threads: dict[str, dict[tuple[int, str], float]]) -> None:
    """tm_cpu's history with the source and one map subtask on rpi1, and per-thread rows for ``threads``."""
    vertices = [
        RunVertex(id="src", name="Source: Gen", parallelism=1),
        RunVertex(id="map", name="Map", parallelism=2),
        RunVertex(id="sink", name="Sink: Out", parallelism=1),
    ]
    busy = {("src", 0): 500.0, ("map", 0): 300.0, ("map", 1): 300.0, ("sink", 0): 100.0}
    where = {("src", 0): "rpi1", ("map", 0): "rpi1", ("map", 1): "srv", ("sink", 0): "srv"}
    rates = {"src": (0.0, 1000.0), "map": (500.0, 500.0), "sink": (1000.0, 0.0)}
    write_job(root, "j1", "cpu-job", vertices, busy, where, rates, {"srv": 0.85, "rpi1": 0.30, "rpi2": 0.05})
    ((run, m),) = find_manifests(root)
    writer = thread_writer(root, m.job_id, m.run_id)
    writer.write(
        pa.Table.from_pylist([r for tm, t in threads.items() for r in _thread_rows(tm, t)], schema=THREAD_SCHEMA)
    )
    m = read_manifest(run / "_manifest.json")
    m.thread_files = writer.files
    write_manifest(root, m)


def _profile(tmp_path: Path):
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(inventory().model_dump(mode="json", by_alias=True)))
    return build_profile(tmp_path / "metrics", engine="pandas", warmup_s=0, inventory=inv)


def test_each_vertex_takes_its_task_threads_share_of_what_the_taskmanager_used(tmp_path):
    """rpi1's JVM uses 0.30 Pi cores, 0.05 of them its own (the idle rpi2's baseline): 0.25 for the source and the
    map subtask, charged 0.5 and 0.3 by busy time. Their threads used 0.05 and 0.15 (the rest: the flusher, a rate
    limiter), so the source gets a quarter of 0.25 and the map three quarters: k = 0.0625 / 0.5 and 0.1875 / 0.3 there.
    Busy time as the key ("shared": both 0.25 / 0.8) gave the source five times its thread's share."""
    _history_with_threads(
        tmp_path / "metrics",
        {
            "rpi1": {
                (1, "Source: Gen (1/"): 0.05,
                (2, "Map (1/2)#0"): 0.15,
                (3, "flink-rate-limi"): 0.04,
                (4, "OutputFlusher f"): 0.06,
            },
            "srv": {(10, "Map (2/2)#0"): 0.35, (11, "Sink: Out (1/1)"): 0.15, (12, "flink-scheduler"): 0.35},
        },
    )
    profile = _profile(tmp_path)
    tms = {t.id: t for t in profile.taskmanagers}
    rpi1, srv = tms["rpi1"], tms["srv"]
    assert rpi1.basis == "prior" and rpi1.calibrated_cores == pytest.approx(0.25)
    assert rpi1.task_thread_cores == pytest.approx(0.20) and rpi1.other_thread_cores == pytest.approx(0.10)
    src = profile.vertex("src")
    assert (
        src.cpu_calibration == pytest.approx(0.0625 / 0.5) and src.stats["cpu_calibration_basis"] == "threads on rpi1"
    )
    # the server: 0.835 used beside its 0.015 baseline, map's subtask 0.35 / 0.5 of the threads, the sink's 0.15 / 0.5
    k_map_srv, k_map_rpi1 = 0.835 * 0.7 / 0.3, 0.1875 / 0.3
    assert profile.vertex("sink").cpu_calibration == pytest.approx(0.835 * 0.3 / 0.1, rel=1e-5)
    # a vertex on two TaskManagers: their factors weighted by its charge on each (0.3 Pi cores = 0.09 server cores
    # on rpi1 vs 0.3 on the server, in each host's own cores: 0.3 and 0.3)
    assert profile.vertex("map").cpu_calibration == pytest.approx((k_map_rpi1 * 0.3 + k_map_srv * 0.3) / 0.6, rel=1e-5)
    assert "task threads 0.200 + other 0.100" in (profile.job.note or "") and srv.task_thread_cores == pytest.approx(
        0.5
    )


def test_without_a_vertexs_task_thread_busy_time_stays_the_key(tmp_path):
    """rpi1's listing lacks the map subtask's thread (a name that did not match): its vertices are split by busy time
    as before (shared: busy time overstates by more than the source's charge, so both get 0.25 / 0.8)."""
    _history_with_threads(
        tmp_path / "metrics",
        {"rpi1": {(1, "Source: Gen (1/"): 0.05, (3, "flink-rate-limi"): 0.04, (4, "OutputFlusher f"): 0.21}},
    )
    profile = _profile(tmp_path)
    assert profile.vertex("src").stats["cpu_calibration_basis"] == "shared on rpi1"
    assert profile.vertex("src").cpu_calibration == pytest.approx(0.25 / 0.8)


def test_a_light_operator_costs_what_its_thread_used_not_the_floor_again(tmp_path):
    """The busy-time floor (0.005 server cores) is part of the charge a calibration is measured against: a Tag
    operator on rpi1 whose busy time reads 2 ms/s is charged the floor, its thread used 0.002 of rpi1's cores. Priced
    on the placement it was profiled on, rpi1's subtasks cost exactly what the profile says they used (0.10: 0.15
    measured, 0.05 of it the baseline) and Tag its thread's share of it. Flooring again after the calibration charged
    Tag 0.005 / 0.3 = 0.0167 of rpi1's cores: eight times its thread (the lab's Zoo job: five such subtasks on a Pi)."""
    vertices = [
        RunVertex(id="src", name="Source: Gen", parallelism=1),
        RunVertex(id="tag", name="Tag", parallelism=1),
        RunVertex(id="sink", name="Sink: Out", parallelism=1),
    ]
    where = {("src", 0): "rpi1", ("tag", 0): "rpi1", ("sink", 0): "srv"}
    write_job(
        tmp_path / "metrics",
        "j1",
        "cpu-job",
        vertices,
        {("src", 0): 500.0, ("tag", 0): 2.0, ("sink", 0): 100.0},
        where,
        {"src": (0.0, 1000.0), "tag": (1000.0, 1000.0), "sink": (1000.0, 0.0)},
        {"srv": 0.5, "rpi1": 0.15, "rpi2": 0.05},
    )
    ((run, m),) = find_manifests(tmp_path / "metrics")
    writer = thread_writer(tmp_path / "metrics", m.job_id, m.run_id)
    writer.write(
        pa.Table.from_pylist(
            _thread_rows(
                "rpi1",
                {
                    (1, "Source: Gen (1/"): 0.05,
                    (2, "Tag (1/1)#0"): 0.002,
                    (3, "flink-rate-limi"): 0.04,
                    (4, "OutputFlusher f"): 0.058,
                },
            )
            + _thread_rows("srv", {(10, "Sink: Out (1/1)"): 0.15, (11, "flink-scheduler"): 0.35}),
            schema=THREAD_SCHEMA,
        )
    )
    m = read_manifest(run / "_manifest.json")
    m.thread_files = writer.files
    write_manifest(tmp_path / "metrics", m)
    profile = _profile(tmp_path)
    rpi1 = next(t for t in profile.taskmanagers if t.id == "rpi1")
    assert rpi1.basis == "prior" and rpi1.calibrated_cores == pytest.approx(0.10)
    problem = build_problem(inventory(), profile)
    cost = evaluate(problem, {key: tm for key, tm in where.items()})
    assert cost.host("rpi1").cores_used == pytest.approx(0.10, rel=1e-5)  # (the profile keeps factors to 6 places)
    tag = next(s for s in problem.subtasks if s.vertex_id == "tag")
    assert tag.cores_on(problem.host_by_name["rpi1"]) == pytest.approx(0.10 * 0.002 / 0.052, rel=1e-5)


def test_the_netty_servers_threads_are_left_to_the_cost_models_per_host_charge(tmp_path):
    """rpi1 sends to the server while profiled: its Netty server's 0.04 cores would be shared out to Map and the source
    (and charged again by costmodel.deliveries wherever they are placed): left out, as the JIT compiler's is."""
    threads = {(1, "Source: Gen (1/"): 0.05, (2, "Map (1/2)#0"): 0.15, (3, "OutputFlusher f"): 0.10}
    _history_with_threads(tmp_path / "quiet" / "metrics", {"rpi1": threads})
    _history_with_threads(tmp_path / "sends" / "metrics", {"rpi1": {**threads, (5, "Flink Netty Ser"): 0.04}})
    quiet, sends = _profile(tmp_path / "quiet"), _profile(tmp_path / "sends")
    rpi1 = {t.id: t for t in sends.taskmanagers}["rpi1"]
    assert rpi1.netty_server_thread_cores == pytest.approx(0.04) and rpi1.other_thread_cores == pytest.approx(0.10)
    assert rpi1.process_cores == pytest.approx({t.id: t for t in quiet.taskmanagers}["rpi1"].process_cores)
    for vid in ("src", "map"):
        assert sends.vertex(vid).cpu_calibration == pytest.approx(quiet.vertex(vid).cpu_calibration)
    assert "Netty server 0.040 left out" in (sends.job.note or "")


def test_where_threads_were_read_their_sum_is_the_processs_cpu(tmp_path):
    """Status.JVM.CPU.Time comes over REST from the JobManager's metric store, refreshed every 10 s: over a short
    window a few pairs, and an idle lab Pi read 0.054 cores from it against 0.087 from its threads (0.087 is what it
    went on using). The threads are read from the kernel every round: their sum is the process's CPU. Here the idle
    rpi2's threads use 0.08 where CPU.Time says 0.05: its baseline is 0.08, and rpi1's prior with it (0.024 server
    cores); rpi1's threads add up to its CPU.Time's 0.30, so it used 0.30 - 0.08 beside its baseline."""
    _history_with_threads(
        tmp_path / "metrics",
        {
            "rpi1": {(1, "Source: Gen (1/"): 0.05, (2, "Map (1/2)#0"): 0.15, (3, "OutputFlusher f"): 0.10},
            "rpi2": {(20, "flink-scheduler"): 0.05, (21, "flink-metrics-s"): 0.03},
        },
    )
    profile = _profile(tmp_path)
    tms = {t.id: t for t in profile.taskmanagers}
    assert tms["rpi2"].basis == "idle" and tms["rpi2"].process_cores == pytest.approx(0.08)
    assert tms["rpi2"].baseline_cores == pytest.approx(0.08)
    assert tms["srv"].process_cores == pytest.approx(0.85)  # no threads read there: CPU.Time, as before
    rpi1 = tms["rpi1"]
    assert rpi1.baseline_cores == pytest.approx(0.08) and rpi1.calibrated_cores == pytest.approx(0.22)
    assert profile.vertex("src").cpu_calibration == pytest.approx(0.22 * 0.25 / 0.5)


def test_the_jit_compilers_threads_are_left_out_of_the_processs_cpu_and_the_baselines(tmp_path):
    """The JIT compiler's threads compile what the JVM has just started to run: a warm-up that ends, where the model
    predicts the steady state (a lab Pi used 20-35 % of its CPU on them 60-120 s after a move, a long-running
    TaskManager next to nothing). rpi1's 0.30 includes 0.06 of C2 and the idle rpi2's 0.08 includes 0.02 of C1: rpi1
    is 0.24 and its baseline rpi2's 0.06, so its subtasks used 0.18 (0.22 with the compilers: each vertex's share 22 %
    more than it will use once compiled)."""
    _history_with_threads(
        tmp_path / "metrics",
        {
            "rpi1": {
                (1, "Source: Gen (1/"): 0.05,
                (2, "Map (1/2)#0"): 0.15,
                (3, "OutputFlusher f"): 0.04,
                (4, "C2 CompilerThre"): 0.06,
            },
            "rpi2": {(20, "flink-scheduler"): 0.06, (21, "C1 CompilerThre"): 0.02},
        },
    )
    profile = _profile(tmp_path)
    tms = {t.id: t for t in profile.taskmanagers}
    rpi1, rpi2 = tms["rpi1"], tms["rpi2"]
    assert (
        rpi2.basis == "idle"
        and rpi2.process_cores == pytest.approx(0.06)
        and rpi2.compiler_thread_cores == pytest.approx(0.02)
    )
    assert rpi1.process_cores == pytest.approx(0.24) and rpi1.compiler_thread_cores == pytest.approx(0.06)
    assert rpi1.other_thread_cores == pytest.approx(0.04) and rpi1.baseline_cores == pytest.approx(0.06)
    assert rpi1.calibrated_cores == pytest.approx(0.18)
    assert profile.vertex("src").cpu_calibration == pytest.approx(0.18 * 0.25 / 0.5)
    assert "JIT compiler 0.060, Netty server 0.000 left out" in (profile.job.note or "")


def test_a_history_without_thread_rows_profiles_as_before(tmp_path):
    write_job(
        tmp_path / "metrics",
        "j1",
        "cpu-job",
        [RunVertex(id="src", name="Source: Gen", parallelism=1)],
        {("src", 0): 500.0},
        {("src", 0): "rpi1"},
        {"src": (0.0, 1000.0)},
        {"srv": 0.85, "rpi1": 0.30, "rpi2": 0.05},
    )
    profile = _profile(tmp_path)
    rpi1 = next(t for t in profile.taskmanagers if t.id == "rpi1")
    assert rpi1.task_thread_cores is None and profile.vertex("src").stats["cpu_calibration_basis"] == "alone on rpi1"
