"""The extension on clusters of other Flink lines than this machine's 2.3: 1.19 and 1.20 (the LTS line: ``Time``, an
empty ``ExecutionSlotSharingGroup``; 1.19 reads some durations as plain milliseconds) and 2.0 (the four-argument
factory constructor). Each is stock Flink of that release,
fetched once into the cache, with the extension and the lab jobs built against its jars; an unmodified job is placed
subtask by subtask as its schedulercfg says, and a job without one runs beside it as stock Flink (the strategy the
line's own factory would pick). One cluster at a time, stopped after its line's tests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scheduler_support import ADDRESSES, PlacedCluster, require_jdk, schedulercfg, start_placed_cluster
from support.flink import wait_for_records

from placement import scheduler as S
from placement.flink.distribution import flink_home_for
from placement.lab.jobs import IOT_SENSOR_JOB, NEXMARK_BIDS_JOB, build_jobs_jar

pytestmark = pytest.mark.flink

RELEASES = ("1.19.3", "1.20.5", "2.0.2")
# a rate schedule: the lab jobs' own RateLimiterStrategy, whose API differs before 2.2 (an overlay of deploy/jobs)
IOT_ARGS = ["--rate-schedule", "0:40", "--parallelism", "3", "--window-parallelism", "2", "--window-ms", "1000"]
# every TaskManager gets subtasks; rpi2 is named by its address; Window Aggregate (after a HASH edge) is split
IOT_PLAN = {
    "Source: Sensors": ["rpi1", "rpi2", "server"],
    "Parse": ["rpi1", "rpi2", "server"],
    "Filter": ["rpi1", "server", "server"],
    "Enrich": ["server", "server", "server"],
    "Window Aggregate": ["rpi1", "server"],
    "Sink: Readings": ["server", "server"],
}


@pytest.fixture(scope="module", params=RELEASES, ids=lambda release: f"flink-{release}")
def line_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlacedCluster]:
    require_jdk()
    flink = flink_home_for(request.param)  # the real cache: fetched once per machine
    work = tmp_path_factory.mktemp(f"cluster-{request.param}")
    jobs = build_jobs_jar(work / "jobs", home=flink).path
    with start_placed_cluster(work, flink, jobs) as cluster:
        yield cluster


def active_line(pc: PlacedCluster, job_id: str) -> str:
    return next(line for line in pc.jobmanager_log().splitlines() if S.ACTIVE_LOG_LINE in line and job_id in line)


def test_an_unmodified_job_is_placed_subtask_by_subtask_and_a_stock_job_runs_beside_it(line_cluster: PlacedCluster) -> None:
    pc = line_cluster
    version = pc.home.version
    assert S.extension_active(pc.rest) is True
    installed = S.installed_extension(pc.home)
    assert installed is not None and installed.name.startswith(f"placement-scheduler-{version}-")
    pc.write_schedulercfg("iot-sensors", schedulercfg(IOT_PLAN, {"rpi2": ADDRESSES["rpi2"][0]}))
    placed = pc.run_until_running(IOT_SENSOR_JOB, IOT_ARGS)
    stock = None
    try:
        assert pc.rest.placement(placed) == IOT_PLAN
        windows = next(v.id for v in pc.rest.job(placed).vertices if v.name == "Window Aggregate")
        wait_for_records(pc.rest, placed, windows, timeout=90)  # records went through the placed pipeline, windows too
        line = active_line(pc, placed)
        assert f"(Flink {version}, build " in line
        # a TaskManager's slots: the most subtasks of one vertex it runs (Enrich's three on server)
        assert ": 16 subtasks in 1 slot(s) on rpi1, 1 slot(s) on rpi2, 3 slot(s) on server" in line
        stock = pc.run_until_running(NEXMARK_BIDS_JOB, ["--job-name", "stock-bids", "--parallelism", "1",
                                                        "--rate", "20"])
        assert "no schedulercfg at" in active_line(pc, stock) and "stock placement" in active_line(pc, stock)
        assert pc.rest.job_raw(stock)["state"] == "RUNNING"
    finally:
        pc.cancel(placed)
        if stock is not None:
            pc.cancel(stock)
