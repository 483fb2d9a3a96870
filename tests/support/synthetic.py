"""Synthetic metric histories with known truth, written in the collector's Parquet layout.

A :class:`SynthJob` says what is true about a job: per vertex the records a subtask processes per busy second on a
server core (``true_rate``), its selectivity, bytes per output record and state size, and where each subtask runs
(TaskManagers have a ``speed``: a subtask on a 0.3-speed Pi spends 1/0.3 as long per record). A
:class:`HistoryShape` says how the history looks: a slow load wave, measurement noise, warm-up after every (re)start
(metrics missing for the first seconds, rates ramping up, busy time inflated while the JIT warms), load spikes that
saturate the bottleneck and backpressure everything upstream of it, restarts (subtasks not RUNNING, then a new
attempt that catches up on its backlog) and NaN busy readings.

Edges carry what Flink's metrics show (:class:`SynthEdge`): a producer's ``numBytesOut`` sums every edge it feeds
(a broadcast edge once per receiver), its ``numRecordsOut`` counts each record once; a side output carries a share of
the records at a size of its own; a HASH edge may give its downstream subtasks unequal shares (key skew); RESCALE is
wired pointwise like Flink. :func:`edge_truth` gives the per-edge figures a profile must recover.

Each subtask's buffers in a second (``numBuffersInLocal/RemotePerSecond``) follow from its readings of records and
bytes in, channel by channel (:class:`_Channels`): one buffer per flush cycle that finds data, ``min(records/s,
1000/timeout)`` at Flink's default timeout, plus every buffer that fills first; local when sender and receiver share
a TaskManager. Sources have no input channels: 0, as Flink reports.

Everything that is not warm-up or a restart obeys ``busy = records_in / true_rate`` (sources: ``records_out``), so a
profile that trims warm-up and drops restarts must recover ``true_rate`` and the selectivities; one that does not is
visibly off. Generation is vectorised over (time x subtask) blocks, so 50M samples take about a minute.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx
import numpy as np
import pyarrow as pa

from placement.collect.layout import (
    METRIC_COLUMNS,
    SAMPLE_SCHEMA,
    CheckpointConfig,
    EdgeInfo,
    PartWriter,
    RunManifest,
    RunTaskManager,
    RunVertex,
    SubtaskLocation,
    write_manifest,
)
from placement.flink.facts import DEFAULT_BUFFER_TIMEOUT_MS, SEGMENT_BYTES
from placement.profile.edge_flows import pointwise_receivers

# Flush cycles a second of a channel that has data (the synthetic job runs with Flink's default buffer timeout).
FLUSHES_PER_S = 1000.0 / DEFAULT_BUFFER_TIMEOUT_MS


def stable_id(*parts: str) -> str:
    """A 32-hex id like Flink's vertex and job ids, stable for the same input."""
    return hashlib.md5("\x1f".join(parts).encode()).hexdigest()


@dataclass(frozen=True)
class SynthVertex:
    name: str
    parallelism: int
    true_rate: float  # records one subtask handles per busy second on a speed-1.0 core (sources: records emitted)
    selectivity: float = 1.0  # records out per record in (ignored for sources)
    bytes_per_record_out: float = 100.0
    source_rate: float | None = None  # sources: records/s each subtask emits at nominal load
    skew: tuple[float, ...] | None = None  # sources: per-subtask multiplier of source_rate
    state_bytes: float = 0.0
    taskmanagers: tuple[str, ...] | None = None  # TaskManager id of subtask i (cycled); default: the first TM

    @property
    def id(self) -> str:
        return stable_id("vertex", self.name)


@dataclass(frozen=True)
class SynthEdge:
    """A job edge and what travels along it."""

    source: str
    target: str
    strategy: str
    records_share: float = 1.0  # share of the source's records on this edge (a fan-out: 1 on each; side outputs < 1)
    bytes_per_record: float | None = None  # size of a record on this edge; default the source's bytes_per_record_out
    key_shares: tuple[float, ...] | None = None  # HASH: share of the records each downstream subtask gets (skew)


@dataclass(frozen=True)
class SynthTaskManager:
    id: str
    host: str
    speed: float = 1.0
    cpu_cores: float = 4.0
    slots: int = 4


@dataclass(frozen=True)
class SynthJob:
    name: str
    vertices: tuple[SynthVertex, ...]
    edges: tuple[tuple[str, str, str] | SynthEdge, ...]  # (source name, target name, ship strategy) or a SynthEdge
    taskmanagers: tuple[SynthTaskManager, ...] = (SynthTaskManager("server", "127.0.0.1"),)
    checkpoint_interval_ms: float | None = None  # checkpointing (full snapshots: each writes the whole state)

    def vertex(self, name: str) -> SynthVertex:
        return next(v for v in self.vertices if v.name == name)

    @property
    def edge_specs(self) -> list[SynthEdge]:
        return [e if isinstance(e, SynthEdge) else SynthEdge(*e) for e in self.edges]

    def edge_bytes_per_record(self, e: SynthEdge) -> float:
        return self.vertex(e.source).bytes_per_record_out if e.bytes_per_record is None else e.bytes_per_record

    def graph(self) -> nx.DiGraph:
        g = nx.DiGraph()
        g.add_nodes_from(v.name for v in self.vertices)
        g.add_edges_from((e.source, e.target) for e in self.edge_specs)
        return g

    def tm(self, tm_id: str) -> SynthTaskManager:
        return next(t for t in self.taskmanagers if t.id == tm_id)

    def subtask_tm(self, v: SynthVertex, i: int) -> SynthTaskManager:
        ids = v.taskmanagers or (self.taskmanagers[0].id,)
        return self.tm(ids[i % len(ids)])


@dataclass(frozen=True)
class HistoryShape:
    """How a synthetic history looks around its truth: length, load, noise, warm-up, backpressure, restarts."""

    duration_s: float = 900.0
    interval_s: float = 1.0
    warmup_s: float = 60.0  # after this long an attempt is warm (ramp and catch-up < 0.3 %, JIT < 2 %)
    metrics_delay_s: float = 10.0  # Flink's metric fetcher shows nothing for the first seconds of an attempt
    noise: float = 0.05  # relative sd of every reading
    load_wave: float = 0.15  # amplitude of a slow sinusoidal load variation
    wave_period_s: float = 600.0
    backpressure_episodes: int = 2
    episode_s: float = 30.0
    spike: float = 4.0  # demand multiplier during an episode (saturates the bottleneck)
    restarts: int = 1
    restart_downtime_s: float = 15.0
    nan_fraction: float = 0.01  # busy readings that come back NaN
    seed: int = 0
    start_ms: int = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass
class _Nominal:
    """Per-subtask figures at nominal load (1.0), in column order of the flattened subtask axis."""

    vertex_ids: list[str]
    subtasks: np.ndarray
    records_in: np.ndarray
    records_out: np.ndarray
    bytes_in: np.ndarray
    bytes_out: np.ndarray
    busy: np.ndarray  # ms per second at nominal load on the subtask's host
    upstream_of_bottleneck: np.ndarray  # bool: is backpressured when the bottleneck saturates
    max_load: float  # load factor at which the bottleneck is 98 % busy


def _nominal(job: SynthJob) -> _Nominal:
    g = job.graph()
    if not nx.is_directed_acyclic_graph(g):
        raise ValueError("synthetic job graph has a cycle")
    out_rate: dict[str, np.ndarray] = {}
    per_vertex: list[tuple[SynthVertex, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    specs = job.edge_specs
    for name in nx.lexicographical_topological_sort(g, key=lambda n: [v.name for v in job.vertices].index(n)):
        v = job.vertex(name)
        p = v.parallelism
        speed = np.array([job.subtask_tm(v, i).speed for i in range(p)])
        ups = list(g.predecessors(name))
        if not ups:
            if v.source_rate is None:
                raise ValueError(f"source {name!r} needs source_rate")
            skew = np.array(v.skew if v.skew else (1.0,) * p, dtype=float)
            rin, bin_ = np.zeros(p), np.zeros(p)
            rout = v.source_rate * skew
            work = rout
        else:
            rin, bin_ = np.zeros(p), np.zeros(p)
            for e in (e for e in specs if e.target == name):
                received = _received(e, out_rate[e.source] * e.records_share, p)
                rin += received
                bin_ += received * job.edge_bytes_per_record(e)
            rout = rin * v.selectivity
            work = rin
        outs = [e for e in specs if e.source == name]
        if outs:  # Flink's numBytesOut: every edge's bytes, a broadcast edge's once per receiver
            bout = sum(rout * e.records_share * job.edge_bytes_per_record(e) * _copies(job, e) for e in outs)
        else:
            bout = rout * v.bytes_per_record_out
        busy = work / (v.true_rate * speed) * 1000.0
        out_rate[name] = rout
        per_vertex.append((v, rin, rout, bin_, bout, busy))
    order = {v.name: i for i, v in enumerate(job.vertices)}
    per_vertex.sort(key=lambda item: order[item[0].name])
    busiest = max(per_vertex, key=lambda item: item[5].max())
    if busiest[5].max() >= 980:
        raise ValueError(f"vertex {busiest[0].name!r} is saturated at nominal load; lower its load or raise true_rate")
    upstream = nx.ancestors(g, busiest[0].name)
    return _Nominal(
        vertex_ids=[v.id for v, *_ in per_vertex for _ in range(v.parallelism)],
        subtasks=np.concatenate([np.arange(v.parallelism) for v, *_ in per_vertex]).astype(np.int32),
        records_in=np.concatenate([x[1] for x in per_vertex]),
        records_out=np.concatenate([x[2] for x in per_vertex]),
        bytes_in=np.concatenate([x[3] for x in per_vertex]),
        bytes_out=np.concatenate([x[4] for x in per_vertex]),
        busy=np.concatenate([x[5] for x in per_vertex]),
        upstream_of_bottleneck=np.concatenate([np.full(v.parallelism, v.name in upstream) for v, *_ in per_vertex]),
        max_load=980.0 / float(busiest[5].max()),
    )


def _copies(job: SynthJob, e: SynthEdge) -> int:
    return job.vertex(e.target).parallelism if e.strategy.upper() == "BROADCAST" else 1


def _received(e: SynthEdge, sent: np.ndarray, p: int) -> np.ndarray:
    """Records/s each of the ``p`` downstream subtasks receives over ``e`` when upstream subtask i sends ``sent[i]``."""
    s = e.strategy.upper()
    out = np.zeros(p)
    if s in ("FORWARD", "RESCALE"):  # pointwise, like Flink; round-robin within a block
        for i, x in enumerate(sent):
            block = pointwise_receivers(i, len(sent), p)
            out[block.start : block.stop] += x / len(block)
    elif s == "GLOBAL":
        out[0] = sent.sum()
    elif s == "BROADCAST":
        out += sent.sum()
    elif s == "HASH" and e.key_shares is not None:
        out += sent.sum() * np.asarray(e.key_shares) / sum(e.key_shares)
    else:  # REBALANCE, HASH with uniform keys
        out += sent.sum() / p
    return out


@dataclass(frozen=True)
class _Channels:
    """The input channels that carry records at nominal load, sorted by receiver: the receiving subtask (its index on
    the flattened subtask axis), the channel's share of that subtask's records and bytes in, and whether its sender
    runs in the same TaskManager (Flink counts those buffers as local, the others as remote)."""

    receiver: np.ndarray
    records_share: np.ndarray
    bytes_share: np.ndarray
    local: np.ndarray


def _channels(job: SynthJob, nom: _Nominal) -> _Channels:
    """Every (sender, receiver) pair of subtasks an edge puts records on at nominal load, as :class:`_Channels`."""
    # a vertex's subtasks on the flattened axis end where the parallelisms of it and the vertices before it do
    end = dict(
        zip([v.name for v in job.vertices], itertools.accumulate(v.parallelism for v in job.vertices), strict=True)
    )
    rows = []
    for e in job.edge_specs:
        up, down = job.vertex(e.source), job.vertex(e.target)
        start, base = end[up.name] - up.parallelism, end[down.name] - down.parallelism
        sent = nom.records_out[start : start + up.parallelism] * e.records_share
        for i in range(up.parallelism):
            # what subtask i alone puts on each receiver: the edge's wiring as _received spreads records
            got = _received(e, np.where(np.arange(up.parallelism) == i, sent, 0.0), down.parallelism)
            rows.extend(
                (
                    base + j,
                    got[j],
                    got[j] * job.edge_bytes_per_record(e),
                    job.subtask_tm(up, i).id == job.subtask_tm(down, j).id,
                )
                for j in np.flatnonzero(got > 0)
            )
    rows.sort(key=lambda r: r[0])
    receiver = np.array([r[0] for r in rows], dtype=np.int64)
    records, data = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    bytes_in = nom.bytes_in[receiver]
    return _Channels(
        receiver,
        records / nom.records_in[receiver],
        np.divide(data, bytes_in, out=np.zeros_like(data), where=bytes_in > 0),
        np.array([r[3] for r in rows], dtype=bool),
    )


def _deliveries(records_in: np.ndarray, bytes_in: np.ndarray, ch: _Channels, local: bool) -> np.ndarray:
    """(time x subtask) buffers delivered a second over the channels that are ``local`` (or remote), from the
    subtasks' readings of records and bytes in — the flush rule of :func:`placement.costmodel.traffic.messages_per_s`:
    a flush cycle that finds data sends one buffer, and a buffer that fills is sent at once."""
    mine = ch.local == local
    receiver = ch.receiver[mine]
    records = records_in[:, receiver] * ch.records_share[mine]
    full = bytes_in[:, receiver] * ch.bytes_share[mine] / SEGMENT_BYTES
    out = np.zeros_like(records_in)
    if receiver.size:
        starts = np.flatnonzero(np.r_[True, receiver[1:] != receiver[:-1]])  # each receiver's run of channels
        out[:, receiver[starts]] = np.add.reduceat(np.minimum(records, FLUSHES_PER_S) + full, starts, axis=1)
    return out


def edge_truth(job: SynthJob) -> list[dict[str, object]]:
    """Per edge (in ``job.edges`` order): what each upstream subtask puts on it at nominal load (one copy per record)
    and, for HASH, the downstream subtasks' shares — the figures a profile must recover."""
    nom = _nominal(job)
    start, rout = 0, {}
    for v in job.vertices:
        rout[v.name] = nom.records_out[start : start + v.parallelism]
        start += v.parallelism
    out = []
    for e in job.edge_specs:
        records = rout[e.source] * e.records_share
        shares = None
        if e.strategy.upper() == "HASH":
            shares = (
                [float(x) / sum(e.key_shares) for x in e.key_shares]
                if e.key_shares
                else [1.0 / job.vertex(e.target).parallelism] * job.vertex(e.target).parallelism
            )
        out.append(
            {
                "source": e.source,
                "target": e.target,
                "records_per_s": [float(x) for x in records],
                "bytes_per_s": [float(x) * job.edge_bytes_per_record(e) for x in records],
                "receiver_shares": shares,
            }
        )
    return out


def _record_size(job: SynthJob, v: SynthVertex) -> float:
    """Bytes of one record the vertex emits, over its edges (every copy counted): the profile's bytes_per_record_out."""
    outs = [e for e in job.edge_specs if e.source == v.name]
    records = sum(e.records_share * _copies(job, e) for e in outs)
    if not outs or records <= 0:
        return v.bytes_per_record_out
    return sum(e.records_share * _copies(job, e) * job.edge_bytes_per_record(e) for e in outs) / records


def truth(job: SynthJob) -> dict[str, dict[str, float | None]]:
    """The figures a correct profile recovers, per vertex name (rates at nominal load, warm, unthrottled)."""
    nom = _nominal(job)
    out: dict[str, dict[str, float | None]] = {}
    start = 0
    for v in job.vertices:
        sl = slice(start, start + v.parallelism)
        start += v.parallelism
        rin, rout = float(nom.records_in[sl].sum()), float(nom.records_out[sl].sum())
        out[v.name] = {
            "true_rate_server_core": v.true_rate,
            "selectivity": (rout / rin) if rin > 0 else None,  # sources: undefined
            "bytes_per_record_out": _record_size(job, v),
            "records_in_per_s": rin,
            "records_out_per_s": rout,
            "busy_ms_per_s": float(nom.busy[sl].mean()),
            "state_bytes": v.state_bytes,
        }
    return out


@dataclass
class _Schedule:
    """Restarts and backpressure episodes of one run, in seconds from its start."""

    restarts: list[float] = field(default_factory=list)
    episodes: list[tuple[float, float]] = field(default_factory=list)


def _schedule(shape: HistoryShape, rng: np.random.Generator) -> _Schedule:
    d = shape.duration_s
    sched = _Schedule()
    # Keep events apart from each other and from the start so each one is followed by enough warm time.
    slots = shape.restarts + shape.backpressure_episodes
    if slots:
        edges = np.linspace(shape.warmup_s * 1.5, d - shape.episode_s, slots + 1)
        kinds = ["restart"] * shape.restarts + ["episode"] * shape.backpressure_episodes
        rng.shuffle(kinds)
        for k, (lo, hi) in zip(kinds, itertools.pairwise(edges), strict=True):
            at = float(rng.uniform(lo, lo + max(0.0, (hi - lo) * 0.3)))
            if k == "restart":
                sched.restarts.append(at)
            else:
                sched.episodes.append((at, at + shape.episode_s))
    sched.restarts.sort()
    return sched


def _attempts(t: np.ndarray, shape: HistoryShape, sched: _Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per time: attempt number, attempt start (s, nan while down) and whether subtasks are running."""
    attempt = np.zeros(t.shape, dtype=np.int32)
    start = np.zeros(t.shape)
    running = np.ones(t.shape, dtype=bool)
    for r in sched.restarts:
        back = r + shape.restart_downtime_s
        after = t >= r
        attempt[after] += 1
        start[t >= back] = back
        down = after & (t < back)
        running[down] = False
        start[down] = np.nan
    return attempt, start, running


def _block(
    t: np.ndarray, nom: _Nominal, channels: _Channels, shape: HistoryShape, sched: _Schedule, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """Samples for times ``t`` (s from run start) x every subtask, flattened time-major like the collector writes."""
    attempt, a_start, running = _attempts(t, shape, sched)
    age = t - a_start  # nan while down
    tau = shape.warmup_s / 6.0
    warm = np.exp(-np.nan_to_num(age, nan=0.0) / tau)  # 1 at attempt start, ~0.0025 at warmup_s
    demand = 1.0 + shape.load_wave * np.sin(2 * np.pi * t / shape.wave_period_s)
    for lo, hi in sched.episodes:
        demand = np.where((t >= lo) & (t < hi), demand * shape.spike, demand)
    demand = demand * np.where(attempt > 0, 1.0 + 1.5 * warm, 1.0)  # catch up on the backlog after a restart
    throttled = demand > nom.max_load
    load = np.minimum(demand, nom.max_load) * (1.0 - warm)  # ramp-up after (re)start
    # Cold code: more busy time per record, decaying a bit slower than the ramp (about 2 % left at warmup_s).
    jit = 1.0 + 3.0 * np.exp(-np.nan_to_num(age, nan=0.0) / (shape.warmup_s / 5.0))

    n_t, n_s = t.size, nom.busy.size
    L = load[:, None]

    def noisy(x: np.ndarray) -> np.ndarray:
        return np.maximum(x * (1.0 + shape.noise * rng.standard_normal((n_t, n_s))), 0.0)

    busy = np.minimum(noisy(nom.busy[None, :] * L * jit[:, None]), 1000.0)
    free = 1000.0 - busy
    bp = np.where(throttled[:, None] & nom.upstream_of_bottleneck[None, :], free * 0.85, 0.0)
    bp = np.minimum(noisy(bp), free)
    idle = free - bp
    cols = {
        "busy_ms_per_s": busy,
        "idle_ms_per_s": idle,
        "backpressured_ms_per_s": bp,
        "records_in_per_s": noisy(nom.records_in[None, :] * L),
        "records_out_per_s": noisy(nom.records_out[None, :] * L),
        "bytes_in_per_s": noisy(nom.bytes_in[None, :] * L),
        "bytes_out_per_s": noisy(nom.bytes_out[None, :] * L),
    }
    # from the readings above, drawing nothing: the other columns stay what they were before these existed
    for column, local in (("buffers_in_local_per_s", True), ("buffers_in_remote_per_s", False)):
        cols[column] = _deliveries(cols["records_in_per_s"], cols["bytes_in_per_s"], channels, local)
    nan_busy = rng.random((n_t, n_s)) < shape.nan_fraction
    cols["busy_ms_per_s"] = np.where(nan_busy, np.nan, cols["busy_ms_per_s"])
    no_metrics = ~running | (np.nan_to_num(age, nan=0.0) < shape.metrics_delay_s)
    for c in METRIC_COLUMNS:
        cols[c] = np.where(no_metrics[:, None], np.nan, cols[c]).ravel()
    start_ms = np.where(np.isnan(a_start), -1, shape.start_ms + np.nan_to_num(a_start) * 1000).astype(np.int64)
    cols["ts_ms"] = np.repeat((shape.start_ms + t * 1000).astype(np.int64), n_s)
    cols["attempt"] = np.repeat(attempt, n_s)
    cols["attempt_start_ms"] = np.repeat(start_ms, n_s)
    cols["running"] = np.repeat(running, n_s)
    cols["subtask"] = np.tile(nom.subtasks, n_t)
    return cols


def _to_table(cols: dict[str, np.ndarray], vertex_codes: np.ndarray, dictionary: pa.Array, n_t: int) -> pa.Table:
    arrays = []
    for f in SAMPLE_SCHEMA:
        if f.name == "vertex_id":
            arrays.append(
                pa.DictionaryArray.from_arrays(pa.array(np.tile(vertex_codes, n_t)), dictionary).cast(pa.string())
            )
        elif f.name in METRIC_COLUMNS:
            arrays.append(pa.array(cols[f.name], type=f.type, from_pandas=True))  # NaN -> null
        elif f.name == "attempt_start_ms":
            v = cols[f.name]
            arrays.append(pa.array(v, type=f.type, mask=v < 0))
        else:
            arrays.append(pa.array(cols[f.name], type=f.type))
    return pa.Table.from_arrays(arrays, schema=SAMPLE_SCHEMA)


def write_run(
    job: SynthJob,
    shape: HistoryShape,
    root: str | Path,
    *,
    job_id: str | None = None,
    run_id: str | None = None,
    rows_per_part: int = 2_000_000,
    state_bytes: Mapping[str, float | None] | None = None,
) -> RunManifest:
    """Generate one run of ``job`` and write it (Parquet parts + manifest) under ``root``."""
    rng = np.random.default_rng(shape.seed)
    nom = _nominal(job)
    channels = _channels(job, nom)
    sched = _schedule(shape, rng)
    job_id = job_id or stable_id("job", job.name, str(shape.seed))
    run_id = run_id or f"synthetic-{shape.seed:04d}"
    writer = PartWriter(root, job_id, run_id)
    uniq = list(dict.fromkeys(nom.vertex_ids))
    codes = np.array([uniq.index(v) for v in nom.vertex_ids], dtype=np.int32)
    dictionary = pa.array(uniq, type=pa.string())
    n_ts = math.floor(shape.duration_s / shape.interval_s)
    per_block = max(1, rows_per_part // nom.busy.size)
    for k0 in range(0, n_ts, per_block):
        t = np.arange(k0, min(n_ts, k0 + per_block)) * shape.interval_s
        writer.write(_to_table(_block(t, nom, channels, shape, sched, rng), codes, dictionary, t.size))
    states = dict(state_bytes or {})
    manifest = RunManifest(
        job_id=job_id,
        job_name=job.name,
        run_id=run_id,
        origin="synthetic",
        started_ms=shape.start_ms,
        ended_ms=shape.start_ms + int(n_ts * shape.interval_s * 1000),
        interval_s=shape.interval_s,
        requested_duration_s=shape.duration_s,
        stopped="completed",
        samples=writer.rows,
        files=writer.files,
        vertices=[
            RunVertex(
                id=v.id,
                name=v.name,
                parallelism=v.parallelism,
                state_bytes=states.get(v.name, v.state_bytes),
                checkpointed_bytes=states.get(v.name, v.state_bytes) if job.checkpoint_interval_ms else None,
            )
            for v in job.vertices
        ],
        checkpoints=CheckpointConfig(interval_ms=job.checkpoint_interval_ms) if job.checkpoint_interval_ms else None,
        edges=[
            EdgeInfo(source=job.vertex(e.source).id, target=job.vertex(e.target).id, ship_strategy=e.strategy)
            for e in job.edge_specs
        ],
        locations=[
            SubtaskLocation(
                vertex_id=v.id, subtask=i, taskmanager_id=job.subtask_tm(v, i).id, host=job.subtask_tm(v, i).host
            )
            for v in job.vertices
            for i in range(v.parallelism)
        ],
        taskmanagers=[
            RunTaskManager(id=t.id, host=t.host, slots=t.slots, cpu_cores=t.cpu_cores) for t in job.taskmanagers
        ],
        notes=[
            (
                f"restarts at {', '.join(f'{r:.0f}s' for r in sched.restarts) or 'none'}; "
                f"backpressure episodes at {', '.join(f'{a:.0f}-{b:.0f}s' for a, b in sched.episodes) or 'none'}"
            )
        ],
        truth=truth(job),
    )
    write_manifest(root, manifest)
    return manifest


def write_history(
    job: SynthJob,
    shape: HistoryShape,
    root: str | Path,
    *,
    runs: int = 1,
    jobs: int = 1,
    rows_per_part: int = 2_000_000,
) -> list[RunManifest]:
    """Several submissions (``jobs``, each a new Flink job id) of ``runs`` consecutive runs each, same truth."""
    out = []
    start = shape.start_ms
    for j in range(jobs):
        for r in range(runs):
            seed = shape.seed + 1000 * j + r
            s = HistoryShape(**{**shape.__dict__, "seed": seed, "start_ms": start})
            out.append(
                write_run(
                    job,
                    s,
                    root,
                    job_id=stable_id("job", job.name, str(shape.seed), str(j)),
                    run_id=f"run-{j:03d}-{r:03d}",
                    rows_per_part=rows_per_part,
                )
            )
            start += int(shape.duration_s * 1000) + 60_000
    return out


def scaled_job(job: SynthJob, factor: int) -> SynthJob:
    """``job`` with every parallelism multiplied by ``factor`` (FORWARD edges stay valid): more subtasks per sample
    time."""
    return SynthJob(
        name=job.name,
        vertices=tuple(
            SynthVertex(
                **{
                    **v.__dict__,
                    "parallelism": v.parallelism * factor,
                    "skew": tuple(v.skew) * factor if v.skew else None,
                }
            )
            for v in job.vertices
        ),
        edges=job.edges,
        taskmanagers=job.taskmanagers,
        checkpoint_interval_ms=job.checkpoint_interval_ms,
    )


# ---- the lab's IoT job, matching examples/profiles/iot-sensors.json ------------------------------------------------

EDGE_LAB_TASKMANAGERS = (
    SynthTaskManager("server", "192.168.1.180", speed=1.0, cpu_cores=8, slots=8),
    SynthTaskManager("rpi1", "192.168.1.181", speed=0.3, cpu_cores=4, slots=4),
    SynthTaskManager("rpi2", "192.168.1.182", speed=0.3, cpu_cores=4, slots=4),
    SynthTaskManager("rpi3", "192.168.1.183", speed=0.3, cpu_cores=4, slots=4),
)

IOT_JOB = SynthJob(
    name="iot-sensors",
    vertices=(
        # Sources run on the Pis where the sensors are (the inventory pins them there): busy is measured at speed 0.3.
        SynthVertex(
            "Source: Sensors",
            3,
            true_rate=250_000,
            bytes_per_record_out=220,
            source_rate=30_000,
            skew=(1.0, 0.95, 1.05),
            taskmanagers=("rpi1", "rpi2", "rpi3"),
        ),
        SynthVertex("Parse", 3, true_rate=142_857, bytes_per_record_out=120),
        SynthVertex("Filter", 3, true_rate=666_667, selectivity=0.3, bytes_per_record_out=120),
        SynthVertex("Enrich", 3, true_rate=100_000, bytes_per_record_out=48),
        SynthVertex(
            "Window Aggregate",
            2,
            true_rate=30_000,
            selectivity=40 / 13_500,
            bytes_per_record_out=64,
            state_bytes=24_000_000,
        ),
        SynthVertex("Sink: Readings", 1, true_rate=20_000, selectivity=0.0, bytes_per_record_out=0),
    ),
    edges=(
        ("Source: Sensors", "Parse", "FORWARD"),
        ("Parse", "Filter", "FORWARD"),
        ("Filter", "Enrich", "FORWARD"),
        ("Enrich", "Window Aggregate", "HASH"),
        ("Window Aggregate", "Sink: Readings", "REBALANCE"),
    ),
    taskmanagers=EDGE_LAB_TASKMANAGERS,
)


# ---- the shapes the cost model must get right edge by edge (like the lab's ShapesJob) --------------------------------

SHAPES_JOB = SynthJob(
    name="shapes",
    vertices=(
        SynthVertex(
            "Source: Clicks",
            2,
            true_rate=200_000,
            bytes_per_record_out=250,
            source_rate=1_000,
            skew=(1.0, 0.6),
            taskmanagers=("rpi1",),
        ),
        SynthVertex("Parse Clicks", 2, true_rate=100_000, bytes_per_record_out=50, taskmanagers=("rpi1",)),
        SynthVertex("Sink: Archive", 1, true_rate=200_000, selectivity=0.0, bytes_per_record_out=0),
        SynthVertex("Click Counts", 2, true_rate=50_000, selectivity=0.1, bytes_per_record_out=30, state_bytes=4e6),
        SynthVertex(
            "Source: Rules", 1, true_rate=200_000, bytes_per_record_out=300, source_rate=200, taskmanagers=("rpi2",)
        ),
        SynthVertex("Parse Rules", 1, true_rate=100_000, bytes_per_record_out=40),
        SynthVertex("Apply Rules", 3, true_rate=100_000, bytes_per_record_out=20),
        SynthVertex("Sink: Hits", 1, true_rate=200_000, selectivity=0.0, bytes_per_record_out=0),
        SynthVertex("Source: Orders", 1, true_rate=200_000, bytes_per_record_out=600, source_rate=500),
        SynthVertex("Split Orders", 1, true_rate=100_000, selectivity=1.2, bytes_per_record_out=20),
        SynthVertex("Sink: Summaries", 1, true_rate=200_000, selectivity=0.0, bytes_per_record_out=0),
        SynthVertex("Sink: Large Orders", 1, true_rate=200_000, selectivity=0.0, bytes_per_record_out=0),
        SynthVertex("Source: Ticks", 2, true_rate=200_000, bytes_per_record_out=180, source_rate=300, skew=(1.0, 0.5)),
        SynthVertex("Normalize", 4, true_rate=100_000, bytes_per_record_out=30),
        SynthVertex("Join", 2, true_rate=50_000, selectivity=0.05, bytes_per_record_out=60),
        SynthVertex("Sink: Joined", 1, true_rate=200_000, selectivity=0.0, bytes_per_record_out=0),
    ),
    edges=(
        ("Source: Clicks", "Parse Clicks", "FORWARD"),
        SynthEdge("Parse Clicks", "Sink: Archive", "REBALANCE"),  # a fan-out: the same records twice ...
        SynthEdge("Parse Clicks", "Click Counts", "HASH", key_shares=(0.8, 0.2)),  # ... keyed, with a hot key
        ("Source: Rules", "Parse Rules", "FORWARD"),
        ("Parse Rules", "Apply Rules", "BROADCAST"),
        ("Apply Rules", "Sink: Hits", "REBALANCE"),
        ("Source: Orders", "Split Orders", "FORWARD"),
        SynthEdge("Split Orders", "Sink: Summaries", "FORWARD", records_share=1 / 1.2),  # main output: summaries
        SynthEdge("Split Orders", "Sink: Large Orders", "FORWARD", records_share=0.2 / 1.2, bytes_per_record=600),
        ("Source: Ticks", "Normalize", "RESCALE"),  # pointwise 2 -> 4
        SynthEdge("Normalize", "Join", "HASH", key_shares=(0.5, 0.5)),
        SynthEdge("Click Counts", "Join", "HASH", key_shares=(0.7, 0.3)),
        ("Join", "Sink: Joined", "REBALANCE"),
    ),
    taskmanagers=EDGE_LAB_TASKMANAGERS,
    checkpoint_interval_ms=10_000,
)


def sample_names(job: SynthJob) -> Sequence[str]:
    return [v.name for v in job.vertices]


def main(argv: Sequence[str] | None = None) -> None:
    """``PYTHONPATH=tests python -m support.synthetic --out DIR``: write a synthetic IoT history (examples/metrics)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--duration", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--restarts", type=int, default=1, help="restarts per run")
    ap.add_argument("--scale", type=int, default=1, help="multiply every parallelism")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    job = scaled_job(IOT_JOB, a.scale) if a.scale > 1 else IOT_JOB
    runs = write_history(job, HistoryShape(duration_s=a.duration, restarts=a.restarts, seed=a.seed), a.out, runs=a.runs)
    print(f"{sum(r.samples for r in runs)} samples in {len(runs)} run(s) under {a.out}")


if __name__ == "__main__":
    main()
