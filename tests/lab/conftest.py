"""Makes the shared Flink fixtures (tests/support/flink.py) available to the lab tests.

flink-rest-client ships a top-level ``tests`` package into site-packages, and a regular package beats the repository's
``tests`` directory (no ``__init__.py``) whatever sys.path says. Until the repository's ``tests`` is a regular package
on sys.path, the support module is loaded from its file.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    from tests.support import flink as support_flink
except ModuleNotFoundError:
    support_flink = sys.modules.get("tests_support_flink")
if support_flink is None:  # the same module object for every conftest that loads it this way
    _spec = importlib.util.spec_from_file_location("tests_support_flink", ROOT / "tests" / "support" / "flink.py")
    support_flink = importlib.util.module_from_spec(_spec)
    sys.modules["tests_support_flink"] = support_flink
    _spec.loader.exec_module(support_flink)

flink_cluster = support_flink.flink_cluster
flink_rest = support_flink.flink_rest
lab_jobs_jar = support_flink.lab_jobs_jar
iot_job = support_flink.iot_job


@pytest.fixture(scope="session")
def flink_support():
    """The support module itself, for its helpers (submit_job, cancel_job, start_flink, wait_for_records)."""
    return support_flink
