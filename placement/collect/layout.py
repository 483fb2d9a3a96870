"""On-disk layout of a metric history: typed Parquet samples partitioned by job and run, plus one manifest per run.

::

    DIR/
      job_id=<flink job id>/
        run_id=<run id>/
          part-00000.parquet      samples (SAMPLE_SCHEMA), one row = one subtask at one sampling instant
          part-00001.parquet      the collector flushes a new part every --flush seconds, so Ctrl-C loses little
          _manifest.json          RunManifest: the job graph, where each subtask ran, state sizes, TaskManagers
          _taskmanagers/
            part-00000.parquet    TaskManager process CPU (TASKMANAGER_SCHEMA), one row = one TaskManager at one instant
          _latency/
            part-00000.parquet    Flink's latency tracking (LATENCY_SCHEMA), when the job has it on: one row = one
                                  source → operator histogram of one reporting subtask at one instant

Hive-style ``key=value`` directories let Spark and pyarrow prune whole jobs and runs by path; files starting with
``_`` are ignored by both when they list data files, so the manifest can live beside its samples and a run directory
is self-contained (copy it and you have everything). Columns are typed and narrow (no JSON blobs, no strings per
metric) so a reader only decodes the columns it needs. A metric Flink did not report, or reported as NaN, is null.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, ValidationError

from placement.errors import BadInput
from placement.loading import Strict, describe_validation_error

MANIFEST_FORMAT: Final = "placement.metrics/v1"
MANIFEST_NAME = "_manifest.json"

# Flink metric name -> column. The names are the real Flink 2.x task metrics (see shared notes).
RATE_METRICS: dict[str, str] = {
    "busyTimeMsPerSecond": "busy_ms_per_s",
    "idleTimeMsPerSecond": "idle_ms_per_s",
    "backPressuredTimeMsPerSecond": "backpressured_ms_per_s",
    "numRecordsInPerSecond": "records_in_per_s",
    "numRecordsOutPerSecond": "records_out_per_s",
    "numBytesInPerSecond": "bytes_in_per_s",
    "numBytesOutPerSecond": "bytes_out_per_s",
    # Consumer side of the network (Flink 1.18-2.3): buffers delivered to the subtask a second from senders in the same
    # TaskManager and from others. A sender hands a channel's consumer one buffer per flush (its buffer timeout, or a
    # full buffer), so together they count the subtask's input deliveries a second over all its input channels.
    "numBuffersInLocalPerSecond": "buffers_in_local_per_s",
    "numBuffersInRemotePerSecond": "buffers_in_remote_per_s",
}
METRIC_COLUMNS = list(RATE_METRICS.values())
# Rate metrics a history may lack: the collector recorded them only later, and a Prometheus reporter's filter may
# leave them out. A part without their columns reads them as null (not measured: what such a history meant), and a
# collection that finds none says what the profile then lacks instead of reporting a gap (:func:`missing_metric_notes`).
OPTIONAL_METRICS = ("numBuffersInLocalPerSecond", "numBuffersInRemotePerSecond")
OPTIONAL_COLUMNS = frozenset(RATE_METRICS[m] for m in OPTIONAL_METRICS)

SAMPLE_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),  # sampling instant, epoch ms
        pa.field("vertex_id", pa.string(), nullable=False),
        pa.field("subtask", pa.int32(), nullable=False),  # 0-based index
        pa.field("attempt", pa.int32()),  # execution attempt; grows with every restart
        pa.field("attempt_start_ms", pa.int64()),  # when that attempt started: warm-up is measured from here
        pa.field("running", pa.bool_(), nullable=False),  # subtask status was RUNNING when sampled
        *[pa.field(col, pa.float64()) for col in METRIC_COLUMNS],
    ]
)
PARTITION_COLUMNS = ("job_id", "run_id")

# TaskManager-scope metrics recorded beside the samples (issue 23): the JVM process's CPU, per TaskManager.
# ``Status.JVM.CPU.Time`` is the process's cumulative CPU time in ns (OperatingSystemMXBean.getProcessCpuTime: all
# its threads, GC, netty and metric reporting too), ``Status.JVM.CPU.Load`` the process's recent share of the whole
# machine, 0..1 (-1 or NaN when the JVM cannot tell: stored as null). Rates come from the Time counter's deltas.
TASKMANAGER_METRICS: dict[str, str] = {
    "Status.JVM.CPU.Time": "cpu_time_ns",
    "Status.JVM.CPU.Load": "cpu_load",
}
TASKMANAGER_DIR = "_taskmanagers"  # "_": Spark and pyarrow datasets of the run directory skip it (another schema)
# What else runs on the TaskManager beside the job (several jobs share an edge fleet's TaskManagers): the other running
# jobs' subtasks located on it at that instant, and their busyTimeMsPerSecond summed / 1000 (cores of its host).
# placement.profile.tm_cpu splits the JVM's CPU between the job and them. Null: not known (runs recorded before these
# columns, or a round in which the other jobs could not be read) — read as "nothing else known", the older meaning.
COTENANT_BUSY = "cotenant_busy_cores"
COTENANT_SUBTASKS = "cotenant_subtasks"
TASKMANAGER_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("taskmanager_id", pa.string(), nullable=False),
        *[pa.field(col, pa.float64()) for col in TASKMANAGER_METRICS.values()],
        pa.field(COTENANT_BUSY, pa.float64()),
        pa.field(COTENANT_SUBTASKS, pa.int32()),
    ]
)

# Per-thread CPU of each TaskManager JVM (issue 23), read over SSH from the host's /proc (placement.collect.threads)
# when ``metrics collect`` is given an inventory: one row per thread per round, its cumulative CPU time (user +
# system) in ns of the host's CPU time. A task thread is named "<vertex name> (<i>/<n>)#<attempt>", truncated by Linux
# to 15 characters; placement.profile.threads maps the names to vertices. Busy time is wall-clock time of a subtask's
# thread, so it errs where that thread waits without being idle (a rate-limited source, a CPU-quota host); the
# thread's CPU time does not.
THREAD_DIR = "_threads"
THREAD_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("taskmanager_id", pa.string(), nullable=False),
        pa.field("tid", pa.int64(), nullable=False),
        pa.field("thread", pa.string(), nullable=False),
        pa.field("cpu_time_ns", pa.int64(), nullable=False),
    ]
)

_ID_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]+$")  # ids become directory names


class RunVertex(Strict):
    """A vertex of the job graph as a run's manifest records it (flink/rest.VertexInfo is the REST answer)."""

    id: str
    name: str
    parallelism: int = Field(ge=1)
    state_bytes: float | None = Field(
        None, ge=0, description="latest completed checkpoint, all subtasks; null = unknown"
    )
    checkpointed_bytes: float | None = Field(
        None, ge=0, description="what that checkpoint uploaded (incremental: the delta); null = unknown"
    )
    max_parallelism: int | None = None


class EdgeInfo(Strict):
    source: str
    target: str
    ship_strategy: str


class SubtaskLocation(Strict):
    vertex_id: str
    subtask: int = Field(ge=0)
    taskmanager_id: str | None = None
    host: str | None = Field(None, description="host part of the TaskManager endpoint")
    attempt: int | None = None


class CheckpointConfig(Strict):
    """``GET /jobs/<jid>/checkpoints/config`` (absent when checkpointing is off)."""

    interval_ms: float = Field(gt=0)
    min_pause_ms: float = Field(0.0, ge=0)
    mode: str | None = None
    state_backend: str | None = None
    checkpoint_storage: str | None = None

    @property
    def period_ms(self) -> float:
        """Time from one checkpoint to the next, at least: a new one starts ``min_pause`` after the last ended."""
        return max(self.interval_ms, self.min_pause_ms)


class RunTaskManager(Strict):
    """A TaskManager as a run's manifest records it (flink/rest.TaskManagerInfo is the REST answer)."""

    id: str
    host: str | None = None
    slots: int | None = None
    cpu_cores: float | None = Field(None, description="cores Flink gives the TaskManager (totalResource)")
    hardware_cpu_cores: float | None = Field(None, description="cores of the machine it runs on")
    physical_memory_bytes: float | None = None
    task_heap_bytes: float | None = None
    managed_memory_bytes: float | None = None


class RunManifest(Strict):
    format: Literal["placement.metrics/v1"] = MANIFEST_FORMAT
    job_id: str = Field(pattern=_ID_PATTERN.pattern)
    job_name: str
    run_id: str = Field(pattern=_ID_PATTERN.pattern)
    origin: Literal["collected", "synthetic"] = "collected"
    rest_url: str | None = None
    started_ms: int
    ended_ms: int | None = None
    interval_s: float = Field(gt=0)
    requested_duration_s: float | None = None
    stopped: Literal["running", "completed", "interrupted", "job-ended"] = "running"
    samples: int = Field(0, ge=0)
    files: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=lambda: list(RATE_METRICS))
    vertices: list[RunVertex] = Field(min_length=1)
    edges: list[EdgeInfo] = Field(default_factory=list)
    locations: list[SubtaskLocation] = Field(default_factory=list)
    taskmanagers: list[RunTaskManager] = Field(default_factory=list)
    checkpoints: CheckpointConfig | None = Field(None, description="the job's checkpointing; null: off or unknown")
    buffer_timeout_ms: float | None = Field(
        None, ge=0, description="execution.buffer-timeout from the job's configuration; null: not set (Flink's default)"
    )
    notes: list[str] = Field(default_factory=list)
    taskmanager_metrics: list[str] = Field(
        default_factory=list,
        description="TaskManager metrics recorded (TASKMANAGER_METRICS names); empty: none (older runs)",
    )
    taskmanager_files: list[str] = Field(
        default_factory=list,
        description="their Parquet parts, relative to the run directory (_taskmanagers/part-*.parquet)",
    )
    flink_version: str | None = Field(None, description="the cluster's Flink release (REST /config); null: unknown")
    latency_interval_ms: float | None = Field(
        None, ge=0, description="metrics.latency.interval of the job's configuration; null: not set (off by default)"
    )
    latency_files: list[str] = Field(
        default_factory=list,
        description="latency tracking parts, relative to the run directory (_latency/part-*.parquet)",
    )
    thread_files: list[str] = Field(
        default_factory=list,
        description="per-thread CPU parts, relative to the run directory (_threads/part-*.parquet); "
        "empty: not recorded (no inventory to reach the hosts, or an older run)",
    )
    truth: dict[str, dict[str, float | None]] | None = Field(
        None, description="synthetic histories: the true figures per vertex"
    )

    def vertex(self, vertex_id: str) -> RunVertex:
        for v in self.vertices:
            if v.id == vertex_id:
                return v
        raise KeyError(vertex_id)


# Flink's latency tracking (``metrics.latency.interval`` > 0): sources emit a latency marker every interval; every
# operator it reaches keeps a histogram (the last ``metrics.latency.history-size`` markers, 128 by default) of how long
# markers took from the source to it, in ms. Flink 2.3's REST API lists them under the *vertex* of the reporting
# operator, as ``<subtask>.latency.source_id.<source operator id>[.source_subtask_index.<k>].operator_id.<operator
# id>.operator_subtask_index.<n>.latency_<stat>`` (``metrics.latency.granularity``: ``operator``, the default, has no
# source subtask; ``subtask`` has one; ``single`` drops both ids) — measured, tests/collect/test_collect_latency.py.
LATENCY_STATS: dict[str, str] = {
    "median": "p50_ms",
    "p95": "p95_ms",
    "p99": "p99_ms",
    "mean": "mean_ms",
    "max": "max_ms",
}
LATENCY_DIR = "_latency"
LATENCY_SCHEMA = pa.schema(
    [
        pa.field("ts_ms", pa.int64(), nullable=False),
        pa.field("vertex_id", pa.string(), nullable=False),  # the vertex whose subtask reported it
        pa.field("subtask", pa.int32(), nullable=False),  # that subtask (0-based)
        pa.field(
            "source_id", pa.string()
        ),  # operator id of the source the markers came from (null: granularity single)
        pa.field("source_subtask", pa.int32()),  # granularity subtask only
        pa.field("operator_id", pa.string()),  # the operator that measured (one per operator of a chain)
        *[pa.field(col, pa.float64()) for col in LATENCY_STATS.values()],
    ]
)


def run_dir(root: str | Path, job_id: str, run_id: str) -> Path:
    return Path(root) / f"job_id={job_id}" / f"run_id={run_id}"


def write_manifest(root: str | Path, manifest: RunManifest) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a manifest, even after Ctrl-C."""
    d = run_dir(root, manifest.job_id, manifest.run_id)
    d.mkdir(parents=True, exist_ok=True)
    path = d / MANIFEST_NAME
    tmp = d / (MANIFEST_NAME + ".tmp")
    tmp.write_text(json.dumps(manifest.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_manifest(path: str | Path) -> RunManifest:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"cannot read run manifest: {exc}", source=str(p)) from None
    except json.JSONDecodeError as exc:
        raise BadInput(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=str(p)) from None
    if not isinstance(data, dict):
        raise BadInput("a run manifest must be a JSON object", source=str(p))
    try:
        return RunManifest.model_validate(data)
    except ValidationError as err:
        raise describe_validation_error(err, str(p)) from None


def find_manifests(root: str | Path) -> list[tuple[Path, RunManifest]]:
    """Every run under ``root`` (sorted by start time). Errors name the directory or manifest at fault."""
    r = Path(root)
    if not r.exists():
        raise BadInput("metrics directory not found", source=str(r))
    if not r.is_dir():
        raise BadInput(
            "not a directory (expected a metrics directory written by `placement metrics collect`)", source=str(r)
        )
    found = []
    for path in sorted(r.glob(f"job_id=*/run_id=*/{MANIFEST_NAME}")):
        found.append((path.parent, read_manifest(path)))
    if not found:
        raise BadInput(
            f"no runs found (expected job_id=<id>/run_id=<id>/{MANIFEST_NAME}; is this a metrics directory?)",
            source=str(r),
        )
    for d, m in found:
        if d.name != f"run_id={m.run_id}" or d.parent.name != f"job_id={m.job_id}":
            raise BadInput(
                f"manifest says job {m.job_id} run {m.run_id} but lives in {d.parent.name}/{d.name}",
                source=str(d / MANIFEST_NAME),
            )
    return sorted(found, key=lambda item: (item[1].started_ms, item[1].run_id))


def taskmanager_rows_to_table(rows: Iterable[Mapping[str, object]]) -> pa.Table:
    """TaskManager CPU rows -> an Arrow table (TASKMANAGER_SCHEMA); NaN/inf and a negative load (Flink's "unknown")
    become null."""
    return _rows_to_table(
        rows, TASKMANAGER_SCHEMA, frozenset([*TASKMANAGER_METRICS.values(), COTENANT_BUSY]), negative_is_null=True
    )


def read_taskmanager_cpu(run: Path, manifest: RunManifest) -> pa.Table:
    """Every TaskManager CPU row of a run (empty when the run recorded none, e.g. an older collection); parts written
    before the co-tenant columns read with them null."""
    tables = [pq.read_table(run / f) for f in manifest.taskmanager_files if (run / f).is_file()]
    if not tables:
        return TASKMANAGER_SCHEMA.empty_table()
    return pa.concat_tables([_with_missing_columns(t, TASKMANAGER_SCHEMA).cast(TASKMANAGER_SCHEMA) for t in tables])


def _with_missing_columns(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The table with every nullable column of ``schema`` it lacks added as nulls, in the schema's order."""
    columns = [
        table.column(f.name).cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def latency_rows_to_table(rows: Iterable[Mapping[str, object]]) -> pa.Table:
    cols: dict[str, list] = {f.name: [] for f in LATENCY_SCHEMA}
    for row in rows:
        for f in LATENCY_SCHEMA:
            v = row.get(f.name)
            cols[f.name].append(_nullable(v) if f.name in LATENCY_STATS.values() else v)  # type: ignore[arg-type]
    return pa.table(cols, schema=LATENCY_SCHEMA)


def read_latency(run: Path, manifest: RunManifest) -> pa.Table:
    """Every latency-tracking row of a run (empty when it recorded none)."""
    tables = [pq.read_table(run / f) for f in manifest.latency_files if (run / f).is_file()]
    if not tables:
        return LATENCY_SCHEMA.empty_table()
    return pa.concat_tables([t.cast(LATENCY_SCHEMA) for t in tables])


def read_samples(run: Path, vertex_ids: Iterable[str], columns: Sequence[str]) -> pa.Table:
    """Those ``columns`` of a run's samples of ``vertex_ids`` (its Parquet parts, as the profile selects them); an
    optional metric a part was written without reads as null."""
    wanted = [("vertex_id", "in", sorted(set(vertex_ids)))]
    schema = pa.schema([SAMPLE_SCHEMA.field(c) for c in columns])
    tables = [_read_part(p, schema, wanted) for p in sorted(run.glob("*.parquet")) if not p.name.startswith((".", "_"))]
    if not tables:
        return schema.empty_table()
    return pa.concat_tables(tables)


def _read_part(path: Path, schema: pa.Schema, filters: list) -> pa.Table:
    """A sample part's ``schema`` columns; those it lacks (OPTIONAL_COLUMNS, in parts written before them) as nulls."""
    present = set(pq.read_schema(path).names)
    table = pq.read_table(path, columns=[c for c in schema.names if c in present], filters=filters)
    return _with_missing_columns(table, schema)


def missing_metric_notes(missing: Iterable[str], where: str) -> list[str]:
    """Run notes for the rate metrics a collection found no value of (``where``: "not reported by this job"): a gap
    for most; for the OPTIONAL_METRICS (often filtered out) what the profile then lacks."""
    missing = list(missing)
    gaps = [m for m in missing if m not in OPTIONAL_METRICS]
    optional = [m for m in missing if m in OPTIONAL_METRICS]
    notes = [f"{where} (recorded as null): {', '.join(gaps)}"] if gaps else []
    if optional:
        lacks = (
            "has no buffers_in_per_s"
            if len(optional) == len(OPTIONAL_METRICS)
            else "counts the other alone in buffers_in_per_s"
        )
        notes.append(f"{where}: {', '.join(optional)} (recorded as null: the profile {lacks})")
    return notes


def read_thread_cpu(run: Path, manifest: RunManifest) -> pa.Table:
    """Every per-thread CPU row of a run (empty when it recorded none)."""
    tables = [pq.read_table(run / f) for f in manifest.thread_files if (run / f).is_file()]
    if not tables:
        return THREAD_SCHEMA.empty_table()
    return pa.concat_tables([t.cast(THREAD_SCHEMA) for t in tables])


def _nullable(value: float | None) -> float | None:
    if value is None:
        return None
    f = float(value)
    return None if math.isnan(f) or math.isinf(f) else f


def rows_to_table(rows: Iterable[Mapping[str, object]]) -> pa.Table:
    """Typed rows (dicts with SAMPLE_SCHEMA keys) -> an Arrow table; NaN/inf metrics become null."""
    return _rows_to_table(rows, SAMPLE_SCHEMA, METRIC_COLUMNS)


def _rows_to_table(
    rows: Iterable[Mapping[str, object]], schema: pa.Schema, metrics: Iterable[str], *, negative_is_null: bool = False
) -> pa.Table:
    metrics = frozenset(metrics)
    cols: dict[str, list] = {f.name: [] for f in schema}
    for row in rows:
        for f in schema:
            v = row.get(f.name)
            if f.name in metrics:
                v = _nullable(v)  # type: ignore[arg-type]
                if negative_is_null and v is not None and v < 0:
                    v = None
            cols[f.name].append(v)
    return pa.table(cols, schema=schema)


# Dictionary-encode the keys and statuses (few distinct values), not the metrics: measured values rarely repeat, so
# a metric's dictionary fills its page and falls back to plain encoding anyway, after making every reader build and
# decode through a 131k-entry dictionary per column chunk (a fifth of Spark's CPU on synthetic histories, per JFR).
_DICTIONARY_COLUMNS = [f.name for f in SAMPLE_SCHEMA if f.name not in METRIC_COLUMNS]


class PartWriter:
    """Writes the tables of one run as numbered Parquet part files, each complete on its own: the samples in the run
    directory; with ``subdir``/``schema``, another table beside them (:func:`taskmanager_writer`). ``files`` are
    relative to the run directory. A number is never used twice, also after :func:`placement.collect.rolling.prune`
    deleted older parts (a rolling history keeps writing while its oldest parts go)."""

    def __init__(
        self,
        root: str | Path,
        job_id: str,
        run_id: str,
        *,
        compression: str = "zstd",
        schema: pa.Schema = SAMPLE_SCHEMA,
        subdir: str | None = None,
        use_dictionary: list[str] | bool = _DICTIONARY_COLUMNS,
    ):
        self.dir = run_dir(root, job_id, run_id)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.compression, self.schema, self.subdir, self.use_dictionary = compression, schema, subdir, use_dictionary
        self.files: list[str] = []
        self.rows = 0
        self._written = 0

    def write(self, table: pa.Table, *, row_group_size: int = 1 << 20) -> Path | None:
        if table.num_rows == 0:
            return None
        d = self.dir / self.subdir if self.subdir else self.dir
        d.mkdir(exist_ok=True)
        name = f"part-{self._written:05d}.parquet"
        tmp = d / ("." + name + ".tmp")  # hidden while being written: readers skip '.' files
        pq.write_table(
            table.cast(self.schema),
            tmp,
            compression=self.compression,
            row_group_size=row_group_size,
            use_dictionary=self.use_dictionary,
        )
        os.replace(tmp, d / name)
        self._written += 1
        self.files.append(f"{self.subdir}/{name}" if self.subdir else name)
        self.rows += table.num_rows
        return d / name


def taskmanager_writer(root: str | Path, job_id: str, run_id: str) -> PartWriter:
    """The writer of a run's TaskManager CPU parts: ``_taskmanagers/part-*.parquet`` beside the samples."""
    return PartWriter(root, job_id, run_id, schema=TASKMANAGER_SCHEMA, subdir=TASKMANAGER_DIR, use_dictionary=True)


def latency_writer(root: str | Path, job_id: str, run_id: str) -> PartWriter:
    """The writer of a run's latency-tracking parts: ``_latency/part-*.parquet`` beside the samples."""
    return PartWriter(root, job_id, run_id, schema=LATENCY_SCHEMA, subdir=LATENCY_DIR, use_dictionary=True)


def thread_writer(root: str | Path, job_id: str, run_id: str) -> PartWriter:
    """The writer of a run's per-thread CPU parts: ``_threads/part-*.parquet`` beside the samples."""
    return PartWriter(root, job_id, run_id, schema=THREAD_SCHEMA, subdir=THREAD_DIR, use_dictionary=True)
