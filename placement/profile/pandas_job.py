"""The same reduction as :func:`placement.profile.spark_job.aggregate_spark`, single-threaded with pandas.

It exists as the baseline for ``benchmarks/profile_throughput.py`` and as an independent second implementation the
tests compare the Spark job against (``placement profile --engine pandas`` uses it too, for small histories on
machines without Java). It reads the selected runs one part at a time, so memory stays at one part plus the
running sums; only the subset that feeds the percentiles is kept whole.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from placement.collect.layout import METRIC_COLUMNS
from placement.profile.history import Selection
from placement.profile.rules import (
    PERCENTILE_SAMPLES_PER_SUBTASK,
    READ_COLUMNS,
    SUBTASK_KEYS,
    finish_aggregates,
    percentile_fraction,
)


def aggregate_pandas(selection: Selection, warmup_s: float, *, per_subtask: int | None = None, seed: int = 0) -> pd.DataFrame:
    pa.set_cpu_count(1)  # a fair single-threaded baseline: no Arrow thread pool behind pandas' back
    fraction = percentile_fraction(selection.rows, selection.subtask_count, per_subtask or PERCENTILE_SAMPLES_PER_SUBTASK)
    rng = np.random.default_rng(seed)
    wanted = pa.array(selection.vertex_ids, type=pa.string())
    warm_ms = int(warmup_s * 1000)
    partials: list[pd.DataFrame] = []
    picked: list[pd.DataFrame] = []
    for part in selection.parts:
        t = pq.read_table(part, columns=list(READ_COLUMNS), use_threads=False)
        t = t.filter(pc.is_in(t["vertex_id"], value_set=wanted))
        df = t.to_pandas(use_threads=False)
        started = df["attempt_start_ms"]
        running = df["running"].to_numpy(dtype=bool)
        keep = running & (started.isna() | ((df["ts_ms"] - started) >= warm_ms)).to_numpy(dtype=bool)
        busy = df["busy_ms_per_s"]
        valid = keep & busy.notna().to_numpy() & df["records_in_per_s"].notna().to_numpy() & df["records_out_per_s"].notna().to_numpy()
        frame = pd.DataFrame(
            {
                "vertex_id": df["vertex_id"],
                "subtask": df["subtask"],
                "rows": 1,
                "samples": keep.astype(np.int64),
                "warmup_trimmed": (running & ~keep).astype(np.int64),
                "not_running": (~running).astype(np.int64),
                "busy_nan": (keep & busy.isna().to_numpy()).astype(np.int64),
                "valid": valid.astype(np.int64),
                "sum_busy_valid": busy.where(valid),
                "sum_in_valid": df["records_in_per_s"].where(valid),
                "sum_out_valid": df["records_out_per_s"].where(valid),
            }
        )
        for m in METRIC_COLUMNS:
            col = df[m].where(keep)
            frame[f"{m}_sum"] = col
            frame[f"{m}_n"] = col.notna().astype(np.int64)
        partials.append(frame.groupby(SUBTASK_KEYS, sort=False).sum(min_count=1))
        pick = keep & (rng.random(len(df)) < fraction) if fraction < 1.0 else keep
        picked.append(df.loc[pick, [*SUBTASK_KEYS, *METRIC_COLUMNS]])
    totals = pd.concat(partials).groupby(level=[0, 1], sort=False).sum(min_count=1)
    return finish_aggregates(totals, pd.concat(picked))
