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
``plan.json``'s per-host ``predicted_cores`` predicts (its TaskManager's baseline + its subtasks' ``cores_used``).
"""

from __future__ import annotations

import os
import re
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.rest import FlinkRest
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

    @property
    def host_cores(self) -> float | None:
        """The same CPU in the host's own cores (what the plan predicts)."""
        return self.server_cores / self.speed if self.speed else None


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
class JobMeasurement:
    job_id: str
    name: str
    source_records_per_s: float
    vertices: list[VertexMeasurement]


@dataclass
class Measurement:
    seconds: float
    links: list[LinkMeasurement]
    jobs: list[JobMeasurement]
    cpu: list[HostCpu] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"seconds": self.seconds, "links": [asdict(lk) | {"utilisation": lk.utilisation} for lk in self.links],
                "cpu": [asdict(c) | {"host_cores": c.host_cores} for c in self.cpu],
                "jobs": [asdict(j) for j in self.jobs]}


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


def _host_cgroup(h: dict) -> Path | None:
    if h.get("cgroup"):
        return Path(h["cgroup"])
    return SERVER_CGROUP if h.get("role") == "server" else None


def measure_window(state: dict, duration: float) -> tuple[list[LinkMeasurement], list[HostCpu]]:
    """(every uplink, each host's TaskManager CPU) over the same ``duration`` seconds."""
    edges = [h for h in state["hosts"] if h.get("namespace")]
    tms = {h["name"]: taskmanager_pids(cg) for h in state["hosts"] if (cg := _host_cgroup(h)) is not None}
    cpu_before = {name: cpu_seconds(pids) for name, pids in tms.items()}
    before = {h["name"]: veth_tx_bytes(h["namespace"], h["ns_if"]) for h in edges}
    data_before = {h["name"]: data_plane_bytes(h["namespace"]) for h in edges}
    t0 = time.monotonic()
    time.sleep(duration)
    after = {h["name"]: veth_tx_bytes(h["namespace"], h["ns_if"]) for h in edges}
    data_after = {h["name"]: data_plane_bytes(h["namespace"]) for h in edges}
    seconds = time.monotonic() - t0
    cpu_after = {name: cpu_seconds(pids) for name, pids in tms.items()}
    speeds = {h["name"]: h.get("speed") for h in state["hosts"]}
    cpu: list[HostCpu] = []
    for name in tms:
        used = sum(t - cpu_before[name][pid] for pid, t in cpu_after[name].items() if pid in cpu_before[name])
        cpu.append(HostCpu(name, len(cpu_after[name]), seconds, used / seconds, speeds.get(name)))
    out = []
    for h in edges:
        b0, b1 = before[h["name"]], after[h["name"]]
        if b0 is None or b1 is None:
            raise PlacementError(f"lab host {h['name']}: cannot read {h['ns_if']} counters in {h['namespace']} (is the lab up?)")
        data = _diff(data_before[h["name"]], data_after[h["name"]])
        out.append(LinkMeasurement(h["name"], h["ns_if"], b1 - b0, seconds, (b1 - b0) * 8 / seconds / 1e6, h.get("rate_mbit"),
                                   data, data * 8 / seconds / 1e6))
    return out, cpu


METRICS = ("numRecordsInPerSecond", "numRecordsOutPerSecond", "backPressuredTimeMsPerSecond", "busyTimeMsPerSecond",
           "idleTimeMsPerSecond")


def measure_jobs(rest: FlinkRest) -> list[JobMeasurement]:
    jobs = []
    for summary in rest.running_jobs():
        details = rest.job(summary.id)
        by_name: dict[str, dict] = defaultdict(
            lambda: {"p": 0, "in": 0.0, "out": 0.0, "bp": 0.0, "busy": 0.0, "reporting": 0, "hosts": defaultdict(int)})
        for v in details.vertices:
            m = rest.vertex_metrics(summary.id, v.id, METRICS, agg="sum")
            agg = by_name[v.name]
            agg["p"] += v.parallelism
            agg["in"] += m.get("numRecordsInPerSecond", 0.0)
            agg["out"] += m.get("numRecordsOutPerSecond", 0.0)
            agg["bp"] += m.get("backPressuredTimeMsPerSecond", 0.0)
            agg["busy"] += m.get("busyTimeMsPerSecond", 0.0)
            if sum(m.get(k, 0.0) for k in ("busyTimeMsPerSecond", "idleTimeMsPerSecond", "backPressuredTimeMsPerSecond")) > 0:
                agg["reporting"] += v.parallelism  # a time share arrived (the three add up to ~1000 ms/s per subtask)
            for s in rest.subtasks(summary.id, v.id):
                agg["hosts"][s.taskmanager_id] += 1
        vertices = [
            VertexMeasurement(name, a["p"], a["in"], a["out"], a["bp"] / max(a["reporting"], 1), a["busy"] / max(a["reporting"], 1),
                              dict(a["hosts"]), a["reporting"])
            for name, a in by_name.items()
        ]
        source_rate = sum(v.records_out_per_s for v in vertices if v.name.startswith("Source: "))
        jobs.append(JobMeasurement(summary.id, summary.name, source_rate, vertices))
    return jobs


def measure(work_dir, duration: float = 10.0, *, with_jobs: bool = True) -> Measurement:
    state = read_state(work_dir)
    if not state or state.get("status") != "up":
        raise PlacementError(f"no lab is up in {work_dir} (run `placement lab up --inventory FILE`)")
    links, cpu = measure_window(state, duration)
    jobs: list[JobMeasurement] = []
    if with_jobs:
        rest = FlinkRest(state["rest_url"])
        # the window issued no REST request; a priming request makes the metric store fresh for the real one
        try:
            measure_jobs(rest)
            time.sleep(2.5)
            jobs = measure_jobs(rest)
        except PlacementError as exc:
            raise PlacementError(f"lab REST {state['rest_url']}: {exc}") from None
    return Measurement(links[0].seconds if links else duration, links, jobs, cpu)
