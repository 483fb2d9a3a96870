"""Job lifecycle over Flink's REST API (2.x): upload and run jars, inspect jobs, stop with savepoint, cancel.

Used by the lab, the test fixtures and ``placement apply``. Plain ``requests`` with a timeout on every call rather
than flink-rest-client: its ``jars.run`` is broken against Flink 2.3 (it sends ``entry-class`` and ``programArgs``,
which 2.3 rejects or silently drops), it has no timeouts (a wedged JobManager would hang the CLI) and its errors do
not name the URL. Every failure is a one-line :class:`~placement.errors.PlacementError` that names method and URL.

Values are small frozen dataclasses: :class:`TaskManagerInfo`, :class:`JobSummary`, :class:`JobDetails` with
:class:`VertexInfo` and :class:`SubtaskInfo` (where each subtask runs: ``taskmanager_id`` is the TM's
``taskmanager.resource-id``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from placement.errors import PlacementError
from placement.flink.jar_run import run_request_body  # also part of this module's API
from placement.polling import poll
from placement.units import flink_duration_ms

TERMINAL_STATES = frozenset({"FINISHED", "FAILED", "CANCELED", "SUSPENDED"})
STARTING_STATES = ("CREATED", "SCHEDULED", "DEPLOYING", "INITIALIZING", "RECONCILING")  # a subtask's, before RUNNING


class FlinkRestError(PlacementError):
    """A REST call failed; ``status`` is the HTTP status (None when the JobManager could not be reached)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class TaskManagerInfo:
    id: str
    path: str  # pekko address; the host part is where the TM runs
    slots: int
    free_slots: int
    total_resource: Mapping[str, Any]
    free_resource: Mapping[str, Any]  # accurate under dynamic slots, unlike free_slots


@dataclass(frozen=True)
class JobSummary:
    id: str
    name: str
    state: str


@dataclass(frozen=True)
class SubtaskInfo:
    index: int
    status: str
    taskmanager_id: str
    endpoint: str  # host:port of the TM's data endpoint


@dataclass(frozen=True)
class VertexInfo:
    id: str
    name: str
    parallelism: int
    status: str
    # subtasks not running yet (STARTING_STATES): a vertex's status is RUNNING as soon as
    # one of its subtasks runs (seen: a source subtask still INITIALIZING under a RUNNING vertex, and a savepoint
    # triggered then refused with "Not all required tasks are currently running")
    starting: int = 0


@dataclass(frozen=True)
class JobDetails:
    id: str
    name: str
    state: str
    vertices: tuple[VertexInfo, ...]
    now_ms: int = 0  # the JobManager's clock when it answered
    restarting_since_ms: int = 0  # when the job last entered RESTARTING (JobManager clock; 0: never)
    start_ms: int = 0  # when the job was submitted (JobManager clock)

    @property
    def all_running(self) -> bool:
        """The job and every one of its vertices RUNNING (a RUNNING job may still be scheduling subtasks)."""
        return (
            self.state == "RUNNING"
            and bool(self.vertices)
            and all(v.status == "RUNNING" and v.starting == 0 for v in self.vertices)
        )

    def vertex_named(self, name: str) -> VertexInfo:
        """The one vertex called ``name`` (an error when absent or split over several vertices)."""
        found = [v for v in self.vertices if v.name == name]
        if len(found) != 1:
            names = ", ".join(sorted({v.name for v in self.vertices}))
            raise PlacementError(f"job {self.id}: {len(found)} vertices named {name!r} (vertices: {names})")
        return found[0]


def _first_error(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip().splitlines()[0][:300] if response.text.strip() else response.reason
    errors = body.get("errors") if isinstance(body, dict) else None
    if errors:
        # Flink puts a Java stack trace in errors[1]; the most telling line is usually the last "Caused by".
        text = "\n".join(str(e) for e in errors)
        causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
        head = str(errors[0]).strip().splitlines()[0]
        return f"{head} ({causes[-1]})" if causes else head
    return str(body)[:300]


def _innermost_reason(exc: BaseException) -> str:
    """What actually failed, whole: "Connection refused", "Name or service not known", "timed out". requests wraps it
    in urllib3's retry error, whose text is a long nested repr (cutting it leaves half a word)."""
    inner = exc
    while True:
        cause = getattr(inner, "reason", None)  # urllib3's MaxRetryError keeps the real error here
        if not isinstance(cause, BaseException):
            cause = inner.__cause__ or inner.__context__
        if cause is None or cause is inner:
            break
        inner = cause
    if isinstance(inner, OSError) and inner.strerror:
        return inner.strerror
    return " ".join(str(inner).split()) or type(inner).__name__


class FlinkRest:
    """A Flink cluster's REST endpoint, e.g. ``FlinkRest("http://127.0.0.1:8081")``."""

    def __init__(self, url: str, *, timeout: float = 30.0, session: requests.Session | None = None):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = session or requests.Session()

    # ---- plumbing ----------------------------------------------------------------------------------------------

    def request(
        self, method: str, path: str, *, ok: Sequence[int] = (200, 202), timeout: float | None = None, **kwargs: Any
    ) -> Any:
        url = f"{self.url}{path}"
        try:
            response = self.session.request(method, url, timeout=timeout or self.timeout, **kwargs)
        except requests.RequestException as exc:
            reason = _innermost_reason(exc)
            raise FlinkRestError(
                f"Flink REST {method} {url}: cannot reach the JobManager ({type(exc).__name__}: {reason})"
            ) from None
        if response.status_code not in ok:
            raise FlinkRestError(
                f"Flink REST {method} {url}: HTTP {response.status_code}: {_first_error(response)}",
                response.status_code,
            )
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise FlinkRestError(f"Flink REST {method} {url}: answer is not JSON: {response.text[:200]!r}") from None

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    # ---- cluster -----------------------------------------------------------------------------------------------

    def overview(self) -> dict[str, Any]:
        return self.get("/overview")

    def config(self) -> dict[str, Any]:
        return self.get("/config")

    def taskmanagers(self) -> list[TaskManagerInfo]:
        body = self.get("/taskmanagers")
        return [
            TaskManagerInfo(
                id=tm["id"],
                path=tm.get("path", ""),
                slots=int(tm.get("slotsNumber", 0)),
                free_slots=int(tm.get("freeSlots", 0)),
                total_resource=tm.get("totalResource", {}),
                free_resource=tm.get("freeResource", {}),
            )
            for tm in body.get("taskmanagers", [])
        ]

    def jobmanager_config(self) -> dict[str, str]:
        """The running JobManager's effective configuration (``GET /jobmanager/config``), key -> value."""
        return {e["key"]: e.get("value", "") for e in self.get("/jobmanager/config")}

    def wait_for_taskmanagers(self, wanted: Mapping[str, str | None], timeout: float = 120.0) -> list[TaskManagerInfo]:
        """Wait until a TaskManager with each resource id in ``wanted`` is registered; a non-None value is an
        external resource that TaskManager must declare (``totalResource.extendedResources``)."""

        def registered() -> tuple[dict[str, TaskManagerInfo], list[str]]:
            try:
                tms = {tm.id: tm for tm in self.taskmanagers()}
            except FlinkRestError:
                tms = {}
            return tms, [
                tm_id
                for tm_id, resource in sorted(wanted.items())
                if tm_id not in tms
                or (resource is not None and resource not in (tms[tm_id].total_resource.get("extendedResources") or {}))
            ]

        (tms, missing), complete = poll(registered, lambda seen: not seen[1], timeout=timeout, every=0.5)
        if complete:
            return list(tms.values())
        raise PlacementError(
            f"TaskManager(s) {', '.join(missing)} not registered (with their resource) after {timeout:.0f}s"
        )

    # ---- jars --------------------------------------------------------------------------------------------------

    def upload_jar(self, jar: str | Path) -> str:
        """Upload a jar; returns its jar id (the basename of the stored file name)."""
        path = Path(jar)
        if not path.is_file():
            raise PlacementError(f"{path}: no such jar")
        with path.open("rb") as fh:
            body = self.request(
                "POST",
                "/jars/upload",
                files={"jarfile": (path.name, fh, "application/x-java-archive")},
                timeout=max(self.timeout, 120),
            )
        if body.get("status") != "success" or not body.get("filename"):
            raise FlinkRestError(f"Flink REST POST {self.url}/jars/upload: unexpected answer {body}")
        return Path(body["filename"]).name

    def jar_ids(self) -> list[str]:
        """Ids of the jars uploaded to this JobManager (``GET /jars``)."""
        return [f["id"] for f in self.get("/jars").get("files", [])]

    def delete_jar(self, jar_id: str) -> None:
        self.request("DELETE", f"/jars/{jar_id}")

    def run_jar(self, jar_id: str, **options: Any) -> str:
        """Run an uploaded jar; returns the job id. ``options`` are :func:`run_request_body`'s (entry_class,
        program_args, parallelism, savepoint_path, allow_non_restored_state, flink_configuration)."""
        body = run_request_body(**options)
        answer = self.request("POST", f"/jars/{jar_id}/run", json=body, timeout=max(self.timeout, 120))
        if "jobid" not in answer:
            raise FlinkRestError(f"Flink REST POST {self.url}/jars/{jar_id}/run: no jobid in {answer}")
        return answer["jobid"]

    # ---- jobs --------------------------------------------------------------------------------------------------

    def jobs(self) -> list[JobSummary]:
        body = self.get("/jobs/overview")
        return [JobSummary(j["jid"], j.get("name", ""), j["state"]) for j in body.get("jobs", [])]

    def running_jobs(self) -> list[JobSummary]:
        return [j for j in self.jobs() if j.state not in TERMINAL_STATES]

    def job_raw(self, job_id: str) -> dict[str, Any]:
        return self.get(f"/jobs/{job_id}")

    def job(self, job_id: str) -> JobDetails:
        body = self.job_raw(job_id)
        vertices = tuple(
            VertexInfo(
                v["id"],
                v["name"],
                int(v["parallelism"]),
                v.get("status", ""),
                sum(int((v.get("tasks") or {}).get(state) or 0) for state in STARTING_STATES),
            )
            for v in body.get("vertices", [])
        )
        return JobDetails(
            body["jid"],
            body.get("name", ""),
            body["state"],
            vertices,
            now_ms=int(body.get("now") or 0),
            restarting_since_ms=int((body.get("timestamps") or {}).get("RESTARTING") or 0),
            start_ms=int(body.get("start-time") or 0),
        )

    def subtasks(self, job_id: str, vertex_id: str) -> list[SubtaskInfo]:
        body = self.get(f"/jobs/{job_id}/vertices/{vertex_id}")
        return [
            SubtaskInfo(
                index=int(s["subtask"]),
                status=s.get("status", ""),
                taskmanager_id=s.get("taskmanager-id", ""),
                endpoint=s.get("endpoint", s.get("host", "")),
            )
            for s in body.get("subtasks", [])
        ]

    def placement(self, job_id: str) -> dict[str, list[str]]:
        """Vertex name -> taskmanager-id of each subtask. Vertices sharing a name (split copies) are concatenated."""
        out: dict[str, list[str]] = {}
        for v in self.job(job_id).vertices:
            out.setdefault(v.name, []).extend(
                s.taskmanager_id for s in sorted(self.subtasks(job_id, v.id), key=lambda s: s.index)
            )
        return out

    def placement_counts(self, job_id: str) -> dict[tuple[str, str], int]:
        """(vertex name, taskmanager-id) -> number of subtasks there: what a verifier compares with a plan."""
        return dict(Counter((name, tm) for name, tms in self.placement(job_id).items() for tm in tms))

    def plan(self, job_id: str) -> dict[str, Any]:
        """The job graph (``nodes`` with ``inputs``/``ship_strategy``); unwraps 2.3's ``{"plan": {...}}``."""
        body = self.get(f"/jobs/{job_id}/plan")
        return body.get("plan", body)

    def exceptions(self, job_id: str) -> dict[str, Any]:
        return self.get(f"/jobs/{job_id}/exceptions")

    def root_exception(self, job_id: str) -> str | None:
        try:
            body = self.exceptions(job_id)
        except PlacementError:
            return None
        history = body.get("exceptionHistory", {}).get("entries") or []
        text = body.get("root-exception") or (history[0].get("stacktrace") if history else None)
        return text.strip().splitlines()[0] if text else None

    def vertex_metrics(
        self, job_id: str, vertex_id: str, names: Sequence[str], agg: str = "sum", *, refresh: float = 0.0
    ) -> dict[str, float]:
        """Aggregated subtask metrics of one vertex, e.g. ``{"numRecordsOut": 1234.0}`` (absent ones left out).

        The JobManager fetches metrics from the TaskManagers lazily: a request starts a fetch (if the last one is
        older than ``metrics.fetcher.update-interval``) but is answered from the store as it was *before* that fetch.
        After a quiet spell the answer is as old as the previous request. ``refresh`` > 0 sends a priming request and
        waits that many seconds before the one whose answer is returned.
        """
        path = f"/jobs/{job_id}/vertices/{vertex_id}/subtasks/metrics"
        params = {"get": ",".join(names), "agg": agg}
        if refresh > 0:
            self.get(path, params=params)
            time.sleep(refresh)
        body = self.get(path, params=params)
        return {m["id"]: float(m[agg]) for m in body if agg in m}

    def metric_fetch_interval_s(self) -> float:
        """``metrics.fetcher.update-interval`` of the running JobManager in seconds (Flink's default: 10 s)."""
        ms = flink_duration_ms(self.jobmanager_config().get("metrics.fetcher.update-interval"))
        return ms / 1000.0 if ms is not None and ms > 0 else 10.0

    def fetched_counters(
        self, job_id: str, vertex_ids: Sequence[str], name: str, *, wait_s: float = 12.0, poll_s: float = 0.1
    ) -> tuple[float, dict[str, float | None]]:
        """``(monotonic time, {vertex id: summed counter})`` as of a metric fetch this call saw land.

        A plain reading is as old as the JobManager's last fetch, anywhere up to ``metrics.fetcher.update-interval``
        (10 s by default): two readings a tick apart then give a rate off by up to that much of the tick. This polls
        until the values change (a fetch landed between two polls, so they are at most ``poll_s`` plus the fetch's
        own latency old) and dates them then. Counters that do not move within ``wait_s`` are returned as read last."""

        def read() -> dict[str, float | None]:
            return {vid: self.vertex_metrics(job_id, vid, [name]).get(name) for vid in vertex_ids}

        first = read()
        (values, at), _ = poll(
            lambda: (read(), time.monotonic()), lambda dated: dated[0] != first, timeout=wait_s, every=poll_s
        )
        return at, values

    def trigger_stop_with_savepoint(self, job_id: str, target_directory: str, *, drain: bool = False) -> str:
        """Ask for stop-with-savepoint; returns the trigger id (see :meth:`savepoint_status`)."""
        answer = self.request(
            "POST", f"/jobs/{job_id}/stop", json={"targetDirectory": target_directory, "drain": drain}
        )
        trigger = answer.get("request-id")
        if not trigger:
            raise FlinkRestError(f"Flink REST POST {self.url}/jobs/{job_id}/stop: no request-id in {answer}")
        return trigger

    def savepoint_status(self, job_id: str, trigger: str) -> tuple[str, str | None, str | None]:
        """(status, location, failure) of a savepoint trigger; status is IN_PROGRESS or COMPLETED."""
        body = self.get(f"/jobs/{job_id}/savepoints/{trigger}")
        status = body.get("status", {}).get("id", "?")
        operation = body.get("operation") or {}
        failure = None
        if status == "COMPLETED" and "location" not in operation:
            cause = (operation.get("failure-cause") or {}).get("stack-trace", "") or str(operation)
            failure = cause.strip().splitlines()[0] if cause.strip() else "unknown failure"
        return status, operation.get("location"), failure

    def cancel(self, job_id: str) -> None:
        self.request("PATCH", f"/jobs/{job_id}", params={"mode": "cancel"})

    def stop_with_savepoint(
        self, job_id: str, target_directory: str, *, drain: bool = False, timeout: float = 120.0
    ) -> str:
        """Stop the job with a savepoint; returns the savepoint location once it is COMPLETED."""
        answer = self.request(
            "POST", f"/jobs/{job_id}/stop", json={"targetDirectory": target_directory, "drain": drain}
        )
        trigger = answer.get("request-id")
        if not trigger:
            raise FlinkRestError(f"Flink REST POST {self.url}/jobs/{job_id}/stop: no request-id in {answer}")
        status, completed = poll(
            lambda: self.get(f"/jobs/{job_id}/savepoints/{trigger}"),
            lambda body: body.get("status", {}).get("id") == "COMPLETED",
            timeout=timeout,
            every=0.5,
        )
        if completed:
            operation = status.get("operation", {})
            if "location" in operation:
                return operation["location"]
            cause = operation.get("failure-cause", {}).get("stack-trace", "") or str(operation)
            raise PlacementError(f"stop-with-savepoint of job {job_id} failed: {cause.strip().splitlines()[0]}")
        raise PlacementError(f"stop-with-savepoint of job {job_id} did not complete within {timeout:.0f}s")

    def wait_for_state(self, job_id: str, states: str | Sequence[str] = "RUNNING", timeout: float = 60.0) -> str:
        """Wait until the job is in one of ``states``; fails early if it ends in another terminal state."""
        wanted = {states} if isinstance(states, str) else set(states)
        state, _ = poll(
            lambda: self.job_raw(job_id)["state"],
            lambda now: now in wanted or now in TERMINAL_STATES,
            timeout=timeout,
            every=0.5,
        )
        if state in wanted:
            return state
        why = self.root_exception(job_id)
        raise PlacementError(f"job {job_id} is {state}, not {'/'.join(sorted(wanted))}" + (f": {why}" if why else ""))

    def wait_until_running(self, job_id: str, timeout: float = 90.0) -> JobDetails:
        """Wait until the job and every one of its subtasks are RUNNING (a RUNNING job may still be scheduling)."""
        start = time.monotonic()
        details, _ = poll(
            lambda: self.job(job_id),
            lambda job: job.state in TERMINAL_STATES or job.all_running,
            timeout=timeout,
            every=0.5,
        )
        if details.all_running:
            return details
        why = self.root_exception(job_id)
        pending = ", ".join(f"{v.name}={v.status}" for v in details.vertices if v.status != "RUNNING")
        state = details.state
        # a job that ended (FAILED, CANCELED) stopped the wait early: say so, not that the timeout ran out
        head = (
            f"job {job_id} is {state} after {time.monotonic() - start:.0f}s"
            if state in TERMINAL_STATES
            else f"job {job_id} not fully RUNNING after {timeout:.0f}s (job {state}"
            + (f"; {pending}" if pending else "")
            + ")"
        )
        raise PlacementError(head + (f": {why}" if why else ""))
