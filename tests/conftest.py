"""Fixtures shared by every test directory.

``tests/support`` holds the real-infrastructure helpers: a Flink 2.3 cluster started from the PyPI wheel
(:mod:`support.flink`) and sshd in a network namespace (:mod:`support.sshd`); :mod:`support.real_parts` is the
strict switch every "this real part is missing" path goes through. pytest puts ``tests/`` on ``sys.path``
(``pythonpath`` in pyproject.toml), so they import as ``support.*`` from any test module.
"""

import os

import pytest
import support.flink as support_flink
from support.flink import flink_cluster, flink_rest, iot_job, lab_jobs_jar  # noqa: F401  (session/module fixtures)

# strict mode (PLACEMENT_STRICT=1 / --strict-real): a missing real part fails instead of skipping (support/real_parts.py)
from support.real_parts import (  # noqa: F401  (pytest hooks)
    pytest_addoption,
    pytest_configure,
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_terminal_summary,
)

from placement.profile.class_archive import ENV_SWITCH

# Spark sessions in tests start without the driver's class archive: a JVM that dumps one on exit would take ~15 s
# more at the end of the run and, in-process, `placement profile` would stop the shared session to publish it.
# tests/profile/test_class_archive.py turns it on in processes of its own.
os.environ[ENV_SWITCH] = "0"


@pytest.fixture(scope="session")
def flink_support():
    """The support module itself, for its helpers (submit_job, cancel_job, start_flink, wait_for_records)."""
    return support_flink
