"""The options the project writes, per Flink version: durations, the savepoint directory's key, the config file a
version reads, and both file formats read and edited (pure; what Flink itself makes of them:
tests/flink/test_options_flink_reads.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from placement.errors import PlacementError
from placement.flink.config import legacy_value, merge_legacy, parse_legacy
from placement.flink.options import (
    CONFIG_YAML,
    LEGACY_CONFIG,
    config_file,
    config_file_names,
    duration,
    read_config,
    render_config,
    savepoint_dir_key,
    update_config,
)
from placement.flink.versions import SUPPORTED_LINES, FlinkVersion

EVERY_LINE = [FlinkVersion(major, minor, 0) for major, minor in SUPPORTED_LINES]


def test_durations_are_plain_milliseconds_whatever_the_version():
    assert duration(timedelta(seconds=60)) == 60_000
    assert duration(timedelta(seconds=2)) == 2_000 and duration(timedelta(milliseconds=150)) == 150
    assert isinstance(duration(timedelta(minutes=1)), int)  # a YAML number, not "60 s" (1.19 refuses that)
    for bad in (timedelta(microseconds=1500), timedelta(seconds=-1)):
        with pytest.raises(ValueError, match="whole, non-negative number of milliseconds"):
            duration(bad)


@pytest.mark.parametrize(
    ("version", "key"),
    [
        ("1.19.3", "state.savepoints.dir"),
        ("1.20.5", "execution.checkpointing.savepoint-dir"),
        ("2.0.2", "execution.checkpointing.savepoint-dir"),
        ("2.3.0", "execution.checkpointing.savepoint-dir"),
    ],
)
def test_the_savepoint_directory_key_moved_in_1_20(version, key):
    assert savepoint_dir_key(FlinkVersion.parse(version)) == key


def test_1x_reads_a_flink_conf_yaml_first_2x_only_config_yaml():
    for v in EVERY_LINE:
        names = config_file_names(v)
        assert names == ((CONFIG_YAML,) if v.major >= 2 else (LEGACY_CONFIG, CONFIG_YAML)), v
        both = {CONFIG_YAML, LEGACY_CONFIG}
        assert config_file(v, both) == (LEGACY_CONFIG if v.major == 1 else CONFIG_YAML)
        assert config_file(v, {CONFIG_YAML}) == CONFIG_YAML
        assert config_file(v, set()) == CONFIG_YAML  # a new conf dir gets config.yaml, which every version reads
    assert config_file(FlinkVersion(2, 3), {LEGACY_CONFIG}) == CONFIG_YAML  # 2.x never reads flink-conf.yaml


LEGACY = """\
# the JobManager
jobmanager.rpc.address: 10.0.0.1   # where TaskManagers connect
taskmanager.numberOfTaskSlots: 2
not a setting line
external-resources: gpu
taskmanager.numberOfTaskSlots: 4
"""


def test_flink_conf_yaml_is_read_as_flink_reads_it_lines_comments_last_wins():
    assert parse_legacy(LEGACY) == {
        "jobmanager.rpc.address": "10.0.0.1",
        "taskmanager.numberOfTaskSlots": "4",
        "external-resources": "gpu",
    }
    assert read_config(LEGACY, LEGACY_CONFIG) == parse_legacy(LEGACY)
    assert read_config(None, LEGACY_CONFIG) == {} and read_config(None, CONFIG_YAML) == {}


def test_flink_conf_yaml_is_edited_in_place_keeping_everything_else():
    text = update_config(
        LEGACY,
        {
            "taskmanager.numberOfTaskSlots": 6,
            "external-resources": ["gpu", "rpi1"],
            "placement.scheduler.dir": "/opt/flink/placement/scheduler",
            "web.submit.enable": True,
        },
        LEGACY_CONFIG,
    )
    assert text == (
        "# the JobManager\n"
        "jobmanager.rpc.address: 10.0.0.1   # where TaskManagers connect\n"
        "taskmanager.numberOfTaskSlots: 6\n"  # the first line replaced, the later repeat dropped
        "not a setting line\n"
        "external-resources: gpu;rpi1\n"
        "placement.scheduler.dir: /opt/flink/placement/scheduler\n"
        "web.submit.enable: true\n"
    )
    assert parse_legacy(text)["taskmanager.numberOfTaskSlots"] == "6"
    assert merge_legacy("", {"a.b": 1}) == "a.b: 1\n"
    with pytest.raises(PlacementError, match="cannot hold the value 'x#y'"):
        legacy_value("x#y")


def test_config_yaml_is_read_and_rendered_nested():
    text = update_config(
        "rest:\n  port: 8081\n", {"jobmanager.scheduler": "default", "slot.request.timeout": 60_000}, CONFIG_YAML
    )
    assert yaml.safe_load(text) == {
        "rest": {"port": 8081},
        "jobmanager": {"scheduler": "default"},
        "slot": {"request": {"timeout": 60000}},
    }
    assert read_config(text, CONFIG_YAML) == {
        "rest.port": 8081,
        "jobmanager.scheduler": "default",
        "slot.request.timeout": 60000,
    }
    assert render_config({"a.b": 1}) == "a:\n  b: 1\n"
    with pytest.raises(ValueError, match="expected a mapping"):
        read_config("- a\n", CONFIG_YAML)
