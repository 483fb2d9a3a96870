"""The profiling job on Spark: metric history (Parquet) -> one aggregate row per subtask -> job profile.

Runs locally (``local[2]``) by default, on a cluster with ``--spark-master``, or under ``spark-submit``::

    spark-submit --master spark://host:7077 "$(python -c 'import placement.profile.spark_job as m; print(m.__file__)')" \\
        DIR --out profile.json

Designed for throughput on few cores: it reads exactly the part files the history check validated, only the
columns it uses, with the schema given (no footer is opened to infer one), and makes **one** pass over them, with
built-in expressions only (no Python UDFs). The pass is a
code-generated hash aggregation of counts and sums over every sample, grouped by subtask *and* by a key that is null
for most samples and unique for the ~2,000 per subtask drawn at random for the percentiles (see
:mod:`placement.profile.rules`). Its output (one row per subtask plus one per drawn sample: ~240k rows for 120
subtasks, however long the history) comes to the driver as Arrow batches, where :func:`finish_partials` adds the sums
up and takes the medians and p95s of the drawn samples exactly as the pandas engine does. A percentile sketch over
every sample would push the whole aggregation onto the slower ObjectHashAggregate path; a second scan for the
subset would read every byte twice; Spark's own percentile over the 240k drawn rows cost 2-3 s (measured).
"""

from __future__ import annotations

import os
import sys
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from placement.collect.layout import METRIC_COLUMNS
from placement.errors import PlacementError
from placement.profile.history import Selection
from placement.profile.rules import (
    AGGREGATE_COLUMNS,
    COUNT_COLUMNS,
    QUANTILES,
    SUM_COLUMNS,
    percentile_fraction,
)

SEED = 20_240_601


_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n
"""


def _quiet_log4j() -> str:
    """A log4j2 config that keeps Spark's INFO/WARN chatter (and its 'default profile' banner) off the terminal."""
    path = Path(tempfile.gettempdir()) / "placement-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        os.replace(tmp, path)
    return str(path)


def spark_session(master: str | None = None, *, driver_memory: str = "1g", shuffle_partitions: int = 4):
    """A small session for 2 cores: few shuffle partitions, modest driver memory, no UI, quiet logs.

    Under ``spark-submit`` (a JVM is already there) master and memory are whatever spark-submit was given.
    """
    warnings.filterwarnings("ignore", message=".*pandas >= 3.0.0.*")  # pyspark's version nag; we pass no pandas through
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("placement-profile")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        builder = (
            builder.master(master or "local[2]")
            .config("spark.driver.memory", driver_memory)
            .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_quiet_log4j()}")
        )
    elif master:
        builder = builder.master(master)
    spark = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")  # run ids stay strings
        # About one Parquet row group (1M samples, ~40 MiB) per scan task: with 256 MiB splits a 10M history made 3
        # tasks of 4M, 5M and 1M samples, and one of the 2 cores sat idle for the last one; small splits balance.
        .config("spark.sql.files.maxPartitionBytes", str(32 << 20))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _read_schema():
    """The columns the job reads, typed as the layout writes them: no footer is opened to infer a schema."""
    from pyspark.sql.types import (
        BooleanType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    return StructType(
        [
            StructField("ts_ms", LongType()),
            StructField("vertex_id", StringType()),
            StructField("subtask", IntegerType()),
            StructField("attempt_start_ms", LongType()),
            StructField("running", BooleanType()),
            *[StructField(m, DoubleType()) for m in METRIC_COLUMNS],
        ]
    )


def aggregate_spark(spark, selection: Selection, warmup_s: float, *, per_subtask: int | None = None) -> pd.DataFrame:
    """One row per (vertex_id, subtask) with :data:`~placement.profile.rules.AGGREGATE_COLUMNS`, in one scan."""
    from pyspark.sql import functions as F

    from placement.profile.rules import PERCENTILE_SAMPLES_PER_SUBTASK

    fraction = percentile_fraction(selection.rows, selection.subtask_count, per_subtask or PERCENTILE_SAMPLES_PER_SUBTASK)
    # Exactly the part files history.check_parts validated (the ones the pandas engine reads), with a known schema:
    # no directory listing and no schema inference.
    df = spark.read.schema(_read_schema()).parquet(*[str(p) for p in selection.parts])
    df = df.where(F.col("vertex_id").isin(selection.vertex_ids))

    running = F.col("running")
    started = F.col("attempt_start_ms")
    keep = running & (started.isNull() | ((F.col("ts_ms") - started) >= F.lit(int(warmup_s * 1000))))
    busy, rin, rout = F.col("busy_ms_per_s"), F.col("records_in_per_s"), F.col("records_out_per_s")
    valid = keep & busy.isNotNull() & rin.isNotNull() & rout.isNotNull()
    # The percentile subset: a uniform random subset of the usable samples, each kept in a group of its own (key `k`,
    # null for every other sample). Stage 1 is then a single code-generated HashAggregate over every sample (fixed-size
    # buffers only, no sketch), whose output is one row per drawn sample plus one per subtask: what comes back to
    # Python is bounded by the subset size, not by the history's length. Stage 2 (finish_partials) runs on that.
    picked = keep & (F.rand(SEED) < F.lit(fraction)) if fraction < 1.0 else keep
    k = F.when(picked, F.monotonically_increasing_id())
    stage1 = [
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(keep, 1)).alias("samples"),
        F.count(F.when(running & ~keep, 1)).alias("warmup_trimmed"),
        F.count(F.when(~running, 1)).alias("not_running"),
        F.count(F.when(keep & busy.isNull(), 1)).alias("busy_nan"),
        F.count(F.when(valid, 1)).alias("valid"),
        F.sum(F.when(valid, busy)).alias("sum_busy_valid"),
        F.sum(F.when(valid, rin)).alias("sum_in_valid"),
        F.sum(F.when(valid, rout)).alias("sum_out_valid"),
        *[F.sum(F.when(keep, F.col(m))).alias(f"{m}_sum") for m in METRIC_COLUMNS],
        *[F.count(F.when(keep, F.col(m))).alias(f"{m}_n") for m in METRIC_COLUMNS],
    ]
    partial = df.groupBy("vertex_id", "subtask", k.alias("k")).agg(*stage1)

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
    return finish_partials(rows)


def finish_partials(rows: pd.DataFrame) -> pd.DataFrame:
    """Stage 2 (at most ~2,000 rows per subtask, whatever the history's length): add the partial counts and sums up
    per subtask, and take the medians and p95s of the drawn samples the way the pandas engine does (linear
    interpolation). In a one-sample row (``k`` not null) each ``<metric>_sum`` is that sample's value, or null when
    the metric is missing (ignored by the quantiles, as by the means)."""
    keys = ["vertex_id", "subtask"]
    if rows.empty:
        return pd.DataFrame(columns=list(AGGREGATE_COLUMNS))
    counts = [*COUNT_COLUMNS, *[f"{m}_n" for m in METRIC_COLUMNS]]
    rows[counts] = rows[counts].fillna(0).astype("int64")
    totals = rows.groupby(keys, sort=False).sum(min_count=1, numeric_only=True)
    out = totals[[*COUNT_COLUMNS, *SUM_COLUMNS]].copy()
    for c in COUNT_COLUMNS:
        out[c] = out[c].fillna(0).astype("int64")
    for m in METRIC_COLUMNS:
        out[f"{m}_mean"] = totals[f"{m}_sum"] / totals[f"{m}_n"].where(totals[f"{m}_n"] > 0)
    drawn = rows[rows["k"].notna()]
    q = drawn.groupby(keys, sort=False)[[f"{m}_sum" for m in METRIC_COLUMNS]].quantile(list(QUANTILES))
    for m in METRIC_COLUMNS:
        for qq, name in zip(QUANTILES, ("p50", "p95")):
            out[f"{m}_{name}"] = q[f"{m}_sum"].xs(qq, level=-1) if len(q) else float("nan")
    return out.reset_index()[list(AGGREGATE_COLUMNS)]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point for ``spark-submit``: the same arguments as ``placement profile``."""
    from placement.cli import main as cli_main

    cli_main(["profile", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
