"""Fixtures shared by every test directory.

``tests/support`` holds the real-infrastructure helpers: a Flink 2.3 cluster started from the PyPI wheel
(:mod:`support.flink`) and sshd in a network namespace (:mod:`support.sshd`); :mod:`support.real_parts` is the
strict switch every "this real part is missing" path goes through. pytest puts ``tests/`` on ``sys.path``
(``pythonpath`` in pyproject.toml), so they import as ``support.*`` from any test module.
"""

import os

import pytest

import support.flink as support_flink
from placement.profile.class_archive import ENV_SWITCH
from support.flink import flink_cluster, flink_rest, iot_job, lab_jobs_jar  # noqa: F401  (session/module fixtures)
from support.lab import shared_custom_lab  # noqa: F401  (session fixture)

# the suite checks at its end that it left nothing behind (support/left_behind.py)
from support.left_behind import pytest_sessionfinish, pytest_sessionstart  # noqa: F401  (pytest hooks)
from support.left_behind import pytest_terminal_summary as left_behind_summary

# strict mode (PLACEMENT_STRICT=1 / --strict-real): a missing real part fails instead of skipping
# (support/real_parts.py)
from support.real_parts import (  # noqa: F401  (pytest hooks)
    pytest_addoption,
    pytest_configure,
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_runtest_setup,
)
from support.real_parts import pytest_terminal_summary as real_parts_summary

# Spark sessions in tests start without the driver's class archive: a JVM that dumps one on exit would take ~15 s
# more at the end of the run and, in-process, `placement profile` would stop the shared session to publish it.
# tests/profile/test_class_archive.py turns it on in processes of its own.
os.environ[ENV_SWITCH] = "0"

# GNU readline (imported by pytest's debugging support) exports COLUMNS=80 and LINES=24 into the C environment, which
# child processes inherit though os.environ does not show them: every `placement` a test starts would then print its
# tables at 80 columns, as if a user had set COLUMNS. Only what the user's environment holds is kept.
for _name in ("COLUMNS", "LINES"):
    if _name not in os.environ:
        os.unsetenv(_name)


@pytest.fixture(scope="session")
def flink_support():
    """The support module itself, for its helpers (submit_job, cancel_job, start_flink, wait_for_records)."""
    return support_flink


# ---- running in two pytest-xdist workers (`make test`: -n 2) ---------------------------------------------------------
# The suite mostly waits (clusters settling, measurement windows: ~33 % of one core on average), so two workers nearly
# halve it. Tests that share fixed machine-wide names run in one worker, one after the other, as a group: the lab
# (namespaces pl-lab-*, 10.203/16, `lab down` removes any lab's leftovers by prefix, CPU quotas a timing test relies
# on), and each directory whose fixtures make namespaces with fixed names and addresses. Every other test is a unit of
# its own. The lab group is the longest (~20 min): it is collected, and so handed out, first.
LAB_MODULES = {"tests/watch/test_watch_lab.py", "tests/apply/test_apply_rescale_lab.py"}
# tests/lab modules that start Flink clusters of their own but touch none of the lab's names: anywhere
NOT_THE_LAB = {
    "tests/lab/test_lab_cluster.py",
    "tests/lab/test_lab_vanilla_placement.py",
    "tests/lab/test_lab_jobs_build.py",
    "tests/lab/test_lab_netns_taskmanager.py",
}
# modules on one custom-mode lab (support/lab.py: shared_custom_lab), in this order: next to each other, the lab
# starts once for them; the custom end-to-end module restarts it in vanilla mode at its end, so it comes last
SHARED_CUSTOM_LAB = ("tests/apply/test_apply_rescale_lab.py", "tests/lab/test_lab_custom_end_to_end.py")
GROUP_BY_DIRECTORY = {
    "lab": "lab",
    "netem": "netns-10.201",
    "infra": "netns-10.201",
    "apply": "netns-10.204",
    "ansible": "netns-10.202",
}
# modules whose module-scoped fixture is expensive per parameter (a javac build or a cluster per Flink line): split over
# both workers, each worker would build or start it again
# -- likewise a module whose tests share one cluster of its own (and the job on it): the placed cluster's (~15 s to
# start with its job; handed out in the run's tail, both workers started one), the Prometheus module's (~2 min: a
# 100 s collection)
ONE_WORKER_MODULES = {
    "tests/scheduler/test_flink_lines_build.py": "flink-lines-build",
    "tests/scheduler/test_flink_lines_cluster.py": "flink-lines-cluster",
    "tests/scheduler/test_placed_cluster.py": "placed-cluster",
    "tests/collect/test_prometheus.py": "prometheus",
}


def xdist_group(nodeid: str) -> str | None:
    """The group of a test (``tests/lab/test_x.py::test_y`` -> "lab"), None for a test that may run anywhere."""
    path = nodeid.split("::", 1)[0]
    if path in LAB_MODULES:
        return "lab"
    if path in ONE_WORKER_MODULES:
        return ONE_WORKER_MODULES[path]
    if path in NOT_THE_LAB:
        return None
    parts = path.split("/")
    return GROUP_BY_DIRECTORY.get(parts[1]) if len(parts) > 2 and parts[0] == "tests" else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # stable: the lab first, then the one-worker modules (long units: handed out while the lab still runs, not in the
    # run's tail, where one of them would keep a worker busy while the other has nothing left), the rest as collected
    # -- in the lab group, the modules sharing one lab first, in their order
    def rank(item: pytest.Item) -> tuple[int, int]:
        group = xdist_group(item.nodeid)
        if group == "lab":
            path = item.nodeid.split("::", 1)[0]
            return 0, SHARED_CUSTOM_LAB.index(path) if path in SHARED_CUSTOM_LAB else len(SHARED_CUSTOM_LAB)
        return (1 if group in ONE_WORKER_MODULES.values() else 2), 0

    items.sort(key=rank)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's scope scheduling with our groups as scopes (its own ``xdist_group`` marks rename node ids,
    which pytest >= 9.2 no longer lets a plugin do)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_group(nodeid) or nodeid

    config.option.loadscopereorder = False  # keep the collection order: the lab group first
    return GroupScheduling(config, log)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    real_parts_summary(terminalreporter, exitstatus, config)
    left_behind_summary(terminalreporter, exitstatus, config)
