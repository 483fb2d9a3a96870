"""``placement watch`` of two jobs on a real Flink 2.3 cluster (``--apply never``): one collector and one rolling
history per job, and one decision per tick that covers both jobs (each one's window from its own history)."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
import yaml

from placement.cli import main
from placement.collect.rolling import parts_of
from placement.errors import PlacementError
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.watch.record import read_log
from support.flink import cancel_job, submit_job

pytestmark = [pytest.mark.flink, pytest.mark.timeout(240)]

JOBS = {"watch-a": 100, "watch-b": 50}  # job name -> records/s of its source


def inventory(path: Path, rest_url: str) -> Path:
    """The test cluster (TaskManagers ``server`` and ``rpi1``) with both jobs in ``jobs:``."""
    path.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "name": "watch-fleet",
                "hosts": [
                    {"name": "server", "address": "127.0.0.1", "role": "server", "cores": 4, "memory": "4GiB"},
                    {"name": "rpi1", "address": "127.0.0.2", "role": "edge", "model": "rpi4b"},
                ],
                "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
                "flink": {"rest_url": rest_url},
                "job": {"name": "watch-a", "entry_class": IOT_SENSOR_JOB},
                "jobs": [
                    {"name": name, "program_args": ["--job-name", name, "--rate", str(rate)]}
                    for name, rate in JOBS.items()
                ],
            },
            sort_keys=False,
        )
    )
    return path


def test_two_jobs_are_collected_and_decided_on_together(flink_rest, lab_jobs_jar, tmp_path, capsys):
    jobs = [
        submit_job(
            flink_rest,
            lab_jobs_jar,
            IOT_SENSOR_JOB,
            ["--job-name", name, "--rate", str(rate), "--parallelism", "1", "--window-ms", "2000"],
        )
        for name, rate in JOBS.items()
    ]
    work = tmp_path / "watch"
    try:
        with pytest.raises(SystemExit) as done:
            main(
                [
                    "watch",
                    "--inventory",
                    str(inventory(tmp_path / "inv.yaml", flink_rest.url)),
                    *[a for name in JOBS for a in ("--job-name", name)],
                    "--apply",
                    "never",
                    "--engine",
                    "pandas",
                    "--interval",
                    "5",
                    "--window",
                    "6",
                    "--flush",
                    "2",
                    "--sample",
                    "1",
                    "--keep",
                    "60",
                    "--warmup",
                    "0",
                    "--duration",
                    "16",
                    "--work-dir",
                    str(work),
                ]
            )
    finally:
        for job in jobs:
            with contextlib.suppress(PlacementError):
                cancel_job(job)
    out, err = capsys.readouterr()
    assert done.value.code == 0, err
    for name in JOBS:  # each job's own rolling history
        assert len(parts_of(work / name / "history")) >= 2, name
    records = [r for r in read_log(work / "decisions.jsonl") if r["record"] == "decision"]
    assert len(records) >= 2  # a tick reads each job's source counters after a metric fetch: ~4 s a job
    for r in records:  # one record per tick for the set, each job's part in it
        assert r["window"] is None and [j["job"] for j in r["jobs"]] == list(JOBS)
    seen = [r for r in records if all(j["window"] for j in r["jobs"])]
    assert seen, [r["decision"] for r in records]
    for r in seen:
        assert r["decision"]["action"] in ("steady", "hold", "apply"), r["decision"]
        windows = {j["job"]: j["window"] for j in r["jobs"]}
        assert {j["job"]: j["job_id"] for j in r["jobs"]} == {name: job.job_id for name, job in zip(JOBS, jobs)}
        for name, rate in JOBS.items():  # each window from its own job: its source's rate
            (measured,) = windows[name]["source_rates"].values()
            assert 0 <= measured <= rate * 1.1, (name, measured)  # 0: Flink's rate meter not moving yet (a loaded host)
            # priced together: each job's part of the one uplink, from where its subtasks ran
            assert [link["host"] for link in windows[name]["links"]] == ["rpi1"], windows[name]
            assert Path(windows[name]["snapshot"], "profile.json").is_file()
            assert Path(windows[name]["snapshot"]).parent == work / name / "windows"
    for name in JOBS:  # the meters move within the watch
        assert (
            max(next(iter(j["window"]["source_rates"].values())) for r in seen for j in r["jobs"] if j["job"] == name)
            > 0
        ), name
    # the pipe gets one line per decision, naming each job's rates; then the summary
    lines = out.strip().splitlines()
    assert len(lines) == len(records) + 1 and lines[-1].startswith(f"watch stopped after {len(records)} decisions")
    assert all(re.match(r"tick \d+: \w+: ", line) for line in lines[:-1])
    assert any("watch-a: Source: Sensors" in line and "; watch-b: Source: Sensors" in line for line in lines)
