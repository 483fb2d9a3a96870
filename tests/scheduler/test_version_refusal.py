"""A jar built for another Flink version refuses to run, naming both versions (real cluster).

The scenario: Flink was upgraded under an installed extension. ``install_extension`` itself refuses such a jar, so
the test copies it into ``lib/`` by hand, as an upgrade that keeps ``lib/`` would leave it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scheduler_support import FAKE_VERSION, require_jdk

from placement import scheduler as S
from placement.errors import PlacementError
from placement.flink.home import find_flink_home
from placement.flink.rest import FlinkRest
from placement.lab.flink import TaskManagerSpec
from placement.lab.home import make_lab_home
from placement.lab.jobs import IOT_SENSOR_JOB
from support.flink import start_flink

pytestmark = pytest.mark.flink


def test_a_jar_built_for_another_flink_refuses_every_job_naming_both_versions(
    tmp_path: Path, lab_jobs_jar: Path, extension_cache: Path
) -> None:
    require_jdk()
    home = make_lab_home(tmp_path, find_flink_home(), with_extension=False)
    foreign = S.build_extension(home, extension_cache, flink_version=FAKE_VERSION)
    shutil.copyfile(foreign.path, home.lib / foreign.path.name)
    scheduler_dir = tmp_path / "schedulercfg"
    scheduler_dir.mkdir()
    tm = TaskManagerSpec("server", slots=1, extra_config=S.taskmanager_config("server", 1))
    with start_flink(
        tmp_path / "cluster",
        [tm],
        flink_home=home.path,
        jobmanager_extra_config=S.jobmanager_config(str(scheduler_dir)),
    ) as cluster:
        rest = FlinkRest(cluster.rest_url)
        assert S.extension_active(rest) is True  # it is loaded ...
        jar_id = rest.upload_jar(lab_jobs_jar)
        with pytest.raises(PlacementError) as refused:  # ... and refuses: even a job without a schedulercfg
            rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=["--parallelism", "1", "--rate", "10"])
        message = S.extension_message(str(refused.value))
        assert message == (
            f"placement scheduler: this scheduler extension (build {foreign.digest}) was built for Flink "
            f"{FAKE_VERSION} but runs on Flink {home.version}; it relies on Flink internals and refuses "
            "to run: rebuild and reinstall it for this installation (placement scheduler install "
            "--flink-home <dir>), or remove it from lib/"
        )
        log = cluster.jobmanager.log_file.read_text(errors="replace")
        assert any(" ERROR " in line and message in line for line in log.splitlines())
