"""The lab jobs' ``--rate-schedule``: a source's rate follows its steps on a real Flink 2.3 cluster, without a
resubmission, and a given ``--rate-schedule-start-ms`` keeps the schedule's clock across a resubmission."""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from placement.errors import PlacementError
from placement.flink.rest import FlinkRest, FlinkRestError
from placement.lab.jobs import IOT_SENSOR_JOB
from support.flink import cancel_job, submit_job

pytestmark = [pytest.mark.flink, pytest.mark.timeout(240)]


def source_count(job) -> tuple[float, float]:
    """(monotonic time, records the source has sent) as of a metric fetch seen landing (what the watch reads)."""
    vid = job.vertex_ids["Source: Sensors"]
    at, values = job.rest.fetched_counters(job.job_id, [vid], "numRecordsOut", wait_s=4.0)
    return at, values[vid]


def rate_between(a: tuple[float, float], b: tuple[float, float]) -> float:
    return (b[1] - a[1]) / (b[0] - a[0])


def test_source_rate_follows_the_schedule_without_resubmission(flink_rest, lab_jobs_jar):
    now_ms = int(time.time() * 1000)
    common = ["--parallelism", "1", "--window-ms", "2000"]
    # A: 100/s, then 400/s from second 28 of its own clock (started now);
    # B: the same kind of schedule whose clock started 100 s ago, as after a resubmission: already in its 2nd step.
    a = submit_job(
        flink_rest,
        lab_jobs_jar,
        IOT_SENSOR_JOB,
        [*common, "--job-name", "sched-a", "--rate-schedule", "0:100,28:400", "--rate-schedule-start-ms", str(now_ms)],
    )
    b = submit_job(
        flink_rest,
        lab_jobs_jar,
        IOT_SENSOR_JOB,
        [
            *common,
            "--job-name",
            "sched-b",
            "--rate-schedule",
            "0:100,60:300",
            "--rate-schedule-start-ms",
            str(now_ms - 100_000),
        ],
    )
    try:

        def elapsed() -> float:
            return time.time() - now_ms / 1000

        a1, b1 = source_count(a), source_count(b)
        time.sleep(max(0.0, 25 - elapsed()))
        a2 = source_count(a)
        time.sleep(max(0.0, 33 - elapsed()))  # the step at 28 s plus the metric fetcher's delay
        a3 = source_count(a)
        time.sleep(max(0.0, 15 - (time.monotonic() - a3[0])))
        a4, b4 = source_count(a), source_count(b)
        first, second = rate_between(a1, a2), rate_between(a3, a4)
        # each reading dated when its fetch landed (within a 0.1 s poll and the fetch's latency, which grows on a
        # loaded machine: -6.4 % once at load 6 on 2 cores) at either end of a >= 12 s span: ±10 %; read when asked,
        # they were up to a fetch interval (2 s) old and this span needed ±20 %
        assert first == pytest.approx(100, rel=0.1), (first, second)
        assert second == pytest.approx(400, rel=0.1), (first, second)
        assert rate_between(b1, b4) == pytest.approx(300, rel=0.1)
        assert flink_rest.metric_fetch_interval_s() == 2.0  # the test cluster's metrics.fetcher.update-interval: 2000
        print(f"schedule A: {first:.0f}/s then {second:.0f}/s (100, 400); B: {rate_between(b1, b4):.0f}/s (300)")
    finally:
        with ThreadPoolExecutor(max_workers=2) as cancelling:
            list(cancelling.map(cancel_quietly, (a, b)))  # side by side, after every reading


def cancel_quietly(job) -> None:
    with contextlib.suppress(PlacementError):
        cancel_job(job.job_id, FlinkRest(job.rest_url))  # a client per thread


def test_a_malformed_schedule_fails_the_submission_naming_the_option(flink_rest, lab_jobs_jar):
    jar_id = flink_rest.upload_jar(lab_jobs_jar)
    with pytest.raises(FlinkRestError) as err:
        flink_rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=["--rate-schedule", "0:100,5"])
    assert "--rate-schedule: step '5' is not SECONDS:RATE" in str(err.value)
    with pytest.raises(FlinkRestError) as err:
        flink_rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=["--rate-schedule", "10:100"])
    assert "steps must start at 0 and ascend" in str(err.value)
