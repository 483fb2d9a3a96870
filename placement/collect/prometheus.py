"""A second collector: a metric history read from Prometheus, which scrapes Flink's Prometheus reporter and keeps
weeks of it, so ``placement profile`` needs no live polling of the job.

``placement metrics collect --prometheus URL --job-name NAME --since T [--until T] [--step S] (--rest URL | --graph
FILE) --out DIR`` writes the layout of :mod:`placement.collect.layout` (Parquet samples and a ``_manifest.json`` per
run, through the same :class:`~placement.collect.layout.PartWriter`), so the profile cannot tell the sources apart.

What comes from where:

* **Samples**: range queries (``/api/v1/query_range``) of Flink's task-scope series
  ``flink_taskmanager_job_task_<metric>{job_id, task_id, subtask_index, task_attempt_num, tm_id, …}``, one per metric
  and time chunk (at most :data:`MAX_POINTS` steps each; Prometheus refuses more than 11,000). The step is the sample
  interval: by default the scrape interval Prometheus reports for the targets the series come from (a smaller step
  only repeats samples, a larger one skips some). A metric without series is recorded as null; for the buffers in
  (``numBuffersInLocal/RemotePerSecond``, which older histories and filtering reporters lack) the run's note says what
  the profile then does without.
* **Running and attempt start**: Prometheus keeps no task status. The reporter registers a task's metrics when it is
  deployed and drops them when it ends, and Prometheus marks a vanished series stale at the next scrape; so a subtask
  has an attempt at a step when its ``busyTimeMsPerSecond`` series has a sample there (the ``task_attempt_num``
  label; the newest when two overlap). The attempt started running at the scrape's time minus its accumulated busy,
  idle and back-pressured milliseconds (Flink counts them from that moment); before it, the task was initializing:
  not running, as the REST collector's not-RUNNING samples. The attempt's start (what warm-up is measured from) is
  that moment minus its ``initializationTime``: where REST's deployment start is, give or take the deployment itself.
  Without those metrics (an older Flink) the start is when the attempt's series first appeared, looked for up to
  ``--lookback`` before ``--since`` (unknown, and kept by the profile, if it was there when the lookback began).
  From the first to the last step at which the job has any series, a subtask without one is a not-running sample.
* **TaskManager CPU**: the TaskManager-scope series ``flink_taskmanager_Status_JVM_CPU_Time`` and ``…_Load``
  (the task prefix without its ``job_task_``) of the TaskManagers the job ran on and those the graph source lists,
  on the same grid, into ``_taskmanagers/part-*.parquet`` (as the REST collector records them); beside them what
  other jobs ran there: their ``busyTimeMsPerSecond`` series (``job_id`` another's) summed / 1000 and counted by
  ``tm_id``.
* **Latency tracking** (when the job has ``metrics.latency.interval`` > 0): the reporter's summaries
  ``flink_taskmanager_job_task_latency_source_id_operator_id_operator_subtask_index_latency{task_id, subtask_index,
  source_id, operator_id, operator_subtask_index, quantile}`` (with ``metrics.latency.granularity: subtask`` the name
  and labels gain ``source_subtask_index``; measured on Flink 2.3: quantiles 0.5 … 0.999, no max or mean), on the same
  grid, into ``_latency/part-*.parquet`` as the REST collector records them (``p50_ms``, ``p95_ms``, ``p99_ms``).
* **Job graph, ship strategies, state sizes, TaskManagers**: Prometheus does not have them. They come from Flink's
  REST API (``--rest URL``, while Flink still knows the job id — finished jobs stay in its history for a while) or
  from ``--graph FILE``: an earlier REST collection's ``_manifest.json`` (or a run or metrics directory holding runs of
  the job), or a saved ``GET /jobs/<id>`` answer (it embeds the plan; no state sizes then). The graph's vertex ids
  must be the series' ``task_id`` labels. Where subtasks ran comes from the ``tm_id`` label (the TaskManager's
  resource id); the ``host`` label has its dots replaced by the reporter, so hosts come from the graph source's
  TaskManager list when it has one.

One run per job id in the window (every resubmission of a job is a new id), named ``prom-<since>-<until>``. It is
written into a hidden staging directory and renamed into place: a failure leaves nothing behind, and collecting the
same window again replaces the run whole.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import requests

from placement.collect import shaping
from placement.collect.layout import (
    COTENANT_BUSY,
    COTENANT_SUBTASKS,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    RATE_METRICS,
    SAMPLE_SCHEMA,
    TASKMANAGER_METRICS,
    TASKMANAGER_SCHEMA,
    CheckpointConfig,
    EdgeInfo,
    PartWriter,
    RunManifest,
    RunTaskManager,
    RunVertex,
    SubtaskLocation,
    find_manifests,
    latency_writer,
    missing_metric_notes,
    read_manifest,
    run_dir,
    taskmanager_writer,
    write_manifest,
)
from placement.errors import BadInput, PlacementError
from placement.flink.rest import _innermost_reason

DEFAULT_PREFIX = "flink_taskmanager_job_task_"  # the reporter's name for Flink's task scope
ANCHOR = "busyTimeMsPerSecond"  # every task has it; its series' presence says a subtask attempt is running
# When an attempt started running: Flink counts a task's busy, idle and back-pressured milliseconds from the moment it
# starts running (TaskIOMetricGroup.markTaskStart), so their sum subtracted from the scrape's time is that moment —
# to the millisecond, whenever the attempt was scraped, however long before the window it started. Its
# initializationTime (restoring state, opening operators) went before: the attempt's start, as REST gives it, is
# earlier by that (and by its deployment, well under a second).
_ACCUMULATED = ("accumulateBusyTimeMs", "accumulateIdleTimeMs", "accumulateBackPressuredTimeMs")
_INITIALIZATION = "initializationTime"
MAX_POINTS = 2_000  # steps per range query: bounded answers and memory (Prometheus' own limit is 11,000)
DEFAULT_LOOKBACK_S = 600.0
DEFAULT_STEP_S = 15.0  # Prometheus' default scrape interval, when the targets cannot be asked


@dataclass
class PromOptions:
    url: str
    out_dir: Path
    since_s: float
    until_s: float
    job_id: str | None = None
    job_name: str | None = None
    step_s: float | None = None  # None: the targets' scrape interval
    graph: Path | None = None
    rest_url: str | None = None
    lookback_s: float = DEFAULT_LOOKBACK_S
    prefix: str = DEFAULT_PREFIX
    timeout_s: float = 30.0
    retries: int = 3
    backoff_s: float = 0.5


@dataclass
class PromProgress:
    job_id: str
    chunks_done: int
    chunks: int
    rows: int


# ---- times ---------------------------------------------------------------------------------------------------------

_UNITS_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_duration(text: str, *, field: str) -> float:
    """``"15s"``, ``"1m30s"``, ``"500ms"``, ``"2h"`` or plain seconds (``"2.5"``) -> seconds (Prometheus' units)."""
    t = text.strip().lower()
    with contextlib.suppress(ValueError):
        return float(t)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)", t)
    if not parts or "".join(n + u for n, u in parts) != t:
        raise BadInput(f"{text!r} is not a duration (e.g. 15s, 1m30s, 2h, or seconds)", field=field)
    return sum(float(n) * _UNITS_S[u] for n, u in parts)


def parse_time(text: str, *, now: float, field: str) -> float:
    """``now``, ``now-2h``, Unix seconds, or ISO 8601 (``2025-06-01T12:00:00Z``; no zone = UTC) -> Unix seconds."""
    t = text.strip()
    if t.lower() == "now":
        return now
    m = re.fullmatch(r"now\s*-\s*(\S+)", t, flags=re.IGNORECASE)
    if m:
        return now - parse_duration(m.group(1), field=field)
    with contextlib.suppress(ValueError):
        return float(t)
    try:
        when = datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadInput(f"{text!r} is not a time (now, now-2h, Unix seconds or ISO 8601)", field=field) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def label_value(text: str) -> str:
    """A name as Flink's Prometheus reporter writes it into a label (every character but ``[A-Za-z0-9:_]`` -> ``_``)."""
    return re.sub(r"[^A-Za-z0-9:_]", "_", text)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---- the HTTP API --------------------------------------------------------------------------------------------------


class PrometheusApi:
    """Prometheus' HTTP API (``/api/v1``): every answer's ``data``, or a one-line error."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, retries: int = 3, backoff_s: float = 0.5):
        from placement.collect.collector import retrying_session

        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.session = retrying_session(retries, backoff_s)

    def get(self, path: str, params: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> Any:
        url = f"{self.url}/api/v1/{path}"
        try:
            answer = self.session.get(url, params=params, timeout=self.timeout_s)
        except requests.RequestException as exc:
            raise PlacementError(
                f"Prometheus {url}: cannot reach it ({type(exc).__name__}: {_innermost_reason(exc)})"
            ) from None
        try:
            body = answer.json()
        except ValueError:
            raise PlacementError(
                f"Prometheus {url}: HTTP {answer.status_code}, not an API answer ({answer.text.strip()[:120]!r})"
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error", answer.reason) if isinstance(body, dict) else answer.reason
            raise PlacementError(f"Prometheus {url}: {error}")
        return body.get("data")

    def series(self, selector: str, start: float, end: float) -> list[dict[str, str]]:
        return list(self.get("series", [("match[]", selector), ("start", f"{start:.3f}"), ("end", f"{end:.3f}")]) or [])

    def query_range(self, query: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        data = self.get(
            "query_range", {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        )
        return list((data or {}).get("result") or [])

    def scrape_intervals(self) -> dict[tuple[str, str], float]:
        """(scrape job, instance) -> scrape interval in seconds, of the active targets."""
        data = self.get("targets", {"state": "active"}) or {}
        out: dict[tuple[str, str], float] = {}
        for t in data.get("activeTargets") or []:
            labels, interval = t.get("labels") or {}, t.get("scrapeInterval")
            if interval:
                with contextlib.suppress(BadInput):
                    out[(labels.get("job", ""), labels.get("instance", ""))] = parse_duration(
                        str(interval), field="scrapeInterval"
                    )
        return out


# ---- the job graph -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobGraph:
    """What Prometheus lacks, from REST or a file: names, parallelism, edges, state sizes, TaskManagers."""

    job_name: str
    vertices: list[RunVertex]
    edges: list[EdgeInfo]
    source: str
    taskmanagers: list[RunTaskManager] = field(default_factory=list)
    checkpoints: CheckpointConfig | None = None
    buffer_timeout_ms: float | None = None
    flink_version: str | None = None


def graph_from_rest(rest_url: str, job_id: str, o: PromOptions) -> JobGraph:
    """The job's graph, latest checkpoint sizes and TaskManagers from Flink's REST API, as the REST collector gets
    them."""
    from placement.collect.collector import CollectOptions, Collector

    rest = Collector(
        CollectOptions(
            rest_url=rest_url,
            out_dir=o.out_dir,
            job_id=job_id,
            timeout_s=o.timeout_s,
            retries=o.retries,
            backoff_s=o.backoff_s,
        )
    )
    job = rest.resolve_job()
    vertices, edges = shaping.job_graph(job, rest.rest.get(f"/jobs/{job_id}/plan"))
    sizes = rest.checkpoint_sizes(job_id)
    return JobGraph(
        job_name=str(job.get("name", job_id)),
        vertices=[rest._with_state(v, sizes) for v in vertices],
        edges=edges,
        source=rest_url,
        taskmanagers=rest.taskmanagers(),
        checkpoints=rest.checkpoint_config(job_id),
        buffer_timeout_ms=rest.buffer_timeout(job_id),
        flink_version=rest.flink_version(),
    )


def graph_from_file(path: Path, job_id: str, job_name: str | None) -> JobGraph:
    """A run manifest (a file, or a run or metrics directory: the newest run of this job id, else of this name) or a
    saved ``GET /jobs/<id>`` answer."""
    src = str(path)
    if path.is_dir():
        found = (
            [(d, m) for d, m in find_manifests(path)]
            if not (path / MANIFEST_NAME).is_file()
            else [(path, read_manifest(path / MANIFEST_NAME))]
        )
        chosen = [m for _, m in found if m.job_id == job_id] or [
            m for _, m in found if job_name and job_name in (m.job_name, label_value(m.job_name))
        ]
        if not chosen:
            raise BadInput(
                f"holds no run of job {job_id}" + (f" or of a job named {job_name!r}" if job_name else ""),
                source=src,
                field="--graph",
            )
        return _graph_of_manifest(chosen[-1], src)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read: {exc.strerror or exc}", source=src, field="--graph") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadInput(f"not JSON ({exc})", source=src, field="--graph") from None
    if isinstance(data, dict) and data.get("format") == MANIFEST_FORMAT:
        return _graph_of_manifest(read_manifest(path), src)
    if isinstance(data, dict) and isinstance(data.get("vertices"), list) and isinstance(data.get("plan"), dict):
        vertices, edges = shaping.job_graph(data, data["plan"])
        return JobGraph(
            job_name=str(data.get("name") or job_name or job_id), vertices=vertices, edges=edges, source=src
        )
    raise BadInput(
        f"neither a run manifest ({MANIFEST_NAME}) nor a saved Flink GET /jobs/<id> answer", source=src, field="--graph"
    )


def _graph_of_manifest(m: RunManifest, src: str) -> JobGraph:
    return JobGraph(
        job_name=m.job_name,
        vertices=list(m.vertices),
        edges=list(m.edges),
        source=src,
        taskmanagers=list(m.taskmanagers),
        checkpoints=m.checkpoints,
        buffer_timeout_ms=m.buffer_timeout_ms,
        flink_version=m.flink_version,
    )


# ---- samples -------------------------------------------------------------------------------------------------------


@dataclass
class _Subtask:
    """What is known of one subtask so far: per attempt, when it was first seen and on which TaskManager."""

    first_seen: dict[int, float] = field(default_factory=dict)  # seconds
    running_ms: dict[int, float] = field(default_factory=dict)  # started running (see _ACCUMULATED), epoch ms
    initializing_ms: dict[int, float] = field(default_factory=dict)  # how long it initialized before that
    taskmanager: dict[int, str | None] = field(default_factory=dict)
    last_attempt: int | None = None


def _labels_key(labels: Mapping[str, str]) -> tuple[str, int, int] | None:
    try:
        return labels["task_id"], int(labels["subtask_index"]), int(labels.get("task_attempt_num", 0))
    except (KeyError, ValueError):
        return None


def _on_grid(values: Iterable[Sequence[Any]], start: float, step: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A series' ``[[t, "v"], …]`` -> (value per grid step, NaN elsewhere; sample present per step)."""
    out = np.full(n, np.nan)
    present = np.zeros(n, dtype=bool)
    for t, v in values:
        i = round((float(t) - start) / step)
        if 0 <= i < n:
            present[i] = True
            f = shaping.parse_metric_value(v)
            out[i] = np.nan if f is None else f
    return out, present


class _JobReader:
    """Reads one job id's series chunk by chunk and turns them into sample tables of the layout."""

    def __init__(self, api: PrometheusApi, o: PromOptions, job_id: str, graph: JobGraph, step: float):
        self.api, self.o, self.job_id, self.graph, self.step = api, o, job_id, graph, step
        self.start = o.since_s - o.lookback_s
        self.known: dict[tuple[str, int], _Subtask] = {
            (v.id, i): _Subtask() for v in graph.vertices for i in range(v.parallelism)
        }
        self.metrics_seen: set[str] = set()

    def selector(self, metric: str) -> str:
        return f"{self.o.prefix}{metric}{{job_id={_quoted(self.job_id)}}}"

    def running_query(self) -> str:
        """Per attempt series: when it started running, in epoch ms (constant while the attempt runs)."""
        busy, idle, pressed = (self.selector(m) for m in _ACCUMULATED)
        return f"timestamp({busy}) * 1000 - ({busy} + {idle} + {pressed})"

    def learn_starts(self, c0: float, c1: float, n: int) -> None:
        """Each attempt's running start and initialization time, from the last sample of the chunk that has them
        (settled: while a task still initializes they are not yet its own)."""
        for query, into in ((self.running_query(), "running_ms"), (self.selector(_INITIALIZATION), "initializing_ms")):
            for s in self.api.query_range(query, c0, c1, self.step):
                key = _labels_key(s.get("metric") or {})
                if key is None or (key[0], key[1]) not in self.known:
                    continue
                values, _ = _on_grid(s.get("values") or [], c0, self.step, n)
                finite = values[np.isfinite(values) & (values > 0)]
                if len(finite):
                    getattr(self.known[(key[0], key[1])], into).setdefault(key[2], float(finite[-1]))

    def grid(self) -> np.ndarray:
        return self.start + self.step * np.arange(math.floor((self.o.until_s - self.start) / self.step) + 1)

    def alive_span(self) -> tuple[float, float] | None:
        """First and last step at which the job has any series (its life inside the window, as Prometheus saw it)."""
        times = []
        for c0, c1 in self.chunks():
            for s in self.api.query_range(f"count({self.selector(ANCHOR)})", c0, c1, self.step):
                times += [float(t) for t, _ in s.get("values") or []]
        return (min(times), max(times)) if times else None

    def chunks(self) -> list[tuple[float, float]]:
        g = self.grid()
        return [(float(g[i]), float(g[min(i + MAX_POINTS, len(g)) - 1])) for i in range(0, len(g), MAX_POINTS)]

    def check_vertices(self, series: list[dict[str, str]]) -> None:
        """Every series must be a subtask of the graph: another job's graph (or another parallelism) is an error."""
        parallelism = {v.id: v.parallelism for v in self.graph.vertices}
        foreign = sorted({str(s.get("task_id")) for s in series if s.get("task_id") not in parallelism})
        if foreign:
            raise BadInput(
                f"job {self.job_id} has vertices the graph lacks ({', '.join(foreign[:3])}"
                f"{', …' if len(foreign) > 3 else ''}): is it another job's graph?",
                source=self.graph.source,
                field="--graph",
            )
        for s in series:
            key = _labels_key(s)
            if key is not None and key[1] >= parallelism[key[0]]:
                name = next(v.name for v in self.graph.vertices if v.id == key[0])
                raise BadInput(
                    f"job {self.job_id} ran subtask {key[1]} of {name!r}, whose parallelism the graph gives "
                    f"as {parallelism[key[0]]}",
                    source=self.graph.source,
                    field="--graph",
                )

    def table(self, c0: float, c1: float, alive: tuple[float, float]) -> pa.Table:
        n = round((c1 - c0) / self.step) + 1
        times = c0 + self.step * np.arange(n)
        per_metric: dict[str, dict[tuple[str, int, int], np.ndarray]] = {}
        presence: dict[tuple[str, int, int], np.ndarray] = {}
        for metric, column in RATE_METRICS.items():
            per_metric[column] = {}
            for s in self.api.query_range(self.selector(metric), c0, c1, self.step):
                key = _labels_key(s.get("metric") or {})
                if key is None or (key[0], key[1]) not in self.known:
                    continue
                self.metrics_seen.add(metric)
                values, present = _on_grid(s.get("values") or [], c0, self.step, n)
                per_metric[column][key] = values
                if metric == ANCHOR:
                    presence[key] = present
                    sub = self.known[(key[0], key[1])]
                    if present.any():
                        sub.first_seen.setdefault(key[2], float(times[present.argmax()]))
                        sub.taskmanager[key[2]] = (s.get("metric") or {}).get("tm_id")
        self.learn_starts(c0, c1, n)
        keep = (times >= self.o.since_s - 1e-6) & (times >= alive[0] - 1e-6) & (times <= alive[1] + 1e-6)
        blocks = [self._subtask_block(vid, i, times, keep, per_metric, presence) for (vid, i) in self.known]
        columns = (
            {name: np.concatenate([b[name] for b in blocks]) if blocks else np.array([]) for name in blocks[0]}
            if blocks
            else {}
        )
        return _as_table(columns)

    def _subtask_block(
        self,
        vid: str,
        index: int,
        times: np.ndarray,
        keep: np.ndarray,
        per_metric: Mapping[str, Mapping[tuple[str, int, int], np.ndarray]],
        presence: Mapping[tuple[str, int, int], np.ndarray],
    ) -> dict[str, np.ndarray]:
        sub = self.known[(vid, index)]
        attempts = sorted(a for (v, i, a) in presence if (v, i) == (vid, index))
        chosen = np.full(len(times), -1)
        for a in attempts:  # the newest attempt wins where two overlap (an old one going stale)
            chosen[presence[(vid, index, a)]] = a
        # a step without a series is a not-running sample of the attempt the subtask last had (carried across chunks)
        seen_at = np.maximum.accumulate(np.where(chosen >= 0, np.arange(len(times)), -1))
        before = -1 if sub.last_attempt is None else sub.last_attempt
        carried = np.where(seen_at >= 0, chosen[np.maximum(seen_at, 0)], before)
        if len(carried) and carried[-1] >= 0:
            sub.last_attempt = int(carried[-1])
        n = int(keep.sum())
        starts, running_from = np.full(len(times), np.nan), np.full(len(times), np.nan)
        for a in attempts:
            starts[chosen == a] = self._attempt_start(sub, a)
            running_from[chosen == a] = sub.running_ms.get(a, np.nan)
        # a series there before its attempt started running is a task still initializing: the REST collector's
        # not-RUNNING samples
        running = ((chosen >= 0) & ~(times * 1000.0 < running_from))[keep]
        starts = starts[keep]
        block: dict[str, np.ndarray] = {
            "ts_ms": np.round(times[keep] * 1000).astype(np.int64),
            "vertex_id": np.full(n, vid, dtype=object),
            "subtask": np.full(n, index, dtype=np.int32),
            "attempt": np.where(carried[keep] >= 0, carried[keep], np.nan),
            "attempt_start_ms": np.round(starts),
            "running": running,
        }
        for column in RATE_METRICS.values():
            values = np.full(len(times), np.nan)
            for a in attempts:
                series = per_metric[column].get((vid, index, a))
                if series is not None:
                    values = np.where(chosen == a, series, values)
            block[column] = values[keep]
        return block

    def _attempt_start(self, sub: _Subtask, attempt: int) -> float:
        if attempt in sub.running_ms:
            return sub.running_ms[attempt] - sub.initializing_ms.get(attempt, 0.0)
        seen = sub.first_seen.get(attempt)  # no accumulated times (an older Flink): when its series appeared
        if seen is None or seen <= self.start + self.step / 2:
            return np.nan  # there before the lookback began: its start is unknown
        return seen * 1000.0

    def taskmanager_prefix(self) -> str:
        """``flink_taskmanager_`` for the default task prefix: TaskManager-scope series lack the ``job_task_``."""
        p = self.o.prefix
        return p[: -len("job_task_")] if p.endswith("job_task_") else p

    def taskmanager_cpu(self, start: float, end: float) -> tuple[pa.Table, set[str]]:
        """The JVM process CPU series of the job's TaskManagers from ``start`` to ``end`` on the step grid (a row per
        TaskManager and step with a sample); and the metric names found."""
        wanted = {tm.id for tm in self.graph.taskmanagers} | {
            tm for sub in self.known.values() for tm in sub.taskmanager.values() if tm
        }
        grid0 = self.start + self.step * math.ceil((start - self.start) / self.step - 1e-9)
        cells: dict[tuple[int, str | None], dict[str, float]] = {}
        seen: set[str] = set()
        n_all = math.floor((end - grid0) / self.step + 1e-9) + 1
        for i0 in range(0, max(0, n_all), MAX_POINTS):
            c0 = grid0 + i0 * self.step
            n = min(MAX_POINTS, n_all - i0)
            c1 = c0 + (n - 1) * self.step
            queries = [
                (self.taskmanager_prefix() + metric.replace(".", "_"), column, metric)
                for metric, column in TASKMANAGER_METRICS.items()
            ]
            for query, column, metric in queries:
                for s in self.api.query_range(query, c0, c1, self.step):
                    tm = (s.get("metric") or {}).get("tm_id")
                    if tm not in wanted:
                        continue
                    values, present = _on_grid(s.get("values") or [], c0, self.step, n)
                    for k in np.flatnonzero(present):
                        cells.setdefault((round((c0 + k * self.step) * 1000), tm), {})[column] = float(values[k])
                        seen.add(metric)
            # the other jobs' subtasks on each of those TaskManagers at each step (layout.COTENANT_BUSY): a step where
            # none has a series is 0 of them, not unknown
            for query, column in self.cotenant_queries():
                for s in self.api.query_range(query, c0, c1, self.step):
                    tm = (s.get("metric") or {}).get("tm_id")
                    values, present = _on_grid(s.get("values") or [], c0, self.step, n)
                    for k in np.flatnonzero(present):
                        cell = cells.get((round((c0 + k * self.step) * 1000), tm))
                        if cell is not None:
                            cell[column] = float(values[k])
        keys = sorted(cells)
        columns = {
            "ts_ms": pa.array([k[0] for k in keys], pa.int64()),
            "taskmanager_id": pa.array([k[1] for k in keys], pa.string()),
        }
        for column in TASKMANAGER_METRICS.values():
            x = np.array([cells[k].get(column, np.nan) for k in keys], dtype=np.float64)
            x = np.where(np.isfinite(x) & (x >= 0), x, np.nan)  # a negative load is Flink's "unknown"
            columns[column] = pa.array(x, pa.float64(), from_pandas=True)
        columns[COTENANT_BUSY] = pa.array([cells[k].get(COTENANT_BUSY, 0.0) for k in keys], pa.float64())
        columns[COTENANT_SUBTASKS] = pa.array([int(cells[k].get(COTENANT_SUBTASKS, 0)) for k in keys], pa.int32())
        return pa.table(columns, schema=TASKMANAGER_SCHEMA), seen

    def cotenant_queries(self) -> list[tuple[str, str]]:
        """(PromQL, column): the other jobs' busy time summed by TaskManager in cores (a NaN reading left out, as
        REST's null), and how many of their subtasks each runs — the REST collector's figures."""
        others = f"{self.o.prefix}{ANCHOR}{{job_id!={_quoted(self.job_id)}}}"
        return [
            (f"sum by (tm_id) ({others} == {others}) / 1000", COTENANT_BUSY),
            (f"count by (tm_id) ({others})", COTENANT_SUBTASKS),
        ]

    LATENCY_QUANTILES: ClassVar[dict[str, str]] = {"0.5": "p50_ms", "0.95": "p95_ms", "0.99": "p99_ms"}

    def latency(self, start: float, end: float) -> pa.Table:
        """The job's latency-tracking summaries from ``start`` to ``end`` on the step grid: a row per reporting
        subtask, source (subtask), operator and step with a sample (LATENCY_SCHEMA; mean and max null: a
        Prometheus summary has neither)."""
        from placement.collect.layout import LATENCY_SCHEMA, latency_rows_to_table

        query = (
            f'{{__name__=~"{self.o.prefix}latency_source_id_.*latency",job_id={_quoted(self.job_id)},'
            f'quantile=~"{"|".join(q.replace(".", "[.]") for q in self.LATENCY_QUANTILES)}"}}'
        )
        grid0 = self.start + self.step * math.ceil((start - self.start) / self.step - 1e-9)
        cells: dict[tuple, dict[str, Any]] = {}
        n_all = math.floor((end - grid0) / self.step + 1e-9) + 1
        for i0 in range(0, max(0, n_all), MAX_POINTS):
            c0 = grid0 + i0 * self.step
            n = min(MAX_POINTS, n_all - i0)
            c1 = c0 + (n - 1) * self.step
            for series in self.api.query_range(query, c0, c1, self.step):
                labels = series.get("metric") or {}
                column = self.LATENCY_QUANTILES.get(labels.get("quantile", ""))
                try:
                    subtask = int(labels["subtask_index"])
                    vid = labels["task_id"]
                except (KeyError, ValueError):
                    continue
                if column is None or (vid, subtask) not in self.known:
                    continue
                source_subtask = labels.get("source_subtask_index")
                values, present = _on_grid(series.get("values") or [], c0, self.step, n)
                for k in np.flatnonzero(present):
                    key = (
                        round((c0 + k * self.step) * 1000),
                        vid,
                        subtask,
                        labels.get("source_id"),
                        int(source_subtask) if source_subtask is not None else None,
                        labels.get("operator_id"),
                    )
                    row = cells.setdefault(
                        key,
                        dict(zip(("ts_ms", "vertex_id", "subtask", "source_id", "source_subtask", "operator_id"), key)),
                    )
                    row[column] = float(values[k])
        if not cells:
            return LATENCY_SCHEMA.empty_table()
        return latency_rows_to_table(cells[k] for k in sorted(cells, key=lambda k: tuple(str(x) for x in k)))

    def locations(self) -> list[SubtaskLocation]:
        hosts = {tm.id: tm.host for tm in self.graph.taskmanagers}
        out = []
        for (vid, i), sub in sorted(self.known.items()):
            if sub.first_seen:
                attempt = max(sub.first_seen)
                tm = sub.taskmanager.get(attempt)
                out.append(
                    SubtaskLocation(
                        vertex_id=vid, subtask=i, taskmanager_id=tm, host=hosts.get(tm or ""), attempt=attempt
                    )
                )
        return out


def _as_table(columns: Mapping[str, np.ndarray]) -> pa.Table:
    """Columns -> a table of SAMPLE_SCHEMA: NaN metrics, attempts and starts become null (the layout's rule)."""
    if not columns:
        return SAMPLE_SCHEMA.empty_table()
    arrays = []
    for f in SAMPLE_SCHEMA:
        arrays.append(pa.array(columns[f.name], type=f.type, from_pandas=True))  # from_pandas: NaN -> null
    return pa.Table.from_arrays(arrays, schema=SAMPLE_SCHEMA)


# ---- the whole collection ------------------------------------------------------------------------------------------


def _run_id(o: PromOptions) -> str:
    fmt = "%Y%m%dT%H%M%SZ"
    a, b = (datetime.fromtimestamp(t, timezone.utc).strftime(fmt) for t in (o.since_s, o.until_s))
    return f"prom-{a}-{b}"


def _check(o: PromOptions) -> None:
    if bool(o.job_id) == bool(o.job_name):
        raise BadInput("give exactly one of --job ID or --job-name NAME", field="--job")
    if o.until_s <= o.since_s:
        raise BadInput("must be after --since", field="--until")
    if o.step_s is not None and o.step_s <= 0:
        raise BadInput("must be > 0", field="--step")
    if o.lookback_s < 0:
        raise BadInput("must be >= 0", field="--lookback")
    if o.graph is None and o.rest_url is None:
        raise BadInput(
            "Prometheus has no job graph: give --rest URL (Flink still knows the job) or --graph FILE (an "
            f"earlier run's {MANIFEST_NAME}, or a saved GET /jobs/<id> answer)",
            field="--graph",
        )
    if o.graph is not None and not o.graph.exists():
        raise BadInput("not found", source=str(o.graph), field="--graph")


def find_jobs(api: PrometheusApi, o: PromOptions) -> dict[str, list[dict[str, str]]]:
    """Job id -> its anchor series in the window (with the lookback), by id or by name (as written or as the reporter
    writes it into the label)."""
    start = o.since_s - o.lookback_s
    if o.job_id:
        series = api.series(f"{o.prefix}{ANCHOR}{{job_id={_quoted(o.job_id)}}}", start, o.until_s)
    else:
        assert o.job_name is not None
        series = []
        for name in dict.fromkeys([o.job_name, label_value(o.job_name)]):
            series += api.series(f"{o.prefix}{ANCHOR}{{job_name={_quoted(name)}}}", start, o.until_s)
    jobs: dict[str, list[dict[str, str]]] = {}
    for s in series:
        jobs.setdefault(s.get("job_id", "?"), []).append(s)
    if not jobs:
        seen = sorted({s.get("job_name", "?") for s in api.series(f"{o.prefix}{ANCHOR}", start, o.until_s)})
        what = f"job {o.job_id}" if o.job_id else f"a job named {o.job_name!r}"
        window = f"{_iso(o.since_s)} .. {_iso(o.until_s)}"
        raise BadInput(
            f"no {o.prefix}{ANCHOR} series of {what} between {window} (jobs there: {', '.join(seen) or 'none'})",
            source=o.url,
            field="--job" if o.job_id else "--job-name",
        )
    return jobs


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def scrape_step(api: PrometheusApi, series: Iterable[Mapping[str, str]]) -> float | None:
    """The coarsest scrape interval of the targets the series come from; None when Prometheus does not say."""
    intervals = api.scrape_intervals()
    found = [intervals[k] for k in {(s.get("job", ""), s.get("instance", "")) for s in series} if k in intervals]
    return max(found) if found else None


def collect_prometheus(o: PromOptions, on_progress: Callable[[PromProgress], None] | None = None) -> list[RunManifest]:
    """Every run the window holds of the job (one per job id), written under ``o.out_dir``; their manifests."""
    _check(o)
    api = PrometheusApi(o.url, timeout_s=o.timeout_s, retries=o.retries, backoff_s=o.backoff_s)
    jobs = find_jobs(api, o)
    graphs = {
        jid: graph_from_rest(o.rest_url, jid, o) if o.rest_url else graph_from_file(o.graph, jid, o.job_name)  # type: ignore[arg-type]
        for jid in jobs
    }
    notes: list[str] = []
    step = o.step_s
    if step is None:
        step = scrape_step(api, [s for series in jobs.values() for s in series])
        if step is None:
            step = DEFAULT_STEP_S
            notes.append(f"Prometheus did not say its scrape interval for these series: step {step:g} s")
    created = not Path(o.out_dir).exists()
    staging = Path(o.out_dir) / f".prometheus-{os.getpid()}.staging"  # hidden: no reader lists it
    manifests = []
    try:
        for jid, series in jobs.items():
            reader = _JobReader(api, o, jid, graphs[jid], step)
            reader.check_vertices(series)
            manifest = _read_job(reader, staging, notes, on_progress)
            if manifest is not None:
                manifests.append(manifest)
        if not manifests:
            raise BadInput(
                f"the job has no samples between {_iso(o.since_s)} and {_iso(o.until_s)}", source=o.url, field="--since"
            )
        for m in manifests:  # all or nothing: every run was read before any is put in place
            target = run_dir(o.out_dir, m.job_id, m.run_id)
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(run_dir(staging, m.job_id, m.run_id), target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not manifests:
            with contextlib.suppress(OSError):
                Path(o.out_dir).rmdir()  # a failed first collection leaves no empty directory
    return manifests


def _read_job(
    reader: _JobReader, staging: Path, notes: list[str], on_progress: Callable[[PromProgress], None] | None
) -> RunManifest | None:
    o, graph, jid = reader.o, reader.graph, reader.job_id
    alive = reader.alive_span()
    if alive is None or alive[1] < o.since_s:
        return None
    run_id = _run_id(o)
    writer = PartWriter(staging, jid, run_id)
    chunks = reader.chunks()
    for done, (c0, c1) in enumerate(chunks, 1):
        if c1 < alive[0] - reader.step:
            continue  # before the job's first series: nothing to learn
        writer.write(reader.table(c0, c1, alive))
        if on_progress:
            on_progress(PromProgress(jid, done, len(chunks), writer.rows))
    if writer.rows == 0:
        return None
    run_notes = [
        f"collected from Prometheus {o.url} ({o.prefix}<metric>, step {reader.step:g} s); graph from {graph.source}",
        *notes,
        *missing_metric_notes(
            [m for m in RATE_METRICS if m not in reader.metrics_seen], "not in Prometheus for this job"
        ),
    ]
    tm_table, tm_seen = reader.taskmanager_cpu(max(o.since_s, alive[0]), min(o.until_s, alive[1]))
    tm_writer = taskmanager_writer(staging, jid, run_id)
    if tm_writer.write(tm_table) is None:
        run_notes.append("no TaskManager CPU series (flink_taskmanager_Status_JVM_CPU_Time) for its TaskManagers")
    lat_writer = latency_writer(staging, jid, run_id)
    lat_writer.write(reader.latency(max(o.since_s, alive[0]), min(o.until_s, alive[1])))
    manifest = RunManifest(
        job_id=jid,
        job_name=graph.job_name,
        run_id=run_id,
        origin="collected",
        rest_url=o.rest_url,
        started_ms=int(max(o.since_s, alive[0]) * 1000),
        ended_ms=int(min(o.until_s, alive[1]) * 1000),
        interval_s=reader.step,
        requested_duration_s=o.until_s - o.since_s,
        stopped="completed",
        samples=writer.rows,
        files=list(writer.files),
        metrics=[m for m in RATE_METRICS if m in reader.metrics_seen],
        vertices=graph.vertices,
        edges=graph.edges,
        locations=reader.locations(),
        taskmanagers=graph.taskmanagers,
        checkpoints=graph.checkpoints,
        buffer_timeout_ms=graph.buffer_timeout_ms,
        notes=run_notes,
        taskmanager_metrics=[m for m in TASKMANAGER_METRICS if m in tm_seen],
        taskmanager_files=tm_writer.files,
        flink_version=graph.flink_version,
        latency_files=lat_writer.files,
    )
    write_manifest(staging, manifest)
    return manifest
