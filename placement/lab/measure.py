"""``placement lab measure``: WAN Mbit/s per uplink from the veth counters, and the running jobs from REST.

The byte window comes first and issues no REST request: the JobManager fetches TaskManager metrics only when asked,
and those metric dumps travel the edge uplinks too, so querying during the window would inflate the WAN figure.
Two figures per link:

* ``mbit`` — the wire: every byte the namespace-side veth sent (IP/TCP headers, the job's records, Flink RPC:
  heartbeats, checkpoint acknowledgements, slot reports — about 20 kbit/s per TaskManager here);
* ``data_mbit`` — the job's data plane: TCP payload bytes acknowledged on the edge TaskManager's data-port
  connections (``ss -ti`` in the namespace, port :data:`placement.lab.topology.EDGE_DATA_PORT`), i.e. the serialized
  records plus Flink's small netty framing. This is what the cost model predicts (records out × bytes per record).

And the CPU per host over the same window: the CPU time (``utime + stime`` in ``/proc/<pid>/stat``, every thread of
the process: tasks, GC, netty, metrics) of the host's TaskManager JVM — the processes of its cgroup whose command line
runs ``TaskManagerRunner``, so the server's JobManager is not counted — per second, in this machine's cores, and in the
host's own cores (÷ the lab's effective speed of that host: a lab Pi core is a fraction of a core here). This is what
``plan.json``'s per-host ``predicted_cores`` predicts (its TaskManager's baseline + its subtasks' ``cores_used``) once
the JVM has compiled what it runs: of that CPU, what the JIT compiler's threads used (``compiler_server_cores``, from
``/proc/<pid>/task/*/stat``) is shown apart, and ``steady_host_cores`` is the rest — for minutes after subtasks move
onto a lab Pi its compiler uses 20-35 % of it (placement.collect.threads.COMPILER_THREAD_PREFIXES).

And, after the window like the job figures, the latency of each job at each of its sinks (vertices no other vertex
reads from), two kinds side by side (:class:`LatencyMeasurement`):

* ``markers`` — Flink's latency tracking (the lab sets ``metrics.latency.interval``): per source vertex, the
  histograms the sink keeps of the markers from that source, read over REST and parsed as ``metrics collect`` does
  (:func:`placement.collect.shaping.latency_rows`). Markers wait in the same network buffers as records but skip
  operator processing and windows;
* ``event-time`` — the lab jobs' own sink histogram ``eventTimeLatency``
  (deploy/jobs/src/common/placement/lab/Sinks.java): per record, now minus the creation time of the freshest source
  record it carries (one machine, one clock). Behind a window that includes the wait from that record to the window's
  end.

Each figure merges several histograms (markers: one per sink subtask, and per source subtask where a job sets
``metrics.latency.granularity: subtask``; event time: one per sink subtask) by one rule:
p50 is the median of the histograms' p50, p99 the largest p99 (the worst subtask). Flink's REST gives no histogram
counts, and the subtasks of a lab sink see alike shares of the records, so the median stands for the whole stream's
p50 without a weighting that REST cannot give; the worst p99 is what a user's bound is about.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from placement.collect import shaping
from placement.collect.threads import is_compiler_thread, parse_thread_stats
from placement.errors import PlacementError
from placement.flink.rest import FlinkRest, FlinkRestError, VertexInfo
from placement.lab.runner import read_state, veth_tx_bytes
from placement.lab.topology import EDGE_DATA_PORT, SERVER_CGROUP
from placement.netns import ns_exec, run


@dataclass
class LinkMeasurement:
    host: str
    interface: str
    bytes: int
    seconds: float
    mbit: float
    rate_mbit: float | None  # the shaped bandwidth
    data_bytes: int = 0
    data_mbit: float = 0.0

    @property
    def utilisation(self) -> float | None:
        return self.mbit / self.rate_mbit if self.rate_mbit else None


@dataclass
class HostCpu:
    host: str
    processes: int  # TaskManager JVMs found in the host's cgroup (1 when the lab is healthy)
    seconds: float
    server_cores: float  # CPU seconds per second, in this machine's cores
    speed: float | None  # the host's effective speed in the lab (None: a lab started before it was recorded)
    compiler_server_cores: float = 0.0  # of server_cores, the JVMs' JIT compiler threads

    @property
    def host_cores(self) -> float | None:
        """The same CPU in the host's own cores."""
        return self.server_cores / self.speed if self.speed else None

    @property
    def steady_host_cores(self) -> float | None:
        """Without the JIT compiler's threads, in the host's own cores: what the plan predicts (the steady state)."""
        return (self.server_cores - self.compiler_server_cores) / self.speed if self.speed else None


@dataclass
class VertexMeasurement:
    name: str
    parallelism: int
    records_in_per_s: float
    records_out_per_s: float
    backpressured_ms_per_s: float  # mean over the vertex's reporting subtasks (all copies of a split vertex)
    busy_ms_per_s: float
    hosts: dict[str, int] = field(default_factory=dict)  # host -> subtasks
    # subtasks whose metrics reached the JobManager: over a saturated uplink the TaskManager's metric dump can queue
    # behind the data and time out, and its vertices then read 0 (rates of a vertex with reporting < parallelism
    # are lower bounds)
    reporting: int = 0


@dataclass
class LatencyMeasurement:
    """One latency figure at one sink: ``markers`` from one source vertex, or the sink's own ``event-time``."""

    sink: str  # the sink vertex's name
    kind: str  # "markers" | "event-time"
    source: str | None  # the source vertex's name (markers); None for event time (the freshest of all sources)
    p50_ms: float | None  # median of the histograms' p50 (None: no histogram had values yet)
    p99_ms: float | None  # the largest of the histograms' p99
    histograms: int  # histograms merged (sink subtasks × copies of the source vertex), with values


@dataclass
class JobMeasurement:
    job_id: str
    name: str
    source_records_per_s: float
    vertices: list[VertexMeasurement]
    latency: list[LatencyMeasurement] = field(default_factory=list)


@dataclass
class Measurement:
    seconds: float
    links: list[LinkMeasurement]
    jobs: list[JobMeasurement]
    cpu: list[HostCpu] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "seconds": self.seconds,
            "links": [asdict(lk) | {"utilisation": lk.utilisation} for lk in self.links],
            "cpu": [
                asdict(c) | {"host_cores": c.host_cores, "steady_host_cores": c.steady_host_cores} for c in self.cpu
            ],
            "jobs": [asdict(j) for j in self.jobs],
        }


def parse_ss_bytes(text: str) -> dict[str, int]:
    """``ss -tinH`` output -> socket ("local peer") -> bytes_acked (payload the peer has received)."""
    out: dict[str, int] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            fields = line.split()
            key = " ".join(fields[-2:]) if len(fields) >= 2 else None
            rest = ""
        else:
            rest = line
        m = re.search(r"\bbytes_acked:(\d+)", rest)
        if key and m:
            out[key] = int(m.group(1))
    return out


def data_plane_bytes(namespace: str, port: int = EDGE_DATA_PORT) -> dict[str, int]:
    proc = run(ns_exec(namespace, ["ss", "-tinH", "state", "established", "sport", "=", f":{port}"]), check=False)
    return parse_ss_bytes(proc.stdout) if proc.returncode == 0 else {}


def _diff(before: dict[str, int], after: dict[str, int]) -> int:
    return sum(max(0, v - before.get(k, 0)) for k, v in after.items())


_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def taskmanager_pids(cgroup: Path) -> list[int]:
    """The TaskManager JVMs among a cgroup's processes (the server's cgroup also holds the JobManager)."""
    try:
        pids = [int(p) for p in (cgroup / "cgroup.procs").read_text().split()]
    except OSError:
        return []
    found = []
    for pid in pids:
        try:
            if b"TaskManagerRunner" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue  # it ended
    return found


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """pid -> CPU seconds it has used (user + system, all its threads); an ended process is left out."""
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / _TICKS_PER_S  # utime, stime: fields 14 and 15 of stat(5)
    return out


def compiler_cpu_seconds(pids: list[int]) -> float:
    """CPU seconds the JIT compiler threads of ``pids`` have used (their /proc stat lines, parsed as ``metrics
    collect`` parses a host's thread listing); threads and processes that end while read are left out."""
    listing = [str(_TICKS_PER_S)]
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
            try:
                listing.append(stat.read_text().strip())
            except OSError:
                continue
    return sum(ns for _, name, ns in parse_thread_stats("\n".join(listing)) if is_compiler_thread(name)) / 1e9


def _host_cgroup(h: dict) -> Path | None:
    if h.get("cgroup"):
        return Path(h["cgroup"])
    return SERVER_CGROUP if h.get("role") == "server" else None


def measure_window(state: dict, duration: float) -> tuple[list[LinkMeasurement], list[HostCpu]]:
    """(every uplink, each host's TaskManager CPU) over the same ``duration`` seconds."""
    edges = [h for h in state["hosts"] if h.get("namespace")]
    tms = {h["name"]: taskmanager_pids(cg) for h in state["hosts"] if (cg := _host_cgroup(h)) is not None}
    cpu_before = {name: cpu_seconds(pids) for name, pids in tms.items()}
    jit_before = {name: compiler_cpu_seconds(pids) for name, pids in tms.items()}
    before = {h["name"]: veth_tx_bytes(h["namespace"], h["ns_if"]) for h in edges}
    data_before = {h["name"]: data_plane_bytes(h["namespace"]) for h in edges}
    t0 = time.monotonic()
    time.sleep(duration)
    after = {h["name"]: veth_tx_bytes(h["namespace"], h["ns_if"]) for h in edges}
    data_after = {h["name"]: data_plane_bytes(h["namespace"]) for h in edges}
    seconds = time.monotonic() - t0
    cpu_after = {name: cpu_seconds(pids) for name, pids in tms.items()}
    jit_after = {name: compiler_cpu_seconds(pids) for name, pids in tms.items()}
    speeds = {h["name"]: h.get("speed") for h in state["hosts"]}
    cpu: list[HostCpu] = []
    for name in tms:
        used = sum(t - cpu_before[name][pid] for pid, t in cpu_after[name].items() if pid in cpu_before[name])
        jit = min(max(0.0, jit_after[name] - jit_before[name]), used)  # a JVM that restarted: its threads are new
        cpu.append(HostCpu(name, len(cpu_after[name]), seconds, used / seconds, speeds.get(name), jit / seconds))
    out = []
    for h in edges:
        b0, b1 = before[h["name"]], after[h["name"]]
        if b0 is None or b1 is None:
            raise PlacementError(
                f"lab host {h['name']}: cannot read {h['ns_if']} counters in {h['namespace']} (is the lab up?)"
            )
        data = _diff(data_before[h["name"]], data_after[h["name"]])
        out.append(
            LinkMeasurement(
                h["name"],
                h["ns_if"],
                b1 - b0,
                seconds,
                (b1 - b0) * 8 / seconds / 1e6,
                h.get("rate_mbit"),
                data,
                data * 8 / seconds / 1e6,
            )
        )
    return out, cpu


METRICS = (
    "numRecordsInPerSecond",
    "numRecordsOutPerSecond",
    "backPressuredTimeMsPerSecond",
    "busyTimeMsPerSecond",
    "idleTimeMsPerSecond",
)


EVENT_TIME_LATENCY = "eventTimeLatency"  # the lab sinks' histogram (Sinks.EVENT_TIME_LATENCY in the jobs' Java)
# "<subtask>.<operator name, made metric-safe>.eventTimeLatency_<stat>": the operator-scoped histogram as REST lists it
EVENT_TIME_NAME = re.compile(rf"^(?P<subtask>\d+)\.(?:.+\.)?{EVENT_TIME_LATENCY}_(?P<stat>median|p99)$")


def merge_histograms(rows: Iterable[Mapping[str, float | None]]) -> tuple[float | None, float | None, int]:
    """(p50, p99, histograms) of histograms given as ``{"p50_ms", "p99_ms"}``: the median of their p50 and the largest
    p99; histograms without values (markers not arrived yet, NaN) are left out."""
    full = [(p50, p99) for r in rows if (p50 := r.get("p50_ms")) is not None and (p99 := r.get("p99_ms")) is not None]
    if not full:
        return None, None, 0
    return statistics.median(float(p50) for p50, _ in full), max(float(p99) for _, p99 in full), len(full)


def event_time_rows(answer: Iterable[Mapping]) -> list[dict[str, float | None]]:
    """``eventTimeLatency_median``/``_p99`` values of a vertex's subtasks -> one ``{"p50_ms", "p99_ms"}`` per
    subtask."""
    rows: dict[int, dict[str, float | None]] = {}
    for item in answer:
        m = EVENT_TIME_NAME.match(str(item.get("id", "")))
        if m:
            row = rows.setdefault(int(m["subtask"]), {"p50_ms": None, "p99_ms": None})
            row["p50_ms" if m["stat"] == "median" else "p99_ms"] = shaping.parse_metric_value(item.get("value"))
    return [rows[k] for k in sorted(rows)]


def marker_measurements(
    sink: str, rows: Iterable[Mapping], source_names: Mapping[str, str]
) -> list[LatencyMeasurement]:
    """The sink's latency-marker rows (:func:`placement.collect.shaping.latency_rows`) -> one figure per source vertex
    name (copies of a split source vertex together; a source id no vertex has is named by its id)."""
    # the rule placement.profile.latency applies too: first the largest over the sink chain's operators (the chain's
    # last one saw the markers latest), then over the subtasks (merge_histograms)
    chains: dict[tuple, dict[str, float | None]] = {}
    for r in rows:
        key = (r["source_id"], r.get("subtask"), r.get("source_subtask"))
        chain = chains.setdefault(key, {"p50_ms": None, "p99_ms": None})
        for stat in ("p50_ms", "p99_ms"):
            if r.get(stat) is not None:
                held = chain[stat]
                chain[stat] = max(float(r[stat]), held if held is not None else float("-inf"))
    by_source: dict[str | None, list[Mapping]] = defaultdict(list)
    for (source_id, _subtask, _source_subtask), chain in chains.items():
        by_source[source_names.get(source_id, source_id)].append(chain)
    out = []
    for source in sorted(by_source, key=str):
        p50, p99, n = merge_histograms(by_source[source])
        out.append(LatencyMeasurement(sink, "markers", source, p50, p99, n))
    return out


def sink_vertices(rest: FlinkRest, job_id: str) -> set[str]:
    """Ids of the job's sink vertices: those no vertex reads from (the job plan's edges)."""
    nodes = rest.plan(job_id).get("nodes", [])
    read = {i["id"] for n in nodes for i in n.get("inputs", [])}
    return {n["id"] for n in nodes if n["id"] not in read}


def _vertex_values(rest: FlinkRest, job_id: str, vertex_id: str, names: list[str]) -> list:
    answer: list = []
    for query in shaping.name_queries(names):
        part = rest.get(f"/jobs/{job_id}/vertices/{vertex_id}/metrics", params={"get": query})
        answer.extend(part if isinstance(part, list) else [])
    return answer


def measure_latency(rest: FlinkRest, job_id: str, vertices: Iterable[VertexInfo]) -> list[LatencyMeasurement]:
    """Markers (per source) and event time at each sink vertex of the job; a sink with neither has no figure."""
    names = {v.id: v.name for v in vertices}
    out: list[LatencyMeasurement] = []
    for vid in sorted(sink_vertices(rest, job_id), key=lambda i: names.get(i, i)):
        try:
            listing = rest.get(f"/jobs/{job_id}/vertices/{vid}/metrics")
        except FlinkRestError:
            continue
        listing = listing if isinstance(listing, list) else []
        markers = shaping.latency_metric_names(listing)
        event = sorted(str(m["id"]) for m in listing if EVENT_TIME_NAME.match(str(m.get("id", ""))))
        answer = _vertex_values(rest, job_id, vid, markers + event) if markers or event else []
        sink = names.get(vid, vid)
        out.extend(marker_measurements(sink, shaping.latency_rows(0, vid, answer), names))
        if event:
            p50, p99, n = merge_histograms(event_time_rows(answer))
            out.append(LatencyMeasurement(sink, "event-time", None, p50, p99, n))
    return out


def measure_jobs(rest: FlinkRest) -> list[JobMeasurement]:
    jobs = []
    for summary in rest.running_jobs():
        details = rest.job(summary.id)
        by_name: dict[str, dict] = defaultdict(
            lambda: {"p": 0, "in": 0.0, "out": 0.0, "bp": 0.0, "busy": 0.0, "reporting": 0, "hosts": defaultdict(int)}
        )
        for v in details.vertices:
            m = rest.vertex_metrics(summary.id, v.id, METRICS, agg="sum")
            agg = by_name[v.name]
            agg["p"] += v.parallelism
            agg["in"] += m.get("numRecordsInPerSecond", 0.0)
            agg["out"] += m.get("numRecordsOutPerSecond", 0.0)
            agg["bp"] += m.get("backPressuredTimeMsPerSecond", 0.0)
            agg["busy"] += m.get("busyTimeMsPerSecond", 0.0)
            if (
                sum(
                    m.get(k, 0.0)
                    for k in ("busyTimeMsPerSecond", "idleTimeMsPerSecond", "backPressuredTimeMsPerSecond")
                )
                > 0
            ):
                agg["reporting"] += v.parallelism  # a time share arrived (the three add up to ~1000 ms/s per subtask)
            for s in rest.subtasks(summary.id, v.id):
                agg["hosts"][s.taskmanager_id] += 1
        vertices = [
            VertexMeasurement(
                name,
                a["p"],
                a["in"],
                a["out"],
                a["bp"] / max(a["reporting"], 1),
                a["busy"] / max(a["reporting"], 1),
                dict(a["hosts"]),
                a["reporting"],
            )
            for name, a in by_name.items()
        ]
        source_rate = sum(v.records_out_per_s for v in vertices if v.name.startswith("Source: "))
        jobs.append(
            JobMeasurement(
                summary.id, summary.name, source_rate, vertices, measure_latency(rest, summary.id, details.vertices)
            )
        )
    return jobs


def measure(work_dir, duration: float = 10.0, *, with_jobs: bool = True) -> Measurement:
    state = read_state(work_dir)
    if not state or state.get("status") != "up":
        raise PlacementError(f"no lab is up in {work_dir} (run `placement lab up --inventory FILE`)")
    links, cpu = measure_window(state, duration)
    jobs: list[JobMeasurement] = []
    if with_jobs:
        rest = FlinkRest(state["rest_url"])
        # the window issued no REST request; a priming request makes the metric store fresh for the real one (the
        # latency histograms too: they come from the same lazily fetched store)
        try:
            measure_jobs(rest)
            time.sleep(2.5)
            jobs = measure_jobs(rest)
        except PlacementError as exc:
            raise PlacementError(f"lab REST {state['rest_url']}: {exc}") from None
    return Measurement(links[0].seconds if links else duration, links, jobs, cpu)
