"""`placement profile --spark-master spark://…` on a real Spark standalone cluster (a master and two workers started
from the installed PySpark's ``spark-class``): the executors read the history, and the profile is the one
``local[*]`` computes. Both runs are the command a user types, in fresh processes (whose stderr must hold nothing
but errors: no JVM or Spark start-up chatter)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from profile_support import ROOT

from placement.profile.history import select_runs
from support.spark_cluster import spark_cluster

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]

PLACEMENT = Path(sys.executable).parent / "placement"
CHATTER = re.compile(r"incubator modules|Setting default log level|To adjust logging level|log4j|WARN", re.IGNORECASE)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with pytest.MonkeyPatch.context() as env:
        # inherited by the daemons, their executors and those Python workers: each logs the files it reads
        env.setenv("PLACEMENT_PROFILE_TRACE", "1")
        with spark_cluster(tmp_path_factory.mktemp("spark-cluster"), workers=2, cores=1) as running:
            assert running.alive_workers() == 2
            yield running
            pids = running.pids()
    assert pids and not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]


def _profile(history: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    # no class archive (tests/conftest.py switches it off): a cluster run must not need one
    assert os.environ.get("PLACEMENT_SPARK_CLASS_ARCHIVE") == "0"
    return subprocess.run(
        [str(PLACEMENT), "profile", str(history), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
        check=False,
    )


def _numbers(profile: dict) -> dict[str, float]:
    """Every number of a profile by a readable path (vertex name, subtask index, field)."""
    flat: dict[str, float] = {}
    for v in profile["vertices"]:
        for key, x in v["stats"].items():
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                flat[f"{v['name']}/{key}"] = x
        for s in v["subtasks"]:
            for key, x in s.items():
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    flat[f"{v['name']}/{s['index']}/{key}"] = x
    return flat


def test_cluster_profile_equals_the_local_one_and_the_executors_read_the_history(cluster, multi_history, tmp_path):
    root, _ = multi_history
    local, remote = tmp_path / "local.json", tmp_path / "cluster.json"
    on_cluster = _profile(root, remote, "--spark-master", cluster.master_url)
    assert on_cluster.returncode == 0, on_cluster.stderr[-2000:]
    at_home = _profile(root, local)
    assert at_home.returncode == 0, at_home.stderr[-2000:]
    for run in (on_cluster, at_home):
        assert not CHATTER.search(run.stderr), run.stderr[:500]
        assert "Window Aggregate" in run.stdout  # the table is still printed

    # the executors' Python workers on the two workers read every part file of the history, once, by the path the
    # driver gave them
    read = [m for log in cluster.executor_logs() for m in re.findall(r"placement: read (\S+) in pid", log.read_text())]
    assert sorted(read) == sorted(str(p) for p in select_runs(root).parts)
    workers_used = {log.parts[-5] for log in cluster.executor_logs() if "Running task" in log.read_text()}
    assert workers_used == {"worker-0", "worker-1"}

    a, b = _numbers(json.loads(local.read_text())), _numbers(json.loads(remote.read_text()))
    assert a.keys() == b.keys() and len(a) > 100
    for key in a:
        # means and rates: the same sums added in another order; medians/p95s: the same subset rule (seeded), and the
        # same split of the files into tasks, so the same drawn samples
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-9), key
