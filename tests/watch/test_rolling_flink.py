"""The watch's collection and profiling on a real Flink 2.3 job and real PySpark: a rolling history bounded on
disk, windows cut from it, every window profiled by one Spark session — and each window's profile equal to what
``placement profile`` (its own process, its own JVM) gives on the same window."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from placement.collect.layout import find_manifests
from placement.collect.rolling import parts_of, snapshot_window
from placement.watch.collecting import CollectorThread
from placement.watch.options import Status, WatchOptions
from placement.watch.profiling import WindowProfiler

pytestmark = [pytest.mark.flink, pytest.mark.spark, pytest.mark.timeout(300)]


def test_rolling_history_windows_and_one_session_for_every_profile(iot_job, tmp_path):
    history = tmp_path / "history"
    options = WatchOptions(
        inventory_path=tmp_path / "unused.yaml",
        job_name="iot-sensors",
        work_dir=tmp_path,
        sample_s=1.0,
        flush_s=3.0,
        keep_s=12.0,
        window_s=9.0,
    )
    stop = threading.Event()
    status = Status()
    collector = CollectorThread(iot_job.rest_url, options, history, stop, status)
    collector.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(parts_of(history)) < 3:
            time.sleep(1)
        first_cut = int(time.time() * 1000)
        snap1 = tmp_path / "w1"
        assert snapshot_window(history, snap1, job_name="iot-sensors", since_ms=first_cut - 9_000) >= 2
        # the history rolls on past its 12 s bound: until its first part is pruned, and a window's length (9 s)
        # later than the first cut at least, so that the two windows do not overlap
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            time.time() * 1000 - first_cut < 9_000 or "part-00000.parquet" in {p.path.name for p in parts_of(history)}
        ):
            time.sleep(0.5)
        snap2 = tmp_path / "w2"
        assert snapshot_window(history, snap2, job_name="iot-sensors", since_ms=int(time.time() * 1000) - 9_000) >= 2
    finally:
        stop.set()
        collector.join(30)
    assert not collector.thread.is_alive() and collector.error is None
    parts = parts_of(history)
    names = [p.path.name for p in parts]
    assert "part-00000.parquet" not in names  # the oldest went
    # bounded: nothing older than keep_s (+ one flush, the prune runs at flushes) before the newest part
    assert parts[-1].last_ms - parts[0].last_ms <= (12 + 3 + 1) * 1000
    ((_, manifest),) = find_manifests(history)
    assert manifest.files == names and manifest.stopped == "interrupted"
    assert manifest.samples > sum(1 for _ in parts)  # every sample written is counted, kept or not

    profiler = WindowProfiler(engine="spark", warmup_s=0)
    p1 = profiler.profile(snap1)
    from pyspark import SparkContext

    jvm = SparkContext._gateway.proc.pid
    p2 = profiler.profile(snap2)
    assert SparkContext._gateway.proc.pid == jvm and profiler.profiles == 2  # one driver JVM for both windows
    # the job started with this module: Flink's 60 s rate meters are still ramping up, so the later window is higher
    rates = [next(v for v in p.vertices if v.name == "Source: Sensors").records_out_per_s for p in (p1, p2)]
    assert 0 < rates[0] < rates[1] <= 400 * 1.1, rates

    out = tmp_path / "cli.json"
    placement = str(Path(sys.executable).with_name("placement"))  # the installed command, its own process and JVM
    done = subprocess.run(
        [placement, "profile", str(snap1), "--warmup", "0", "--out", str(out), "--quiet"],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if done.returncode != 0:
        pytest.fail(done.stderr)
    assert json.loads(out.read_text()) == p1.dump()
    # a window carries its TaskManager CPU rows (issue 23): the watch loop's profiles have the baselines too
    assert {t.id for t in p1.taskmanagers} == {"server", "rpi1"} and all(t.process_cores for t in p1.taskmanagers)
