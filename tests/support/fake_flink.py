"""``FakeFlinkRest``: an in-memory Flink cluster behind :class:`placement.flink.port.FlinkPort`, for the decision tests
of apply's runner and the watch's loop (the real-cluster tests stay: this fake is only as right as what it was told).

It holds jobs (their vertices and the TaskManager each subtask runs on), the registered TaskManagers, savepoints and
uploaded jars. A stop with savepoint completes after ``savepoint_polls`` status reads and finishes the job; a submit
starts a job of the same vertices on the TaskManagers ``placer`` picks for its program arguments (default: where the
job it resumes from ran). ``calls`` records what was asked, in order, so a test can hold the runner to its sequence.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from placement.errors import PlacementError
from placement.flink.rest import (
    TERMINAL_STATES,
    FlinkRestError,
    JobDetails,
    JobSummary,
    SubtaskInfo,
    TaskManagerInfo,
    VertexInfo,
)

Placement = dict[str, list[str]]  # vertex name -> the TaskManager of subtask 0, 1, ...


@dataclass
class FakeJob:
    id: str
    name: str
    placement: Placement
    state: str = "RUNNING"
    program_args: tuple[str, ...] = ()
    savepoint: str | None = None  # what it was started from
    start_ms: int = 0
    restarting_since_ms: int = 0
    counters: dict[str, float] = field(default_factory=dict)  # vertex name -> numRecordsOut summed

    def vertex_id(self, name: str) -> str:
        return name.lower().replace(" ", "-").replace(":", "")


class FakeFlinkRest:
    def __init__(
        self,
        taskmanagers: Sequence[str] = ("server", "rpi1"),
        *,
        url: str = "http://fake-flink:8081",
        clock_ms: Callable[[], int] = lambda: 0,
        savepoint_polls: int = 1,
        placer: Callable[[FakeJob, tuple[str, ...]], Placement] | None = None,
    ):
        self.url = url
        self.tms: list[str] = list(taskmanagers)
        self.jobs_by_id: dict[str, FakeJob] = {}
        self.jars: list[str] = []
        self.savepoints: dict[str, tuple[str, int]] = {}  # trigger -> (job id, status reads left)
        self.calls: list[tuple[str, ...]] = []
        self.clock_ms = clock_ms  # the JobManager's clock
        self.savepoint_polls = savepoint_polls
        self.placer = placer or (lambda resumed, args: {v: list(tms) for v, tms in resumed.placement.items()})
        self.stop_fails: str | None = None  # a failure cause: the next stops complete without a location
        self._ids = itertools.count(1)  # jobs: job-1, job-2, ... in the order they start
        self._others = itertools.count(1)  # triggers and jars
        self._last_stopped: FakeJob | None = None

    # ---- the test's side -----------------------------------------------------------------------------------------

    def start(self, name: str, placement: Placement, *, program_args: Sequence[str] = (), start_ms: int = 0) -> str:
        job = FakeJob(
            f"job-{next(self._ids)}",
            name,
            {v: list(t) for v, t in placement.items()},
            program_args=tuple(program_args),
            start_ms=start_ms,
        )
        self.jobs_by_id[job.id] = job
        return job.id

    def lose(self, tm: str) -> None:
        """A TaskManager goes away (a Pi's power is cut): unregistered, its subtasks elsewhere or not at all."""
        self.tms.remove(tm)

    def running_job(self, name: str) -> FakeJob:
        (job,) = [j for j in self.jobs_by_id.values() if j.name == name and j.state not in TERMINAL_STATES]
        return job

    # ---- cluster -------------------------------------------------------------------------------------------------

    def get(self, path: str, **kwargs: Any) -> Any:
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "jobs" and parts[2] == "checkpoints":
            return {"counts": {"in_progress": 0}, "history": []}
        raise FlinkRestError(f"Flink REST GET {self.url}{path}: HTTP 404: not faked", 404)

    def overview(self) -> dict[str, Any]:
        return {"taskmanagers": len(self.tms), "flink-version": "2.3.0"}

    def config(self) -> dict[str, Any]:
        return {"flink-version": "2.3.0"}

    def taskmanagers(self) -> list[TaskManagerInfo]:
        return [
            TaskManagerInfo(tm, f"pekko.tcp://flink@{tm}:6122/user/rpc/taskmanager_0", 4, 4, {}, {}) for tm in self.tms
        ]

    def jobmanager_config(self) -> dict[str, str]:
        return {"metrics.fetcher.update-interval": "10s"}

    def wait_for_taskmanagers(self, wanted: Mapping[str, str | None], timeout: float = 120.0) -> list[TaskManagerInfo]:
        missing = sorted(set(wanted) - set(self.tms))
        if missing:
            raise PlacementError(
                f"TaskManager(s) {', '.join(missing)} not registered (with their resource) after {timeout:.0f}s"
            )
        return self.taskmanagers()

    # ---- jars ----------------------------------------------------------------------------------------------------

    def upload_jar(self, jar: str | Path) -> str:
        jar_id = f"{next(self._others)}_{Path(jar).name}"
        self.jars.append(jar_id)
        self.calls.append(("upload", jar_id))
        return jar_id

    def jar_ids(self) -> list[str]:
        return list(self.jars)

    def run_jar(self, jar_id: str, **options: Any) -> str:
        args = tuple(options.get("program_args") or ())
        savepoint = options.get("savepoint_path")
        resumed = self._last_stopped
        if resumed is None:
            raise FlinkRestError(f"Flink REST POST {self.url}/jars/{jar_id}/run: nothing stopped to resume", 400)
        job_id = self.start(resumed.name, self.placer(resumed, args), program_args=args, start_ms=self.clock_ms())
        self.jobs_by_id[job_id].savepoint = savepoint
        self.calls.append(("submit", job_id, " ".join(args), str(savepoint)))
        return job_id

    # ---- jobs ----------------------------------------------------------------------------------------------------

    def _job(self, job_id: str) -> FakeJob:
        if job_id not in self.jobs_by_id:
            raise FlinkRestError(f"Flink REST GET {self.url}/jobs/{job_id}: HTTP 404: not found", 404)
        return self.jobs_by_id[job_id]

    def jobs(self) -> list[JobSummary]:
        return [JobSummary(j.id, j.name, j.state) for j in self.jobs_by_id.values()]

    def running_jobs(self) -> list[JobSummary]:
        return [j for j in self.jobs() if j.state not in TERMINAL_STATES]

    def job_raw(self, job_id: str) -> dict[str, Any]:
        job = self._job(job_id)
        return {
            "jid": job.id,
            "name": job.name,
            "state": job.state,
            "now": self.clock_ms(),
            "start-time": job.start_ms,
            "timestamps": {"RESTARTING": job.restarting_since_ms},
            "vertices": [
                {"id": job.vertex_id(name), "name": name, "parallelism": len(tms), "status": job.state}
                for name, tms in job.placement.items()
            ],
        }

    def job(self, job_id: str) -> JobDetails:
        job = self._job(job_id)
        vertices = tuple(
            VertexInfo(job.vertex_id(name), name, len(tms), job.state) for name, tms in job.placement.items()
        )
        return JobDetails(
            job.id,
            job.name,
            job.state,
            vertices,
            now_ms=self.clock_ms(),
            restarting_since_ms=job.restarting_since_ms,
            start_ms=job.start_ms,
        )

    def subtasks(self, job_id: str, vertex_id: str) -> list[SubtaskInfo]:
        job = self._job(job_id)
        tms = next(t for name, t in job.placement.items() if job.vertex_id(name) == vertex_id)
        return [SubtaskInfo(i, job.state, tm, f"{tm}:6121") for i, tm in enumerate(tms)]

    def placement_counts(self, job_id: str) -> dict[tuple[str, str], int]:
        self.calls.append(("verify", job_id))
        job = self._job(job_id)
        return dict(Counter((name, tm) for name, tms in job.placement.items() for tm in tms))

    def plan(self, job_id: str) -> dict[str, Any]:
        """A chain in the order of the vertices: the first is the source."""
        job = self._job(job_id)
        ids = [job.vertex_id(name) for name in job.placement]
        return {
            "jid": job_id,
            "nodes": [
                {"id": vid, "inputs": [{"id": ids[n - 1], "ship_strategy": "FORWARD"}] if n else []}
                for n, vid in enumerate(ids)
            ],
        }

    def exceptions(self, job_id: str) -> dict[str, Any]:
        return {"exceptionHistory": {"entries": []}}

    def root_exception(self, job_id: str) -> str | None:
        return None

    def metric_fetch_interval_s(self) -> float:
        return 10.0

    def fetched_counters(
        self, job_id: str, vertex_ids: Sequence[str], name: str, *, wait_s: float = 12.0, poll_s: float = 0.1
    ) -> tuple[float, dict[str, float | None]]:
        job = self._job(job_id)
        by_id = {job.vertex_id(v): c for v, c in job.counters.items()}
        return self.clock_ms() / 1000, {vid: by_id.get(vid) for vid in vertex_ids}

    def trigger_stop_with_savepoint(self, job_id: str, target_directory: str, *, drain: bool = False) -> str:
        self._job(job_id)
        trigger = f"trigger-{next(self._others)}"
        self.savepoints[trigger] = (job_id, self.savepoint_polls)
        self.calls.append(("stop", job_id, target_directory))
        return trigger

    def savepoint_status(self, job_id: str, trigger: str) -> tuple[str, str | None, str | None]:
        stopped, left = self.savepoints[trigger]
        if left > 0:
            self.savepoints[trigger] = (stopped, left - 1)
            return "IN_PROGRESS", None, None
        if self.stop_fails:
            return "COMPLETED", None, self.stop_fails
        job = self._job(stopped)
        if job.state not in TERMINAL_STATES:
            job.state = "FINISHED"
            self._last_stopped = job
            self.calls.append(("savepoint", job_id, f"file:/savepoints/savepoint-{job_id}"))
        return "COMPLETED", f"file:/savepoints/savepoint-{job_id}", None

    def cancel(self, job_id: str) -> None:
        self._job(job_id).state = "CANCELED"
        self.calls.append(("cancel", job_id))

    def wait_for_state(self, job_id: str, states: str | Sequence[str] = "RUNNING", timeout: float = 60.0) -> str:
        wanted = {states} if isinstance(states, str) else set(states)
        state = self._job(job_id).state
        if state not in wanted:
            raise PlacementError(f"job {job_id} is {state}, not {'/'.join(sorted(wanted))}")
        return state

    def wait_until_running(self, job_id: str, timeout: float = 90.0) -> JobDetails:
        details = self.job(job_id)
        if not details.all_running:
            raise PlacementError(f"job {job_id} not fully RUNNING after {timeout:.0f}s (job {details.state})")
        return details
