"""The profiling job on Spark: metric history (Parquet) -> one aggregate row per subtask -> job profile.

Runs locally (``local[*]``: every core) by default, on a cluster with ``--spark-master``, or under ``spark-submit``
(:mod:`placement.cli.spark_submit`).

Designed for throughput on few cores: it reads exactly the part files the history check validated, only the
columns it uses, with the schema given (no footer is opened to infer one), and makes **one** pass over them, with
built-in expressions only (no Python UDFs). The pass is a code-generated hash aggregation (stage 1) of a row count and
one sum per metric, grouped by a 64-bit hash of the vertex id, the subtask, and a group code: negative codes carry a
sample's category (usable, warm-up, not running) and which metrics it lacks, so every count and conditional sum the
profile needs follows from the groups (stage 2, :func:`finish_partials`), and ~2,000 samples per subtask drawn at
random for the percentiles (see :mod:`placement.profile.rules`) each get a unique non-negative code. All keys are
fixed-width and never null, which keeps every sample on Spark's fast first-level hash map. The output (a few rows
per subtask plus one per drawn sample: ~240k rows for 120 subtasks, however long the history) comes to the driver
as Arrow batches, where stage 2 adds it up and takes the medians and p95s of the drawn samples exactly as the pandas
engine does. A percentile sketch over every sample would push the whole aggregation onto the slower
ObjectHashAggregate path; a second scan for the subset would read every byte twice; Spark's own percentile over the
240k drawn rows cost 2-3 s (measured). Profiled with JFR, these choices took the 100M-sample benchmark from 57 s to
38 s end to end (with the driver's class archive, :mod:`placement.profile.class_archive`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from placement.collect.layout import METRIC_COLUMNS, SAMPLE_SCHEMA
from placement.errors import PlacementError
from placement.profile.class_archive import (
    ClassArchive,
    class_archive,
    publish,
    spark_option_word,
)
from placement.profile.history import Selection
from placement.profile.rules import (
    AGGREGATE_COLUMNS,
    READ_COLUMNS,
    SUBTASK_KEYS,
    finish_aggregates,
    percentile_fraction,
)

SEED = 20_240_601
# Sample categories in the group code (stage 1) and the number of missing-metric bit patterns (2^7 metrics).
USABLE, WARMUP, NOT_RUNNING = 0, 1, 2
_MISSING_CODES = 1 << len(METRIC_COLUMNS)
_XXHASH64_SEED = 42  # the seed Spark's xxhash64() uses
# The class archive this process's driver JVM dumps when it exits (None: it maps an existing one, or none at all).
_dumping: ClassArchive | None = None


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
# PySpark's driver counts as a shell: with no level of its own for this logger Spark prints "Setting default log
# level to WARN" and how to change it
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
"""
# What the driver JVM prints on its own stderr at start-up that no log4j setting reaches: the JVM's note about the
# incubator Vector API module Spark's launcher adds, and Spark's shell banner (should its logger config be ignored).
_JVM_CHATTER = re.compile(rb"^(WARNING: Using incubator modules|Setting default log level|To adjust logging level)")


def _quiet_log4j() -> str:
    """A log4j2 config that keeps Spark's INFO/WARN chatter (and its 'default profile' banner) off the terminal."""
    path = Path(tempfile.gettempdir()) / "placement-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        os.replace(tmp, path)
    return str(path)


def _forward_stderr(stream) -> None:
    """Copy the driver JVM's stderr to ours, minus its start-up chatter; real errors still reach the terminal."""
    for line in iter(stream.readline, b""):
        if not _JVM_CHATTER.match(line):
            sys.stderr.write(line.decode(errors="replace"))
            sys.stderr.flush()


def _start_driver(conf) -> None:
    """Start the driver JVM (PySpark's gateway) with ``conf`` and its stderr filtered, and its SparkContext."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_forward_stderr, args=(gateway.proc.stderr,), name="spark-stderr", daemon=True).start()
    SparkContext(conf=conf, gateway=gateway)


def spark_session(master: str | None = None, *, driver_memory: str = "1g", shuffle_partitions: int = 4):
    """A small session for 2 cores: few shuffle partitions, modest driver memory, no UI, quiet logs.

    Under ``spark-submit`` (a JVM is already there) master and memory are whatever spark-submit was given.
    """
    warnings.filterwarnings("ignore", message=".*pandas >= 3.0.0.*")  # pyspark's version nag; we pass no pandas through
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    global _dumping
    options = {
        "spark.app.name": "placement-profile",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.sources.partitionColumnTypeInference.enabled": "false",  # run ids stay strings
        # About one Parquet row group (1M samples, ~40 MiB) per scan task: with 256 MiB splits a 10M history made 3
        # tasks of 4M, 5M and 1M samples, and one of the 2 cores sat idle for the last one; small splits balance.
        "spark.sql.files.maxPartitionBytes": str(32 << 20),
    }
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit
        if master:
            options["spark.master"] = master
    elif SparkContext._active_spark_context is None:
        options["spark.master"] = master or "local[*]"
        options["spark.driver.memory"] = driver_memory
        java_options = f"-Dlog4j2.configurationFile={spark_option_word(_quiet_log4j())}"
        archive = class_archive() if SparkContext._gateway is None else None  # only a JVM we are about to start
        if archive is not None:
            java_options += " " + archive.java_options()
            _dumping = None if archive.path.is_file() else archive
        options["spark.driver.extraJavaOptions"] = java_options
        if SparkContext._gateway is None:
            _start_driver(SparkConf().setAll(list(options.items())))
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def archive_pending() -> bool:
    """True when this process's driver JVM will dump a class archive (its first Spark run on this machine)."""
    return _dumping is not None


def finish_spark() -> bool:
    """Stop Spark at the end of a process that started its JVM to dump a class archive, and publish the archive
    (see :mod:`placement.profile.class_archive`). Returns True when one was published; a no-op otherwise, so the
    CLI calls it after every Spark run. The JVM is gone afterwards: nothing in this process may use Spark again."""
    global _dumping
    archive, _dumping = _dumping, None
    if archive is None:
        return False
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if SparkContext._active_spark_context is not None:
        SparkContext._active_spark_context.stop()
    return publish(archive, gateway) if gateway is not None else False


def read_samples(spark, parts: Sequence[Path]):
    """The part files as a DataFrame of the columns the job reads, typed as the layout writes them: no directory is
    listed and no footer opened to infer a schema (the history check validated them)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = from_arrow_schema(pa.schema([SAMPLE_SCHEMA.field(c) for c in READ_COLUMNS]))
    return spark.read.schema(schema).parquet(*[str(p) for p in parts])


def aggregate_spark(spark, selection: Selection, warmup_s: float, *, per_subtask: int | None = None) -> pd.DataFrame:
    """One row per (vertex_id, subtask) with :data:`~placement.profile.rules.AGGREGATE_COLUMNS`, in one scan."""
    from pyspark.sql import functions as F

    from placement.profile.rules import PERCENTILE_SAMPLES_PER_SUBTASK

    fraction = percentile_fraction(selection.rows, selection.subtask_count, per_subtask or PERCENTILE_SAMPLES_PER_SUBTASK)
    df = read_samples(spark, selection.parts)  # exactly the files the history check validated (pandas reads them too)
    # Group by a 64-bit hash of the vertex id, not the 32-character string: with fixed-width keys the hash map's
    # probe is a few integer compares instead of hashing and comparing 32 bytes per sample (half the CPU, per JFR).
    # The hashes of the wanted ids come from Spark itself (same function); they map back to ids in Python.
    by_hash = _vertex_hashes(spark, selection.vertex_ids)
    vkey = F.xxhash64("vertex_id") if by_hash else F.col("vertex_id")
    if not by_hash:
        df = df.where(vkey.isin(selection.vertex_ids))
    # else vertices outside the selection (an older graph's) are dropped after the aggregation: a filter here
    # would hash every sample's id a second time.

    # Each sample's group code says everything the counts need: its category (usable, warm-up, not running) and which
    # metrics it lacks (one bit each). Stage 1 then needs only a row count and one plain sum per metric per group —
    # 8 aggregate buffers instead of 23 conditional ones (buffer null-bit upkeep was a fifth of the CPU, per JFR) —
    # and stage 2 derives every count and conditional sum from the codes (see finish_partials).
    running = F.coalesce(F.col("running"), F.lit(False))  # an unknown status counts as not running
    started = F.col("attempt_start_ms")
    keep = running & (started.isNull() | ((F.col("ts_ms") - started) >= F.lit(int(warmup_s * 1000))))
    category = F.when(~running, NOT_RUNNING).when(~keep, WARMUP).otherwise(USABLE)
    missing = sum(F.when(F.col(m).isNull(), 1 << i).otherwise(0) for i, m in enumerate(METRIC_COLUMNS))
    # The percentile subset: a uniform random subset of the usable samples, each kept in a group of its own (`k` is
    # its unique id >= 0; every other sample has the negative code -1 - (category * 128 + missing-bits)). The
    # stage is a single code-generated HashAggregate over every sample with fixed-size buffers and no sketch; its
    # output is one row per drawn sample plus a few per subtask, so what comes back to Python is bounded by the
    # subset size, not by the history's length. `k` is never null: Spark's fast first-level hash map only takes rows
    # whose grouping keys are all non-null (a null there sent ~99.8 % of the samples to the slower map, per JFR).
    picked = keep & (F.rand(SEED) < F.lit(fraction)) if fraction < 1.0 else keep
    k = F.when(picked, F.monotonically_increasing_id()).otherwise(-1 - (category * _MISSING_CODES + missing))
    # Sums of non-null inputs: a missing metric adds 0 (its group's code says it is missing, so the 0 is never read)
    # and a drawn sample's missing metric is NaN (stage 2 reads the drawn rows' NaNs as missing). Without a null to
    # test per row the generated update is a plain add (measured: 10-15 % less CPU for stage 1).
    filler = F.when(picked, F.lit(float("nan"))).otherwise(F.lit(0.0))
    stage1 = [F.count(F.lit(1)).alias("n"), *[F.sum(F.coalesce(F.col(m), filler)).alias(m) for m in METRIC_COLUMNS]]
    partial = df.groupBy(vkey.alias("vertex_id"), "subtask", k.alias("k")).agg(*stage1)

    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    arrow = "spark.sql.execution.arrow.pyspark.enabled"
    before = spark.conf.get(arrow, "false")
    spark.conf.set(arrow, "true")  # the partial rows come over as Arrow batches, not one Python object per value
    try:
        with warnings.catch_warnings():  # pyspark's nags about pandas 3 (nothing here depends on what they warn of)
            warnings.simplefilter("ignore")
            rows = partial.toPandas()
    except (PySparkException, Py4JError) as exc:  # keep the first line, not the JVM stack
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise PlacementError(f"{selection.root}: the Spark profiling job failed: {first[:300]}") from None
    finally:
        spark.conf.set(arrow, before)
    if by_hash:
        rows["vertex_id"] = rows["vertex_id"].map(by_hash)
        rows = rows[rows["vertex_id"].notna()]
    return finish_partials(rows)


def _vertex_hashes(spark, vertex_ids: Sequence[str]) -> dict[int, str]:
    """``xxhash64(id) -> id`` for the wanted vertices, or ``{}`` if two of them share a hash (then the job groups
    by the string itself). A vertex id of another job colliding with a wanted one is a 2^-64 event per pair.

    The hashes come from the JVM function behind ``xxhash64`` (``XXH64.hashUTF8String`` with Spark's seed 42),
    called directly: the same numbers as a ``select(xxhash64(lit(id)))`` query (tested), without a Spark job on the
    start path (that query cost 1.3 s in a fresh session, 10 ms this way).
    """
    if not vertex_ids:
        return {}
    jvm = spark.sparkContext._jvm
    utf8 = jvm.org.apache.spark.unsafe.types.UTF8String
    xxh64 = jvm.org.apache.spark.sql.catalyst.expressions.XXH64
    hashes = {int(xxh64.hashUTF8String(utf8.fromString(v), _XXHASH64_SEED)): v for v in vertex_ids}
    return hashes if len(hashes) == len(set(vertex_ids)) else {}


def finish_partials(rows: pd.DataFrame) -> pd.DataFrame:
    """Stage 2 (a few rows per subtask plus at most ~2,000 drawn samples each, whatever the history's length): turn
    the group codes into the counts and conditional sums, add them up per subtask, and take the medians and p95s of
    the drawn samples the way the pandas engine does (linear interpolation). A drawn row (``k >= 0``) is one usable
    sample: each metric column holds its value, or NaN when it is missing (ignored by the quantiles, as by the
    means), and its missing-bits are read off those NaNs. A row of a group code holds 0 for a metric its code says
    is missing."""
    if rows.empty:
        return pd.DataFrame(columns=list(AGGREGATE_COLUMNS))
    k = rows["k"].to_numpy(dtype=np.int64)
    drawn = k >= 0
    code = np.where(drawn, 0, -1 - k)
    nulls = rows[METRIC_COLUMNS].isna().to_numpy()
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
