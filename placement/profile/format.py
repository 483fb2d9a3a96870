"""The profile format: what was measured of one Flink job, per vertex and per subtask.

A profile is the contract between ``placement profile`` (which computes it from collected metrics) and
``placement plan`` (which reads it). It is JSON, documented in ``examples/profiles/README.md``:

* ``format`` — ``"placement.profile/v2"`` (``"placement.profile/v1"`` still loads).
* ``job`` — name (and optionally id) of the Flink job.
* ``vertices`` — one per Flink job vertex (a chain of operators), in any order: ``id``, ``name`` (the task name Flink
  shows, e.g. ``"Source: Sensors"`` or ``"Parse -> Filter"``), ``parallelism``, ``max_parallelism`` (optional),
  ``stateful``, ``state_bytes``, ``bytes_per_record_out`` and ``subtasks``; each subtask carries its mean
  ``records_in_per_s``, ``records_out_per_s``, ``busy_ms_per_s``, ``idle_ms_per_s``, ``backpressured_ms_per_s`` and the
  ``host_speed`` of the host it was measured on (1.0 = a server core). ``busy_ms_per_s`` may be ``null`` (NaN in
  Flink) — see :mod:`placement.costmodel.demand`. Optional ``buffers_in_per_s``: the network buffers delivered to the
  subtask a second over all its inputs (one per channel flush; :mod:`placement.costmodel.deliveries`); absent or null
  in older profiles.
* ``edges`` — ``source``/``target`` vertex ids and Flink's ``ship_strategy``; since v2 also what travels along the
  edge: per upstream subtask the ``records_per_s`` and ``bytes_per_s`` it puts on this edge (one copy: a broadcast
  record counts once, not once per receiver), for HASH edges the measured ``receiver_shares`` (key skew), and the
  ``basis`` of the figures (see :mod:`placement.profile.edge_flows`).
* ``job`` — since v2 also ``checkpoint_interval_ms`` (null: checkpointing off or unknown) and ``buffer_timeout_ms``
  (Flink's network flush interval, which sets how much network framing a channel adds; null: framing is not
  charged); vertices carry ``checkpointed_bytes`` (what one
  checkpoint uploads; null: the whole ``state_bytes``).

* ``taskmanagers`` — optional (issue 23): per TaskManager of the history, its measured JVM process CPU
  (``process_cores``, in cores of its own host), what the cost model charges the job's subtasks there
  (``charged_cores``, after calibration ``calibrated_cores``) and its own ``baseline_cores`` (also in server cores,
  ``baseline_server_cores``) with the ``basis`` of that figure; vertices carry ``cpu_calibration`` (the factor the
  cost model multiplies their busy-time cores by; null: 1). See :mod:`placement.profile.tm_cpu`. A profile without
  them plans as before: busy time only, no baseline.

Sources are vertices without inputs, sinks vertices without outputs.

**Versions.** v1 profiles (no per-edge figures) still load, with v1's meaning (:func:`edge_output`): each vertex
sends every record, of ``bytes_per_record_out`` bytes, along each outgoing edge. That holds for hand-written
profiles; a v1 profile made by ``placement profile`` took ``bytes_per_record_out`` from Flink's task-level
``numBytesOut / numRecordsOut``, which sums all outputs, so it over-counts fan-outs and broadcasts: profile its
metric history again to get v2's per-edge figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from graphlib import CycleError
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from placement.graphs import DiGraph
from placement.loading import FieldError, Strict, canonical_digest, drop_unset, empty_dict, empty_list, load_model

PROFILE_FORMAT: Final = "placement.profile/v2"
PROFILE_FORMATS = ("placement.profile/v1", PROFILE_FORMAT)  # v1: no per-edge figures (still loads)


class ShipStrategy(str, Enum):
    """How records travel along a job edge (Flink's names)."""

    FORWARD = "FORWARD"  # subtask i -> subtask i; needs equal parallelism
    HASH = "HASH"  # keyed: every upstream subtask to every downstream subtask, by key
    REBALANCE = "REBALANCE"  # round-robin over all downstream subtasks
    RESCALE = "RESCALE"  # pointwise: round-robin over the downstream subtasks Flink connects to each upstream one
    BROADCAST = "BROADCAST"  # every record to every downstream subtask
    GLOBAL = "GLOBAL"  # everything to downstream subtask 0

    @classmethod
    def parse(cls, text: str) -> ShipStrategy:
        # Flink's plan JSON spells some strategies as e.g. "HASH[...]" or "REBALANCE"; keep the leading word.
        word = text.strip().upper().split("[")[0].split(" ")[0]
        return cls(word)


# Physical plausibility: a figure past these is a typo or a corrupted file, never a measurement, and left in it makes
# the solvers fail (1e308 bytes per record overflows HiGHS's and CBC's arithmetic). Each bound is far above any real
# Flink job: one subtask's rate — a Flink subtask moves at most a few 10^7 records/s; its bytes/s — a 100 Gbit/s NIC
# is 1.25e10 B/s; one record — Flink's network stack cannot carry a record above 2^31 bytes (a Java array);
# state — a petabyte; a host speed — 1000 server cores in one.
MAX_RECORDS_PER_S = 1e9
MAX_BYTES_PER_S = 1e12
MAX_RECORD_BYTES = 2.0**31
MAX_STATE_BYTES = 1e15
MAX_HOST_SPEED = 1e3
MAX_INTERVAL_MS = 365 * 24 * 3600e3  # a checkpoint interval or buffer timeout of a year is "never"


def _finite_or_none(v: float | None) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v


class SubtaskProfile(Strict):
    index: int = Field(ge=0, description="0-based subtask index")
    records_in_per_s: float = Field(0.0, ge=0, le=MAX_RECORDS_PER_S)
    records_out_per_s: float = Field(0.0, ge=0, le=MAX_RECORDS_PER_S)
    busy_ms_per_s: float | None = Field(None, ge=0, le=1000, description="null when Flink reported NaN")
    idle_ms_per_s: float | None = Field(None, ge=0, le=1000)
    backpressured_ms_per_s: float | None = Field(None, ge=0, le=1000)
    host_speed: float = Field(
        1.0, gt=0, le=MAX_HOST_SPEED, description="speed of the host it was measured on (server core = 1)"
    )
    buffers_in_per_s: float | None = Field(
        None,
        ge=0,
        le=MAX_RECORDS_PER_S,
        description="network buffers delivered to it a second, local and remote, all "
        "inputs (Flink's numBuffersInLocal/RemotePerSecond): one per flush of a channel; null: not measured",
    )
    samples: int | None = Field(None, ge=0)
    confident: bool = Field(True, description="false when busy time was too low to estimate a rate")

    @field_validator("busy_ms_per_s", "idle_ms_per_s", "backpressured_ms_per_s", mode="before")
    @classmethod
    def _nan_is_unknown(cls, v: float | None) -> float | None:
        return _finite_or_none(v)


class VertexProfile(Strict):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    parallelism: int = Field(ge=1)
    max_parallelism: int | None = Field(
        None, ge=1, description="Flink's max parallelism (key groups); absent: Flink's default for the parallelism"
    )
    stateful: bool = False
    state_bytes: float = Field(0.0, ge=0, le=MAX_STATE_BYTES, description="checkpointed state, all subtasks together")
    checkpointed_bytes: float | None = Field(
        None,
        ge=0,
        le=MAX_STATE_BYTES,
        description="what one checkpoint uploads, all subtasks (incremental: the delta); null: state_bytes",
    )
    bytes_per_record_out: float = Field(
        0.0,
        ge=0,
        le=MAX_RECORD_BYTES,
        description="bytes of one record it emits (its edges' mean); planned on edges without own figures",
    )
    subtasks: list[SubtaskProfile]
    cpu_calibration: float | None = Field(
        None, gt=0, le=10, description="busy-time cores × this = the CPU measured (placement.profile.tm_cpu); null: 1"
    )
    cpu_fixed_share: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="the share of its calibrated CPU at the profiled rate that does not grow with "
        "the rate, fitted over runs at different rates (placement.profile.tm_cpu); null: 0, all of it grows with it",
    )
    stats: dict[str, float | int | str | bool | None] = Field(
        default_factory=empty_dict, description="extra figures from the profiling job (p95s, selectivity, ...)"
    )

    @model_validator(mode="after")
    def _subtasks_match(self) -> VertexProfile:
        if self.max_parallelism is not None and self.max_parallelism < self.parallelism:
            raise FieldError(
                "max_parallelism",
                f"vertex {self.name!r} has parallelism {self.parallelism} above its max "
                f"parallelism {self.max_parallelism}",
            )
        if len(self.subtasks) != self.parallelism:
            raise FieldError(
                "subtasks", f"vertex {self.name!r} has parallelism {self.parallelism} but {len(self.subtasks)} subtasks"
            )
        if sorted(s.index for s in self.subtasks) != list(range(self.parallelism)):
            raise FieldError("subtasks", f"vertex {self.name!r}: subtask indexes must be 0..{self.parallelism - 1}")
        self.subtasks.sort(key=lambda s: s.index)
        return self

    @property
    def records_in_per_s(self) -> float:
        return sum(s.records_in_per_s for s in self.subtasks)

    @property
    def records_out_per_s(self) -> float:
        return sum(s.records_out_per_s for s in self.subtasks)


EdgeBasis = Literal["producer", "consumer", "remainder", "fan-out rule"]


class EdgeProfile(Strict):
    source: str
    target: str
    ship_strategy: ShipStrategy
    records_per_s: list[float] | None = Field(
        None,
        description="per upstream subtask: records it puts on this edge (one copy; null: derive by the fan-out rule)",
    )
    bytes_per_s: list[float] | None = Field(
        None, description="per upstream subtask: serialized bytes it puts on this edge (one copy)"
    )
    receiver_shares: list[float] | None = Field(
        None, description="HASH: share of the edge's records each downstream subtask receives (key skew); null: even"
    )
    basis: EdgeBasis | None = Field(None, description="where the figures come from (placement.profile.edge_flows)")

    @field_validator("records_per_s", "bytes_per_s", "receiver_shares")
    @classmethod
    def _non_negative(cls, v: list[float] | None, info: ValidationInfo) -> list[float] | None:
        if v is not None and any(not math.isfinite(x) or x < 0 for x in v):
            raise ValueError("values must be finite and >= 0")
        top = {"records_per_s": MAX_RECORDS_PER_S, "bytes_per_s": MAX_BYTES_PER_S}.get(info.field_name or "")
        if v is not None and top is not None and any(x > top for x in v):
            raise ValueError(f"values must be at most {top:g} per subtask (physically plausible)")
        return v

    @model_validator(mode="after")
    def _figures_together(self) -> EdgeProfile:
        if (self.records_per_s is None) != (self.bytes_per_s is None):
            raise FieldError("bytes_per_s", "records_per_s and bytes_per_s come together (both or neither)")
        if self.receiver_shares is not None:
            if self.ship_strategy is not ShipStrategy.HASH:
                raise FieldError(
                    "receiver_shares", f"only HASH edges have receiver shares, not {self.ship_strategy.value}"
                )
            total = sum(self.receiver_shares)
            if total <= 0:
                raise FieldError("receiver_shares", "shares must not all be 0")
            self.receiver_shares = [x / total for x in self.receiver_shares]  # tolerate rounding: normalise
        return self

    @field_validator("ship_strategy", mode="before")
    @classmethod
    def _strategy(cls, v: object) -> ShipStrategy:
        if isinstance(v, str):
            try:
                return ShipStrategy.parse(v)
            except ValueError:
                raise ValueError(
                    f"unknown ship strategy {v!r} (one of {', '.join(s.value for s in ShipStrategy)})"
                ) from None
        return v  # type: ignore[return-value]


class JobInfo(Strict):
    name: str
    id: str | None = None
    origin: Literal["example", "synthetic", "collected"] = "collected"
    note: str | None = None
    checkpoint_interval_ms: float | None = Field(
        None,
        gt=0,
        le=MAX_INTERVAL_MS,
        description="time between checkpoints (max of interval and min pause); null: off or unknown",
    )
    buffer_timeout_ms: float | None = Field(
        None,
        ge=0,
        le=MAX_INTERVAL_MS,
        description="Flink's network flush interval (execution.buffer-timeout); null: framing not charged",
    )
    flink_version: str | None = Field(
        None, description="the Flink release the history was collected on (newest run); null: not recorded"
    )


TaskManagerBasis = Literal["idle", "residual", "prior", "floor", "co-tenant", "unmeasured"]


class RateFit(Strict):
    """A TaskManager's process CPU as ``fixed_cores + per_record_us·1e-6 × rate`` over runs of one placement at
    different source rates (:mod:`placement.profile.tm_cpu`), in cores of its host — the line planned on, steeper
    than the fitted one by two standard errors; ``fixed_share``: the part of what its subtasks used beyond the
    baseline at the profiled rate that does not grow with the rate."""

    runs: int = Field(ge=2)
    rate_low: float = Field(ge=0, description="the job's source records/s in the slowest run")
    rate_high: float = Field(ge=0, description="… and in the fastest")
    fixed_cores: float = Field(description="the planned line's CPU at rate 0, baseline included")
    per_record_us: float = Field(
        ge=0,
        description="the planned line's CPU µs (of one of its host's cores) per source "
        "record: the fitted slope plus two standard errors",
    )
    fitted_per_record_us: float = Field(ge=0, description="the least-squares slope")
    per_record_se_us: float = Field(ge=0, description="its standard error (from each run's spread over its windows)")
    fixed_share: float = Field(ge=0, lt=1)


class TaskManagerCpu(Strict):
    """One TaskManager's measured CPU against busy time (:mod:`placement.profile.tm_cpu`); cores of its own host."""

    id: str
    host: str | None = None
    inventory_host: str | None = Field(None, description="the inventory host it was matched to (null: none)")
    host_speed: float = Field(1.0, gt=0, le=MAX_HOST_SPEED)
    samples: int = Field(0, ge=0)
    subtasks: int = Field(0, ge=0, description="subtasks of the job it ran")
    process_cores: float | None = Field(
        None, ge=0, description="JVM process CPU (Status.JVM.CPU.Time rate); null: unmeasured"
    )
    load_cores: float | None = Field(
        None, ge=0, description="Status.JVM.CPU.Load × the machine's cores (a cross-check)"
    )
    charged_cores: float = Field(0.0, ge=0, description="the busy-time charge of its subtasks (costmodel.demand)")
    calibrated_cores: float | None = Field(None, ge=0, description="that charge after the vertices' calibration")
    baseline_cores: float | None = Field(None, ge=0, description="its own CPU, no subtask's")
    baseline_server_cores: float | None = Field(None, ge=0)
    basis: TaskManagerBasis = "unmeasured"
    confident: bool = False
    cotenant_cores: float | None = Field(
        None,
        ge=0,
        description="busy time of other jobs' subtasks on it (Σ busyTimeMsPerSecond / 1000); its CPU beyond "
        "the baseline is split between them and the job by charge; null: not recorded (older histories)",
    )
    cotenant_subtasks: int | None = Field(None, ge=0, description="how many of their subtasks (most at once)")
    task_thread_cores: float | None = Field(
        None,
        ge=0,
        description="CPU of the job's task threads on it (per-thread CPU from /proc, metrics collect "
        "--inventory); its vertices' share of the calibrated CPU follows these; null: not recorded",
    )
    other_thread_cores: float | None = Field(
        None,
        ge=0,
        description="CPU of its other threads (GC, Netty client, flusher, rate limiters, RPC, metrics; threads that "
        "ended between two readings too, where the process's own /proc line was recorded)",
    )
    compiler_thread_cores: float | None = Field(
        None,
        ge=0,
        description="CPU of its JIT compiler threads: the JVM compiling what it has just started to run, "
        "left out of process_cores and of every figure derived from it (the model predicts the steady state)",
    )
    netty_server_thread_cores: float | None = Field(
        None,
        ge=0,
        description="CPU of its Flink Netty server threads, left out of process_cores likewise: the cost "
        "model charges it per host from the buffers delivered (placement.costmodel.deliveries); null: not recorded",
    )
    rate_fit: RateFit | None = Field(
        None, description="its process CPU against the job's source rate over runs at different rates; null: one rate"
    )


class MeasuredLatency(Strict):
    """Flink's latency tracking from one source to one sink (issue 25; :mod:`placement.profile.latency`): how long
    latency markers took from the source to the sink's input, in ms. Markers skip the operators' processing and every
    queue of records ahead of them inside an operator, but wait in network buffers and on the wire like records."""

    source: str = Field(description="source vertex id")
    sink: str = Field(description="sink vertex id")
    paths: list[str] = Field(
        default_factory=empty_list, description="the vertex paths from source to sink, names joined by ' → '"
    )
    p50_ms: float | None = Field(None, ge=0)
    p95_ms: float | None = Field(None, ge=0)
    p99_ms: float | None = Field(None, ge=0)
    max_ms: float | None = Field(None, ge=0)
    samples: int = Field(0, ge=0, description="sampling instants behind the figures")


class JobProfile(Strict):
    format: Literal["placement.profile/v1", "placement.profile/v2"] = PROFILE_FORMAT
    job: JobInfo
    vertices: list[VertexProfile] = Field(min_length=1)
    edges: list[EdgeProfile] = Field(default_factory=empty_list)
    taskmanagers: list[TaskManagerCpu] = Field(
        default_factory=empty_list,
        description="measured TaskManager CPU and baselines; empty: not measured (busy time only)",
    )
    latency: list[MeasuredLatency] = Field(
        default_factory=empty_list,
        description="measured latency per source → sink (Flink's latency tracking); empty: not tracked",
    )

    @model_validator(mode="before")
    @classmethod
    def _edges_given(cls, data: object) -> object:
        """A profile of several vertices without ``edges`` is a file cut short or mistyped, not a job whose every
        vertex is its own source and sink; ``edges: []`` says that is meant."""
        if (
            isinstance(data, dict)
            and "edges" not in data
            and isinstance(data.get("vertices"), list)
            and len(data["vertices"]) > 1
        ):
            raise FieldError(
                "edges",
                f"required field is missing: {len(data['vertices'])} vertices and no edges would "
                "plan each as its own source and sink (write [] if that is meant)",
            )
        return data

    @model_validator(mode="after")
    def _graph_checks(self) -> JobProfile:
        ids: dict[str, int] = {}
        names: dict[str, int] = {}
        for i, v in enumerate(self.vertices):
            if v.id in ids:
                raise FieldError(f"vertices[{i}].id", f"duplicate vertex id {v.id!r}")
            if v.name in names:
                raise FieldError(f"vertices[{i}].name", f"duplicate vertex name {v.name!r}")
            ids[v.id] = i
            names[v.name] = i
        for i, e in enumerate(self.edges):
            for end in ("source", "target"):
                if getattr(e, end) not in ids:
                    raise FieldError(f"edges[{i}].{end}", f"unknown vertex id {getattr(e, end)!r}")
            up, down = self.vertices[ids[e.source]], self.vertices[ids[e.target]]
            for name, values, n in (
                ("records_per_s", e.records_per_s, up.parallelism),
                ("bytes_per_s", e.bytes_per_s, up.parallelism),
                ("receiver_shares", e.receiver_shares, down.parallelism),
            ):
                if values is not None and len(values) != n:
                    end = "upstream" if name != "receiver_shares" else "downstream"
                    raise FieldError(f"edges[{i}].{name}", f"has {len(values)} values for {n} {end} subtasks")
            if e.ship_strategy is ShipStrategy.FORWARD and up.parallelism != down.parallelism:
                raise FieldError(
                    f"edges[{i}].ship_strategy",
                    f"FORWARD needs equal parallelism, {up.name!r} has {up.parallelism} "
                    f"and {down.name!r} {down.parallelism}",
                )
        try:
            self.graph().topological_order(key=lambda _: 0)
        except CycleError:
            raise FieldError("edges", f"the job graph has a cycle through {_first_on_cycle(self)!r}") from None
        return self

    _vertex_index: tuple[int, dict[str, VertexProfile]] | None = PrivateAttr(default=None)

    def vertex(self, vertex_id: str) -> VertexProfile:
        """The vertex with this id, from an index built on first use (a fleet job has thousands of vertices, and
        building its problem looks one up per edge); rebuilt when ``vertices`` is another list."""
        cached = self._vertex_index
        if cached is None or cached[0] != id(self.vertices) or len(cached[1]) != len(self.vertices):
            cached = self._vertex_index = (id(self.vertices), {v.id: v for v in self.vertices})
        v = cached[1].get(vertex_id)
        if v is None or v.id != vertex_id:
            raise KeyError(vertex_id)
        return v

    def graph(self) -> DiGraph[str]:
        return DiGraph((v.id for v in self.vertices), ((e.source, e.target) for e in self.edges))

    def topological_vertices(self) -> list[VertexProfile]:
        """Vertices in a deterministic topological order (ties broken by position in the file)."""
        order = {v.id: i for i, v in enumerate(self.vertices)}
        return [self.vertex(vid) for vid in self.graph().topological_order(key=order.__getitem__)]

    def sources(self) -> list[VertexProfile]:
        g = self.graph()
        return [v for v in self.vertices if g.in_degree(v.id) == 0]

    def sinks(self) -> list[VertexProfile]:
        g = self.graph()
        return [v for v in self.vertices if g.out_degree(v.id) == 0]

    def dump(self) -> dict[str, Any]:
        """The JSON object of this profile; the optional TaskManager figures only when measured, so a profile without
        them reads (and hashes) as it did before they existed."""
        data = self.model_dump(mode="json")
        if not data["taskmanagers"]:
            del data["taskmanagers"]
        if not data["latency"]:  # issue 25: a profile without latency tracking reads and hashes as before
            del data["latency"]
        drop_unset(data["job"], "flink_version")
        for v in data["vertices"]:
            drop_unset(v, "cpu_calibration", "cpu_fixed_share")
            for s in v["subtasks"]:  # deliveries not recorded (older histories): as before they existed
                drop_unset(s, "buffers_in_per_s")
        for t in data.get("taskmanagers", []):  # co-tenants not recorded: as before they existed
            drop_unset(t, "cotenant_cores")
            drop_unset(t, "cotenant_subtasks")
            drop_unset(t, "rate_fit")
            drop_unset(t, "netty_server_thread_cores")  # threads not recorded: as before the field existed
        return data

    def digest(self) -> str:
        return canonical_digest(self.dump())


def _first_on_cycle(profile: JobProfile) -> str:
    """The vertex a cycle error names: networkx's ``find_cycle`` picks it, as it did before graphlib checked the
    graph, so the message stays the same (networkx is imported on this error only)."""
    import networkx as nx

    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_nodes_from(profile.graph().nodes)
    g.add_edges_from(profile.graph().edges)
    return str(nx.find_cycle(g)[0][0])


def copies(strategy: ShipStrategy, n_down: int) -> int:
    """Copies of each record an edge delivers: ``n_down`` for BROADCAST (Flink's numBytesOut counts each), else 1."""
    return n_down if strategy is ShipStrategy.BROADCAST else 1


@dataclass(frozen=True)
class EdgeOutput:
    """What each upstream subtask puts on one edge (one copy per record), and where the figures come from."""

    records_per_s: tuple[float, ...]
    bytes_per_s: tuple[float, ...]
    basis: str


def edge_output(profile: JobProfile, edge: EdgeProfile) -> EdgeOutput:
    """The edge's own figures when the profile has them; otherwise (v1 profiles, hand-written ones) every record the
    upstream subtask emits, at ``bytes_per_record_out`` each — the v1 contract: a vertex sends each of its records,
    of that size, along every outgoing edge (one copy per receiver on a BROADCAST edge)."""
    if edge.records_per_s is not None and edge.bytes_per_s is not None:
        return EdgeOutput(tuple(edge.records_per_s), tuple(edge.bytes_per_s), edge.basis or "profile")
    up = profile.vertex(edge.source)
    return EdgeOutput(
        tuple(s.records_out_per_s for s in up.subtasks),
        tuple(s.records_out_per_s * up.bytes_per_record_out for s in up.subtasks),
        "bytes_per_record_out",
    )


def load_profile(path: str | Path) -> JobProfile:
    """Load and validate a profile JSON file."""
    return load_model(path, JobProfile, finite=" (JSON has no NaN: write null where Flink reported NaN)")
