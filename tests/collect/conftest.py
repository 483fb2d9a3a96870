"""Makes the shared Flink fixtures (tests/support/flink.py) available to the collector tests.

Loaded from its file like tests/lab/conftest.py does: flink-rest-client installs a top-level ``tests`` package that
can shadow the repository's ``tests`` directory.
"""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

try:
    from tests.support import flink as support_flink
except ModuleNotFoundError:
    _spec = importlib.util.spec_from_file_location("tests_support_flink", ROOT / "tests" / "support" / "flink.py")
    support_flink = importlib.util.module_from_spec(_spec)
    sys.modules["tests_support_flink"] = support_flink
    _spec.loader.exec_module(support_flink)

flink_cluster = support_flink.flink_cluster
flink_rest = support_flink.flink_rest
lab_jobs_jar = support_flink.lab_jobs_jar
iot_job = support_flink.iot_job
