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
from scheduler_support import PlacedCluster, require_jdk, start_placed_cluster

from placement.flink.home import find_flink_home


@pytest.fixture(scope="session")
def extension_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the session: each distinct jar (sources x Flink version) is compiled once."""
    return tmp_path_factory.mktemp("scheduler-extension-cache")


@pytest.fixture(scope="module")
def placed_cluster(tmp_path_factory: pytest.TempPathFactory, lab_jobs_jar: Path) -> Iterator[PlacedCluster]:
    require_jdk()
    with start_placed_cluster(tmp_path_factory.mktemp("scheduler-cluster"), find_flink_home(), lab_jobs_jar) as cluster:
        yield cluster
