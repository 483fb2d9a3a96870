"""pytest fixtures: a real Flink 2.3 cluster (from the apache-flink-libraries wheel) and the lab jobs running on it.

Use them from any test module::

    # tests/conftest.py already re-exports flink_cluster, flink_rest, lab_jobs_jar, iot_job for every test

    @pytest.mark.flink
    def test_collect(iot_job):
        iot_job.rest          # placement.flink.rest.FlinkRest of the cluster
        iot_job.job_id        # the running IoT sensor job (every subtask RUNNING, source numRecordsOut > 0)
        iot_job.vertex_ids    # {"Source: Sensors": "<vertex id>", "Parse": ..., "Sink: Readings": ...}
        iot_job.rest_url      # e.g. "http://127.0.0.1:41233"

The JobManager answers metric requests from its *previous* lazy fetch, so after a quiet spell a value is stale by the
length of that spell: use ``rest.vertex_metrics(..., refresh=1.0)`` (priming request + wait) when freshness matters.

Fixtures
--------
``flink_cluster`` (session)
    :class:`placement.lab.flink.RunningCluster`: a JobManager and two TaskManagers on 127.0.0.1 with free ports,
    resource ids ``server`` and ``rpi1`` (:data:`TASKMANAGERS`: 4 slots each, each with the external resource of its
    own name, amount 16, for vanilla pinning). Stopped at the end of the session, also when a test fails; the JVMs die
    with the pytest process if it is killed. Logs: ``flink_cluster.spec.work_dir``.
``flink_rest`` (session)
    :class:`placement.flink.rest.FlinkRest` for ``flink_cluster``.
``lab_jobs_jar`` (session)
    Path of the lab jobs jar compiled from ``deploy/jobs/src`` (cached by source hash).
``iot_job`` (module)
    :class:`RunningJob`: the IoT sensor job (``placement.lab.IotSensorJob``, source parallelism 2 at 200 readings/s
    per subtask, window parallelism 1, unpinned) submitted to ``flink_cluster``; waits until every subtask is RUNNING
    and the source's ``numRecordsOut`` is above 0 (so metrics are being reported). Cancelled after the module.

Helpers
-------
``submit_job(rest, jar, entry_class, args)`` submits and waits the same way and returns a :class:`RunningJob`;
``cancel_job(job)`` cancels it and waits until it is CANCELED (so its slots are free for the next test).
``start_flink(work_dir, taskmanagers)`` is a context manager for a test that needs a cluster of its own.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from placement.errors import PlacementError
from placement.flink.rest import FlinkRest, JobDetails
from placement.lab.flink import (
    ClusterSpec,
    RunningCluster,
    TaskManagerSpec,
    start_cluster,
)
from placement.lab.jobs import IOT_SENSOR_JOB, build_jobs_jar
from support import real_parts

TASKMANAGERS: tuple[TaskManagerSpec, ...] = (
    TaskManagerSpec("server", slots=4, external_resource="server", external_resource_amount=16),
    TaskManagerSpec("rpi1", slots=4, external_resource="rpi1", external_resource_amount=16),
)
IOT_ARGS: tuple[str, ...] = ("--rate", "200", "--parallelism", "2", "--window-ms", "2000")


@dataclass
class RunningJob:
    rest: FlinkRest
    job_id: str
    jar_id: str
    entry_class: str
    args: list[str]
    details: JobDetails
    vertex_ids: dict[str, str] = field(default_factory=dict)  # vertex name -> id (first one of split copies)

    @property
    def rest_url(self) -> str:
        return self.rest.url


def require_jdk() -> None:
    """A JDK is a real part: without it the test fails under strict mode (support/real_parts.py), else it skips."""
    missing = [tool for tool in ("java", "javac", "jar") if shutil.which(tool) is None]
    if missing:
        real_parts.missing(f"needs a JDK 17 ({', '.join(missing)} not found on PATH)")


@contextlib.contextmanager
def start_flink(
    work_dir: Path, taskmanagers: Sequence[TaskManagerSpec] = TASKMANAGERS, **spec_kwargs: object
) -> Iterator[RunningCluster]:
    """A cluster for the duration of the ``with`` block; stopped on exit, also on error."""
    require_jdk()
    cluster = start_cluster(
        ClusterSpec(work_dir=Path(work_dir), taskmanagers=tuple(taskmanagers), **spec_kwargs), die_with_parent=True
    )  # type: ignore[arg-type]
    try:
        yield cluster
    finally:
        cluster.stop()


def wait_for_records(rest: FlinkRest, job_id: str, vertex_id: str, timeout: float = 60.0) -> float:
    """Wait until ``numRecordsOut`` summed over the vertex's subtasks is above 0; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = rest.vertex_metrics(job_id, vertex_id, ["numRecordsOut"]).get("numRecordsOut", 0.0)
        if out > 0:
            return out
        time.sleep(1.0)
    raise PlacementError(f"job {job_id}: vertex {vertex_id} reported no numRecordsOut within {timeout:.0f}s")


def submit_job(
    rest: FlinkRest,
    jar: Path,
    entry_class: str,
    args: Sequence[str] = (),
    *,
    savepoint_path: str | None = None,
    allow_non_restored_state: bool = False,
    wait_metrics: bool = True,
    flink_configuration: dict[str, str] | None = None,
) -> RunningJob:
    """Upload, run, wait until all subtasks are RUNNING and every source reports records. ``flink_configuration``:
    options of this job only (e.g. ``metrics.latency.interval``; they apply, though REST does not show them)."""
    jar_id = rest.upload_jar(jar)  # small; uploading each time avoids stale ids on a restarted cluster
    extra = {"flink_configuration": flink_configuration} if flink_configuration else {}
    job_id = rest.run_jar(
        jar_id,
        entry_class=entry_class,
        program_args=list(args),
        savepoint_path=savepoint_path,
        allow_non_restored_state=allow_non_restored_state,
        **extra,
    )
    try:
        details = rest.wait_until_running(job_id, timeout=120)
        vertex_ids: dict[str, str] = {}
        for v in details.vertices:
            vertex_ids.setdefault(v.name, v.id)
        if wait_metrics:
            for v in details.vertices:
                if v.name.startswith("Source: "):
                    wait_for_records(rest, job_id, v.id)
    except BaseException:
        with contextlib.suppress(PlacementError):
            rest.cancel(job_id)
        raise
    return RunningJob(rest, job_id, jar_id, entry_class, list(args), details, vertex_ids)


def cancel_job(job: RunningJob | str, rest: FlinkRest | None = None, timeout: float = 60.0) -> None:
    job_id = job if isinstance(job, str) else job.job_id
    rest = rest or (job.rest if isinstance(job, RunningJob) else None)
    assert rest is not None, "cancel_job(job_id) needs rest="
    state = rest.job_raw(job_id)["state"]
    if state in ("CANCELED", "FINISHED", "FAILED"):
        return
    rest.cancel(job_id)
    rest.wait_for_state(job_id, ("CANCELED", "FAILED", "FINISHED"), timeout=timeout)


@pytest.fixture(scope="session")
def flink_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCluster]:
    # Several conftests re-export this fixture, and pytest makes each re-export a fixture of its own; share one
    # cluster per test session (kept on the session's config, which every copy of this module sees) and stop it
    # when the last user is done.
    shared = getattr(request.config, _SHARED_ATTR, None)
    if shared is None:
        stack = contextlib.ExitStack()
        cluster = stack.enter_context(start_flink(tmp_path_factory.mktemp("flink-cluster")))
        shared = {"cluster": cluster, "users": 0, "stack": stack}
        setattr(request.config, _SHARED_ATTR, shared)
    shared["users"] += 1
    try:
        yield shared["cluster"]
    finally:
        shared["users"] -= 1
        if shared["users"] == 0:
            delattr(request.config, _SHARED_ATTR)
            shared["stack"].close()


_SHARED_ATTR = "_placement_shared_flink_cluster"


@pytest.fixture(scope="session")
def flink_rest(flink_cluster: RunningCluster) -> FlinkRest:
    return FlinkRest(flink_cluster.rest_url)


@pytest.fixture(scope="session")
def lab_jobs_jar(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_jdk()
    # the product's own build cache (one jar per source digest and Flink release, written atomically): built once
    # for the machine, not again by each session and each xdist worker
    return build_jobs_jar().path


@pytest.fixture(scope="module")
def iot_job(flink_rest: FlinkRest, lab_jobs_jar: Path) -> Iterator[RunningJob]:
    job = submit_job(flink_rest, lab_jobs_jar, IOT_SENSOR_JOB, IOT_ARGS)
    try:
        yield job
    finally:
        with contextlib.suppress(PlacementError):
            cancel_job(job)
