"""Shared fixtures for the profiling tests: one small Spark session and synthetic histories with known truth."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark():
    """One local session for every Spark test (starting a JVM costs ~10-30 s on a shared 2-core box)."""
    from placement.profile.spark_job import spark_session

    session = spark_session()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def multi_history(tmp_path_factory):
    """Two submissions (job ids) x two runs of the IoT job, parallelism doubled, with restarts and backpressure."""
    from support.synthetic import IOT_JOB, HistoryShape, scaled_job, write_history

    root = tmp_path_factory.mktemp("multi")
    job = scaled_job(IOT_JOB, 2)
    write_history(job, HistoryShape(duration_s=600, restarts=2, backpressure_episodes=2, seed=11), root, runs=2, jobs=2)
    return root, job
