"""The profiling reduction both engines share: one Parquet part file -> partial rows (stage 1), and many files'
partial rows -> one aggregate row per subtask (stage 2, :func:`finish_partials`).

The pandas engine (:mod:`placement.profile.pandas_job`) runs stage 1 over the files one after another; the Spark
engine (:mod:`placement.profile.spark_job`) hands the file paths to its executors, whose Python workers run the same
function, and adds up what they send back. Stage 1 is vectorised NumPy over Arrow columns, one row group at a time
(memory: one row group plus its partials): every sample gets a *group code* — its category (usable, warm-up, not
running) and one bit per metric it lacks (null or NaN) — and one ``np.bincount`` per metric sums the samples per
(vertex, subtask, code). Every count and conditional sum the profile needs follows from those groups in stage 2.
The medians and p95s come from a uniform random subset of the usable samples (about
:data:`~placement.profile.rules.PERCENTILE_SAMPLES_PER_SUBTASK` per subtask), drawn per row group with a generator
seeded by :data:`SEED`, the file's last three path components and the row group's index: the same samples whichever
process reads the file, in whatever order or grouping (``local[*]``, a cluster, or the pandas engine).

Stage 1 uses nothing of ``placement`` but constants, and no pandas, so the Spark engine ships its functions to the
executors by value: executors need Python with NumPy and PyArrow, not this package.
"""

from __future__ import annotations

import ctypes
import os
import socket
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePath

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from placement.collect.layout import METRIC_COLUMNS, OPTIONAL_COLUMNS
from placement.profile.history import Selection
from placement.profile.rules import (
    AGGREGATE_COLUMNS,
    PERCENTILE_SAMPLES_PER_SUBTASK,
    READ_COLUMNS,
    SUBTASK_KEYS,
    finish_aggregates,
    percentile_fraction,
)

SEED = 20_240_601
# Sample categories in the group code and the number of missing-metric bit patterns (a bit per metric).
USABLE, WARMUP, NOT_RUNNING = 0, 1, 2
_MISSING_CODES = 1 << len(METRIC_COLUMNS)
_CODES = 3 * _MISSING_CODES
# Stage-1 output: ``vertex`` indexes PartialsJob.vertex_ids; ``k`` is -1 - group code for a group's row, 0 for a
# drawn sample (which holds its own metric values, NaN where missing); ``n`` counts the group's samples.
PARTIAL_COLUMNS = ("vertex", "subtask", "k", "n", *METRIC_COLUMNS)
# Partial rows as plain NumPy columns: stage 1 needs no pandas (its import alone cost a Spark worker ~0.4 s).
Partials = dict[str, np.ndarray]


@dataclass(frozen=True)
class PartialsJob:
    """What stage 1 needs besides a file: the wanted vertex ids (samples of others are dropped), the warm-up, and
    the share of usable samples drawn for the percentiles."""

    vertex_ids: tuple[str, ...]
    warmup_ms: int
    fraction: float
    seed: int = SEED


def partials_job(
    selection: Selection, warmup_s: float, per_subtask: int | None = None, seed: int = SEED
) -> PartialsJob:
    """What every file's stage 1 needs for ``selection``; both engines build it here, so they draw the same subset."""
    fraction = percentile_fraction(
        selection.rows, selection.subtask_count, per_subtask or PERCENTILE_SAMPLES_PER_SUBTASK
    )
    return PartialsJob(tuple(selection.vertex_ids), int(warmup_s * 1000), fraction, seed)


def file_partials(path: str | PurePath, job: PartialsJob) -> Partials:
    """Stage 1 of one part file: a row per (vertex, subtask, group code) present and one per drawn sample."""
    _set_up_this_process()
    wanted = {v: i for i, v in enumerate(job.vertex_ids)}
    name = "/".join(PurePath(path).parts[-3:])  # job, run and part: the same on every machine that mounts it
    parquet = pq.ParquetFile(path, read_dictionary=["vertex_id"], pre_buffer=False)
    # a part written before an optional metric existed lacks its column: every sample of it misses the metric
    lacking = [c for c in READ_COLUMNS if c in OPTIONAL_COLUMNS and c not in parquet.schema_arrow.names]
    columns = [c for c in READ_COLUMNS if c not in lacking]
    frames = [
        _row_group_partials(
            _with_nulls(parquet.read_row_group(i, columns=columns, use_threads=False), lacking),
            wanted,
            job,
            np.random.default_rng([job.seed, zlib.crc32(name.encode()), i]),
        )
        for i in range(parquet.metadata.num_row_groups)
    ]
    return _concat(frames)


def _with_nulls(table: pa.Table, metrics: Sequence[str]) -> pa.Table:
    """The row group with a null column for each of ``metrics`` (the part lacks them)."""
    for m in metrics:
        table = table.append_column(m, pa.nulls(table.num_rows, pa.float64()))
    return table


_SET_UP = {"done": False}  # a plain flag, not functools.cache: Spark ships this module to executors by value


def _set_up_this_process() -> None:
    """Once per process (a Python worker reads many files; per task when shipped by value): one core per file — an
    engine parallelises over files, not inside one — and freed memory kept for reuse (:func:`_reuse_freed_memory`)."""
    if _SET_UP["done"]:
        return
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    _reuse_freed_memory()
    _SET_UP["done"] = True


def _reuse_freed_memory() -> None:
    """Keep the memory of one row group's buffers for the next instead of handing it back to the kernel and having
    it zeroed again: Arrow's buffers from the C allocator (its default, mimalloc, returns freed pages a few ms
    later), and glibc's allocator told to serve the 8 MB columns from its heap and not to trim it. Measured on 50M
    samples: kernel time 0.45-0.55 s instead of 1.3-2.0 (page zeroing was an eighth of all CPU time), the pass
    10-15 % faster, peak memory unchanged (~480 MB: one row group's working set). Without glibc only the pool
    changes."""
    pa.set_memory_pool(pa.system_memory_pool())
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: keep up to 1 GiB of free heap
        mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: blocks below 32 MiB (glibc's maximum) from the heap


@dataclass(frozen=True)
class ReadFailure:
    """What a Spark task sends back instead of partials when a file cannot be read where it runs."""

    path: str
    host: str
    error: str


def task_partials(tasks: Iterable[list[str]], job: PartialsJob) -> Iterator[Partials | ReadFailure]:
    """A Spark task (``mapPartitions``): the partials of its files together, or the first file it cannot read.

    With ``PLACEMENT_PROFILE_TRACE`` set in the executors' environment each file read is logged to their stderr
    (which process on which host read which file)."""
    done: list[Partials] = []
    for paths in tasks:
        for path in paths:
            try:
                done.append(file_partials(path, job))
            except (OSError, ValueError, pa.ArrowException) as exc:  # unreachable, unreadable, not Parquet
                yield ReadFailure(path, socket.gethostname(), f"{type(exc).__name__}: {str(exc)[:200]}")
                return
            if os.environ.get("PLACEMENT_PROFILE_TRACE"):
                print(
                    f"placement: read {path} in pid {os.getpid()} on {socket.gethostname()}",
                    file=sys.stderr,
                    flush=True,
                )
    if done:
        yield _concat(done)


def _row_group_partials(
    table: pa.Table, wanted: dict[str, int], job: PartialsJob, rng: np.random.Generator
) -> Partials:
    # vertex index per sample through the column's dictionary: one lookup per distinct id, not per sample
    vertex = np.concatenate(
        [
            np.array([wanted.get(v, -1) for v in chunk.dictionary.to_pylist()], dtype=np.int64)[
                chunk.indices.to_numpy(zero_copy_only=False)
            ]
            for chunk in table.column("vertex_id").chunks
        ]
        or [np.empty(0, dtype=np.int64)]
    )
    subtask = table.column("subtask").to_numpy().astype(np.int64)
    running = table.column("running").fill_null(False).to_numpy()  # an unknown status counts as not running
    started = table.column("attempt_start_ms")
    age = table.column("ts_ms").to_numpy() - started.fill_null(0).to_numpy()
    keep = running & (started.is_null().to_numpy() | (age >= job.warmup_ms))  # an unknown attempt start is kept
    code = np.where(running, np.where(keep, USABLE, WARMUP), NOT_RUNNING).astype(np.int64) * _MISSING_CODES
    values = []
    for bit, m in enumerate(METRIC_COLUMNS):
        x = table.column(m).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)  # nulls come as NaN
        lacks = np.isnan(x)
        if lacks.any():  # a null or NaN metric is missing; it adds 0 to its group's sum (the code says so)
            code |= lacks.astype(np.int64) << bit
            x = np.where(lacks, 0.0, x)
        values.append(x)

    drawn = np.flatnonzero(keep & (rng.random(len(keep)) < job.fraction) if job.fraction < 1.0 else keep)
    picked = {
        "vertex": vertex[drawn],
        "subtask": subtask[drawn],
        "k": np.zeros(len(drawn), dtype=np.int64),
        "n": np.ones(len(drawn), dtype=np.int64),
        **{
            m: np.where((code[drawn] >> bit) & 1 == 1, np.nan, values[bit][drawn])
            for bit, m in enumerate(METRIC_COLUMNS)
        },
    }

    ours = vertex >= 0
    if not ours.all():  # samples of vertices outside the selected graph (an older submission's)
        picked = {c: x[picked["vertex"] >= 0] for c, x in picked.items()}
        drawn_mask = np.zeros(len(vertex), dtype=bool)
        drawn_mask[drawn] = True
        vertex, subtask, code, values = vertex[ours], subtask[ours], code[ours], [x[ours] for x in values]
        drawn = np.flatnonzero(drawn_mask[ours])
    if len(vertex) == 0:
        return picked
    # dense ids of the (vertex, subtask) pairs and codes present, so the bincounts stay small
    span = int(subtask.max()) + 1
    pairs, pair_id = _dense(vertex * span + subtask)
    codes, code_id = _dense(code, _CODES)
    key = pair_id * len(codes) + code_id
    bins = len(pairs) * len(codes)
    key[drawn] = bins  # a drawn sample is a row of its own: one bin past the groups', dropped below
    n = np.bincount(key, minlength=bins + 1)[:bins]
    present = np.flatnonzero(n)
    sums = {
        m: np.bincount(key, weights=x, minlength=bins + 1)[present] for m, x in zip(METRIC_COLUMNS, values, strict=True)
    }
    p, c = np.divmod(present, len(codes))
    groups = {"vertex": pairs[p] // span, "subtask": pairs[p] % span, "k": -1 - codes[c], "n": n[present], **sums}
    return _concat([groups, picked])


def _dense(values: np.ndarray, size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct non-negative ``values`` (sorted) and each value's index among them, by counting (no sort)."""
    seen = np.flatnonzero(np.bincount(values, minlength=size or 0))
    index = np.zeros(int(values.max()) + 1 if size is None else size, dtype=np.int64)
    index[seen] = np.arange(len(seen))
    return seen, index[values]


def _concat(parts: Sequence[Partials]) -> Partials:
    if not parts:
        return {c: np.empty(0, dtype=np.float64 if c in METRIC_COLUMNS else np.int64) for c in PARTIAL_COLUMNS}
    return {c: np.concatenate([p[c] for p in parts]) for c in PARTIAL_COLUMNS}


def finish_partials(partials: Sequence[Partials], vertex_ids: Sequence[str]) -> pd.DataFrame:
    """Stage 2 (a few rows per subtask and file plus ~2,000 drawn samples per subtask, whatever the history's
    length): turn the group codes into the counts and conditional sums, add them up per subtask, and take the
    medians and p95s of the drawn samples (linear interpolation). A drawn row (``k >= 0``) is one usable sample whose
    missing metrics are NaN; a group's row holds 0 for a metric its code says is missing."""
    rows = pd.DataFrame(_concat(partials))
    if rows.empty:
        empty: pd.DataFrame = pd.DataFrame(columns=list(AGGREGATE_COLUMNS))
        return empty
    rows.insert(0, "vertex_id", np.asarray(vertex_ids, dtype=object)[rows.pop("vertex").to_numpy(dtype=np.int64)])
    k = rows["k"].to_numpy(dtype=np.int64)
    drawn = k >= 0
    code = np.where(drawn, 0, -1 - k)
    nulls = rows[list(METRIC_COLUMNS)].isna().to_numpy()
    missing = np.where(drawn, (nulls * (1 << np.arange(len(METRIC_COLUMNS)))).sum(axis=1), code % _MISSING_CODES)
    category = np.where(drawn, USABLE, code // _MISSING_CODES)
    lacks = {m: (missing & (1 << i)) != 0 for i, m in enumerate(METRIC_COLUMNS)}
    usable = category == USABLE
    valid = usable & ~lacks["busy_ms_per_s"] & ~lacks["records_in_per_s"] & ~lacks["records_out_per_s"]
    n = rows["n"].to_numpy(dtype=np.int64)
    frame = {
        "rows": n,
        "samples": n * usable,
        "warmup_trimmed": n * (category == WARMUP),
        "not_running": n * (category == NOT_RUNNING),
        "busy_nan": n * (usable & lacks["busy_ms_per_s"]),
        "valid": n * valid,
        "sum_busy_valid": rows["busy_ms_per_s"].where(valid),
        "sum_in_valid": rows["records_in_per_s"].where(valid),
        "sum_out_valid": rows["records_out_per_s"].where(valid),
        **{f"{m}_sum": rows[m].where(usable) for m in METRIC_COLUMNS},
        **{f"{m}_n": n * (usable & ~lacks[m]) for m in METRIC_COLUMNS},
    }
    parts = pd.DataFrame({c: rows[c].to_numpy() for c in SUBTASK_KEYS} | {c: np.asarray(v) for c, v in frame.items()})
    return finish_aggregates(parts.groupby(SUBTASK_KEYS, sort=False).sum(min_count=1), rows[drawn])
