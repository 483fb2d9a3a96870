"""Stock Flink 2.3 + the scheduler extension: unmodified jobs placed subtask by subtask from a schedulercfg.

One cluster for the whole module (tests/scheduler/conftest.py). The lab jobs run WITHOUT --placement: nothing in
them knows about placement; where every subtask runs is read back from REST (``taskmanager-id`` per subtask).
Tests run in file order: the IoT job submitted first is stopped with a savepoint, restored, and survives a
TaskManager restart before the other jobs join it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scheduler_support import ADDRESSES, IOT_ARGS, IOT_PLAN, TASKMANAGERS, PlacedCluster, schedulercfg, wait_for

from placement import scheduler as S
from placement.lab.flink import FlinkProcess
from placement.lab.jobs import BRANCHING_JOB, IOT_SENSOR_JOB, NEXMARK_BIDS_JOB

pytestmark = pytest.mark.flink

SQL_JOB = "placement.lab.SqlJob"


def allocated_slots(pc: PlacedCluster, tm: str, job_id: str) -> list[dict]:
    body = pc.rest.get(f"/taskmanagers/{tm}")
    return [s for s in body.get("allocatedSlots", []) if s.get("jobId") == job_id]


@pytest.fixture(scope="module")
def iot(placed_cluster: PlacedCluster):
    """The placed IoT job; ``state["job"]`` is its current id (a savepoint restore makes a new one)."""
    pc = placed_cluster
    pc.write_schedulercfg("iot-sensors", schedulercfg(IOT_PLAN, {"rpi2": ADDRESSES["rpi2"][0]}))
    state = {"job": pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS)}
    yield state
    pc.cancel(state["job"])


def test_the_extension_is_active_and_says_so(placed_cluster: PlacedCluster, iot: dict) -> None:
    pc = placed_cluster
    assert S.extension_active(pc.rest) is True
    classpath = [Path(p).name for p in (pc.rest.get("/jobmanager/environment")["classpath"])]
    ours = next(i for i, name in enumerate(classpath) if name.startswith("placement-scheduler-"))
    assert ours < next(i for i, name in enumerate(classpath) if name.startswith("flink-dist"))
    line = pc.active_line(iot["job"])
    assert f"placed by {pc.scheduler_dir / 'iot-sensors.schedulercfg'}" in line
    assert "2 slot(s) on rpi1" in line and "1 slot(s) on rpi2" in line and "2 slot(s) on server" in line


def test_unmodified_job_runs_every_subtask_where_the_file_says(placed_cluster: PlacedCluster, iot: dict) -> None:
    assert placed_cluster.rest.placement(iot["job"]) == IOT_PLAN


def test_each_placed_slot_has_the_size_of_its_taskmanagers_slots(placed_cluster: PlacedCluster, iot: dict) -> None:
    pc = placed_cluster
    for tm, (slots, heap, managed, _network) in TASKMANAGERS.items():
        mine = allocated_slots(pc, tm, iot["job"])
        assert mine, f"no slot of the IoT job on {tm}"
        for slot in mine:
            resource = slot["resource"]
            assert resource["taskHeapMemory"] == heap // slots, (tm, resource)
            assert resource["managedMemory"] == managed // slots, (tm, resource)  # the server keeps its managed memory
            assert resource["extendedResources"] == {S.taskmanager_resource_name(tm): 1.0}, (tm, resource)


def test_savepoint_stop_and_restore_keeps_the_placement(
    placed_cluster: PlacedCluster, iot: dict, tmp_path: Path
) -> None:
    pc = placed_cluster
    savepoint = pc.rest.stop_with_savepoint(iot["job"], f"file://{tmp_path}", timeout=180)
    iot["job"] = pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS, savepoint_path=savepoint)
    assert pc.rest.placement(iot["job"]) == IOT_PLAN
    assert pc.restored_from(iot["job"]) == savepoint.rstrip("/")


def test_a_taskmanager_killed_and_restarted_gets_its_subtasks_back(placed_cluster: PlacedCluster, iot: dict) -> None:
    pc = placed_cluster
    old = pc.cluster.taskmanagers["rpi1"]
    os.killpg(old.pid, signal.SIGKILL)
    if old.popen is not None:
        old.popen.wait(timeout=30)
    wait_for(lambda: not pc.rest.job(iot["job"]).all_running, 60, "the job to notice the lost TaskManager")
    with open(old.stdout_file, "ab") as out:
        popen = subprocess.Popen(
            old.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    pc.cluster.taskmanagers["rpi1"] = FlinkProcess(
        "taskmanager rpi1", popen.pid, old.log_file, old.stdout_file, old.argv, popen
    )  # stopped with the cluster
    pc.rest.wait_until_running(iot["job"], timeout=240)
    assert pc.rest.placement(iot["job"]) == IOT_PLAN


def test_three_placed_jobs_and_a_stock_job_share_the_cluster(placed_cluster: PlacedCluster, iot: dict) -> None:
    pc = placed_cluster
    nexmark_plan = {
        "Source: Bids": ["rpi1", "rpi1"],
        "Parse Bids": ["rpi1", "rpi1"],
        "Currency Convert": ["rpi1", "server"],
        "Filter Auctions": ["server", "server"],
        "Hot Items": ["server"],
        "Sink: HotItems": ["server"],
    }
    branching_plan = {
        "Source: Cameras": ["rpi2"],
        "Detect Objects": ["rpi2"],
        "Source: Meters": ["server"],
        "Parse Meters": ["server"],
        "Join Frames Meters": ["server"],
        "Sink: Alerts": ["server"],
    }
    pc.write_schedulercfg("nexmark-a", schedulercfg(nexmark_plan))
    pc.write_schedulercfg("branching-a", schedulercfg(branching_plan, {"rpi2": ADDRESSES["rpi2"][0]}))
    jobs = []
    try:
        # the two placed jobs deploy side by side (their files leave each other, and the IoT job, the slots they
        # name); the stock job comes last, as it may take any free slot
        nexmark = pc.run(NEXMARK_BIDS_JOB, ["--rate", "40", "--job-name", "nexmark-a"])
        jobs.append(nexmark)
        branching = pc.run(BRANCHING_JOB, ["--meter-rate", "20", "--camera-rate", "5", "--job-name", "branching-a"])
        jobs.append(branching)
        pc.wait_running(nexmark)
        pc.wait_running(branching)
        stock = pc.run_until_running(IOT_SENSOR_JOB, ["--rate", "20", "--parallelism", "1", "--job-name", "iot-stock"])
        jobs.append(stock)
        assert pc.rest.placement(nexmark) == nexmark_plan
        assert pc.rest.placement(branching) == branching_plan
        assert pc.rest.placement(iot["job"]) == IOT_PLAN  # the first job is undisturbed
        assert pc.rest.job(stock).all_running
        stock_line = pc.active_line(stock)
        assert f"no schedulercfg at {pc.scheduler_dir / 'iot-stock.schedulercfg'}: stock placement" in stock_line
    finally:
        for job in jobs:
            pc.cancel(job)


def test_a_default_line_places_every_unlisted_subtask(placed_cluster: PlacedCluster) -> None:
    pc = placed_cluster
    partial = {k: v for k, v in IOT_PLAN.items() if k in ("Source: Sensors", "Parse")}
    pc.write_schedulercfg("iot-default", schedulercfg(partial) + "*; server\n")  # the IoT job leaves 4 slots there
    job = pc.run_until_running(IOT_SENSOR_JOB, [*IOT_ARGS, "--job-name", "iot-default"])
    try:
        expected = {v: partial.get(v, ["server"] * len(tms)) for v, tms in IOT_PLAN.items()}
        assert pc.rest.placement(job) == expected
    finally:
        pc.cancel(job)


def _with_line_inserted(text: str, at: int, line: str) -> str:
    lines = text.splitlines(keepends=True)
    lines.insert(at, line)
    return "".join(lines)


TABLE = f"{{dir}}/{S.TASKMANAGERS_FILENAME}"
# job name, the file, the message the submission is refused with ({file} and {dir} filled in; "..." ends a prefix)
REFUSALS = [
    (
        "iot-partial",
        schedulercfg({k: v for k, v in IOT_PLAN.items() if k != "Sink: Readings"}),
        (
            "{file}: job 'iot-partial': 2 subtask(s) not placed: 'Sink: Readings (1/2)', 'Sink: Readings (2/2)' (list "
            "every subtask, or add a default line '*; <TaskManager>')"
        ),
    ),
    (
        "iot-malformed",
        _with_line_inserted(schedulercfg(IOT_PLAN), 3, "Parse (2/3) rpi2\n"),
        "{file}:4: expected '<task name> (<i>/<n>); <TaskManager>' or '*; <TaskManager>', got 'Parse (2/3) rpi2'",
    ),
    (
        "iot-stale",
        schedulercfg({**IOT_PLAN, "Window Aggregate": ["server"] * 3}),
        (
            "{file}:13: 'Window Aggregate (1/3)' matches no subtask of job 'iot-stale' (its vertices: Source: Sensors "
            "x3, Parse x3, Filter x3, Enrich x3, Window Aggregate x2, Sink: Readings x2)"
        ),
    ),
    # the seed's contains() would silently take one of the four vertices whose second subtask ends so
    (
        "iot-ambiguous",
        "# a comment\n(2/3); rpi1\n*; server\n",
        "{file}:2: '(2/3)' is ambiguous in job 'iot-ambiguous': it matches 'Source: Sensors (2/3)' (vertex ...",
    ),
    (
        "iot-twice",
        "Parse (1/3); rpi1\nParse (1/3); rpi2\n*; server\n",
        "{file}:2: 'Parse (1/3)' places subtask 'Parse (1/3)', which line 1 ('Parse (1/3)') places already",
    ),
    (
        "iot-rpi9",
        schedulercfg(IOT_PLAN).replace("Sink: Readings (2/2); server", "Sink: Readings (2/2); rpi9"),
        "{file}:16: TaskManager 'rpi9' is not registered with this cluster (" + TABLE + " lists rpi1 [...",
    ),
    (
        "iot-address",
        "*; 127.0.0.1\n",
        "{file}:1: '127.0.0.1' is an address of several TaskManagers (rpi1, rpi2, server in "
        + TABLE
        + "): name one by "
        "its resource id",
    ),
    (
        "iot-crowded",
        "".join(f"Source: Sensors ({i}/3); rpi2\n" for i in (1, 2, 3)) + "*; server\n",
        "{file}: job 'iot-crowded' needs 3 slot(s) on TaskManager 'rpi2' (...",
    ),
]


@pytest.mark.parametrize(("job_name", "text", "expected"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_wrong_file_is_refused_at_submission_naming_file_and_line(
    placed_cluster: PlacedCluster, job_name: str, text: str, expected: str
) -> None:
    pc = placed_cluster
    path = pc.write_schedulercfg(job_name, text)
    started = time.monotonic()
    message, job = pc.refusal(IOT_SENSOR_JOB, [*IOT_ARGS, "--job-name", job_name])
    assert job is None  # the run request itself fails (HTTP 400) with the message: nothing runs, nothing restarts
    assert time.monotonic() - started < 60
    want = "placement scheduler: " + expected.format(file=path, dir=pc.scheduler_dir)
    if want.endswith("..."):
        assert message.startswith(want[:-3]), message
    else:
        assert message == want
    if job_name == "iot-crowded":
        assert "which has 2 (" in message


def test_an_unknown_taskmanager_without_a_table_fails_instead_of_restarting(
    placed_cluster: PlacedCluster, tmp_path: Path
) -> None:
    """The job's own configuration names its file, in a dir without taskmanagers.cfg: the slot size comes from the
    JobManager's config, and a TaskManager that never gave a slot fails the job without restarts."""
    pc = placed_cluster
    own = tmp_path / "mine.schedulercfg"
    own.write_text("*; rpi9\n")
    started = time.monotonic()
    message, job = pc.refusal(
        IOT_SENSOR_JOB,
        [*IOT_ARGS, "--job-name", "iot-no-table"],
        timeout=150,
        flink_configuration={S.JOB_FILE_KEY: str(own)},
    )
    assert job is not None  # accepted: only the slot requests show that rpi9 does not exist
    assert time.monotonic() - started < 150
    assert message.startswith(
        f"placement scheduler: TaskManager 'rpi9' (named at {own}:1) has given this JobManager no "
        "slot: it is not registered, or does not declare external resource 'rpi9'"
    )
    assert pc.rest.job(job).restarting_since_ms == 0  # failed without a single restart
    line = pc.active_line(job)
    assert f"placed by {own} (slot size from the JobManager's config" in line


def test_the_jobs_own_configuration_names_its_file(placed_cluster: PlacedCluster, tmp_path: Path) -> None:
    pc = placed_cluster
    own = tmp_path / "override.schedulercfg"
    own.write_text("*; rpi2\n")
    (tmp_path / S.TASKMANAGERS_FILENAME).write_text((pc.scheduler_dir / S.TASKMANAGERS_FILENAME).read_text())
    pc.write_schedulercfg("iot-override", "*; server\n")  # the dir's file loses to the job's own
    job = pc.run_until_running(
        IOT_SENSOR_JOB,
        ["--rate", "20", "--parallelism", "1", "--job-name", "iot-override"],
        flink_configuration={S.JOB_FILE_KEY: str(own)},
    )
    try:
        assert {tm for tms in pc.rest.placement(job).values() for tm in tms} == {"rpi2"}
    finally:
        pc.cancel(job)


def test_a_sql_job_is_placed_across_submissions_despite_renamed_vertices(placed_cluster: PlacedCluster) -> None:
    """The Table planner numbers operators per JobManager (Calc[2], then Calc[7]): a file written from one
    submission's names still places the next one (counters normalised), and vertex ids work as labels too."""
    pc = placed_cluster
    args = ["--rate", "50", "--parallelism", "2", "--job-name", "sql-placed"]
    first = pc.run_until_running(SQL_JOB, args)  # no file yet: stock; what a profile of the running job records
    try:
        names = {v.id: v.name for v in pc.rest.job(first).vertices}
    finally:
        pc.cancel(first)
    order = list(names)
    hosts = ["rpi1", "server"]
    plan_by_id = {vid: [hosts[(n + i) % 2] for i in range(2)] for n, vid in enumerate(order)}
    pc.write_schedulercfg("sql-placed", schedulercfg({names[vid]: tms for vid, tms in plan_by_id.items()}))
    second = pc.run_until_running(SQL_JOB, args)
    try:
        renamed = {v.id: v.name for v in pc.rest.job(second).vertices}
        assert set(renamed) == set(names) and any(renamed[v] != names[v] for v in names), (names, renamed)
        assert pc.rest.placement(second) == {renamed[vid]: tms for vid, tms in plan_by_id.items()}
    finally:
        pc.cancel(second)
    flipped = {vid: list(reversed(tms)) for vid, tms in plan_by_id.items()}
    pc.write_schedulercfg(
        "sql-placed", "".join(f"{vid} ({i + 1}/2); {tm}\n" for vid, tms in flipped.items() for i, tm in enumerate(tms))
    )
    third = pc.run_until_running(SQL_JOB, args)
    try:
        now = {v.id: v.name for v in pc.rest.job(third).vertices}
        assert pc.rest.placement(third) == {now[vid]: tms for vid, tms in flipped.items()}
    finally:
        pc.cancel(third)


def test_status_command_reports_an_active_extension(placed_cluster: PlacedCluster) -> None:
    pc = placed_cluster
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("placement")),
            "scheduler",
            "status",
            "--flink-home",
            str(pc.home.path),
            "--rest",
            pc.rest.url,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout)
    assert status["active"] is True and status["version_ok"] is True and status["ok"] is True
    assert status["scheduler_dir"] == str(pc.scheduler_dir)
    assert status["built_for"] == status["flink_version"] == pc.home.version
