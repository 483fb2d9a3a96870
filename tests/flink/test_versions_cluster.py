"""Why the lab writes durations as plain milliseconds: a real 1.19 JobManager refuses the ``"60 s"`` it wrote before.

(A cluster of every supported release started by the lab's launcher with the lab's config writer, its version told
from REST as apply reads it and a wrong pin refused, is the first check of each release in
tests/scheduler/test_flink_lines_cluster.py.)
"""

from __future__ import annotations

import pytest

from placement.errors import PlacementError
from placement.flink.distribution import flink_home_for
from placement.lab.flink import TaskManagerSpec
from support.flink import start_flink

pytestmark = pytest.mark.flink


def test_the_duration_form_the_lab_wrote_before_stops_a_1_19_jobmanager_at_start(tmp_path):
    """Why the lab writes plain milliseconds: 1.19 reads slot.request.timeout as a Long (1.20 and later: a Duration)."""
    tm = TaskManagerSpec("server", slots=1)
    with (
        pytest.raises(PlacementError) as err,
        start_flink(
            tmp_path / "cluster",
            (tm,),
            flink_home=flink_home_for("1.19.3").path,
            extra_config={"slot.request.timeout": "60 s"},
        ),
    ):
        pass
    assert "jobmanager exited during start" in str(err.value)
    assert "Could not parse value '60 s' for key 'slot.request.timeout'" in str(err.value)
