"""The profiling reduction single-threaded in this process: :func:`placement.profile.partials.file_partials` over the
selected part files one after another, then :func:`~placement.profile.partials.finish_partials`.

It is the baseline of ``benchmarks/profile_throughput.py`` (the Spark engine runs the same per-file function on its
executors, so the two differ only in how the files are distributed) and ``placement profile --engine pandas`` uses it
for small histories on machines without Java. Memory: one row group plus the partial rows (a few per subtask and
file, and the ~2,000 drawn samples per subtask).
"""

from __future__ import annotations

import pandas as pd

from placement.profile.history import Selection
from placement.profile.partials import (
    SEED,
    file_partials,
    finish_partials,
    partials_job,
)


def aggregate_pandas(
    selection: Selection, warmup_s: float, *, per_subtask: int | None = None, seed: int = SEED
) -> pd.DataFrame:
    """One row per (vertex_id, subtask) with :data:`~placement.profile.rules.AGGREGATE_COLUMNS`, on one core."""
    job = partials_job(selection, warmup_s, per_subtask, seed)
    return finish_partials([file_partials(part, job) for part in selection.parts], job.vertex_ids)
