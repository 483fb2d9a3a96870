"""Apply builds what it uploads for *the cluster's* Flink release, not this machine's (issue 22 §3): a JobManager
host without the scheduler extension or the JobGraph submitter gets jars compiled with javac against that release's
own jars (fetched once into the cache from the package index), whatever Flink the machine running apply has."""

from __future__ import annotations

import pytest
from test_apply_planner import ALL_SERVER, custom_view, request_  # noqa: F401 (request_ is a fixture)

from placement.apply import extension_to_install, submitter_to_install
from placement.apply.model import SchedulerView, SubmitterView
from placement.flink.home import find_flink_home
from support.flink import require_jdk

pytestmark = pytest.mark.flink  # javac against a fetched Flink distribution

OTHER = "1.20.5"  # the LTS line; this machine runs 2.3 (the pyflink wheel)


def no_extension(version: str | None) -> SchedulerView:
    return SchedulerView(active=False, settings={}, installed_jars=(), flink_version=version)


def no_submitter() -> SubmitterView:
    return SubmitterView(
        "/opt/flink/placement/placement-submitter.jar", False, "/opt/flink/jobs/job.jar", True, None, None
    )


def test_the_extension_and_the_submitter_are_built_for_the_clusters_release(request_):  # noqa: F811
    require_jdk()
    assert find_flink_home().version != OTHER
    req = request_(mode="custom", consent=True)
    view = custom_view(ALL_SERVER, scheduler=no_extension(OTHER), submitter=no_submitter())
    jar, problem = extension_to_install(req, view)
    assert problem is None and jar is not None
    assert jar.flink_version == OTHER and jar.path.name.startswith(f"placement-scheduler-{OTHER}-")
    # compiled against that release's jars (the class files' constructor signatures per line are checked in
    # tests/scheduler/test_flink_lines_build.py); the jar's name is what preflight compares with the JobManager's
    # release
    submitter, problem = submitter_to_install(view)
    assert problem is None and submitter is not None
    assert submitter.flink_version == OTHER and f"-{OTHER}-" in submitter.path.name


def test_a_cluster_that_does_not_say_its_release_gets_this_machines_extension_but_no_submitter(request_):  # noqa: F811
    require_jdk()
    view = custom_view(ALL_SERVER, scheduler=no_extension(None), submitter=no_submitter())
    jar, problem = extension_to_install(request_(mode="custom", consent=True), view)
    assert problem is None and jar is not None and jar.flink_version == find_flink_home().version
    submitter, problem = submitter_to_install(view)
    assert submitter is None and problem is not None and "\n" not in problem.message
    assert problem.message.startswith(
        "the JobManager host has no JobGraph submitter "
        "(/opt/flink/placement/placement-submitter.jar) and the cluster's Flink version "
        "is unknown: build it where the cluster's Flink is"
    )
