"""The thin I/O loop of ``placement metrics collect``: poll a running job's REST API, write samples and a manifest.

Everything that interprets Flink's answers lives in :mod:`placement.collect.shaping`; this module only decides
when to ask and where to write. Transport is :class:`placement.flink.rest.FlinkRest` (plain ``requests`` with a
timeout on every call; flink-rest-client 1.0.8 has no timeouts, no retries and opens a new connection per call, which
matters at one poll per vertex per second) on a session whose adapter retries GETs with exponential backoff on
connection errors and HTTP 502/503/504 (urllib3's ``Retry``).

Stopping: after ``duration``, when the job reaches a terminal state, or on Ctrl-C. In every case the samples taken so
far are flushed as a complete Parquet part and the manifest says how the run ended. Nothing is written before the
job is found and reports the metrics, so a bad job id or a job without metrics leaves no directory behind.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from placement.collect import rolling, shaping
from placement.collect.layout import (
    RATE_METRICS,
    TASKMANAGER_METRICS,
    THREAD_SCHEMA,
    CheckpointConfig,
    PartWriter,
    RunManifest,
    RunTaskManager,
    RunVertex,
    latency_rows_to_table,
    latency_writer,
    missing_metric_notes,
    rows_to_table,
    taskmanager_rows_to_table,
    taskmanager_writer,
    thread_writer,
    write_manifest,
)
from placement.collect.threads import ThreadSampler
from placement.errors import BadInput, PlacementError
from placement.flink.cluster_version import reported_version_text
from placement.flink.port import FlinkPort
from placement.flink.rest import TERMINAL_STATES, FlinkRest, FlinkRestError
from placement.inventory import Inventory
from placement.polling import poll
from placement.remote import ExecutorFactory

REQUIRED_METRIC = "busyTimeMsPerSecond"
LATENCY_RELIST_S = 10.0  # how often the vertices' metric listings are read again for new latency-tracking histograms


def retrying_session(retries: int = 5, backoff_s: float = 0.5) -> requests.Session:
    """GETs retried on connection errors and 502/503/504, waiting backoff_s * 2**n between tries."""
    retry = Retry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff_s,
        status_forcelist=(502, 503, 504),
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,  # the last answer goes back to FlinkRest, which turns it into a one-line error
    )
    s = requests.Session()
    adapter = HTTPAdapter(max_retries=retry)
    s.mount("http://", adapter)
    s.mount("https://", adapter)
    return s


@dataclass
class CollectOptions:
    rest_url: str
    out_dir: Path
    job_id: str | None = None
    job_name: str | None = None
    duration_s: float = 60.0
    interval_s: float = 1.0
    flush_s: float = 30.0
    metrics_timeout_s: float = 30.0  # Flink shows no metrics for the first ~10 s of a job
    run_id: str | None = None
    timeout_s: float = 10.0
    retries: int = 5
    backoff_s: float = 0.5
    # A rolling history (``placement watch``): after every flush the oldest parts under out_dir are dropped beyond
    # these bounds (placement.collect.rolling.prune); None keeps everything.
    keep_s: float | None = None
    keep_bytes: int | None = None
    # The hosts, to read each TaskManager JVM's CPU per thread (placement.collect.threads) with apply's executors;
    # None: not read (the profile calibrates with busy time as the key).
    inventory: Inventory | None = None


@dataclass
class Progress:
    """What the loop reports after each sampling round (the CLI draws a bar from it)."""

    elapsed_s: float
    rounds: int
    rows: int
    nulls: int


@dataclass
class _Run:
    manifest: RunManifest
    writer: PartWriter
    tm_writer: PartWriter  # the TaskManager CPU parts (layout.taskmanager_writer)
    latency_writer: PartWriter  # the latency-tracking parts (layout.latency_writer)
    thread_writer: PartWriter  # the per-thread CPU parts (layout.thread_writer)
    buffer: list[dict[str, Any]] = field(default_factory=list)
    nulls: int = 0
    tm_buffer: list[dict[str, Any]] = field(default_factory=list)
    tm_seen: set[str] = field(default_factory=set)  # TaskManager metrics some TaskManager answered
    latency_buffer: list[dict[str, Any]] = field(default_factory=list)
    latency_names: dict[str, list[str]] = field(default_factory=dict)  # vertex id -> its latency-tracking metrics
    latency_listed: float | None = None  # time.monotonic() of the last listing
    cotenant_vertices: dict[str, list[RunVertex]] = field(default_factory=dict)  # other running job -> its vertices
    thread_buffer: list[dict[str, Any]] = field(default_factory=list)


class Collector:
    def __init__(
        self,
        options: CollectOptions,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
    ):
        self.o = options
        self.rest: FlinkPort = FlinkRest(
            options.rest_url, timeout=options.timeout_s, session=retrying_session(options.retries, options.backoff_s)
        )
        self.sleep = sleep
        self.clock = clock

    # ---- finding the job -----------------------------------------------------------------------------------------

    def resolve_job(self) -> dict[str, Any]:
        """The job's ``/jobs/<jid>`` body, by id or by the name of a running job."""
        o = self.o
        if o.job_id:
            try:
                return self.rest.job_raw(o.job_id)
            except FlinkRestError as exc:
                if exc.status in (400, 404):
                    raise BadInput(f"no job {o.job_id} at {o.rest_url}", field="--job") from None
                raise
        running = [j for j in self.rest.jobs() if j.name == o.job_name and j.state not in TERMINAL_STATES]
        if not running:
            names = sorted({j.name for j in self.rest.running_jobs()})
            raise BadInput(
                f"no running job named {o.job_name!r} at {o.rest_url} (running: {', '.join(names) or 'none'})",
                field="--job-name",
            )
        if len(running) > 1:
            raise BadInput(
                f"{len(running)} running jobs are named {o.job_name!r} "
                f"({', '.join(j.id for j in running)}); use --job ID",
                field="--job-name",
            )
        return self.rest.job_raw(running[0].id)

    def wait_for_metrics(self, job_id: str, vertices: list[RunVertex]) -> list[str]:
        """Wait until every vertex lists busyTimeMsPerSecond; returns the rate metrics Flink knows for the job."""

        def listed() -> tuple[set[str], list[str]]:
            known: set[str] = set()
            missing = []
            for v in vertices:
                names = {m["id"].split(".", 1)[-1] for m in self.rest.get(f"/jobs/{job_id}/vertices/{v.id}/metrics")}
                known |= names
                if REQUIRED_METRIC not in names:
                    missing.append(v.name)
            return known, missing

        (known, missing), complete = poll(
            listed, lambda seen: not seen[1], timeout=self.o.metrics_timeout_s, every=1.0, sleep=self.sleep
        )
        if not complete:
            raise BadInput(
                f"job {job_id} reports no {REQUIRED_METRIC} for {', '.join(missing)} "
                f"after {self.o.metrics_timeout_s:g} s "
                "(metrics appear about 10 s after a job starts; is it running?)",
                source=self.o.rest_url,
                field="metrics",
            )
        return [m for m in RATE_METRICS if m in known]

    def checkpoint_sizes(self, job_id: str) -> tuple[dict[str, float], dict[str, float]] | None:
        """Vertex id -> (full state, what was written) in bytes, of the latest completed checkpoint; None when there is
        none (checkpointing off or young)."""
        try:
            cid = shaping.latest_checkpoint_id(self.rest.get(f"/jobs/{job_id}/checkpoints"))
            if cid is None:
                return None
            detail = self.rest.get(f"/jobs/{job_id}/checkpoints/details/{cid}")
            return shaping.state_sizes(detail), shaping.checkpointed_sizes(detail)
        except FlinkRestError:
            return None

    def checkpoint_config(self, job_id: str) -> CheckpointConfig | None:
        """The job's checkpoint interval and pause; None when checkpointing is off (Flink answers 404) or unknown."""
        try:
            return shaping.checkpoint_config(self.rest.get(f"/jobs/{job_id}/checkpoints/config"))
        except FlinkRestError:
            return None

    def buffer_timeout(self, job_id: str) -> float | None:
        """``execution.buffer-timeout`` of the configuration the job runs with; None when it is not set (or unknown)."""
        try:
            return shaping.buffer_timeout_ms(self.rest.get(f"/jobs/{job_id}/jobmanager/config"))
        except FlinkRestError:
            return None

    def taskmanagers(self) -> list[RunTaskManager]:
        return shaping.taskmanagers(self.rest.get("/taskmanagers"))

    def latency_interval(self, job_id: str) -> float | None:
        """``metrics.latency.interval`` of the configuration the job runs with (None: not set there — a job may still
        set it in its code, which REST does not show: the metrics themselves are looked for either way)."""
        try:
            return shaping.latency_interval_ms(self.rest.get(f"/jobs/{job_id}/jobmanager/config"))
        except FlinkRestError:
            return None

    def sample_latency(self, job_id: str, vertices: list[RunVertex], run: _Run) -> None:
        """Flink's latency-tracking histograms of every vertex (none when the job does not track latency). The
        listing of each vertex's metrics is read again every :data:`LATENCY_RELIST_S` (markers reach an operator
        only after the first interval, and new ones appear after a restart); the values every round."""
        now = time.monotonic()
        if run.latency_listed is None or now - run.latency_listed >= LATENCY_RELIST_S:
            run.latency_listed = now
            for v in vertices:
                try:
                    listing = self.rest.get(f"/jobs/{job_id}/vertices/{v.id}/metrics")
                except FlinkRestError:
                    continue
                names = shaping.latency_metric_names(listing if isinstance(listing, list) else [])
                if names:
                    run.latency_names[v.id] = names
        for vid, names in run.latency_names.items():
            ts = int(self.clock() * 1000)
            answer: list = []
            for query in shaping.name_queries(names):
                part = self.rest.get(f"/jobs/{job_id}/vertices/{vid}/metrics", params={"get": query})
                answer.extend(part if isinstance(part, list) else [])
            run.latency_buffer.extend(shaping.latency_rows(ts, vid, answer))

    def flink_version(self) -> str | None:
        """``flink-version`` of ``GET /config`` (None: the JobManager did not say, or the call failed)."""
        try:
            config = self.rest.config()
        except FlinkRestError:
            return None
        return reported_version_text(config) if isinstance(config, dict) else None

    def sample_taskmanagers(self, tm_ids: list[str]) -> list[dict[str, Any]]:
        """One row per TaskManager: its JVM process CPU (``Status.JVM.CPU.Time``/``Load``); a TaskManager that is
        gone or does not answer is skipped this round."""
        rows = []
        query = ",".join(TASKMANAGER_METRICS)
        for tm in tm_ids:
            ts = int(self.clock() * 1000)
            try:
                answer = self.rest.get(f"/taskmanagers/{tm}/metrics", params={"get": query})
            except FlinkRestError:
                continue
            values: dict[str, Any] = {}
            for m in answer if isinstance(answer, list) else []:
                col = TASKMANAGER_METRICS.get(str(m.get("id")))
                if col is not None:
                    values[col] = shaping.parse_metric_value(m.get("value"))
            if values:
                rows.append({"ts_ms": ts, "taskmanager_id": tm, **values})
        return rows

    def cotenant_load(self, job_id: str, run: _Run) -> dict[str, tuple[float, int]] | None:
        """What the other running jobs put on each TaskManager: (Σ busy time of their subtasks on it in cores, how
        many; :data:`placement.collect.layout.COTENANT_BUSY`), read with the same calls as this job's samples. Asked
        once a round, beside the TaskManagers' CPU it is set against, never more often. None when the running jobs
        cannot be listed (recorded as null: not known); a job that ends while it is read is left out."""
        try:
            others = [j.id for j in self.rest.running_jobs() if j.id != job_id]
        except FlinkRestError:
            return None
        run.cotenant_vertices = {jid: vs for jid, vs in run.cotenant_vertices.items() if jid in others}
        pairs: list[tuple[shaping.SubtaskState, dict[str, Any]]] = []
        for jid in others:
            try:
                if jid not in run.cotenant_vertices:  # a job's vertices do not change: read once
                    run.cotenant_vertices[jid] = shaping.job_graph(self.rest.job_raw(jid), {})[0]
                mine: list[tuple[shaping.SubtaskState, dict[str, Any]]] = []
                for v in run.cotenant_vertices[jid]:
                    rows, states = self.sample_vertex(jid, v, metrics=(REQUIRED_METRIC,))
                    mine.extend(zip(states, rows))
            except FlinkRestError:
                continue
            pairs.extend(mine)
        return shaping.busy_by_taskmanager(pairs)

    # ---- the loop ------------------------------------------------------------------------------------------------

    def sample_vertex(
        self, job_id: str, v: RunVertex, *, metrics: Iterable[str] = RATE_METRICS
    ) -> tuple[list[dict[str, Any]], list[shaping.SubtaskState]]:
        """One row per subtask of the vertex with ``metrics`` (the others null), and the subtasks' states."""
        ts = int(self.clock() * 1000)
        states = shaping.subtask_states(self.rest.get(f"/jobs/{job_id}/vertices/{v.id}"))
        values: dict[int, dict[str, float | None]] = {}
        for query in shaping.metric_queries(len(states) or v.parallelism, metrics):
            for idx, vals in shaping.parse_subtask_metrics(
                self.rest.get(f"/jobs/{job_id}/vertices/{v.id}/metrics", params={"get": query})
            ).items():
                values.setdefault(idx, {}).update(vals)
        return shaping.sample_rows(ts, v.id, states, values), states

    def run(self, on_progress: Callable[[Progress], None] | None = None) -> RunManifest:
        o = self.o
        if o.interval_s <= 0:
            raise BadInput("must be > 0", field="--interval")
        if o.duration_s <= 0:
            raise BadInput("must be > 0", field="--duration")
        # Once, without the retrying session: retries (15 s of back-off) are for a JobManager that blips during a
        # collection, not for one that is not there at the start — that is said at once. Any HTTP answer (a 503 of a
        # busy JobManager too) means one is there: the retrying calls below handle it.
        try:
            FlinkRest(o.rest_url, timeout=o.timeout_s).jobs()
        except FlinkRestError as exc:
            if exc.status is None:
                raise
        job = self.resolve_job()
        job_id = job["jid"]
        if job.get("state") in TERMINAL_STATES:
            raise BadInput(f"job {job_id} is {job['state']}, not running", field="--job")
        vertices, edges = shaping.job_graph(job, self.rest.get(f"/jobs/{job_id}/plan"))
        if not vertices:
            raise PlacementError(f"{o.rest_url}: job {job_id} has no vertices")
        metric_names = self.wait_for_metrics(job_id, vertices)
        sizes = self.checkpoint_sizes(job_id)
        started = self.clock()
        run_id = o.run_id or datetime.fromtimestamp(started, timezone.utc).strftime(
            "%Y%m%dT%H%M%SZ-"
        ) + secrets.token_hex(2)
        manifest = RunManifest(
            job_id=job_id,
            job_name=job.get("name", job_id),
            run_id=run_id,
            origin="collected",
            rest_url=o.rest_url,
            started_ms=int(started * 1000),
            interval_s=o.interval_s,
            requested_duration_s=o.duration_s,
            stopped="running",
            metrics=metric_names,
            vertices=[self._with_state(v, sizes) for v in vertices],
            edges=edges,
            taskmanagers=self.taskmanagers(),
            checkpoints=self.checkpoint_config(job_id),
            buffer_timeout_ms=self.buffer_timeout(job_id),
            flink_version=self.flink_version(),
            latency_interval_ms=self.latency_interval(job_id),
        )
        tm_ids = [tm.id for tm in manifest.taskmanagers]
        manifest.notes.extend(
            missing_metric_notes([m for m in RATE_METRICS if m not in metric_names], "not reported by this job")
        )
        run = _Run(
            manifest,
            PartWriter(o.out_dir, job_id, run_id),
            tm_writer=taskmanager_writer(o.out_dir, job_id, run_id),
            latency_writer=latency_writer(o.out_dir, job_id, run_id),
            thread_writer=thread_writer(o.out_dir, job_id, run_id),
        )
        write_manifest(o.out_dir, manifest)
        with contextlib.ExitStack() as hosts:
            threads = self.thread_sampler(hosts, manifest)
            self._loop(run, vertices, tm_ids, job_id, started, threads, on_progress)
        return run.manifest

    def thread_sampler(self, stack: contextlib.ExitStack, manifest: RunManifest) -> ThreadSampler | None:
        """The sampler of every TaskManager the inventory names a host for (None without an inventory); the
        executors close with ``stack``. A TaskManager the inventory does not know is noted in the manifest."""
        inv = self.o.inventory
        if inv is None:
            return None
        factory = ExecutorFactory(inv, echo=None)
        stack.callback(factory.close)
        targets = {}
        try:
            listed = self.rest.get("/taskmanagers").get("taskmanagers", [])
        except FlinkRestError as exc:
            manifest.notes.append(f"per-thread CPU not recorded: the TaskManagers could not be listed ({exc})")
            return None
        for tm in listed:
            tm_id, port, address = str(tm.get("id")), tm.get("dataPort"), shaping.host_of_pekko_path(tm.get("path"))
            host = inv.host_of_taskmanager(tm_id, address)
            if host is None or not isinstance(port, int) or port <= 0:
                manifest.notes.append(
                    f"per-thread CPU of TaskManager {tm_id} not recorded: "
                    + ("no inventory host matches it" if host is None else "no data port reported")
                )
                continue
            # reached where Flink says it runs, with its host's SSH settings (an inventory's example addresses for a
            # cluster on this machine would be a connect timeout, and the wrong machine)
            targets[tm_id] = (factory.for_host(host.model_copy(update={"address": address or host.address})), port)
        return ThreadSampler(targets, self.clock)

    def _loop(
        self,
        run: _Run,
        vertices: list[RunVertex],
        tm_ids: list[str],
        job_id: str,
        started: float,
        threads: ThreadSampler | None,
        on_progress: Callable[[Progress], None] | None,
    ) -> None:
        o = self.o
        rounds = 0
        last_flush = time.monotonic()
        locations: dict[tuple[str, int], Any] = {}
        try:
            while True:
                tick = time.monotonic()
                for v in vertices:
                    rows, states = self.sample_vertex(job_id, v)
                    run.buffer.extend(rows)
                    run.nulls += sum(1 for r in rows for c in RATE_METRICS.values() if r[c] is None)
                    for loc in shaping.locations(v.id, states):
                        locations[(loc.vertex_id, loc.subtask)] = loc
                self.sample_latency(job_id, vertices, run)
                tm_rows = shaping.with_cotenants(self.sample_taskmanagers(tm_ids), self.cotenant_load(job_id, run))
                run.tm_buffer.extend(tm_rows)
                run.tm_seen |= {m for m, c in TASKMANAGER_METRICS.items() for r in tm_rows if r.get(c) is not None}
                if threads is not None:
                    run.thread_buffer.extend(threads.sample())
                    run.manifest.notes.extend(n for n in threads.notes if n not in run.manifest.notes)
                rounds += 1
                elapsed = self.clock() - started
                if on_progress:
                    on_progress(Progress(elapsed, rounds, run.writer.rows + len(run.buffer), run.nulls))
                if time.monotonic() - last_flush >= o.flush_s:
                    self._flush(run, locations)
                    last_flush = time.monotonic()
                if elapsed >= o.duration_s:
                    run.manifest.stopped = "completed"
                    break
                state = self.rest.job_raw(job_id).get("state")
                if state in TERMINAL_STATES:
                    run.manifest.stopped = "job-ended"
                    run.manifest.notes.append(f"job became {state}")
                    break
                self.sleep(max(0.0, o.interval_s - (time.monotonic() - tick)))
        except KeyboardInterrupt:
            run.manifest.stopped = "interrupted"
        except PlacementError as exc:
            # Keep what we have; say why we stopped. Retries with backoff are already behind this.
            run.manifest.stopped = "interrupted"
            run.manifest.notes.append(f"stopped by an error: {exc}")
            self._finish(run, locations, job_id)
            raise PlacementError(f"{exc} (kept {run.writer.rows} samples in {run.writer.dir})") from None
        self._finish(run, locations, job_id)

    @staticmethod
    def _with_state(v: RunVertex, sizes: tuple[dict[str, float], dict[str, float]] | None) -> RunVertex:
        if sizes is None:
            return v
        state, written = sizes
        return v.model_copy(update={"state_bytes": state.get(v.id, 0.0), "checkpointed_bytes": written.get(v.id, 0.0)})

    def _flush(self, run: _Run, locations: dict[tuple[str, int], Any]) -> None:
        if run.buffer:
            run.writer.write(rows_to_table(run.buffer))
            run.buffer.clear()
        m = run.manifest
        if run.tm_buffer:
            run.tm_writer.write(taskmanager_rows_to_table(run.tm_buffer))
            run.tm_buffer.clear()
        m.taskmanager_metrics = [n for n in TASKMANAGER_METRICS if n in run.tm_seen]
        if run.latency_buffer:
            run.latency_writer.write(latency_rows_to_table(run.latency_buffer))
            run.latency_buffer.clear()
        if run.thread_buffer:
            run.thread_writer.write(pa.Table.from_pylist(run.thread_buffer, schema=THREAD_SCHEMA))
            run.thread_buffer.clear()
        m.samples, m.ended_ms = run.writer.rows, int(self.clock() * 1000)
        m.files, m.taskmanager_files = list(run.writer.files), list(run.tm_writer.files)
        m.latency_files = list(run.latency_writer.files)
        m.thread_files = list(run.thread_writer.files)
        if self.o.keep_s is not None or self.o.keep_bytes is not None:
            # both kinds of part, by the same age and size bounds (samples: all written, kept or not)
            rolling.prune(
                self.o.out_dir,
                now_ms=m.ended_ms,
                max_age_s=self.o.keep_s,
                max_bytes=self.o.keep_bytes,
                keep_runs=frozenset({run.writer.dir}),
            )
            m.files = [f for f in m.files if (run.writer.dir / f).exists()]
            m.taskmanager_files = [f for f in m.taskmanager_files if (run.writer.dir / f).exists()]
            m.latency_files = [f for f in m.latency_files if (run.writer.dir / f).exists()]
            m.thread_files = [f for f in m.thread_files if (run.writer.dir / f).exists()]
        m.locations = [locations[k] for k in sorted(locations)]
        write_manifest(self.o.out_dir, m)

    def _finish(self, run: _Run, locations: dict[tuple[str, int], Any], job_id: str) -> None:
        m = run.manifest
        if (m.latency_interval_ms or 0) > 0 and not m.latency_files and not run.latency_buffer:
            m.notes.append(
                f"metrics.latency.interval is {m.latency_interval_ms:g} ms but no operator reported latency "
                "tracking (markers reach operators only after the first interval; collect longer)"
            )
        # A Ctrl-C during the final flush must not leave a half-written state either: both writes are atomic renames.
        with contextlib.suppress(PlacementError):
            sizes = self.checkpoint_sizes(job_id)  # checkpoints taken while we collected
            if sizes is not None:
                run.manifest.vertices = [self._with_state(v, sizes) for v in run.manifest.vertices]
        self._flush(run, locations)


def collect_jobs(
    rest_url: str, job_ids: Iterable[str], out_dir: Path, *, duration_s: float, interval_s: float = 1.0
) -> dict[str, Path]:
    """The same window of several jobs, collected at once (one collector each, in threads: the window is wall time,
    and the jobs' figures are then of the same seconds); job id -> its metrics directory under ``out_dir``. The first
    failure is raised (the others' collections end with their window)."""
    from concurrent.futures import ThreadPoolExecutor

    dirs = {jid: Path(out_dir) / jid for jid in job_ids}
    if not dirs:
        return {}
    with ThreadPoolExecutor(len(dirs), thread_name_prefix="collect") as pool:
        runs = [
            pool.submit(
                collect,
                CollectOptions(
                    rest_url=rest_url,
                    out_dir=d,
                    job_id=jid,
                    duration_s=duration_s,
                    interval_s=interval_s,
                    flush_s=duration_s,
                ),
            )
            for jid, d in dirs.items()
        ]
        for run in runs:
            run.result()
    return dirs


def collect(options: CollectOptions, on_progress: Callable[[Progress], None] | None = None) -> RunManifest:
    return Collector(options).run(on_progress)
