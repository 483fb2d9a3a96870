"""The profiling job on Spark: metric history (Parquet) -> one aggregate row per subtask -> job profile.

Runs locally (``local[*]``: every core) by default, on a cluster with ``--spark-master``, or under ``spark-submit``
(:mod:`placement.cli.spark_submit`).

Spark distributes the part files; the reduction itself is the one the pandas engine runs
(:mod:`placement.profile.partials`): each task's Python worker reads its files with PyArrow (only the columns the
profile uses, one row group at a time, one thread) and reduces them with NumPy to a few rows per subtask plus the
drawn percentile samples, and the driver adds those up. Why not Spark SQL: its Parquet scan and row-at-a-time hash
aggregation cost more than the whole vectorised reduction. Measured on 2 cores at 50M samples (quiet machine), the
earlier one-pass Spark SQL aggregation (group codes, 64-bit key hashes, one split per row group, tuned with JFR) took
20 s; a plain ``groupBy(vertex_id, subtask)`` with a count and seven sums over the same files, the floor of any Spark
SQL plan, 12.8 s; the NumPy-over-PyArrow reduction takes 6-7.5 CPU-seconds for all of it (over half of that is
Parquet decoding and ZSTD), which two workers do in 4-6 s. What remains of a run is fixed: the JVM's start (2.5-3 s,
C1 only: see DRIVER_JVM_FLAGS) and the Python workers' (1.5-2 s).

Executors need Python with NumPy and PyArrow (the stage-1 functions travel by value: not this package) at the
driver's interpreter path unless ``PYSPARK_PYTHON`` names another, and they read the part files by the paths the
driver gives them.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

import pandas as pd

from placement.errors import PlacementError
from placement.profile.class_archive import (
    ClassArchive,
    class_archive,
    publish,
    spark_option_word,
)
from placement.profile.history import Selection
from placement.profile.partials import finish_partials, partials_job
from placement.signals import sigint_held_back, sigint_is_an_interrupt

if TYPE_CHECKING:  # PySpark is imported when the engine runs: `placement` starts without it
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

# Tasks per executor core: two, so a core that finishes early takes another instead of idling while the last big
# task runs; not more, as each PySpark task costs its own overhead (measured on 2 busy cores: 16 empty tasks 0.5-1 s,
# 64 2.8 s, against ~0.15 s for 4).
TASKS_PER_SLOT = 2
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
# A failed task's exception (a Python worker's traceback, the JVM stack) is what the job's one-line error reports
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""
# What the driver JVM prints on its own stderr at start-up that no log4j setting reaches: the JVM's note about the
# incubator Vector API module Spark's launcher adds, and Spark's shell banner (should its logger config be ignored).
_JVM_CHATTER = re.compile(rb"^(WARNING: Using incubator modules|Setting default log level|To adjust logging level)")


# JIT and GC for the profile's driver JVM (local mode: also the executors'): it starts Spark, schedules a few Python
# tasks and passes their results on; the reduction runs in the Python workers, so the JVM has no hot loop of its own.
# C1 alone compiles what that needs, and C2 only took CPU from the workers on 2 cores: measured at 50M samples, the C2
# threads used 1.3-1.5 CPU-s per run, 0.4-0.6 of it while the workers ran, and JVM start took 2.5-2.7 s instead of
# 3-5 s. The serial collector spends no concurrent GC threads on 2 cores.
DRIVER_JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def _quiet_log4j() -> str:
    """A log4j2 config that keeps Spark's INFO/WARN chatter (and its 'default profile' banner) off the terminal."""
    path = Path(tempfile.gettempdir()) / "placement-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _LOG4J:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J)
        os.replace(tmp, path)
    return str(path)


def _forward_stderr(stream: IO[bytes]) -> None:
    """Copy the driver JVM's stderr to ours, minus its start-up chatter; real errors still reach the terminal."""
    for line in iter(stream.readline, b""):
        if not _JVM_CHATTER.match(line):
            sys.stderr.write(line.decode(errors="replace"))
            sys.stderr.flush()


def _start_driver(conf: SparkConf) -> None:
    """Start the driver JVM (PySpark's gateway) with ``conf`` and its stderr filtered, and its SparkContext.

    The JVM gets a session of its own: a Ctrl-C typed at the terminal reaches this process alone, not the JVM nor
    the Python workers it forks (each printed a traceback of its own), and :func:`stop_driver` ends them. A Ctrl-C
    during the launch (2-3 s) is acted on once it is over: PySpark returns the JVM's process only then, and one
    interrupted half-way was left running with nobody holding its pid."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    with sigint_held_back():
        gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE, "start_new_session": True})
        threading.Thread(target=_forward_stderr, args=(gateway.proc.stderr,), name="spark-stderr", daemon=True).start()
        # SparkContext installs a SIGINT handler that asks the JVM to cancel the jobs, over the very connection the
        # interrupted call may be using; sigint_held_back puts the previous handler back: a plain KeyboardInterrupt,
        # and stop_driver ends the JVM instead.
        SparkContext(conf=conf, gateway=gateway)


def stop_driver() -> None:
    """End the driver JVM this process started, now (after a Ctrl-C: there is nothing of its to keep).

    Its process group (the JVM, in a session of its own) gets SIGKILL; PySpark's daemon, in a group of its own,
    ends its workers and exits when the JVM's end closes its stdin. A no-op for a JVM this process did not start
    (under spark-submit) or that is gone. A class archive it was to dump is dropped."""
    from pyspark import SparkContext

    global _dumping
    logging.getLogger("py4j").setLevel(logging.CRITICAL)  # the connection's end is expected now, not news
    proc = getattr(SparkContext._gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(proc.pid) == proc.pid:  # the group is the JVM's own (started by _start_driver)
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
        proc.wait()
    if _dumping is not None:
        _dumping.pending.unlink(missing_ok=True)
        _dumping = None


def spark_session(
    master: str | None = None,
    *,
    driver_memory: str = "1g",
    shuffle_partitions: int = 4,
    jvm_flags: str = DRIVER_JVM_FLAGS,
) -> SparkSession:
    """A small session for 2 cores: few shuffle partitions, modest driver memory, no UI, quiet logs; ``jvm_flags``
    for the driver JVM if this call starts it.

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
        # Spark SQL scans (benchmarks/profile_throughput.py's floor) in splits of about one Parquet row group: with 256
        # MiB splits a 10M history made 3 tasks of 4M, 5M and 1M samples, and one of the 2 cores sat idle for the last.
        "spark.sql.files.maxPartitionBytes": str(32 << 20),
    }
    # The Python workers run stage 1 with NumPy/PyArrow: this interpreter, unless the user named another (PySpark's
    # default, "python3" on the PATH, need not have them).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # under spark-submit
        if master:
            options["spark.master"] = master
    elif SparkContext._active_spark_context is None:
        options["spark.master"] = master or "local[*]"
        options["spark.driver.memory"] = driver_memory
        java_options = f"-Dlog4j2.configurationFile={spark_option_word(_quiet_log4j())} {jvm_flags}"
        # only for a JVM we are about to start; its flags are part of what the archive must match
        archive = class_archive(jvm_flags) if SparkContext._gateway is None else None
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


def aggregate_spark(
    spark: SparkSession, selection: Selection, warmup_s: float, *, per_subtask: int | None = None
) -> pd.DataFrame:
    """One row per (vertex_id, subtask) with :data:`~placement.profile.rules.AGGREGATE_COLUMNS`.

    The executors' Python workers run stage 1 (:func:`~placement.profile.partials.file_partials`) on the part files,
    by the paths the history check validated; the driver adds up what they send back (stage 2)."""
    from py4j.protocol import Py4JError
    from pyspark import cloudpickle
    from pyspark.errors import PySparkException

    from placement.profile import partials

    job = partials_job(selection, warmup_s, per_subtask)
    sc = spark.sparkContext
    tasks = file_tasks(selection.parts, sc.defaultParallelism * TASKS_PER_SLOT)
    cloudpickle.register_pickle_by_value(partials)  # executors need NumPy and PyArrow, not this package
    try:
        with sigint_is_an_interrupt():  # a Ctrl-C that ended the JVM first is still an interrupt, not a failed job
            results = (
                sc.parallelize(tasks, len(tasks))
                .mapPartitions(functools.partial(partials.task_partials, job=job))
                .collect()
            )
    except (PySparkException, Py4JError) as exc:  # one line, not the JVM stack or a worker's traceback
        raise PlacementError(f"{selection.root}: the Spark profiling job failed: {_reason(exc)}") from None
    finally:
        cloudpickle.unregister_pickle_by_value(partials)
    failed = [r for r in results if isinstance(r, partials.ReadFailure)]
    if failed:
        f = failed[0]
        raise PlacementError(
            f"{f.path}: a Spark executor on {f.host} could not read it ({f.error}); executors read "
            "the history at the paths the driver sees, so it must be mounted there on every worker"
        )
    return finish_partials([r for r in results if not isinstance(r, partials.ReadFailure)], job.vertex_ids)


_PYTHON_ERROR = re.compile(r"^(?!org\.|java\.)[\w.]*(Error|Exception): ")


def _reason(exc: Exception) -> str:
    """What went wrong, in one line: a Python worker's exception (the last line of its traceback: say, NumPy missing
    on the executors), else the first line of the message."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    python = [ln for ln in lines if _PYTHON_ERROR.match(ln)]
    reason = (python[-1] if python else lines[0] if lines else type(exc).__name__)[:300]
    if python and "ModuleNotFoundError" in reason:
        reason += " (the executors' Python needs NumPy and PyArrow; PYSPARK_PYTHON names it)"
    return reason


def file_tasks(parts: Sequence[Path], slots: int) -> list[list[str]]:
    """The part files in at most ``slots`` tasks of about equal bytes, largest first.

    Spark starts tasks in order as cores come free, so the big ones go first and the small ones fill the gaps at the
    end. Files, not row groups, are the unit: stage 1 seeds its draw per file and row group, so the tasks' cut
    changes nothing in the result; a collector's many small parts share a task instead of paying one each."""
    sized = sorted(((_size(p), str(p)) for p in parts), reverse=True)
    tasks: list[list[str]] = [[] for _ in range(max(1, min(slots, len(sized))))]
    lightest = [(0, i) for i in range(len(tasks))]  # a heap of (bytes so far, task)
    for size, path in sized:  # each file to the lightest task so far (greedy, largest first)
        load, i = heapq.heappop(lightest)
        tasks[i].append(path)
        heapq.heappush(lightest, (load + size, i))
    return [tasks[i] for _, i in sorted(lightest, key=lambda t: (-t[0], t[1])) if tasks[i]]


def _size(path: Path) -> int:
    """Bytes of a part file; 0 if it vanished since the history check (its task then reports it, by name)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0
