"""What 1.19, 1.20 and 2.3 themselves read from what the project writes (their own GlobalConfiguration and option
definitions, :mod:`support.flink_reads`; no cluster): the lab's durations parse on each, the form they replaced does
not on 1.19, the savepoint directory's key is the one each version knows, and a 1.x conf dir's flink-conf.yaml wins
over config.yaml exactly as :func:`placement.flink.options.config_file` says, also after apply edited it."""

from __future__ import annotations

from pathlib import Path

import pytest

from placement.flink.options import (
    CONFIG_YAML,
    LEGACY_CONFIG,
    config_file,
    render_config,
    savepoint_dir_key,
    update_config,
)
from placement.flink.versions import FlinkVersion
from placement.lab import flink as lf

pytestmark = pytest.mark.flink

CONF = "org.apache.flink.configuration."
SLOT_REQUEST_TIMEOUT = CONF + "JobManagerOptions#SLOT_REQUEST_TIMEOUT"
FETCH_INTERVAL = CONF + "MetricOptions#METRIC_FETCHER_UPDATE_INTERVAL"
RESTART_DELAY = CONF + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF"
SAVEPOINT_DIR = CONF + "CheckpointingOptions#SAVEPOINT_DIRECTORY"
RESOURCES = CONF + "ExternalResourceOptions#EXTERNAL_RESOURCE_LIST"
REGISTRATION_ERROR_DELAY = CONF + "ClusterOptions#ERROR_REGISTRATION_DELAY"


def checkpoint_interval(version: FlinkVersion) -> str:
    """The option's constant moved into CheckpointingOptions in 1.20."""
    if version.at_least(1, 20):
        return CONF + "CheckpointingOptions#CHECKPOINTING_INTERVAL"
    return "org.apache.flink.streaming.api.environment.ExecutionCheckpointingOptions#CHECKPOINTING_INTERVAL"


def conf_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_labs_durations_and_savepoint_key_are_read_by_each_version(home, reads, tmp_path):
    version = FlinkVersion.parse(home.version)
    spec = lf.ClusterSpec(tmp_path / "work", (lf.TaskManagerSpec("server"),))
    conf = lf.jobmanager_config(spec, 8081, 6123) | {savepoint_dir_key(version): "file:///savepoints"}
    lf._write_conf_dir(tmp_path / "conf", conf)
    got = reads(
        home,
        tmp_path / "conf",
        SLOT_REQUEST_TIMEOUT,
        FETCH_INTERVAL,
        RESTART_DELAY,
        checkpoint_interval(version),
        SAVEPOINT_DIR,
        REGISTRATION_ERROR_DELAY,
    )
    if version.at_least(1, 20):  # Durations, read from plain milliseconds
        assert got[SLOT_REQUEST_TIMEOUT] == "PT15S" and got[FETCH_INTERVAL] == "PT2S"
        assert got[REGISTRATION_ERROR_DELAY] == "PT1S"
    else:  # 1.19: Long milliseconds
        assert got[SLOT_REQUEST_TIMEOUT] == "15000" and got[FETCH_INTERVAL] == "2000"
        assert got[REGISTRATION_ERROR_DELAY] == "1000"
    assert got[RESTART_DELAY] == "PT1S" and got[checkpoint_interval(version)] == "PT10S"
    assert got[SAVEPOINT_DIR] == "file:///savepoints"


def test_1_19_refuses_the_duration_form_the_lab_wrote_before_and_knows_only_the_old_savepoint_key(
    home, reads, tmp_path
):
    version = FlinkVersion.parse(home.version)
    other_key = "state.savepoints.dir" if version.at_least(1, 20) else "execution.checkpointing.savepoint-dir"
    conf = conf_dir(
        tmp_path, {CONFIG_YAML: render_config({"slot.request.timeout": "60 s", other_key: "file:///elsewhere"})}
    )
    got = reads(home, conf, SLOT_REQUEST_TIMEOUT, SAVEPOINT_DIR)
    if version.at_least(1, 20):
        assert got[SLOT_REQUEST_TIMEOUT] == "PT1M"
        assert got[SAVEPOINT_DIR] == "file:///elsewhere"  # the old key, still read as a deprecated one
    else:
        assert got[SLOT_REQUEST_TIMEOUT].startswith(
            "error: Could not parse value '60 s' for key 'slot.request.timeout'"
        )
        assert got[SAVEPOINT_DIR] == "null"  # 1.20's key means nothing to 1.19


def test_the_config_file_each_version_reads_is_the_one_apply_edits(home, reads, tmp_path):
    version = FlinkVersion.parse(home.version)
    legacy = "# by hand\nslot.request.timeout: 1000\nexternal-resources: gpu\n"
    conf = conf_dir(tmp_path, {LEGACY_CONFIG: legacy, CONFIG_YAML: render_config({"slot.request.timeout": 2000})})
    chosen = config_file(version, {LEGACY_CONFIG, CONFIG_YAML})
    assert chosen == (LEGACY_CONFIG if version.major == 1 else CONFIG_YAML)
    # what apply writes into the chosen file (an external resource joins the declared one, a duration in ms)
    (conf / chosen).write_text(
        update_config(
            (conf / chosen).read_text(), {"external-resources": ["gpu", "rpi1"], "slot.request.timeout": 3000}, chosen
        )
    )
    got = reads(home, conf, SLOT_REQUEST_TIMEOUT, RESOURCES)
    assert got[SLOT_REQUEST_TIMEOUT] == ("PT3S" if version.at_least(1, 20) else "3000")
    assert got[RESOURCES] == "[gpu, rpi1]"
