"""Does ``pipeline.jobvertex-parallelism-overrides`` change an unmodified job's parallelism on Flink 2.3? Measured
on a real cluster (the lab jobs' IoT job: Source → Parse → Filter → Enrich FORWARD, ⇒ Window Aggregate HASH, → Sink),
resubmitting from a savepoint each time:

1. in the REST jar run request's ``flinkConfiguration`` (``POST /jars/<id>/run``): **ignored** — Flink 2.3's jar run
   submits a StreamGraph, and the Dispatcher applies the overrides to submitted JobGraphs only
   (``Dispatcher.internalSubmitJob``: ``if (plan instanceof JobGraph) applyParallelismOverrides(...)``);
2. in the configuration of a **JobGraph** compiled on the client and submitted over REST (``RestClusterClient``: the
   product's submitter, ``submitter/`` + :mod:`placement.submitter`, which ``placement apply`` runs): **applied**,
   restoring from the savepoint;
3. FORWARD with unequal parallelism (Source 2 → Parse 3) leaves a downstream subtask without a single record — why the
   planner keeps FORWARD-connected vertices at one parallelism (placement/costmodel/rescaled.py).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import pytest

from placement.errors import PlacementError
from placement.flink.home import find_flink_home
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.submitter import SubmitCall, build_submitter, job_id_from, overrides_text
from support.flink import IOT_ARGS, cancel_job, submit_job

pytestmark = pytest.mark.flink

OVERRIDES_KEY = "pipeline.jobvertex-parallelism-overrides"


@pytest.fixture(scope="module")
def submitter(tmp_path_factory) -> Path:
    return build_submitter(find_flink_home(), tmp_path_factory.mktemp("submitter")).path


def submit_jobgraph(submitter: Path, cluster, jar: Path, overrides: dict[str, int], savepoint: str) -> str:
    call = SubmitCall(
        java="java",
        submitter_jar=str(submitter),
        flink_home=str(find_flink_home().path),
        conf_dir=str(cluster.spec.work_dir / "jobmanager" / "conf"),
        rest_url=cluster.rest_url,
        job_jar=str(jar),
        entry_class=IOT_SENSOR_JOB,
        program_args=IOT_ARGS,
        overrides=tuple(overrides.items()),
    )
    proc = subprocess.run(call.argv(savepoint), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr[-2000:]  # quiet: only the job id line
    return job_id_from(proc.stdout, proc.stderr, proc.returncode)


def parallelism(rest, job_id: str) -> dict[str, int]:
    return {v.name: v.parallelism for v in rest.wait_until_running(job_id, timeout=120).vertices}


def records_read(rest, job_id: str, vertex_id: str) -> list[int]:
    """read-records of each subtask (the JobManager's own per-subtask counters)."""
    body = rest.get(f"/jobs/{job_id}/vertices/{vertex_id}")
    return [int(s.get("metrics", {}).get("read-records") or 0) for s in body["subtasks"]]


def test_overrides_reach_a_jobgraph_submission_but_not_a_rest_jar_run(
    flink_cluster, flink_rest, lab_jobs_jar, submitter, tmp_path
):
    job = submit_job(flink_rest, lab_jobs_jar, IOT_SENSOR_JOB, IOT_ARGS)
    jobs = [job.job_id]
    try:
        ids = job.vertex_ids
        before = {v.name: v.parallelism for v in job.details.vertices}
        assert before["Parse"] == 2 and before["Window Aggregate"] == 1
        overrides = {ids["Parse"]: 3, ids["Window Aggregate"]: 2}

        # 1. the REST jar run's flinkConfiguration: the job comes back at its old parallelism
        savepoint = flink_rest.stop_with_savepoint(job.job_id, f"file://{tmp_path}/sp1")
        rerun = flink_rest.run_jar(
            job.jar_id,
            entry_class=IOT_SENSOR_JOB,
            program_args=list(IOT_ARGS),
            savepoint_path=savepoint,
            flink_configuration={OVERRIDES_KEY: overrides_text(overrides)},
        )
        jobs.append(rerun)
        assert parallelism(flink_rest, rerun) == before

        # 2. the same overrides in a JobGraph submitted over REST: applied, restored from the savepoint
        savepoint = flink_rest.stop_with_savepoint(rerun, f"file://{tmp_path}/sp2")
        graph_job = submit_jobgraph(submitter, flink_cluster, lab_jobs_jar, overrides, savepoint)
        jobs.append(graph_job)
        after = parallelism(flink_rest, graph_job)
        assert after == {**before, "Parse": 3, "Window Aggregate": 2}
        assert flink_rest.job(graph_job).vertex_named("Parse").id == ids["Parse"]  # same vertex ids: same job
        # compiled with the JobManager's config.yaml, as the jar run was: the same checkpointing (10 s in the cluster's)
        interval = {j: flink_rest.get(f"/jobs/{j}/checkpoints/config")["interval"] for j in (rerun, graph_job)}
        assert interval[graph_job] == interval[rerun] == 10_000, interval

        # 3. FORWARD from 2 source subtasks to 3 Parse subtasks: one Parse subtask never gets a record
        deadline = time.monotonic() + 90
        while True:
            parse = records_read(flink_rest, graph_job, ids["Parse"])
            if sum(1 for n in parse if n > 0) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(1)  # the cluster fetches metrics every 2 s
        assert sorted(n > 0 for n in parse) == [False, True, True], parse
    finally:
        for job_id in jobs:
            with contextlib.suppress(PlacementError):
                cancel_job(job_id, flink_rest)
