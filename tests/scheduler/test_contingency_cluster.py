"""Contingency placements (N-1) on stock Flink 2.3 + the scheduler extension: a schedulercfg's ``[lost <tm>]``
sections are used when that TaskManager is lost, so Flink's own failover restarts the job in the degraded placement.

A cluster of its own for the module (the three TaskManagers of scheduler_support), with heartbeats of 1 s / 5 s and a
restart strategy of 10 attempts 1 s apart: enough for a SIGKILLed TaskManager to be seen as lost and the job to
restart in its contingency, not enough to wait out a lost TaskManager (the old behaviour ended FAILED). Tests run in
file order: the refusals, the WARN of a contingency that does not fit, then one IoT job that loses rpi2 (killed),
restarts where the section says, and after rpi2 is back and a stop-with-savepoint + restore runs per the plan again.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from scheduler_support import (
    ADDRESSES,
    IOT_ARGS,
    IOT_PLAN,
    PlacedCluster,
    lose_taskmanager,
    require_jdk,
    schedulercfg,
    start_placed_cluster,
    wait_for,
)

from placement.flink.home import find_flink_home
from placement.flink.options import duration
from placement.lab.flink import FlinkProcess
from placement.lab.jobs import IOT_SENSOR_JOB

pytestmark = pytest.mark.flink

CONTINGENCY_CONFIG: dict[str, object] = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 10,
    "restart-strategy.fixed-delay.delay": duration(timedelta(seconds=1)),
    "heartbeat.interval": 1000,
    "heartbeat.timeout": 5000,
    "execution.checkpointing.interval": duration(timedelta(seconds=2)),
}

RPI2 = ADDRESSES["rpi2"][0]  # the section header names rpi2 by its address, as a plan's lines may
# while rpi2 is lost: its three subtasks on the server (which then runs 2 slots of the job, as in the plan)
SECTION = f"[lost {RPI2}]\nSource: Sensors (2/3); server\nParse (2/3); server\nFilter (2/3); server\n"
IN_CONTINGENCY = {v: [("server" if tm == "rpi2" else tm) for tm in tms] for v, tms in IOT_PLAN.items()}
PLAN_LINES = sum(len(tms) for tms in IOT_PLAN.values())  # 16: a section header right after is line 17
RESTORE_BOUND_S = 60.0


@pytest.fixture(scope="module")
def pc(tmp_path_factory: pytest.TempPathFactory, lab_jobs_jar: Path) -> Iterator[PlacedCluster]:
    require_jdk()
    with start_placed_cluster(
        tmp_path_factory.mktemp("contingency-cluster"), find_flink_home(), lab_jobs_jar, extra_config=CONTINGENCY_CONFIG
    ) as cluster:
        yield cluster


PLAN = schedulercfg(IOT_PLAN)
H = PLAN_LINES + 1
TABLE = "{dir}/taskmanagers.cfg"
# job name, the file, the message the submission is refused with ({file}, {dir} filled in; "..." ends a prefix)
REFUSALS = [
    (
        "c-malformed",
        PLAN + "[lost rpi2\nParse (2/3); server\n",
        f"{{file}}:{H}: expected a section header '[lost <TaskManager>]', got '[lost rpi2'",
    ),
    (
        "c-unknown",
        PLAN + "[lost rpi9]\nParse (2/3); server\n",
        f"{{file}}:{H}: TaskManager 'rpi9' is not registered with this cluster (" + TABLE + " lists rpi1 [...",
    ),
    (
        "c-twice",
        PLAN + "[lost rpi2]\nParse (2/3); server\n\n[lost 10.77.0.2]\nFilter (2/3); server\n",
        f"{{file}}:{H + 3}: a second section for TaskManager 'rpi2' (the first is line {H}, '[lost rpi2]')",
    ),
    (
        "c-own",
        PLAN + "[lost rpi2]\nParse (2/3); server\nFilter (2/3); 10.77.0.2\n",
        f"{{file}}:{H + 2}: section '[lost rpi2]' (line {H}) binds 'Filter (2/3)' to TaskManager 'rpi2', the one it is "
        "lost for",
    ),
    (
        "c-default",
        PLAN + "# the rest\n[lost rpi2]\n*; server\n",
        f"{{file}}:{H + 2}: a default line '*' inside section '[lost rpi2]' (line {H + 1}): a section lists only the "
        "subtasks that move; the others keep their plan line",
    ),
    (
        "c-stale",
        PLAN + "[lost rpi2]\nParse (4/3); server\n",
        f"{{file}}:{H + 1}: 'Parse (4/3)' matches no subtask of job 'c-stale' (its vertices: ...",
    ),
    (
        "c-no-plan",
        "[lost rpi2]\nParse (2/3); server\n",
        "{file}: no placement lines before the first section (line 1) (an empty file places nothing; remove it to run "
        "the job without placement)",
    ),
]


@pytest.mark.parametrize(("job_name", "text", "expected"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_wrong_section_is_refused_at_submission_naming_file_and_line(
    pc: PlacedCluster, job_name: str, text: str, expected: str
) -> None:
    path = pc.write_schedulercfg(job_name, text)
    message, job = pc.refusal(IOT_SENSOR_JOB, [*IOT_ARGS, "--job-name", job_name])
    assert job is None  # the run request itself fails (HTTP 400): nothing runs
    want = "placement scheduler: " + expected.format(file=path, dir=pc.scheduler_dir)
    if want.endswith("..."):
        assert message.startswith(want[:-3]), message
    else:
        assert message == want


def test_a_contingency_that_does_not_fit_is_a_warning_not_an_error(pc: PlacedCluster) -> None:
    # while rpi1 is lost, all of its subtasks on rpi2: 3 subtasks of Source there need 3 slots, rpi2 has 2
    moves = "".join(
        f"{v} ({i + 1}/{len(tms)}); rpi2\n" for v, tms in IOT_PLAN.items() for i, tm in enumerate(tms) if tm == "rpi1"
    )
    path = pc.write_schedulercfg("c-crowded", PLAN + "[lost rpi1]\n" + moves)
    job = pc.run_until_running(IOT_SENSOR_JOB, [*IOT_ARGS, "--job-name", "c-crowded"])
    try:
        assert pc.rest.placement(job) == IOT_PLAN  # nothing is lost: the plan
        warning = next(line for line in pc.jobmanager_log().splitlines() if "WARN" in line and str(path) in line)
        assert "while rpi1 is lost (its contingency), job 'c-crowded' needs 3 slot(s) on TaskManager 'rpi2'" in warning
        assert "if rpi1 is lost: 7 subtask(s) move" in pc.active_line(job)
    finally:
        pc.cancel(job)


@pytest.fixture(scope="module")
def iot(pc: PlacedCluster) -> Iterator[dict]:
    """The IoT job with the plan and a section for rpi2; ``state["job"]`` its current id (a restore makes a new one)."""
    pc.write_schedulercfg("iot-sensors", PLAN + "\n" + SECTION)
    state = {"job": pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS)}
    yield state
    pc.cancel(state["job"])


def test_the_plan_places_the_job_while_every_taskmanager_is_alive(pc: PlacedCluster, iot: dict) -> None:
    assert pc.rest.placement(iot["job"]) == IOT_PLAN
    line = pc.active_line(iot["job"])
    assert f"if rpi2 is lost: 3 subtask(s) move ({pc.scheduler_dir / 'iot-sensors.schedulercfg'}:{H + 1})" in line


def test_a_lost_taskmanager_restarts_the_job_in_its_contingency(pc: PlacedCluster, iot: dict) -> None:
    job = iot["job"]
    wait_for(
        lambda: (pc.rest.get(f"/jobs/{job}/checkpoints").get("counts") or {}).get("completed", 0) >= 1,
        60,
        "a completed checkpoint",
    )
    recovered = lose_taskmanager(pc, job, "rpi2", IN_CONTINGENCY, RESTORE_BOUND_S)
    print(f"\nkill of rpi2 -> RUNNING in its contingency: {recovered:.1f} s")
    iot["recovered_s"] = recovered
    restored = (pc.rest.get(f"/jobs/{job}/checkpoints").get("latest") or {}).get("restored") or {}
    assert restored.get("id") is not None and not restored.get("is_savepoint"), restored  # from its latest checkpoint
    line = next(
        line for line in pc.jobmanager_log().splitlines() if "TaskManager rpi2 lost: placed by its contingency" in line
    )
    assert "placement: job 'iot-sensors': TaskManager rpi2 lost: placed by its contingency (3 subtasks moved;" in line
    # a few seconds later it still runs there (no restart loop)
    time.sleep(3)
    assert pc.rest.job(job).all_running and pc.rest.placement(job) == IN_CONTINGENCY


def test_back_on_the_plan_after_the_taskmanager_returns_and_a_savepoint_restore(
    pc: PlacedCluster, iot: dict, tmp_path: Path
) -> None:
    restarted_ms = pc.rest.job(iot["job"]).restarting_since_ms  # the failover into the contingency
    old = pc.cluster.taskmanagers["rpi2"]
    with open(old.stdout_file, "ab") as out:
        popen = subprocess.Popen(
            old.argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    pc.cluster.taskmanagers["rpi2"] = FlinkProcess(
        "taskmanager rpi2", popen.pid, old.log_file, old.stdout_file, old.argv, popen
    )  # stopped with the cluster
    wait_for(lambda: any(tm.id == "rpi2" and tm.slots > 0 for tm in pc.rest.taskmanagers()), 90, "rpi2 registered")
    time.sleep(2)  # a heartbeat or two: rpi2 counts as alive
    placed = pc.rest.placement(iot["job"])
    if pc.rest.job(iot["job"]).restarting_since_ms == restarted_ms:
        assert placed == IN_CONTINGENCY  # the running job stays where it is until restored
    else:  # it failed over again since (a heartbeat missed on a loaded machine): with rpi2 there, per the plan
        wait_for(lambda: pc.rest.job(iot["job"]).all_running, 90, "the job running after its failover")
        assert pc.rest.placement(iot["job"]) == IOT_PLAN
    savepoint = pc.rest.stop_with_savepoint(iot["job"], f"file://{tmp_path}", timeout=180)
    iot["job"] = pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS, savepoint_path=savepoint)
    assert pc.rest.placement(iot["job"]) == IOT_PLAN
    assert pc.restored_from(iot["job"]) == savepoint.rstrip("/")
