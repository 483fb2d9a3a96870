"""Pure shaping of Flink REST answers (JSON, as parsed) into typed values and sample rows. No I/O here.

Flink 2.3 shapes relied on (see the shared notes):

* ``GET /jobs/<jid>`` -> ``vertices[]`` with plain ``id``, ``name``, ``parallelism``, ``maxParallelism``.
* ``GET /jobs/<jid>/plan`` -> ``{"plan": {"nodes": [{"id", "parallelism", "description", "inputs": [{"id",
  "ship_strategy"}]}]}}`` (older versions without the ``plan`` wrapper are accepted too).
* ``GET /jobs/<jid>/vertices/<vid>`` -> ``subtasks[]`` with ``subtask``, ``status``, ``attempt``, ``start-time``,
  ``endpoint`` (``host:port``) and ``taskmanager-id``.
* ``GET /jobs/<jid>/vertices/<vid>/metrics?get=0.busyTimeMsPerSecond,...`` -> ``[{"id": "0.busyTimeMsPerSecond",
  "value": "12.5"}]``; values are strings and may be ``"NaN"``; a metric not (yet) known is simply absent.
* ``GET /jobs/<jid>/checkpoints`` -> ``latest.completed.id``; ``GET /jobs/<jid>/checkpoints/details/<id>`` ->
  ``tasks{<vid>: {"state_size", "checkpointed_size"}}`` (``checkpointed_size``: what that checkpoint wrote, the delta
  when incremental).
* ``GET /jobs/<jid>/checkpoints/config`` -> ``{"interval", "min_pause", "mode", "state_backend", "checkpoint_storage",
  ...}`` in ms; 404 "Checkpointing is not enabled" when it is off (a disabled interval may also read as ``Long.MAX``).
* ``GET /jobs/<jid>/jobmanager/config`` -> ``[{"key", "value"}]``: the configuration the job runs with (the cluster's
  plus what was submitted with it); ``execution.buffer-timeout.interval`` when set (``"100 ms"``, ``"100"``...).
* ``GET /taskmanagers`` -> ``taskmanagers[]`` with ``id``, ``path`` (``pekko.tcp://flink@host:port/...``),
  ``slotsNumber``, ``totalResource{cpuCores}``, ``hardware{cpuCores, physicalMemory, managedMemory}``,
  ``memoryConfiguration{taskHeap}``.

Real answers of a Flink 2.3 cluster running the lab IoT job are kept in ``tests/collect/data/flink-2.3/``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from placement.collect.layout import (
    COTENANT_BUSY,
    COTENANT_SUBTASKS,
    RATE_METRICS,
    CheckpointConfig,
    EdgeInfo,
    RunTaskManager,
    RunVertex,
    SubtaskLocation,
)
from placement.units import flink_duration_ms

MAX_QUERY_CHARS = 3000  # Netty rejects request lines over 4096 bytes; split metric queries below that


@dataclass(frozen=True)
class SubtaskState:
    index: int
    status: str
    attempt: int | None
    start_ms: int | None
    taskmanager_id: str | None
    host: str | None

    @property
    def running(self) -> bool:
        return self.status == "RUNNING"


def _int(x: object) -> int | None:
    try:
        v = int(x)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return v


def parse_metric_value(value: object) -> float | None:
    """Flink's metric value (a string, sometimes ``"NaN"``) -> float, or None when it is not a finite number."""
    if value is None:
        return None
    try:
        f = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def host_of_endpoint(endpoint: str | None) -> str | None:
    """``"10.0.0.5:41231"`` -> ``"10.0.0.5"``; ``"[::1]:6121"`` -> ``"::1"``."""
    if not endpoint:
        return None
    m = re.match(r"^\[([^\]]+)\](?::\d+)?$", endpoint)
    if m:
        return m.group(1)
    return endpoint.rsplit(":", 1)[0] if endpoint.count(":") == 1 else endpoint


def host_of_pekko_path(path: str | None) -> str | None:
    """``"pekko.tcp://flink@127.0.0.1:35619/user/rpc/taskmanager_0"`` -> ``"127.0.0.1"``."""
    if not path:
        return None
    m = re.search(r"@([^/]+?)(?::\d+)?/", path + "/")
    return m.group(1).strip("[]") if m else None


def clean_vertex_name(description: str) -> str:
    """Plan descriptions carry HTML (``"Parse<br/>"``, ``"&gt;"``); keep the text."""
    text = re.sub(r"<br\s*/?>", " ", description)
    text = re.sub(r"<[^>]+>", "", text)
    text = text.replace("&gt;", ">").replace("&lt;", "<").replace("&amp;", "&").replace("&nbsp;", " ")
    return " ".join(text.split())


def job_graph(job: Mapping[str, Any], plan: Mapping[str, Any]) -> tuple[list[RunVertex], list[EdgeInfo]]:
    """Vertices (plain names from ``/jobs/<jid>``) and edges with ship strategies (from the plan)."""
    plan = plan.get("plan", plan)  # 2.3 wraps it
    nodes = {n["id"]: n for n in plan.get("nodes", [])}
    vertices = []
    for v in job.get("vertices", []):
        node = nodes.get(v["id"], {})
        name = v.get("name") or clean_vertex_name(node.get("description", "")) or v["id"]
        vertices.append(
            RunVertex(
                id=v["id"],
                name=name,
                parallelism=int(v.get("parallelism") or node.get("parallelism") or 1),
                max_parallelism=_int(v.get("maxParallelism")),
            )
        )
    if not vertices:  # a plan without a job body: fall back to the plan's nodes
        vertices = [
            RunVertex(
                id=n["id"],
                name=clean_vertex_name(n.get("description", "")) or n["id"],
                parallelism=int(n.get("parallelism", 1)),
            )
            for n in nodes.values()
        ]
    edges = [
        EdgeInfo(source=i["id"], target=n["id"], ship_strategy=str(i.get("ship_strategy", "REBALANCE")))
        for n in nodes.values()
        for i in n.get("inputs", []) or []
    ]
    return vertices, edges


def subtask_states(vertex_detail: Mapping[str, Any]) -> list[SubtaskState]:
    out = []
    for s in vertex_detail.get("subtasks", []):
        start = _int(s.get("start-time", s.get("start_time")))
        out.append(
            SubtaskState(
                index=int(s["subtask"]),
                status=str(s.get("status", "")),
                attempt=_int(s.get("attempt")),
                start_ms=start if start is not None and start > 0 else None,
                taskmanager_id=s.get("taskmanager-id") or None,
                host=host_of_endpoint(s.get("endpoint") or s.get("host")),
            )
        )
    return sorted(out, key=lambda s: s.index)


def metric_queries(
    parallelism: int, metrics: Iterable[str] = RATE_METRICS, max_chars: int = MAX_QUERY_CHARS
) -> list[str]:
    """``get=`` values asking for every metric of every subtask, split so no request line gets too long."""
    return name_queries([f"{i}.{m}" for i in range(parallelism) for m in metrics], max_chars)


def parse_subtask_metrics(answer: Iterable[Mapping[str, Any]]) -> dict[int, dict[str, float | None]]:
    """``[{"id": "2.busyTimeMsPerSecond", "value": "NaN"}]`` -> ``{2: {"busy_ms_per_s": None}}`` (known metrics
    only)."""
    out: dict[int, dict[str, float | None]] = {}
    for item in answer:
        mid = str(item.get("id", ""))
        idx, _, name = mid.partition(".")
        if name not in RATE_METRICS or not idx.isdigit():
            continue
        out.setdefault(int(idx), {})[RATE_METRICS[name]] = parse_metric_value(item.get("value"))
    return out


def sample_rows(
    ts_ms: int, vertex_id: str, states: Sequence[SubtaskState], metrics: Mapping[int, Mapping[str, float | None]]
) -> list[dict[str, Any]]:
    """One row per subtask; a metric Flink did not answer is None (null in Parquet), as is NaN."""
    rows = []
    for s in states:
        m = metrics.get(s.index, {})
        row: dict[str, Any] = {
            "ts_ms": ts_ms,
            "vertex_id": vertex_id,
            "subtask": s.index,
            "attempt": s.attempt,
            "attempt_start_ms": s.start_ms,
            "running": s.running,
        }
        for col in RATE_METRICS.values():
            row[col] = m.get(col)
        rows.append(row)
    return rows


def busy_by_taskmanager(subtasks: Iterable[tuple[SubtaskState, Mapping[str, Any]]]) -> dict[str, tuple[float, int]]:
    """TaskManager id -> (busy time of the RUNNING subtasks on it in cores, i.e. Σ busyTimeMsPerSecond / 1000; how
    many there are), from (state, sample row) pairs as :func:`sample_rows` makes them. A subtask without a busy
    reading yet counts, with nothing."""
    out: dict[str, tuple[float, int]] = {}
    for state, row in subtasks:
        if not state.running or not state.taskmanager_id:
            continue
        cores, n = out.get(state.taskmanager_id, (0.0, 0))
        out[state.taskmanager_id] = (cores + (row.get("busy_ms_per_s") or 0.0) / 1000.0, n + 1)
    return out


def with_cotenants(rows: list[dict[str, Any]], load: Mapping[str, tuple[float, int]] | None) -> list[dict[str, Any]]:
    """TaskManager CPU rows with what the other jobs put on each TaskManager (:func:`busy_by_taskmanager`; a
    TaskManager it does not name runs none of theirs); unchanged — null, not known — when ``load`` is None."""
    if load is None:
        return rows
    out = []
    for row in rows:
        cores, n = load.get(str(row["taskmanager_id"]), (0.0, 0))
        out.append({**row, COTENANT_BUSY: cores, COTENANT_SUBTASKS: n})
    return out


def locations(vertex_id: str, states: Sequence[SubtaskState]) -> list[SubtaskLocation]:
    return [
        SubtaskLocation(
            vertex_id=vertex_id, subtask=s.index, taskmanager_id=s.taskmanager_id, host=s.host, attempt=s.attempt
        )
        for s in states
    ]


def latest_checkpoint_id(checkpoints: Mapping[str, Any]) -> int | None:
    completed = (checkpoints.get("latest") or {}).get("completed") or {}
    return _int(completed.get("id"))


def state_sizes(checkpoint_detail: Mapping[str, Any]) -> dict[str, float]:
    """Vertex id -> full state size (bytes) of a completed checkpoint (``state_size``, else ``checkpointed_size``)."""
    out: dict[str, float] = {}
    for vid, task in (checkpoint_detail.get("tasks") or {}).items():
        size = task.get("state_size", task.get("checkpointed_size"))
        f = parse_metric_value(size)
        if f is not None:
            out[vid] = max(0.0, f)
    return out


def checkpointed_sizes(checkpoint_detail: Mapping[str, Any]) -> dict[str, float]:
    """Vertex id -> bytes that checkpoint wrote (``checkpointed_size``: the delta for incremental checkpoints)."""
    out: dict[str, float] = {}
    for vid, task in (checkpoint_detail.get("tasks") or {}).items():
        f = parse_metric_value(task.get("checkpointed_size", task.get("state_size")))
        if f is not None:
            out[vid] = max(0.0, f)
    return out


NEVER_MS = 2**63 - 1  # Long.MAX_VALUE: Flink's "never" interval


def checkpoint_config(answer: Mapping[str, Any]) -> CheckpointConfig | None:
    """The job's checkpointing from ``/checkpoints/config``; None when it is off (no or a "never" interval)."""
    interval = parse_metric_value(answer.get("interval"))
    if interval is None or interval <= 0 or interval >= NEVER_MS:
        return None
    pause = parse_metric_value(answer.get("min_pause"))
    return CheckpointConfig(
        interval_ms=interval,
        min_pause_ms=max(0.0, pause or 0.0),
        mode=_text(answer.get("mode")),
        state_backend=_text(answer.get("state_backend")),
        checkpoint_storage=_text(answer.get("checkpoint_storage")),
    )


def buffer_timeout_ms(config: Iterable[Mapping[str, Any]]) -> float | None:
    """The network flush interval in ms from a ``[{"key", "value"}]`` configuration:
    ``execution.buffer-timeout.interval`` (``execution.buffer-timeout`` before 2.0). Flushing only full buffers
    (``execution.buffer-timeout.enabled: false``, or a negative timeout before 2.0) reads as :data:`NEVER_MS`. None when
    the configuration does not set it (the job runs with Flink's default, or set it in its code, which REST does not
    show)."""
    values = {str(item.get("key")): str(item.get("value", "")) for item in config}
    if values.get("execution.buffer-timeout.enabled", "true").strip().lower() == "false":
        return float(NEVER_MS)
    value = flink_duration_ms(values.get("execution.buffer-timeout.interval", values.get("execution.buffer-timeout")))
    if value is None:
        return None
    return float(NEVER_MS) if value < 0 else value


LATENCY_NAME = re.compile(
    r"^(?P<subtask>\d+)\.latency"
    r"(?:\.source_id\.(?P<source>[^.]+))?(?:\.source_subtask_index\.(?P<source_subtask>\d+))?"
    r"(?:\.operator_id\.(?P<operator>[^.]+))?(?:\.operator_subtask_index\.(?P<operator_subtask>\d+))?"
    r"\.latency_(?P<stat>[a-z0-9]+)$"
)


def latency_metric_names(listing: Iterable[Mapping[str, Any]]) -> list[str]:
    """The latency-tracking metrics of a vertex's ``GET .../metrics`` listing that we record (``LATENCY_STATS``)."""
    from placement.collect.layout import LATENCY_STATS

    out = []
    for item in listing:
        mid = str(item.get("id", ""))
        m = LATENCY_NAME.match(mid)
        if m and m["stat"] in LATENCY_STATS:
            out.append(mid)
    return sorted(out)


def name_queries(names: Sequence[str], max_chars: int = MAX_QUERY_CHARS) -> list[str]:
    """``get=`` values for these metric names, split so no request line gets too long."""
    out: list[str] = []
    current: list[str] = []
    length = 0
    for n in names:
        if current and length + len(n) + 1 > max_chars:
            out.append(",".join(current))
            current, length = [], 0
        current.append(n)
        length += len(n) + 1
    if current:
        out.append(",".join(current))
    return out


def latency_rows(ts_ms: int, vertex_id: str, answer: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Latency-tracking values of one vertex -> one row per (subtask, source, source subtask, operator), with the
    recorded statistics (``latency_median`` as ``p50_ms``...); NaN and absent values null."""
    from placement.collect.layout import LATENCY_STATS

    rows: dict[tuple, dict[str, Any]] = {}
    for item in answer:
        m = LATENCY_NAME.match(str(item.get("id", "")))
        if not m or m["stat"] not in LATENCY_STATS:
            continue
        key = (int(m["subtask"]), m["source"], _int(m["source_subtask"]), m["operator"])
        row = rows.setdefault(
            key,
            {
                "ts_ms": ts_ms,
                "vertex_id": vertex_id,
                "subtask": key[0],
                "source_id": key[1],
                "source_subtask": key[2],
                "operator_id": key[3],
            },
        )
        row[LATENCY_STATS[m["stat"]]] = parse_metric_value(item.get("value"))
    return [rows[k] for k in sorted(rows, key=lambda k: tuple("" if x is None else str(x) for x in k))]


def latency_interval_ms(config: Iterable[Mapping[str, Any]]) -> float | None:
    """``metrics.latency.interval`` of a ``[{"key", "value"}]`` configuration in ms (0: off); None when not set."""
    values = {str(item.get("key")): str(item.get("value", "")) for item in config}
    return flink_duration_ms(values.get("metrics.latency.interval"))


def _text(x: object) -> str | None:
    return None if x is None else str(x)


def taskmanagers(answer: Mapping[str, Any]) -> list[RunTaskManager]:
    out = []
    for tm in answer.get("taskmanagers", []):
        hw = tm.get("hardware") or {}
        mem = tm.get("memoryConfiguration") or {}
        total = tm.get("totalResource") or {}
        out.append(
            RunTaskManager(
                id=str(tm["id"]),
                host=host_of_pekko_path(tm.get("path")),
                slots=_int(tm.get("slotsNumber")),
                cpu_cores=parse_metric_value(total.get("cpuCores")),
                hardware_cpu_cores=parse_metric_value(hw.get("cpuCores")),
                physical_memory_bytes=parse_metric_value(hw.get("physicalMemory")),
                task_heap_bytes=parse_metric_value(mem.get("taskHeap")),
                managed_memory_bytes=parse_metric_value(hw.get("managedMemory") or mem.get("managedMemory")),
            )
        )
    return out
