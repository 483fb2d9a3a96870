"""A real Flink 2.3 cluster with the scheduler extension, shared by the cluster tests of a module.

Stock Flink from the pyflink wheel, never modified: the extension is installed into a copy of the Flink home whose
``lib/`` links the wheel's jars (:func:`placement.lab.home.make_lab_home`), and every JVM is launched with
bin/config.sh's classpath order. Three TaskManagers of different slot sizes (``server``, ``rpi1``, ``rpi2``), each
configured with :func:`placement.scheduler.taskmanager_config`; the scheduler dir holds the TaskManager table
(``taskmanagers.cfg``) and one schedulercfg per job, which the tests write.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from scheduler_support import (
    ADDRESSES,
    CLUSTER_CONFIG,
    JOBMANAGER_CONFIG,
    PlacedCluster,
    require_jdk,
    taskmanager_specs,
)

from placement import scheduler as S
from placement.flink.home import find_flink_home
from placement.flink.rest import FlinkRest
from placement.lab.flink import ClusterSpec, start_cluster
from placement.lab.home import make_lab_home


@pytest.fixture(scope="session")
def extension_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the session: each distinct jar (sources x Flink version) is compiled once."""
    return tmp_path_factory.mktemp("scheduler-extension-cache")


@pytest.fixture(scope="module")
def placed_cluster(tmp_path_factory: pytest.TempPathFactory, lab_jobs_jar: Path) -> Iterator[PlacedCluster]:
    require_jdk()
    work = tmp_path_factory.mktemp("scheduler-cluster")
    home = make_lab_home(work, find_flink_home(), with_extension=True)
    scheduler_dir = work / "schedulercfg"
    scheduler_dir.mkdir()
    spec = ClusterSpec(
        work_dir=work / "cluster", taskmanagers=taskmanager_specs(), flink_home=home.path,
        extra_config=CLUSTER_CONFIG, jobmanager_extra_config={**S.jobmanager_config(str(scheduler_dir)), **JOBMANAGER_CONFIG},
    )
    cluster = start_cluster(spec, die_with_parent=True)
    try:
        rest = FlinkRest(cluster.rest_url)
        (scheduler_dir / S.TASKMANAGERS_FILENAME).write_text(S.render_taskmanagers(rest.taskmanagers(), ADDRESSES))
        yield PlacedCluster(cluster, rest, home, scheduler_dir, lab_jobs_jar, rest.upload_jar(lab_jobs_jar))
    finally:
        cluster.stop()
