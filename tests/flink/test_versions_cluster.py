"""Real 1.19 and 1.20 clusters started by the lab's launcher with the lab's config writer (its durations in the form
every version parses: 1.19's JobManager refused the ``"60 s"`` it wrote before): the JobManager up, a TaskManager
registered with its slots and external resource, and the cluster's version told from REST as apply reads it.

One JobManager and one TaskManager per version, ~20 s each; the 1.x distributions are fetched once into the cache.
"""

from __future__ import annotations

import pytest

from placement.errors import PlacementError
from placement.flink.cluster_version import cluster_version, running_version
from placement.flink.distribution import flink_home_for
from placement.flink.rest import FlinkRest
from placement.flink.versions import FlinkVersion
from placement.lab.flink import TaskManagerSpec
from support.flink import start_flink

pytestmark = pytest.mark.flink


@pytest.mark.parametrize("version", ["1.19.3", "1.20.5"])
def test_a_1x_cluster_starts_with_the_labs_config_and_tells_its_version(tmp_path, version):
    home = flink_home_for(version)
    tm = TaskManagerSpec("server", slots=2, external_resource="server", external_resource_amount=2)
    with start_flink(tmp_path / "cluster", (tm,), flink_home=home.path) as cluster:
        rest = FlinkRest(cluster.rest_url)
        # the config as the JobManager took it: the duration as written, parsed by this version's own types
        settings = rest.jobmanager_config()
        assert settings["slot.request.timeout"] == "60000" and settings["restart-strategy.fixed-delay.delay"] == "2000"
        (registered,) = rest.taskmanagers()
        assert (registered.id, registered.slots) == ("server", 2)
        assert registered.total_resource["extendedResources"] == {"server": 2.0}
        # the cluster's version, as apply and the lab read it
        assert rest.config()["flink-version"] == version
        assert running_version(rest) == cluster_version(None, rest, where="inv.yaml: flink.version") == FlinkVersion.parse(version)
        assert cluster_version(version, rest, where="inv.yaml: flink.version") == FlinkVersion.parse(version)
        with pytest.raises(PlacementError) as err:
            cluster_version("2.3.0", rest, where="inv.yaml: flink.version")
        assert str(err.value) == (f"inv.yaml: flink.version: pinned to Flink 2.3.0, but the JobManager at {rest.url} runs "
                                  f"{version} (correct the pin, or remove it to follow the JobManager)")


def test_the_duration_form_the_lab_wrote_before_stops_a_1_19_jobmanager_at_start(tmp_path):
    """Why the lab writes plain milliseconds: 1.19 reads slot.request.timeout as a Long (1.20 and later: a Duration)."""
    tm = TaskManagerSpec("server", slots=1)
    with pytest.raises(PlacementError) as err, start_flink(tmp_path / "cluster", (tm,), flink_home=flink_home_for("1.19.3").path,
                                                           extra_config={"slot.request.timeout": "60 s"}):
        pass
    assert "jobmanager exited during start" in str(err.value)
    assert "Could not parse value '60 s' for key 'slot.request.timeout'" in str(err.value)
