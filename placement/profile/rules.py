"""The profiling rules, as pure functions over data (no Spark, no files): what counts as a usable sample and how
per-subtask aggregates become a :class:`~placement.profile.format.JobProfile`.

Both engines (:mod:`placement.profile.spark_job` and :mod:`placement.profile.pandas_job`) reduce the samples to one
row per subtask with the columns in :data:`AGGREGATE_COLUMNS`; everything after that happens here.

Rules (they follow the Flink Kubernetes autoscaler where it has one):

* **Restarts.** A sample taken while its subtask was not RUNNING is dropped.
* **Warm-up.** A sample taken less than ``warmup_s`` after its subtask's execution attempt started is dropped — so
  warm-up is trimmed after *every* restart, not only at the start of a run; and collecting from a job that has been
  running for hours trims nothing. A sample whose attempt start is unknown is kept.
* **NaN.** A NaN/missing busy time is skipped (the autoscaler's rule): the sample still counts for the record and
  byte rates, but not for busy time or the true rates. Other missing metrics are skipped per metric.
* **Deliveries.** A subtask's ``buffers_in_per_s`` is its mean local plus its mean remote buffers in a second
  (``numBuffersInLocal/RemotePerSecond``; one alone when only it was recorded); null when a history has neither
  (recorded before they were, or filtered out of Prometheus), and then absent from the profile's JSON. Also null
  under a warm-up shorter than :data:`METER_SPAN_S`: Flink's ``…PerSecond`` meters average the last minute, so a young
  subtask reads every rate low by its age — the record rates and the deliveries alike, but the cost model compares the
  deliveries with ``min(records, flushes)``, which a ramp does not scale alike (a steady stream would look bursty).
* **True rates** are ratios of sums over the samples that have busy time and both record rates
  (``Σ in / Σ busy/1000``), not means of per-sample ratios, which explode when busy time is small.
* **Busy ≈ 0.** When a subtask's busy time sums to 0 its true rate is unbounded (the autoscaler's "infinite
  capacity"): reported as null with ``true_rate_unbounded = true``. When its mean busy time is below
  :data:`MIN_CONFIDENT_BUSY_MS` (or it has fewer than :data:`MIN_CONFIDENT_SAMPLES` usable samples) the subtask is
  ``confident = false``: its rate is an extrapolation of very little work and should not drive a decision.
* **Medians and p95s** are computed from a uniform random subset of the usable samples of at most about
  :data:`PERCENTILE_SAMPLES_PER_SUBTASK` per subtask (both engines, same subset rule): at that size the sampling error
  of a p95 is about half a percentile point, and it keeps the percentile sketches off the hot path for big histories.
  Per vertex, rates report the sum of the subtasks' percentiles (``*_p50_sum``, ``*_p95_sum``: a conservative total)
  and time shares the worst subtask's (``*_p50_max``, ``*_p95_max``).
* **State.** A vertex is stateful when its latest checkpoint holds state (> 0 bytes). Without any checkpoint the state
  is unknown and a vertex with a keyed (HASH) input is taken as stateful. ``--stateful``/``--stateless`` override both.
* **Edges.** What each upstream subtask puts on each job edge is resolved from the producer's and the consumers'
  figures by the rules of :mod:`placement.profile.edge_flows` (Flink reports nothing per edge); HASH edges carry the
  measured share of each downstream subtask (key skew).
* **Checkpoints.** The profile keeps the job's checkpoint interval (the larger of interval and minimum pause) and,
  per vertex, what its latest checkpoint uploaded (``checkpointed_size``: the delta when incremental), so the planner
  can charge an edge host's uplink for the checkpoints of stateful subtasks placed there.
* **Host speed.** With an inventory, a subtask's ``host_speed`` is the speed of the inventory host whose name equals
  the TaskManager's resource id, or whose name or address equals the TaskManager's host; otherwise 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
import pandas as pd

from placement.collect.layout import METRIC_COLUMNS, RunManifest, RunVertex, SubtaskLocation
from placement.errors import BadInput
from placement.flink.facts import DEFAULT_BUFFER_TIMEOUT_MS, METER_SPAN_S
from placement.inventory import Inventory
from placement.profile import edge_flows
from placement.profile.format import (
    PROFILE_FORMAT,
    EdgeProfile,
    JobInfo,
    JobProfile,
    ShipStrategy,
    SubtaskProfile,
    VertexProfile,
    copies,
)
from placement.profile.lanes import fold_manifest

T = TypeVar("T")

MIN_CONFIDENT_BUSY_MS = 10.0  # 1 % busy: below this a true rate multiplies measurement noise by > 100
MIN_CONFIDENT_SAMPLES = 10
PERCENTILE_SAMPLES_PER_SUBTASK = 2_000
QUANTILES = (0.5, 0.95)
RATE_COLUMNS = ("records_in_per_s", "records_out_per_s", "bytes_in_per_s", "bytes_out_per_s")
TIME_COLUMNS = ("busy_ms_per_s", "idle_ms_per_s", "backpressured_ms_per_s")

# The sample columns both engines read (a subset of the collector's SAMPLE_SCHEMA).
READ_COLUMNS = ("ts_ms", "vertex_id", "subtask", "attempt_start_ms", "running", *METRIC_COLUMNS)
SUBTASK_KEYS = ["vertex_id", "subtask"]

# One row per (vertex_id, subtask) from either engine.
COUNT_COLUMNS = ("rows", "samples", "warmup_trimmed", "not_running", "busy_nan", "valid")
SUM_COLUMNS = ("sum_busy_valid", "sum_in_valid", "sum_out_valid")
AGGREGATE_COLUMNS = (
    "vertex_id",
    "subtask",
    *COUNT_COLUMNS,
    *SUM_COLUMNS,
    *[f"{m}_{s}" for m in METRIC_COLUMNS for s in ("mean", "p50", "p95")],
)


def finish_aggregates(totals: pd.DataFrame, drawn: pd.DataFrame) -> pd.DataFrame:
    """Both engines' last step: per-subtask totals and the drawn samples -> one row per subtask (AGGREGATE_COLUMNS).

    ``totals`` is indexed by (vertex_id, subtask) and holds the COUNT_COLUMNS and SUM_COLUMNS plus, per metric,
    ``<m>_sum`` and ``<m>_n`` over the usable samples that have it; ``drawn`` holds vertex_id, subtask and the
    metrics of the percentile subset, one row per sample. Means are ``sum / n`` (null when n = 0); medians and p95s
    interpolate linearly between the drawn samples.
    """
    out: pd.DataFrame = totals[[*COUNT_COLUMNS, *SUM_COLUMNS]].copy()
    for c in COUNT_COLUMNS:
        out[c] = out[c].fillna(0).astype("int64")
    for m in METRIC_COLUMNS:
        n = totals[f"{m}_n"]
        out[f"{m}_mean"] = totals[f"{m}_sum"] / n.where(n > 0)
    q = drawn.groupby(SUBTASK_KEYS, sort=False)[list(METRIC_COLUMNS)].quantile(np.array(QUANTILES))
    for m in METRIC_COLUMNS:
        for qq, name in zip(QUANTILES, ("p50", "p95")):
            out[f"{m}_{name}"] = q[m].xs(qq, level=-1) if len(q) else float("nan")
    # annotated: pandas-stubs types DataFrame's methods with typing.Self, which it reads as Any for Python 3.10
    aggregates: pd.DataFrame = out.reset_index()[list(AGGREGATE_COLUMNS)]
    return aggregates


def percentile_fraction(rows: int, subtasks: int, per_subtask: int = PERCENTILE_SAMPLES_PER_SUBTASK) -> float:
    """Share of samples fed to the percentile estimators so each subtask gets about ``per_subtask`` of them."""
    if rows <= 0:
        return 1.0
    return min(1.0, per_subtask * max(1, subtasks) / rows)


@dataclass(frozen=True)
class Options:
    warmup_s: float = 60.0
    stateful: frozenset[str] = frozenset()  # vertex names or ids forced stateful
    stateless: frozenset[str] = frozenset()
    inventory: Inventory | None = None
    inventory_source: str | None = None


@dataclass
class _Notes:
    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if text not in self.items:
            self.items.append(text)


def _f(x: object) -> float | None:
    """pandas/NumPy scalar -> float, NaN/None -> None."""
    if x is None:
        return None
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) or math.isinf(v) else v


def _ratio(num: float | None, den: float | None, scale: float = 1.0) -> float | None:
    if num is None or den is None or den <= 0:
        return None
    return num / den * scale


def cpu_time_to_host_cores(inventory: Inventory | None, host: str | None) -> float:
    """Host cores per core-second of CPU time measured on ``host``: 1 for a real host (its CPU time counts its own
    cores), ``cpu_time_core_speed / speed`` for one whose CPU time counts faster cores (a lab host: a quota here)."""
    if inventory is None or host is None:
        return 1.0
    h = inventory.host(host)
    return float(h.cpu_time_core_speed) / float(h.speed or 1.0) if h.cpu_time_core_speed else 1.0


def host_speed_for(loc: SubtaskLocation | None, inventory: Inventory | None) -> tuple[float, str | None]:
    """(speed, inventory host name) of the host a subtask ran on; (1.0, None) when it cannot be matched."""
    h = (
        inventory.host_of_taskmanager(loc.taskmanager_id, loc.host)
        if loc is not None and inventory is not None
        else None
    )
    return (float(h.speed or 1.0), h.name) if h is not None else (1.0, None)


def subtask_hosts(
    manifest: RunManifest, inventory: Inventory
) -> tuple[dict[tuple[str, int], str], list[SubtaskLocation]]:
    """Where each subtask of the run ran (inventory host names, from the run's locations), and the locations whose
    TaskManager no inventory host matches. Subtasks of the job's vertices: a vanilla-placed run's lane copies are
    folded as the profile folds them (:mod:`placement.profile.lanes`)."""
    placed: dict[tuple[str, int], str] = {}
    unmatched: list[SubtaskLocation] = []
    for loc in fold_manifest(manifest).locations:
        host = host_speed_for(loc, inventory)[1]
        if host is None:
            unmatched.append(loc)
        else:
            placed[(loc.vertex_id, loc.subtask)] = host
    return placed, unmatched


def current_assignment(manifest: RunManifest, inventory: Inventory) -> dict[tuple[str, int], str] | None:
    """Where each subtask ran (inventory host names), from the run's locations; None when one cannot be matched."""
    placed, unmatched = subtask_hosts(manifest, inventory)
    return None if unmatched else (placed or None)


def _locations(runs: Iterable[RunManifest]) -> tuple[dict[tuple[str, int], SubtaskLocation], set[tuple[str, int]]]:
    """Newest known location per subtask, and the subtasks whose TaskManager changed between runs."""
    latest: dict[tuple[str, int], SubtaskLocation] = {}
    moved: set[tuple[str, int]] = set()
    for m in runs:
        for loc in m.locations:
            key = (loc.vertex_id, loc.subtask)
            prev = latest.get(key)
            if prev is not None and (prev.taskmanager_id, prev.host) != (loc.taskmanager_id, loc.host):
                moved.add(key)
            latest[key] = loc
    return latest, moved


def _state(runs: list[RunManifest], vertex_id: str, attr: str = "state_bytes") -> float | None:
    """The newest run's checkpoint figure of a vertex (``state_bytes`` or ``checkpointed_bytes``) that some run has."""
    for m in reversed(runs):
        for v in m.vertices:
            value: float | None = getattr(v, attr)
            if v.id == vertex_id and value is not None:
                return value
    return None


def _newest(runs: list[RunManifest], setting: Callable[[RunManifest], T | None]) -> T | None:
    """The newest run's value of a job-level setting (checkpointing, buffer timeout) that some run recorded."""
    return next((value for m in reversed(runs) if (value := setting(m)) is not None), None)


def _buffer_timeout(runs: list[RunManifest]) -> float:
    """The job's network flush interval: as its configuration set it, else Flink's default."""
    timeout = _newest(runs, lambda m: m.buffer_timeout_ms)
    return DEFAULT_BUFFER_TIMEOUT_MS if timeout is None else timeout


def _subtask_io(row: Mapping[str, object]) -> edge_flows.SubtaskIO:
    return edge_flows.SubtaskIO(
        records_in=_f(row.get("records_in_per_s_mean")),
        records_out=_f(row.get("records_out_per_s_mean")),
        bytes_in=_f(row.get("bytes_in_per_s_mean")),
        bytes_out=_f(row.get("bytes_out_per_s_mean")),
    )


def _edges(
    latest: RunManifest,
    vertices: list[VertexProfile],
    by_key: Mapping[tuple[str, int], Mapping[str, object]],
    notes: _Notes,
) -> list[EdgeProfile]:
    """The job's edges with what each upstream subtask put on them (:mod:`placement.profile.edge_flows`)."""
    strategies = [_ship(e.ship_strategy, notes) for e in latest.edges]
    io = {v.id: [_subtask_io(by_key.get((v.id, i), {})) for i in range(v.parallelism)] for v in vertices}
    figures = edge_flows.attribute(
        {v.id: v.parallelism for v in vertices},
        io,
        [edge_flows.Edge(e.source, e.target, st) for e, st in zip(latest.edges, strategies, strict=True)],
    )
    out = []
    for e, st, fig in zip(latest.edges, strategies, figures, strict=True):
        extra = (
            {}
            if fig is None
            else {
                "records_per_s": list(fig.records_per_s),
                "bytes_per_s": list(fig.bytes_per_s),
                "basis": fig.basis,
                "receiver_shares": list(fig.receiver_shares) if fig.receiver_shares else None,
            }
        )
        out.append(EdgeProfile(source=e.source, target=e.target, ship_strategy=st, **extra))
    if any(f is not None and f.basis == "fan-out rule" for f in figures):
        notes.add("some edges' bytes follow the fan-out rule (their consumers have other inputs too)")
    return out


def _record_sizes(vertices: list[VertexProfile], edges: list[EdgeProfile]) -> None:
    """``bytes_per_record_out`` of a vertex whose edges have figures: the bytes of one record on its edges (what they
    carry over the records they carry, every copy counted), not Flink's ``numBytesOut / numRecordsOut``, which counts a
    record once but its bytes once per output partition (and receiver)."""
    par = {v.id: v.parallelism for v in vertices}
    for v in vertices:
        own = [
            (e.bytes_per_s, e.records_per_s, copies(e.ship_strategy, par[e.target]))
            for e in edges
            if e.source == v.id and e.bytes_per_s is not None and e.records_per_s is not None
        ]
        sent = sum(sum(bytes_per_s) * n for bytes_per_s, _, n in own)
        records = sum(sum(records_per_s) * n for _, records_per_s, n in own)
        if records > 0:
            v.bytes_per_record_out = sent / records


def _ship(strategy: str, notes: _Notes) -> ShipStrategy:
    try:
        return ShipStrategy.parse(strategy)
    except ValueError:
        notes.add(f"ship strategy {strategy!r} planned as REBALANCE")
        return ShipStrategy.REBALANCE


def _sum(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) if vals else None


def _deliveries(mean: Mapping[str, float | None]) -> float | None:
    """Buffers delivered to a subtask a second: its mean local plus mean remote deliveries (Flink counts a buffer in
    one of them, by where its sender ran); one alone when only it was measured, None when neither was."""
    total = _sum((mean["buffers_in_local_per_s"], mean["buffers_in_remote_per_s"]))
    return None if total is None else max(0.0, total)  # clipped as the record rates are: a profile has no negative rate


def _max(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def assemble(
    runs: list[RunManifest], aggregates: pd.DataFrame, options: Options, *, source: str = "metrics"
) -> JobProfile:
    """Per-subtask aggregates (one row per subtask, :data:`AGGREGATE_COLUMNS`) + manifests -> the job profile."""
    if not runs:
        raise BadInput("no runs selected", source=source)
    latest = runs[-1]
    _check_state_flags(latest, options)
    notes = _Notes()
    rows = cast("list[dict[str, Any]]", aggregates.to_dict("records"))  # the columns: AGGREGATE_COLUMNS, str labels
    by_key: dict[tuple[str, int], Mapping[str, object]] = {(str(r["vertex_id"]), int(r["subtask"])): r for r in rows}
    locations, moved = _locations(runs)
    keyed_targets = {e.target for e in latest.edges if e.ship_strategy.upper().startswith("HASH")}
    job = _Inputs(runs, by_key, locations, moved, keyed_targets, options)
    unmatched: set[str] = set()
    total = {c: 0 for c in COUNT_COLUMNS}
    any_busy = False
    vertices: list[VertexProfile] = []
    for v in latest.vertices:
        rollup = _subtasks(v, job)
        for c in COUNT_COLUMNS:
            total[c] += rollup.counts[c]
        any_busy = any_busy or rollup.any_busy
        unmatched |= rollup.unmatched
        vertices.append(_vertex(v, rollup, job, notes))
    _check_usable(latest, total, any_busy, options, source)
    if unmatched:
        notes.add(
            f"TaskManagers not in {options.inventory_source or 'the inventory'} (host_speed 1.0): "
            f"{', '.join(sorted(unmatched))}"
        )
    edges = _edges(latest, vertices, by_key, notes)
    _record_sizes(vertices, edges)
    return JobProfile(format=PROFILE_FORMAT, job=_job_info(runs, total, options, notes), vertices=vertices, edges=edges)


def _check_state_flags(latest: RunManifest, options: Options) -> None:
    """``--stateful``/``--stateless`` name vertices of the job, and never the same one twice."""
    names = {v.id: v.name for v in latest.vertices}
    for flag, wanted in (("--stateful", options.stateful), ("--stateless", options.stateless)):
        for w in wanted:
            if w not in names and w not in names.values():
                raise BadInput(
                    f"no vertex {w!r} in job {latest.job_name!r} (vertices: {', '.join(names.values())})", field=flag
                )
    both = {names.get(w, w) for w in options.stateful} & {names.get(w, w) for w in options.stateless}
    if both:
        raise BadInput(f"vertex {min(both)!r} given as both --stateful and --stateless", field="--stateful")


@dataclass(frozen=True)
class _Inputs:
    """What every vertex's figures come from: the runs (newest last), the aggregates by (vertex id, subtask), the
    newest location of each subtask and those that moved between runs, the vertices with a keyed input."""

    runs: list[RunManifest]
    by_key: Mapping[tuple[str, int], Mapping[str, object]]
    locations: dict[tuple[str, int], SubtaskLocation]
    moved: set[tuple[str, int]]
    keyed_targets: set[str]
    options: Options

    @property
    def latest(self) -> RunManifest:
        return self.runs[-1]


@dataclass
class _Rollup:
    """One vertex's subtasks, summed up: their profiles, the sums its true rates divide, the sample counts, every
    subtask's percentiles per column, and what the job-level checks need (busy time seen, unmatched TaskManagers)."""

    subtasks: list[SubtaskProfile] = field(default_factory=list)
    sums: dict[str, float] = field(default_factory=lambda: {"in": 0.0, "out": 0.0, "busy": 0.0, "busy_speed": 0.0})
    counts: dict[str, int] = field(default_factory=lambda: {c: 0 for c in COUNT_COLUMNS})
    pct: dict[str, list[float | None]] = field(default_factory=dict)
    unbounded: bool = False
    any_busy: bool = False
    unmatched: set[str] = field(default_factory=set)


def _clip_ms(x: float | None) -> float | None:
    """A time share in ms/s, within the 0..1000 a second has."""
    return None if x is None else min(1000.0, max(0.0, x))


def _subtasks(v: RunVertex, job: _Inputs) -> _Rollup:
    """The vertex's subtask profiles from their aggregate rows, and the sums over them."""
    out = _Rollup()
    for i in range(v.parallelism):
        row = job.by_key.get((v.id, i), {})
        for c in COUNT_COLUMNS:
            out.counts[c] += int(_f(row.get(c)) or 0)
        samples = int(_f(row.get("samples")) or 0)
        valid = int(_f(row.get("valid")) or 0)
        mean = {m: _f(row.get(f"{m}_mean")) for m in METRIC_COLUMNS}
        for m in METRIC_COLUMNS:
            for q in ("p50", "p95"):
                out.pct.setdefault(f"{m}_{q}", []).append(_f(row.get(f"{m}_{q}")))
        busy = mean["busy_ms_per_s"]
        if busy is not None:
            out.any_busy = True
        loc = job.locations.get((v.id, i))
        speed, matched = host_speed_for(loc, job.options.inventory)
        if job.options.inventory is not None and matched is None and loc is not None:
            out.unmatched.add(loc.taskmanager_id or loc.host or "?")
        s_busy = _f(row.get("sum_busy_valid")) or 0.0
        out.sums["in"] += _f(row.get("sum_in_valid")) or 0.0
        out.sums["out"] += _f(row.get("sum_out_valid")) or 0.0
        out.sums["busy"] += s_busy
        out.sums["busy_speed"] += s_busy * speed
        if valid > 0 and s_busy <= 0:
            out.unbounded = True
        confident = (
            samples >= MIN_CONFIDENT_SAMPLES
            and valid >= MIN_CONFIDENT_SAMPLES
            and busy is not None
            and busy >= MIN_CONFIDENT_BUSY_MS
        )
        out.subtasks.append(
            SubtaskProfile(
                index=i,
                records_in_per_s=max(0.0, mean["records_in_per_s"] or 0.0),
                records_out_per_s=max(0.0, mean["records_out_per_s"] or 0.0),
                busy_ms_per_s=_clip_ms(busy),
                idle_ms_per_s=_clip_ms(mean["idle_ms_per_s"]),
                backpressured_ms_per_s=_clip_ms(mean["backpressured_ms_per_s"]),
                buffers_in_per_s=_deliveries(mean) if job.options.warmup_s >= METER_SPAN_S else None,
                host_speed=speed,
                samples=samples,
                confident=confident,
            )
        )
    return out


def _vertex(v: RunVertex, rollup: _Rollup, job: _Inputs, notes: _Notes) -> VertexProfile:
    """The vertex's profile: its stats, its state, its record size."""
    stats = _vertex_stats(v, rollup, job, notes)
    state = _state(job.runs, v.id)
    stateful, stats["stateful_basis"] = _statefulness(v, state, job)
    rout = sum(s.records_out_per_s for s in rollup.subtasks)
    return VertexProfile(
        id=v.id,
        name=v.name,
        parallelism=v.parallelism,
        max_parallelism=v.max_parallelism if v.max_parallelism and v.max_parallelism >= v.parallelism else None,
        stateful=stateful,
        state_bytes=state or 0.0,
        checkpointed_bytes=_state(job.runs, v.id, "checkpointed_bytes"),
        bytes_per_record_out=(_ratio(_mean_sum(v, job, "bytes_out_per_s_mean"), rout) or 0.0),
        subtasks=rollup.subtasks,
        stats=stats,
    )


def _vertex_stats(
    v: RunVertex, rollup: _Rollup, job: _Inputs, notes: _Notes
) -> dict[str, float | int | str | bool | None]:
    """The vertex's ``stats``: sample counts, rates, selectivity, true rates, time shares, percentiles, confidence."""
    subtasks, sums, counts, pct = rollup.subtasks, rollup.sums, rollup.counts, rollup.pct
    rin = sum(s.records_in_per_s for s in subtasks)
    rout = sum(s.records_out_per_s for s in subtasks)
    bout = _mean_sum(v, job, "bytes_out_per_s_mean")
    bin_ = _mean_sum(v, job, "bytes_in_per_s_mean")
    is_source = not any(e.target == v.id for e in job.latest.edges)
    stats: dict[str, float | int | str | bool | None] = {}
    stats["samples"] = counts["samples"]
    stats["samples_warmup_trimmed"] = counts["warmup_trimmed"]
    stats["samples_not_running"] = counts["not_running"]
    stats["samples_busy_nan"] = counts["busy_nan"]
    stats["records_in_per_s"] = rin
    stats["records_out_per_s"] = rout
    stats["bytes_in_per_s"] = bin_
    stats["bytes_out_per_s"] = bout
    stats["selectivity"] = None if is_source else _ratio(rout, rin)
    stats["true_processing_rate"] = None if is_source else _ratio(sums["in"], sums["busy"], 1000.0)
    stats["true_output_processing_rate"] = _ratio(sums["out"], sums["busy"], 1000.0)
    stats["true_processing_rate_server_core"] = None if is_source else _ratio(sums["in"], sums["busy_speed"], 1000.0)
    stats["true_output_processing_rate_server_core"] = _ratio(sums["out"], sums["busy_speed"], 1000.0)
    stats["true_rate_unbounded"] = rollup.unbounded
    for col, share in (
        ("busy_ms_per_s", "busy_share"),
        ("idle_ms_per_s", "idle_share"),
        ("backpressured_ms_per_s", "backpressured_share"),
    ):
        vals = [getattr(s, col) for s in subtasks if getattr(s, col) is not None]
        stats[share] = (sum(vals) / len(vals) / 1000.0) if vals else None
    for m in RATE_COLUMNS:
        stats[f"{m}_p50_sum"] = _sum(pct[f"{m}_p50"])
        stats[f"{m}_p95_sum"] = _sum(pct[f"{m}_p95"])
    for m in TIME_COLUMNS:
        stats[f"{m}_p50_max"] = _max(pct[f"{m}_p50"])
        stats[f"{m}_p95_max"] = _max(pct[f"{m}_p95"])
    stats["confident"] = all(s.confident for s in subtasks)
    if any((v.id, i) in job.moved for i in range(v.parallelism)):
        stats["moved_between_runs"] = True
        notes.add("some subtasks ran on different TaskManagers in different runs; host_speed is from the newest run")
    return stats


def _mean_sum(v: RunVertex, job: _Inputs, column: str) -> float | None:
    """A mean over the vertex's subtasks that have it, summed: the vertex's rate."""
    return _sum(_f(job.by_key.get((v.id, i), {}).get(column)) for i in range(v.parallelism))


def _statefulness(v: RunVertex, state: float | None, job: _Inputs) -> tuple[bool, str]:
    """Is the vertex stateful, and on what basis: the flags, else its latest checkpoint, else a keyed input."""
    options = job.options
    if v.name in options.stateful or v.id in options.stateful:
        return True, "--stateful"
    if v.name in options.stateless or v.id in options.stateless:
        return False, "--stateless"
    if state is not None:
        return state > 0, "checkpoint"
    keyed = v.id in job.keyed_targets
    return keyed, "keyed input (no checkpoint)" if keyed else "no checkpoint"


def _check_usable(latest: RunManifest, total: Mapping[str, int], any_busy: bool, options: Options, source: str) -> None:
    """A profile needs usable samples, and busy time in them."""
    if total["samples"] == 0:
        raise BadInput(
            f"no usable samples for job {latest.job_name!r}: {total['rows']} samples, "
            f"{total['warmup_trimmed']} in warm-up "
            f"(--warmup {options.warmup_s:g} s), {total['not_running']} while not running",
            source=source,
        )
    if not any_busy:
        raise BadInput(
            f"busyTimeMsPerSecond is absent from every usable sample of job {latest.job_name!r}",
            source=source,
            field="busy_ms_per_s",
        )


def _job_info(runs: list[RunManifest], total: Mapping[str, int], options: Options, notes: _Notes) -> JobInfo:
    """The profile's job: names, origin, checkpointing, buffer timeout, and a note that sums up the samples used."""
    latest = runs[-1]
    checkpoints = _newest(runs, lambda m: m.checkpoints)
    origin = "synthetic" if all(m.origin == "synthetic" for m in runs) else "collected"
    summary = (
        f"{len(runs)} run(s), {total['samples']} of {total['rows']} samples used "
        f"(warm-up {options.warmup_s:g} s trimmed {total['warmup_trimmed']}, not running {total['not_running']})"
    )
    return JobInfo(
        name=latest.job_name,
        id=latest.job_id,
        origin=origin,
        note="; ".join([summary, *notes.items]),
        checkpoint_interval_ms=checkpoints.period_ms if checkpoints else None,
        buffer_timeout_ms=_buffer_timeout(runs),
        flink_version=_newest(runs, lambda m: m.flink_version),
    )


def subtask_details(profile: JobProfile, aggregates: pd.DataFrame) -> pd.DataFrame:
    """Every per-subtask figure (means, medians, p95s, counts, true rates) as a table: ``placement profile --details``.

    The profile format keeps one mean per metric per subtask; this is the rest of what the engines computed.
    """
    rows = []
    by_key = {(str(r["vertex_id"]), int(r["subtask"])): r for r in aggregates.to_dict("records")}
    for v in profile.vertices:
        for s in v.subtasks:
            r = by_key.get((v.id, s.index), {})
            busy = _f(r.get("sum_busy_valid"))
            rows.append(
                {
                    "vertex": v.name,
                    **{c: r.get(c) for c in AGGREGATE_COLUMNS},
                    "vertex_id": v.id,
                    "subtask": s.index,
                    "host_speed": s.host_speed,
                    "confident": s.confident,
                    "true_processing_rate": _ratio(_f(r.get("sum_in_valid")), busy, 1000.0),
                    "true_output_processing_rate": _ratio(_f(r.get("sum_out_valid")), busy, 1000.0),
                    "selectivity": _ratio(_f(r.get("records_out_per_s_mean")), _f(r.get("records_in_per_s_mean"))),
                }
            )
    details: pd.DataFrame = pd.DataFrame.from_records(rows)  # annotated: the stubs' Self is Any for Python 3.10
    return details
