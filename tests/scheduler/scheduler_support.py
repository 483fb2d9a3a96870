"""Helpers for the scheduler extension's cluster tests: the cluster's shape and a handle on it (see conftest.py).

Three TaskManagers of different slot sizes (``server``, ``rpi1``, ``rpi2``), each configured with
:func:`placement.scheduler.taskmanager_config`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from placement import scheduler as S
from placement.errors import PlacementError
from placement.flink.home import FlinkHome
from placement.flink.options import duration
from placement.flink.rest import FlinkRest
from placement.lab.flink import ClusterSpec, RunningCluster, TaskManagerSpec, start_cluster
from placement.lab.home import make_lab_home
from support.flink import require_jdk  # noqa: F401 (the scheduler tests import it from here)

# resource id -> (slots, task heap MiB, managed MiB, network MiB): a server and two Pis of different sizes
TASKMANAGERS: dict[str, tuple[int, int, int, int]] = {
    "server": (6, 288, 96, 96),
    "rpi1": (4, 128, 32, 64),
    "rpi2": (2, 64, 16, 32),
}
FAKE_VERSION = "2.3.99-fake"  # a Flink version nobody runs: what a jar built for another Flink carries

# the addresses the table gives besides the resource ids (as an inventory's address would be)
ADDRESSES = {"rpi1": ["10.77.0.1"], "rpi2": ["10.77.0.2"]}

CLUSTER_CONFIG: dict[str, object] = {
    # a TaskManager killed and restarted must find the job still restarting, not FAILED after three attempts
    "restart-strategy.type": "fixed-delay",  # over the edge default (exponential-delay, 10 attempts)
    "restart-strategy.fixed-delay.attempts": 200,
    "restart-strategy.fixed-delay.delay": duration(timedelta(seconds=1)),
    "heartbeat.interval": 2000,
    "heartbeat.timeout": 12000,
    # all TaskManagers are up before any test runs: unfulfillable slot requests may fail at once after 10 s
    # (as plain milliseconds, the form every supported line reads: 1.19 takes this one as a Long, and "10 s" stops
    # its JobManager at start)
    "resourcemanager.standalone.start-up-time": duration(timedelta(seconds=10)),
}
# The JIT's first tier only: JVMs start in about two thirds of the time on two busy cores (a placed cluster's start,
# measured back to back: 9.5 and 13.0 s, 15.7 and 17.8 s with both tiers). Nothing here measures throughput or CPU: the
# jobs run at tens of records/s, and these tests read where subtasks run.
JVM_FLAGS = ("-XX:TieredStopAtLevel=1",)
# The JobManager's config also sizes "a TaskManager", as a cluster-wide config.yaml does: the slot size the extension
# falls back to for a job whose schedulercfg has no taskmanagers.cfg beside it.
JOBMANAGER_CONFIG: dict[str, object] = {
    "taskmanager.memory.task.heap.size": "48m",
    "taskmanager.memory.managed.size": "16m",
    "taskmanager.memory.network.min": "16m",
    "taskmanager.memory.network.max": "16m",
    "taskmanager.numberOfTaskSlots": 1,
}


# the IoT job placed by hand (test_placed_cluster.py, test_contingency_cluster.py): Window Aggregate comes after a HASH
# edge and is split over two hosts; every TaskManager gets subtasks
IOT_ARGS = ["--rate", "40", "--parallelism", "3", "--window-parallelism", "2", "--window-ms", "1000"]
IOT_PLAN = {
    "Source: Sensors": ["rpi1", "rpi2", "rpi1"],
    "Parse": ["rpi1", "rpi2", "rpi1"],
    "Filter": ["rpi1", "rpi2", "server"],
    "Enrich": ["rpi1", "server", "server"],
    "Window Aggregate": ["server", "rpi1"],
    "Sink: Readings": ["server", "server"],
}


def taskmanager_specs() -> tuple[TaskManagerSpec, ...]:
    return tuple(
        TaskManagerSpec(
            tm,
            slots=slots,
            task_heap_mib=heap,
            managed_mib=managed,
            network_mib=network,
            extra_config=S.taskmanager_config(tm, slots),
        )
        for tm, (slots, heap, managed, network) in TASKMANAGERS.items()
    )


@dataclass
class PlacedCluster:
    cluster: RunningCluster
    rest: FlinkRest
    home: FlinkHome
    scheduler_dir: Path
    jobs_jar: Path
    jar_id: str

    def write_schedulercfg(self, job_name: str, text: str) -> Path:
        path = self.scheduler_dir / S.schedulercfg_filename(job_name)
        path.write_text(text)
        return path

    def run(
        self,
        entry_class: str,
        args: Sequence[str] = (),
        *,
        savepoint_path: str | None = None,
        flink_configuration: Mapping[str, str] | None = None,
    ) -> str:
        return self.rest.run_jar(
            self.jar_id,
            entry_class=entry_class,
            program_args=list(args),
            savepoint_path=savepoint_path,
            flink_configuration=flink_configuration,
        )

    def run_until_running(self, entry_class: str, args: Sequence[str] = (), **kwargs: object) -> str:
        return self.wait_running(self.run(entry_class, args, **kwargs))  # type: ignore[arg-type]

    def wait_running(self, job_id: str) -> str:
        """Until every subtask of ``job_id`` runs; else the job is cancelled and the failure says why."""
        try:
            self.rest.wait_until_running(job_id, timeout=150)
        except PlacementError:
            error = S.extension_error(self.rest, job_id) or self.rest.root_exception(job_id)
            self.cancel(job_id)
            raise AssertionError(f"job {job_id} did not run: {error}") from None
        return job_id

    def refusal(
        self,
        entry_class: str,
        args: Sequence[str] = (),
        *,
        timeout: float = 90.0,
        flink_configuration: Mapping[str, str] | None = None,
    ) -> tuple[str, str | None]:
        """Submit a job that must not run: the extension's message, and the job id when the submission was accepted
        (the job then failed; None when the run request itself was refused)."""
        try:
            job_id = self.run(entry_class, args, flink_configuration=flink_configuration)
        except PlacementError as exc:
            message = S.extension_message(str(exc))
            assert message is not None, f"submission refused without the extension's message: {exc}"
            return message, None
        try:
            state = self.rest.wait_for_state(job_id, ("FAILED", "CANCELED", "FINISHED"), timeout=timeout)
        finally:
            self.cancel(job_id)
        assert state == "FAILED", f"job {job_id} ended {state}, expected FAILED"
        message = S.extension_error(self.rest, job_id)
        assert message is not None, (
            f"job {job_id} failed without the extension's message: {self.rest.root_exception(job_id)}"
        )
        return message, job_id

    def cancel(self, job_id: str) -> None:
        with contextlib.suppress(PlacementError):
            if self.rest.job_raw(job_id)["state"] not in ("CANCELED", "FAILED", "FINISHED"):
                self.rest.cancel(job_id)
                self.rest.wait_for_state(job_id, ("CANCELED", "FAILED", "FINISHED"), timeout=60)

    def jobmanager_log(self) -> str:
        return self.cluster.jobmanager.log_file.read_text(errors="replace")

    def active_line(self, job_id: str) -> str:
        """The extension's one log line for a job (placed by which file, how many slots where; or stock placement)."""
        return next(line for line in self.jobmanager_log().splitlines() if S.ACTIVE_LOG_LINE in line and job_id in line)

    def restored_from(self, job_id: str) -> str:
        """The savepoint a job was restored from, as its checkpoint statistics say ("" when none)."""
        checkpoints = self.rest.get(f"/jobs/{job_id}/checkpoints")
        restored = (checkpoints.get("latest") or {}).get("restored") or {}
        return str(restored.get("external_path") or "").rstrip("/")


def schedulercfg(plan: dict[str, list[str]], aliases: dict[str, str] | None = None) -> str:
    """The file `placement plan` writes for ``plan`` (vertex -> TaskManager of each subtask)."""
    lines = []
    for vertex, tms in plan.items():
        for i, tm in enumerate(tms):
            lines.append(f"{vertex} ({i + 1}/{len(tms)}); {(aliases or {}).get(tm, tm)}\n")
    return "".join(lines)


@contextlib.contextmanager
def start_placed_cluster(
    work: Path,
    flink: FlinkHome,
    jobs_jar: Path,
    *,
    taskmanagers: tuple[TaskManagerSpec, ...] | None = None,
    extra_config: Mapping[str, object] | None = None,
) -> Iterator[PlacedCluster]:
    """A cluster of ``flink`` (never modified: the extension, built for it, goes into a lab home whose ``lib/`` links
    its jars) with the three TaskManagers of :data:`TASKMANAGERS` (``taskmanagers``: those specs changed, e.g. with a
    metrics reporter), the TaskManager table written and ``jobs_jar`` uploaded; stopped on exit. ``extra_config``
    overrides keys of :data:`CLUSTER_CONFIG` (every JVM's config)."""
    home = make_lab_home(work, flink, with_extension=True)
    scheduler_dir = work / "schedulercfg"
    scheduler_dir.mkdir()
    spec = ClusterSpec(
        work_dir=work / "cluster",
        taskmanagers=taskmanagers or taskmanager_specs(),
        flink_home=home.path,
        extra_config={**CLUSTER_CONFIG, **(extra_config or {})},
        jobmanager_extra_config={**S.jobmanager_config(str(scheduler_dir)), **JOBMANAGER_CONFIG},
        # the JobManager's config where a Flink home keeps it (<home>/conf), as the lab has it: what apply reads there
        # and compiles a resubmitted job with
        jobmanager_conf_dir=home.path / "conf",
        jvm_flags=JVM_FLAGS,
    )
    cluster = start_cluster(spec, die_with_parent=True)
    try:
        rest = FlinkRest(cluster.rest_url)
        (scheduler_dir / S.TASKMANAGERS_FILENAME).write_text(S.render_taskmanagers(rest.taskmanagers(), ADDRESSES))
        yield PlacedCluster(cluster, rest, home, scheduler_dir, jobs_jar, rest.upload_jar(jobs_jar))
    finally:
        cluster.stop()


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def lose_taskmanager(pc: PlacedCluster, job: str, tm: str, expected: dict[str, list[str]], bound_s: float) -> float:
    """SIGKILL TaskManager ``tm``'s process group (a Pi's power loss) under ``job`` and wait until the job runs where
    ``expected`` says (its contingency), sampled every 0.5 s; fails if the job is ever FAILED or not there within
    ``bound_s``. Returns the seconds from the kill."""
    victim = pc.cluster.taskmanagers[tm]
    os.killpg(victim.pid, signal.SIGKILL)
    killed = time.monotonic()
    if victim.popen is not None:
        victim.popen.wait(timeout=30)
    states: list[str] = []
    while time.monotonic() - killed < bound_s:
        details = pc.rest.job(job)
        states.append(details.state)
        assert details.state != "FAILED", f"the job FAILED after the kill: {pc.rest.root_exception(job)}"
        if details.all_running and details.restarting_since_ms and pc.rest.placement(job) == expected:
            return time.monotonic() - killed
        time.sleep(0.5)
    raise AssertionError(
        f"not RUNNING in the contingency {bound_s:.0f}s after the kill (states {sorted(set(states))}, "
        f"placement {pc.rest.placement(job)})"
    )
