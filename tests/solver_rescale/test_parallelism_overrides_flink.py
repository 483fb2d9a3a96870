"""Does ``pipeline.jobvertex-parallelism-overrides`` change an unmodified job's parallelism on Flink 2.3? Measured
on a real cluster (the lab jobs' IoT job: Source → Parse → Filter → Enrich FORWARD, ⇒ Window Aggregate HASH, → Sink),
resubmitting from a savepoint each time:

1. in the REST jar run request's ``flinkConfiguration`` (``POST /jars/<id>/run``): **ignored** — Flink 2.3's jar run
   submits a StreamGraph, and the Dispatcher applies the overrides to submitted JobGraphs only
   (``Dispatcher.internalSubmitJob``: ``if (plan instanceof JobGraph) applyParallelismOverrides(...)``);
2. in the configuration of a **JobGraph** compiled on the client and submitted over REST (``RestClusterClient``, a
   small Java helper beside this test): **applied**, restoring from the savepoint;
3. FORWARD with unequal parallelism (Source 2 → Parse 3) leaves a downstream subtask without a single record — why the
   planner keeps FORWARD-connected vertices at one parallelism (placement/costmodel/rescaled.py).
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from support.flink import IOT_ARGS, cancel_job, submit_job

from placement.errors import PlacementError
from placement.flink_home import find_flink_home
from placement.javabuild import build_jar, source_files, source_hash
from placement.lab.flink import JAVA17_FLAGS
from placement.lab.jobs import IOT_SENSOR_JOB

pytestmark = pytest.mark.flink

HELPER_SRC = Path(__file__).parent / "java"
OVERRIDES_KEY = "pipeline.jobvertex-parallelism-overrides"


@pytest.fixture(scope="module")
def submit_helper(tmp_path_factory) -> Path:
    home = find_flink_home()
    return build_jar(src_dir=HELPER_SRC, classpath=home.classpath, cache_dir=tmp_path_factory.mktemp("helper"),
                     name="submit-jobgraph", what="the JobGraph submit helper",
                     digest=source_hash(source_files(HELPER_SRC), HELPER_SRC, home.version)).path


def submit_jobgraph(helper: Path, rest_url: str, jar: Path, overrides: str, savepoint: str) -> str:
    url = urlparse(rest_url)
    argv = ["java", *JAVA17_FLAGS, "-cp", f"{helper}:{find_flink_home().classpath}", "placement.testsupport.SubmitJobGraph",
            url.hostname or "127.0.0.1", str(url.port), str(jar), IOT_SENSOR_JOB, overrides, savepoint, *IOT_ARGS]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    ids = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("JOBID ")]
    assert proc.returncode == 0 and ids, proc.stderr[-2000:]
    return ids[0]


def parallelism(rest, job_id: str) -> dict[str, int]:
    return {v.name: v.parallelism for v in rest.wait_until_running(job_id, timeout=120).vertices}


def records_read(rest, job_id: str, vertex_id: str) -> list[int]:
    """read-records of each subtask (the JobManager's own per-subtask counters)."""
    body = rest.get(f"/jobs/{job_id}/vertices/{vertex_id}")
    return [int(s.get("metrics", {}).get("read-records") or 0) for s in body["subtasks"]]


def test_overrides_reach_a_jobgraph_submission_but_not_a_rest_jar_run(flink_rest, lab_jobs_jar, submit_helper,
                                                                      tmp_path):
    job = submit_job(flink_rest, lab_jobs_jar, IOT_SENSOR_JOB, IOT_ARGS)
    jobs = [job.job_id]
    try:
        ids = job.vertex_ids
        before = {v.name: v.parallelism for v in job.details.vertices}
        assert before["Parse"] == 2 and before["Window Aggregate"] == 1
        overrides = f"{ids['Parse']}:3,{ids['Window Aggregate']}:2"

        # 1. the REST jar run's flinkConfiguration: the job comes back at its old parallelism
        savepoint = flink_rest.stop_with_savepoint(job.job_id, f"file://{tmp_path}/sp1")
        rerun = flink_rest.run_jar(job.jar_id, entry_class=IOT_SENSOR_JOB, program_args=list(IOT_ARGS),
                                   savepoint_path=savepoint, flink_configuration={OVERRIDES_KEY: overrides})
        jobs.append(rerun)
        assert parallelism(flink_rest, rerun) == before

        # 2. the same overrides in a JobGraph submitted over REST: applied, restored from the savepoint
        savepoint = flink_rest.stop_with_savepoint(rerun, f"file://{tmp_path}/sp2")
        graph_job = submit_jobgraph(submit_helper, flink_rest.url, lab_jobs_jar, overrides, savepoint)
        jobs.append(graph_job)
        after = parallelism(flink_rest, graph_job)
        assert after == {**before, "Parse": 3, "Window Aggregate": 2}
        assert flink_rest.job(graph_job).vertex_named("Parse").id == ids["Parse"]  # same vertex ids: same job

        # 3. FORWARD from 2 source subtasks to 3 Parse subtasks: one Parse subtask never gets a record
        deadline = time.monotonic() + 90
        while True:
            parse = records_read(flink_rest, graph_job, ids["Parse"])
            if sum(1 for n in parse if n > 0) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(3)
        assert sorted(n > 0 for n in parse) == [False, True, True], parse
    finally:
        for job_id in jobs:
            with contextlib.suppress(PlacementError):
                cancel_job(job_id, flink_rest)
