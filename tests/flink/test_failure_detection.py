"""flink.failure_detection: the inventory block, its edge defaults, the one mapping to Flink keys every writer uses,
and its one-line errors naming the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.inventory.failure_detection import ALL_KEYS, FailureDetection, flink_config

INVENTORY = Path(__file__).resolve().parents[2] / "inventory" / "lab.yaml"

EDGE_DEFAULTS = {
    "heartbeat.interval": 2000,
    "heartbeat.timeout": 10000,
    "heartbeat.rpc-failure-threshold": 2,
    "slot.request.timeout": 15000,
    "restart-strategy.type": "exponential-delay",
    "restart-strategy.exponential-delay.initial-backoff": 1000,
    "restart-strategy.exponential-delay.max-backoff": 10000,
    "restart-strategy.exponential-delay.backoff-multiplier": 2.0,
    "restart-strategy.exponential-delay.jitter-factor": 0.1,
    "restart-strategy.exponential-delay.reset-backoff-threshold": 600000,
    "restart-strategy.exponential-delay.attempts-before-reset-backoff": 10,
    "taskmanager.registration.timeout": 7 * 24 * 3600 * 1000,
    "cluster.registration.max-timeout": 5000,
    "cluster.registration.error-delay": 1000,
}


def inventory_with(tmp_path: Path, block: dict | None) -> Path:
    data = yaml.safe_load(INVENTORY.read_text())
    if block is not None:
        data["flink"]["failure_detection"] = block
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_an_inventory_without_the_block_gets_the_edge_defaults_and_keeps_its_digest(tmp_path):
    inv = load_inventory(inventory_with(tmp_path, None))
    assert flink_config(inv.flink.failure_detection) == EDGE_DEFAULTS
    # a dead TaskManager process is noticed after 2 failed RPCs 2 s apart, a silent one after the 10 s timeout
    assert inv.flink.failure_detection.dead_process_detection_ms == 4000
    explicit = load_inventory(inventory_with(tmp_path, {"heartbeat_timeout": "10s"}))
    assert explicit.digest() == inv.digest()  # the defaults written out are the same inventory
    assert load_inventory(inventory_with(tmp_path, {"heartbeat_timeout": "12s"})).digest() != inv.digest()


def test_the_slot_request_timeout_follows_a_longer_heartbeat_timeout_unless_given():
    assert flink_config(FailureDetection(heartbeat_timeout=30_000))["slot.request.timeout"] == 35_000
    assert flink_config(FailureDetection(heartbeat_timeout=8_000))["slot.request.timeout"] == 15_000
    assert (
        flink_config(FailureDetection(heartbeat_timeout=30_000, slot_request_timeout=60_000))["slot.request.timeout"]
        == 60_000
    )


def test_overrides_in_human_units_become_plain_milliseconds(tmp_path):
    inv = load_inventory(
        inventory_with(
            tmp_path,
            {
                "heartbeat_interval": "5s",
                "heartbeat_timeout": "1min",
                "rpc_failure_threshold": 3,
                "slot_request_timeout": 90000,
                "restart": {
                    "initial_delay": "500ms",
                    "max_delay": "30s",
                    "attempts": 20,
                    "multiplier": 1.5,
                    "jitter": 0,
                    "reset_after": "1h",
                },
                "rejoin": {"registration_timeout": "2d", "retry_max": "10s", "error_delay": "2s"},
            },
        )
    )
    conf = flink_config(inv.flink.failure_detection)
    assert conf == EDGE_DEFAULTS | {
        "heartbeat.interval": 5000,
        "heartbeat.timeout": 60000,
        "heartbeat.rpc-failure-threshold": 3,
        "slot.request.timeout": 90000,
        "restart-strategy.exponential-delay.initial-backoff": 500,
        "restart-strategy.exponential-delay.max-backoff": 30000,
        "restart-strategy.exponential-delay.backoff-multiplier": 1.5,
        "restart-strategy.exponential-delay.jitter-factor": 0.0,
        "restart-strategy.exponential-delay.reset-backoff-threshold": 3600000,
        "restart-strategy.exponential-delay.attempts-before-reset-backoff": 20,
        "taskmanager.registration.timeout": 2 * 86400000,
        "cluster.registration.max-timeout": 10000,
        "cluster.registration.error-delay": 2000,
    }


def test_fixed_delay_writes_its_own_keys_and_none_of_exponential_delay():
    conf = flink_config(
        FailureDetection.model_validate({"restart": {"strategy": "fixed-delay", "initial_delay": "2s", "attempts": 30}})
    )
    assert {k: v for k, v in conf.items() if k.startswith("restart-strategy")} == {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 30,
        "restart-strategy.fixed-delay.delay": 2000,
    }
    assert set(conf) <= set(ALL_KEYS) and set(EDGE_DEFAULTS) <= set(ALL_KEYS)


def test_every_duration_is_a_whole_number_of_milliseconds_the_form_1_19_to_2_3_parse():
    # 1.19 reads heartbeat.*, slot.request.timeout and cluster.registration.* as Long ms and refuses "10 s" (what
    # each line reads of it: test_failure_detection_flink_reads.py)
    for key, value in flink_config(FailureDetection()).items():
        if (
            key.endswith(("interval", "timeout", "backoff", "threshold", "delay"))
            and key != "heartbeat.rpc-failure-threshold"
        ):
            assert type(value) is int and value > 0, key


@pytest.mark.parametrize(
    ("block", "field", "words"),
    [
        (
            {"heartbeat_interval": "10s", "heartbeat_timeout": "10s"},
            "flink.failure_detection.heartbeat_timeout",
            "must be above heartbeat_interval",
        ),
        (
            {"heartbeat_timeout": "3s"},
            "flink.failure_detection.rpc_failure_threshold",
            "the timeout always fires first",
        ),
        ({"slot_request_timeout": "5s"}, "flink.failure_detection.slot_request_timeout", "below heartbeat_timeout"),
        ({"rpc_failure_threshold": 0}, "flink.failure_detection.rpc_failure_threshold", "-1 (off)"),
        ({"heartbeat_interval": "1.5ms"}, "flink.failure_detection.heartbeat_interval", "whole number of milliseconds"),
        ({"heartbeat_interval": "fast"}, "flink.failure_detection.heartbeat_interval", "is not a duration"),
        (
            {"restart": {"initial_delay": "20s", "max_delay": "10s"}},
            "flink.failure_detection.restart.max_delay",
            "below initial_delay",
        ),
        ({"restart": {"strategy": "forever"}}, "flink.failure_detection.restart.strategy", "exponential-delay"),
        ({"restart": {"attempts": 0}}, "flink.failure_detection.restart.attempts", "greater than or equal to 1"),
        (
            {"rejoin": {"registration_timeout": "365d"}},
            "flink.failure_detection.rejoin.registration_timeout",
            "200 days",
        ),
        ({"heartbeat": "2s"}, "flink.failure_detection.heartbeat", "unknown field"),
    ],
)
def test_bad_settings_are_one_line_naming_the_file_and_field(tmp_path, block, field, words):
    path = inventory_with(tmp_path, block)
    with pytest.raises(BadInput) as err:
        load_inventory(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{path}: {field}: "), message
    assert words in message
