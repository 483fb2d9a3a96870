"""Measured latency per source → sink from Flink's latency tracking (pure: the run directories' Parquet in, figures
out; :mod:`placement.collect` recorded them, see :data:`placement.collect.layout.LATENCY_SCHEMA`).

Each recorded row is one histogram of one reporting subtask: the last ``metrics.latency.history-size`` markers from a
source operator to one operator, as median/p95/p99/max in ms. For a sink vertex and a source vertex, at each sampling
instant:

* the operators of the sink's chain are one row each: the largest figure is the chain's last operator (a marker goes
  through the chain in order), so each statistic is the maximum over them;
* over the sink's subtasks (and, with ``metrics.latency.granularity: subtask``, over the source's subtasks) the p50 is
  the median of their medians, and p95, p99 and max are the largest — percentiles of separate histograms do not add
  up, so the tails are taken from the worst subtask, which is what a bound on every record needs;

and over the run's instants (after the warm-up) each figure is the median (the histograms are sliding windows: the
median over time is the typical window). A source operator id is the source vertex's id (Flink names a vertex after
its chain's head operator); the markers of several vertex paths from one source to one sink are one histogram, so
``paths`` lists them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds

from placement.collect.layout import RunManifest, read_latency
from placement.profile.format import JobProfile, MeasuredLatency


def _run_start_ms(run: Path, manifest: RunManifest) -> tuple[np.ndarray, np.ndarray]:
    """(sample instants, the latest attempt start seen up to each): when the job (re)started, as the samples say."""
    files = [run / f for f in manifest.files if (run / f).is_file()]
    if not files:
        return np.array([], dtype=np.int64), np.array([], dtype=np.int64)
    t = ds.dataset(files, format="parquet").to_table(columns=["ts_ms", "attempt_start_ms"]).to_pandas()
    t = t.dropna().sort_values("ts_ms")
    return t["ts_ms"].to_numpy(np.int64), np.maximum.accumulate(t["attempt_start_ms"].to_numpy(np.int64))


def _warm(rows: pd.DataFrame, run: Path, manifest: RunManifest, warmup_s: float) -> pd.DataFrame:
    ts, start = _run_start_ms(run, manifest)
    warm: pd.DataFrame
    if len(ts) == 0:
        warm = rows[rows["ts_ms"] >= manifest.started_ms + warmup_s * 1000]
        return warm
    k = np.searchsorted(ts, rows["ts_ms"].to_numpy(np.int64), side="right") - 1
    began = np.where(k >= 0, start[np.clip(k, 0, None)], manifest.started_ms)
    warm = rows[rows["ts_ms"].to_numpy(np.int64) - began >= warmup_s * 1000]
    return warm


def measured_latency(
    profile: JobProfile,
    runs: Sequence[tuple[Path, RunManifest]],
    *,
    warmup_s: float = 60.0,
    lane_copies: Mapping[str, tuple[str, int]] | None = None,
) -> list[MeasuredLatency]:
    """p50/p95/p99/max per (source, sink) of ``profile``'s job from the runs' latency tracking (see the module doc);
    empty when no run tracked latency. ``lane_copies``: a lane copy's vertex id -> the job's vertex id and the copy's
    subtask offset (:mod:`placement.profile.lanes`)."""
    frames = []
    for run, manifest in runs:
        table = read_latency(run, manifest)
        if table.num_rows:
            frames.append(_warm(table.to_pandas(), run, manifest, warmup_s))
    if not frames:
        return []
    rows = pd.concat(frames, ignore_index=True)
    if lane_copies:
        rows["subtask"] += rows["vertex_id"].map(lambda v: lane_copies.get(v, (v, 0))[1])
        rows["source_subtask"] += rows["source_id"].map(lambda v: lane_copies.get(v, (v, 0))[1])
        for column in ("source_id", "vertex_id"):
            rows[column] = rows[column].map(lambda v: lane_copies.get(v, (v, 0))[0])
    sources = {v.id for v in profile.sources()}
    sinks = {v.id for v in profile.sinks()}
    only_source = next(iter(sources)) if len(sources) == 1 else None
    rows["source"] = [s if s in sources else only_source for s in rows["source_id"]]
    rows = rows[rows["vertex_id"].isin(sinks) & rows["source"].isin(sources)]
    if rows.empty:
        return []
    stats = ["p50_ms", "p95_ms", "p99_ms", "max_ms"]
    # the chain's operators: the largest; then over subtasks: the median of medians, the largest tails
    chain = rows.groupby(["ts_ms", "source", "vertex_id", "subtask", "source_subtask"], dropna=False)[stats].max()
    chain = chain.reset_index()
    per_instant = chain.groupby(["ts_ms", "source", "vertex_id"]).agg(
        p50_ms=("p50_ms", "median"), p95_ms=("p95_ms", "max"), p99_ms=("p99_ms", "max"), max_ms=("max_ms", "max")
    )
    per_instant = per_instant.reset_index()
    g = profile.graph()
    names = {v.id: v.name for v in profile.vertices}
    out = []
    for (source, sink), group in per_instant.groupby(["source", "vertex_id"]):
        paths = [" → ".join(names[v] for v in p) for p in g.simple_paths(source, sink)]
        figures = {s: (float(group[s].median()) if group[s].notna().any() else None) for s in stats}
        out.append(MeasuredLatency(source=source, sink=sink, paths=sorted(paths), samples=len(group), **figures))
    order = {v.id: n for n, v in enumerate(profile.vertices)}
    return sorted(out, key=lambda m: (order[m.source], order[m.sink]))
