"""Fixtures shared by every test directory.

``tests/support`` holds the real-infrastructure helpers: a Flink 2.3 cluster started from the PyPI wheel
(:mod:`support.flink`) and sshd in a network namespace (:mod:`support.sshd`). pytest puts ``tests/`` on ``sys.path``
(``pythonpath`` in pyproject.toml), so they import as ``support.*`` from any test module.
"""

import pytest

import support.flink as support_flink
from support.flink import flink_cluster, flink_rest, iot_job, lab_jobs_jar  # noqa: F401  (session/module fixtures)


@pytest.fixture(scope="session")
def flink_support():
    """The support module itself, for its helpers (submit_job, cancel_job, start_flink, wait_for_records)."""
    return support_flink
