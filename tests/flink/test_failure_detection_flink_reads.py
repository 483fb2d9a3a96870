"""What each supported line (1.19 to 2.3) itself reads from the failure-detection keys the project writes: its own
GlobalConfiguration and option constants (:mod:`support.flink_reads`; no cluster). Every key exists on every line and
every duration parses: 1.19 as Long milliseconds, later lines as Durations read from the same plain number."""

from __future__ import annotations

import pytest

from placement.flink.options import CONFIG_YAML, LEGACY_CONFIG, update_config
from placement.flink.versions import FlinkVersion
from placement.inventory.failure_detection import FailureDetection, RestartSettings, flink_config
from support.flink_reads import FAILURE_OPTIONS as OPTION
from support.flink_reads import as_written

pytestmark = pytest.mark.flink


@pytest.mark.parametrize("restart", ["exponential-delay", "fixed-delay"])
def test_each_line_reads_every_key_as_written(home, reads, tmp_path, restart):
    version = FlinkVersion.parse(home.version)
    conf = flink_config(FailureDetection(restart=RestartSettings(strategy=restart)))
    files = [CONFIG_YAML] + ([LEGACY_CONFIG] if not version.at_least(2, 0) else [])  # what apply edits on 1.x too
    for name in files:
        conf_dir = tmp_path / name.replace(".", "-")
        conf_dir.mkdir()
        (conf_dir / name).write_text(update_config(None, conf, name))
        got = reads(home, conf_dir, *(OPTION[k] for k in conf))
        assert {k: as_written(got[OPTION[k]]) for k in conf} == conf, (home.version, name, got)
