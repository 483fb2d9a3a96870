"""The profiling job on Spark: metric history (Parquet) -> one aggregate row per subtask -> job profile.

Runs locally (``local[2]``) by default, on a cluster with ``--spark-master``, or under ``spark-submit``::

    spark-submit --master spark://host:7077 "$(python -c 'import placement.profile.spark_job as m; print(m.__file__)')" \\
        DIR --out profile.json

Designed for throughput on few cores: it reads only the selected run directories (partition pruning by path) and
only the columns it uses; the vertex filter is pushed down to Parquet; the reduction is two aggregations with
built-in expressions only (no Python UDFs; nothing leaves the JVM but one row per subtask): a code-generated hash
aggregation of counts, sums and means over every sample, and percentile sketches over a bounded random subset
(see :mod:`placement.profile.rules`), filtered before the sketches so they see ~2,000 samples per subtask however
long the history is.
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
from placement.profile.rules import AGGREGATE_COLUMNS, QUANTILES, percentile_fraction

PERCENTILE_ACCURACY = 200  # rank error <= 0.5 %: the size of the subset's own sampling error, and 1.5x faster than 1000
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
        .config("spark.sql.files.maxPartitionBytes", str(256 << 20))  # fewer, bigger scan tasks
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def aggregate_spark(spark, selection: Selection, warmup_s: float, *, per_subtask: int | None = None) -> pd.DataFrame:
    """One row per (vertex_id, subtask) with :data:`~placement.profile.rules.AGGREGATE_COLUMNS`."""
    from pyspark.sql import functions as F

    from placement.profile.rules import PERCENTILE_SAMPLES_PER_SUBTASK

    fraction = percentile_fraction(selection.rows, selection.subtask_count, per_subtask or PERCENTILE_SAMPLES_PER_SUBTASK)
    paths = [str(d) for d in selection.run_dirs]
    df = spark.read.option("basePath", str(selection.root)).parquet(*paths)
    df = df.where(F.col("vertex_id").isin(selection.vertex_ids))

    running = F.col("running")
    started = F.col("attempt_start_ms")
    keep = running & (started.isNull() | ((F.col("ts_ms") - started) >= F.lit(int(warmup_s * 1000))))
    busy, rin, rout = F.col("busy_ms_per_s"), F.col("records_in_per_s"), F.col("records_out_per_s")
    valid = keep & busy.isNotNull() & rin.isNotNull() & rout.isNotNull()

    # Pass 1: counts, sums and means over every sample. Only built-in, fixed-size aggregates, so Spark runs it as a
    # whole-stage-generated HashAggregate (fast). A percentile sketch in the same aggregation would push *all* of it
    # onto the interpreted ObjectHashAggregate path, measured 2-4x slower end to end here.
    sums = [
        F.count(F.lit(1)).alias("rows"),
        F.count(F.when(keep, 1)).alias("samples"),
        F.count(F.when(running & ~keep, 1)).alias("warmup_trimmed"),
        F.count(F.when(~running, 1)).alias("not_running"),
        F.count(F.when(keep & busy.isNull(), 1)).alias("busy_nan"),
        F.count(F.when(valid, 1)).alias("valid"),
        F.sum(F.when(valid, busy)).alias("sum_busy_valid"),
        F.sum(F.when(valid, rin)).alias("sum_in_valid"),
        F.sum(F.when(valid, rout)).alias("sum_out_valid"),
        *[F.avg(F.when(keep, F.col(m))).alias(f"{m}_mean") for m in METRIC_COLUMNS],
    ]
    # Pass 2: medians and p95s from the bounded random subset of usable samples (filtered before the sketches).
    subset = df.where(keep & (F.rand(SEED) < F.lit(fraction))) if fraction < 1.0 else df.where(keep)
    sketches = [F.percentile_approx(F.col(m), list(QUANTILES), PERCENTILE_ACCURACY).alias(f"{m}_q") for m in METRIC_COLUMNS]

    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        means = {(r["vertex_id"], r["subtask"]): r.asDict() for r in df.groupBy("vertex_id", "subtask").agg(*sums).collect()}
        quantiles = {(r["vertex_id"], r["subtask"]): r for r in subset.groupBy("vertex_id", "subtask").agg(*sketches).collect()}
    except (PySparkException, Py4JError) as exc:  # keep the first line, not the JVM stack
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise PlacementError(f"{selection.root}: the Spark profiling job failed: {first[:300]}") from None
    records = []
    for key, d in means.items():
        q = quantiles.get(key)
        for m in METRIC_COLUMNS:
            pair = (q[f"{m}_q"] if q is not None else None) or [None, None]
            d[f"{m}_p50"], d[f"{m}_p95"] = pair[0], pair[1]
        records.append(d)
    return pd.DataFrame.from_records(records, columns=list(AGGREGATE_COLUMNS))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point for ``spark-submit``: the same arguments as ``placement profile``."""
    from placement.cli import main as cli_main

    cli_main(["profile", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
