"""The sources' rates over a metric history (``placement plan --forecast``): each source vertex's records/s, summed
over its subtasks, per sampling instant — from a metrics directory as ``metrics collect`` writes it, live (REST) or
from Prometheus ranges, or a watch's rolling history (the same layout).

A source is a vertex with no input edge in its run's job graph; an instant counts only where every subtask of the
source reported a rate (a missing subtask would read as a dip that never happened). A subtask's rate in the first
minute of its attempt is left out: Flink's meter averages the minute before, so after each start or redeploy it ramps
from 0 to the load — a dip and a rise a forecaster would take for the load's own (on a watch's rolling history,
sampled every few seconds, every apply's ramp). Histories without the attempts' start (Prometheus) keep every sample.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow.compute as pc

from placement.collect.layout import find_manifests, read_samples
from placement.errors import BadInput
from placement.flink.facts import METER_SPAN_S

Series = list[tuple[int, float]]  # (epoch ms, records/s), by time


def source_rates(root: str | Path) -> dict[str, dict[str, Series]]:
    """job name -> source vertex name -> its rate over every run of the history under ``root``."""
    out: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for run, manifest in find_manifests(root):
        targets = {e.target for e in manifest.edges}
        sources = {v.id: v for v in manifest.vertices if v.id not in targets}
        table = read_samples(run, sources, ["ts_ms", "vertex_id", "subtask", "attempt_start_ms", "records_out_per_s"])
        age = pc.subtract(table["ts_ms"], table["attempt_start_ms"])
        warm = pc.fill_null(pc.greater_equal(age, int(METER_SPAN_S * 1000)), True)
        table = table.filter(pc.and_(pc.is_valid(table["records_out_per_s"]), warm))
        if table.num_rows == 0:
            continue
        grouped = table.group_by(["vertex_id", "ts_ms"]).aggregate(
            [("records_out_per_s", "sum"), ("subtask", "count_distinct")]
        )
        for vid, ts, total, count in zip(
            grouped["vertex_id"].to_pylist(),
            grouped["ts_ms"].to_pylist(),
            grouped["records_out_per_s_sum"].to_pylist(),
            grouped["subtask_count_distinct"].to_pylist(),
        ):
            if count == sources[vid].parallelism:
                out[manifest.job_name][sources[vid].name][int(ts)] = float(total)
    if not out:
        raise BadInput(
            "no source rates in the history (a source vertex's records_out_per_s, every subtask reported)",
            source=str(root),
            field="records_out_per_s",
        )
    return {job: {v: sorted(points.items()) for v, points in by.items()} for job, by in out.items()}
