"""The whole chain on the real lab (inventory/lab.yaml), custom mode, on Flink 1.20 (the LTS line most clusters run;
the other lab tests run this machine's own 2.3, tests/lab/test_lab_cost_model.py runs 2.0): lab up --flink-version 1.20
(its newest release, fetched once into the cache; stock Flink + the scheduler extension built for it)
-> IoT job submitted unpinned (no --placement) -> metrics collect (60 s) -> profile (PySpark) -> plan (custom) ->
`placement apply` with the lab inventory (SSH to the edge namespaces, stop with savepoint, schedulercfg, the unchanged
jar resubmitted) -> the verify table all green, every subtask index on its planned TaskManager -> lab measure: each
uplink's job data within ±15 % of the plan's predicted Mbit/s, and the latency at the sink from Flink's markers and
from the sink's event-time histogram, apart by the window's wait -> lab down leaves nothing behind."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from placement.flink.distribution import release_for
from placement.flink.rest import FlinkRest
from placement.lab import chain
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.lab.runner import leftovers
from placement.netns import netns_available
from placement.profile.format import load_profile
from placement.writers.planjson import load_plan
from support import real_parts
from support.lab import assert_nothing_left

NO_NETNS = netns_available()
pytestmark = [
    pytest.mark.flink,
    pytest.mark.netns,
    pytest.mark.timeout(1200),
    real_parts.needs(NO_NETNS),  # a failure under strict mode (PLACEMENT_STRICT=1), else a skip
]

ROOT = Path(__file__).resolve().parents[2]
PLACEMENT = [str(Path(sys.executable).with_name("placement"))]
RATE = 500  # readings/s per source subtask: even both sources on one Pi (unpinned) stay under its 2 Mbit/s uplink
JOB_ARGS = ["--rate", str(RATE), "--parallelism", "2", "--job-name", "iot-sensors"]
TOLERANCE = 0.15
FLINK_LINE = "1.20"  # what a user running the LTS line types; the lab runs its newest release
# Event time at the IoT sink vs Flink's markers: a window summary carries its sensor's freshest reading, which reached
# the window a gap before the window's end; readings of one sensor arrive as a Poisson stream of RATE × 2 sources ×
# 30 % (Filter) / 100 sensors = 3/s, so that gap's median is ln 2 / 3 s ≈ 231 ms (the markers pass the window at once).
# Its p99 is ln 100 / 3 s ≈ 1.5 s: the event-time spread p99 − p50 is about 1.3 s, which markers do not have.
SENSOR_RATE = RATE * 2 * 0.30 / 100
WINDOW_WAIT_MS = math.log(2) / SENSOR_RATE * 1000
WINDOW_SPREAD_MS = (math.log(100) - math.log(2)) / SENSOR_RATE * 1000
# measured gaps (event time − markers, p50): 209, 248 ms (Flink 2.3, unpinned), 266 ms (1.20, placed, this test); a
# window that passed its end time instead of its freshest reading's gives ≈ −230 ms, its oldest reading's ≈ +1.4 s
GAP_BELOW_MS, GAP_ABOVE_MS = 130, 190


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*PLACEMENT, *args], check=False, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, f"placement {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-2000:]}"
    return proc


def assert_clean(work_dir: Path) -> None:
    assert_nothing_left(work_dir)


def test_profile_plan_move_and_measure_on_the_real_lab(tmp_path):
    work = tmp_path / "lab"
    try:
        up = (
            "lab",
            "up",
            "--inventory",
            str(ROOT / "inventory" / "lab.yaml"),
            "--workdir",
            str(work),
            "--flink-version",
            FLINK_LINE,
        )
        first = cli(*up)
        assert first.stdout.startswith("lab up (custom mode): REST http://127.0.0.1:")
        release = first.stdout.splitlines()[0].rsplit(", Flink ", 1)[1]
        assert release.startswith(f"{FLINK_LINE}.") and release == release_for(FLINK_LINE), first.stdout
        again = cli(*up)
        assert (
            again.stdout.startswith("lab already up (custom mode)")
            and first.stdout.split()[5] == again.stdout.split()[6]
        )

        st = json.loads(cli("lab", "status", "--workdir", str(work), "--json").stdout)
        assert st["format"] == "placement.lab-status/v1"
        assert st["up"] and [h["registered"] for h in st["hosts"]] == [True, True, True]
        edges = [h for h in st["hosts"] if h["role"] == "edge"]
        assert all("htb ede: root" in h["qdisc"] and "rate 2Mbit ceil 2Mbit" in h["classes"] for h in edges), edges
        assert [h["cpu_quota_us"] for h in edges] == [30_000, 30_000]
        for h in edges:
            assert Path(h["cgroup"], "cpu.cfs_quota_us").read_text().strip() == "30000"
            assert len(Path(h["cgroup"], "cgroup.procs").read_text().split()) >= 1  # the TaskManager JVM

        state = json.loads((work / "lab.json").read_text())
        rest = FlinkRest(st["rest_url"])
        jar = state["jar"]
        # the running lab inventory, with the job apply resubmits: the unchanged jar and its arguments
        doc = yaml.safe_load(Path(st["lab_inventory"]).read_text())
        assert doc["flink"]["placement_mode"] == "custom" and doc["flink"]["version"] == release
        assert rest.config()["flink-version"] == release
        doc["job"] = {**doc["job"], "program_args": JOB_ARGS}
        lab_inv = str(tmp_path / "lab-inventory.yaml")
        Path(lab_inv).write_text(yaml.safe_dump(doc, sort_keys=False))

        # 1. unpinned, a minute for Flink's 60 s rate meters to settle, then half a minute of samples (15, over the
        # profile's 10-sample confidence floor; each is a 60 s average already)
        job = chain.submit(rest, jar, IOT_SENSOR_JOB, JOB_ARGS)
        time.sleep(chain.METER_SETTLE_S)
        # (with the inventory: each TaskManager's threads too, over the edge hosts' sshd and locally on the server)
        cli(
            "metrics",
            "collect",
            "--rest",
            st["rest_url"],
            "--job-name",
            "iot-sensors",
            "--duration",
            "30",
            "--interval",
            "2",
            "--out",
            str(tmp_path / "metrics"),
            "--inventory",
            lab_inv,
            "--quiet",
        )
        cli(
            "profile",
            str(tmp_path / "metrics"),
            "--out",
            str(tmp_path / "profile.json"),
            "--inventory",
            lab_inv,
            "--warmup",
            "60",
            "--quiet",
        )
        profile = load_profile(tmp_path / "profile.json")
        # issue 23: every TaskManager's threads were read (none noted as unreachable) and every vertex's CPU share
        # follows its task threads: each subtask's thread was found on the TaskManager it ran on
        assert all(
            t.task_thread_cores is not None and t.other_thread_cores is not None for t in profile.taskmanagers
        ), profile.job.note
        assert {v.stats.get("cpu_calibration_basis", "").split(" on ")[0] for v in profile.vertices} == {"threads"}, [
            (v.name, v.stats.get("cpu_calibration_basis")) for v in profile.vertices
        ]
        out = cli(
            "plan", "--inventory", lab_inv, "--profile", str(tmp_path / "profile.json"), "--out", str(tmp_path / "plan")
        )
        plan = load_plan(tmp_path / "plan" / "plan.json")
        assert plan.placement_mode == "custom"
        mapping = plan.mapping()
        predicted = chain.predicted_link_mbit(plan)
        assert set(predicted) == {"rpi1", "rpi2"}, out.stdout

        # 2. apply it: the job is stopped with a savepoint and resubmitted unchanged; the extension places it
        applied = cli("apply", str(tmp_path / "plan"), "--inventory", lab_inv)
        assert "WRONG" not in applied.stdout and "runs every subtask on its planned TaskManager" in applied.stdout
        moved = next(j.id for j in rest.running_jobs() if j.name == "iot-sensors")
        assert moved != job
        vertices = rest.job(moved).vertices
        assert {v.name for v in vertices} == set(mapping)  # no lanes, no renamed copies: the job's own graph
        by_index = {
            v.name: [s.taskmanager_id for s in sorted(rest.subtasks(moved, v.id), key=lambda s: s.index)]
            for v in vertices
        }
        assert by_index == mapping

        # 3. measure the uplinks in steady state (the generators run at their full rate a few seconds after start):
        # apply returns after its settle (--settle, 10 s of the moved job RUNNING), so 5 s more start the window
        # 15 s or later after the job's start
        time.sleep(5)
        measured = json.loads(cli("lab", "measure", "--workdir", str(work), "--duration", "30", "--json").stdout)
        assert measured["format"] == "placement.lab-measure/v1"
        links = {lk["host"]: lk for lk in measured["links"]}
        report = {
            h: (round(predicted[h], 4), round(links[h]["data_mbit"], 4), round(links[h]["mbit"], 4)) for h in predicted
        }
        print("predicted, measured job data, measured wire Mbit/s:", report)
        for host, want in predicted.items():
            got = links[host]["data_mbit"]
            assert abs(got - want) <= TOLERANCE * want, (host, want, got, report)
            assert links[host]["mbit"] >= got  # the wire carries the data plus headers and RPC
        assert measured["jobs"][0]["source_records_per_s"] > 0
        # CPU per host over the same window: each host's TaskManager JVM (the server's JobManager left out), in
        # the host's own cores beside what the plan predicts (issue 23 holds the two within ±15 %)
        cpu = {c["host"]: c for c in measured["cpu"]}
        predicted_cores = {h.host: h.cores_used for h in plan.hosts}
        print(
            "CPU host cores, predicted vs measured:",
            {h: (round(predicted_cores[h], 3), round(c["host_cores"], 3)) for h, c in cpu.items()},
        )
        assert set(cpu) == {"server", "rpi1", "rpi2"} and all(c["processes"] == 1 for c in cpu.values()), cpu
        for host in ("rpi1", "rpi2"):
            quota_host_cores = 30_000 / 100_000 / cpu[host]["speed"]  # the cgroup's quota, in the Pi's cores
            assert 0 < cpu[host]["host_cores"] <= quota_host_cores * 1.05, cpu[host]  # busy, and never over its quota
            assert cpu[host]["host_cores"] == pytest.approx(cpu[host]["server_cores"] / cpu[host]["speed"])
        assert_latency_at_the_sink(measured["jobs"][0])
    finally:
        subprocess.run(
            [*PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
        )
    assert_clean(work)
    assert not (work / "lab.json").exists()


def assert_latency_at_the_sink(job: dict) -> None:
    """Issue 25: the lab tracks latency (markers every 250 ms, the last 60 s kept) and the IoT sink records event time;
    `lab measure` reports both at `Sink: Readings`. They differ by the window: markers pass Window Aggregate at once, a
    summary leaves at the window's end, WINDOW_WAIT_MS (median) after its sensor's freshest reading."""
    assert job["name"] == "iot-sensors"
    lat = {(x["sink"], x["kind"], x["source"]): x for x in job["latency"]}
    markers, event = lat[("Sink: Readings", "markers", "Source: Sensors")], lat[("Sink: Readings", "event-time", None)]
    assert set(lat) == {("Sink: Readings", "markers", "Source: Sensors"), ("Sink: Readings", "event-time", None)}, lat
    print(
        "latency at Sink: Readings, markers vs event time (p50, p99 ms):",
        (markers["p50_ms"], markers["p99_ms"]),
        (event["p50_ms"], event["p99_ms"]),
    )
    for x in (markers, event):
        assert x["histograms"] == 1  # one sink subtask
        assert 0 < x["p50_ms"] <= x["p99_ms"] < 10_000, x  # finite, ordered, and not a clock mix-up
    gap = event["p50_ms"] - markers["p50_ms"]
    assert WINDOW_WAIT_MS - GAP_BELOW_MS <= gap <= WINDOW_WAIT_MS + GAP_ABOVE_MS, (gap, markers, event)
    # measured 1100–1300 ms. Not compared with the markers' p99: the markers' history is the last 60 s, the sink's
    # 1024 records only ~20 s, and a p99 of either is a handful of records
    assert event["p99_ms"] - event["p50_ms"] >= WINDOW_SPREAD_MS / 2, event


def test_lab_down_after_the_launcher_was_killed_mid_start_removes_everything(tmp_path):
    """kill -9 of `lab up` while the JVMs start (namespaces, veths, cgroups exist, Java processes run)."""
    work = tmp_path / "lab"
    launcher = subprocess.Popen(
        [*PLACEMENT, "lab", "up", "--inventory", str(ROOT / "inventory" / "lab.yaml"), "--workdir", str(work)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        seen: dict[str, list[str]] = {}
        while time.monotonic() < deadline:
            seen = leftovers(work)
            # both edge TaskManager JVMs are in their cgroups: the middle of the start
            edge_cgroups = [cg for cg in seen["cgroups"] if not cg.endswith("-server")]
            busy = [cg for cg in edge_cgroups if Path(cg, "cgroup.procs").read_text().split()]
            if len(seen["namespaces"]) == 2 and len(busy) == 2:
                break
            assert launcher.poll() is None, "lab up finished before it could be killed"
            time.sleep(0.2)
        assert len(seen["namespaces"]) == 2 and len(seen["links"]) == 4 and len(seen["cgroups"]) == 3, seen
        os.kill(launcher.pid, 9)
        launcher.wait(timeout=10)
        time.sleep(1)
        stranded = leftovers(work)
        # the JobManager (in pl-lab-server) and the edge TaskManagers outlive their launcher (by design: `lab up` exits)
        assert len(stranded["pids"]) >= 3, stranded
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        down = subprocess.run(
            [*PLACEMENT, "lab", "down", "--workdir", str(work)],
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("lab down: removed 2 namespaces, 4 links, 3 cgroups"), down.stdout
    assert_clean(work)
