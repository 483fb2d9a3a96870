"""What each supported line (1.19 to 2.3) itself reads from the failure-detection keys the project writes: its own
GlobalConfiguration and option constants (:mod:`support.flink_reads`; no cluster). Every key exists on every line and
every duration parses: 1.19 as Long milliseconds, later lines as Durations read from the same plain number."""

from __future__ import annotations

import re

import pytest

from placement.flink.distribution import flink_home_for
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.options import CONFIG_YAML, LEGACY_CONFIG, update_config
from placement.flink.versions import FlinkVersion
from placement.inventory.failure_detection import FailureDetection, RestartSettings, flink_config
from support import real_parts
from support.flink_reads import FlinkReads

pytestmark = pytest.mark.flink

VERSIONS = ("1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0")
C = "org.apache.flink.configuration."
OPTION = {  # Flink key -> the option constant every line defines for it
    "heartbeat.interval": C + "HeartbeatManagerOptions#HEARTBEAT_INTERVAL",
    "heartbeat.timeout": C + "HeartbeatManagerOptions#HEARTBEAT_TIMEOUT",
    "heartbeat.rpc-failure-threshold": C + "HeartbeatManagerOptions#HEARTBEAT_RPC_FAILURE_THRESHOLD",
    "slot.request.timeout": C + "JobManagerOptions#SLOT_REQUEST_TIMEOUT",
    "restart-strategy.type": C + "RestartStrategyOptions#RESTART_STRATEGY",
    "restart-strategy.exponential-delay.initial-backoff": C + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF",
    "restart-strategy.exponential-delay.max-backoff": C + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF",
    "restart-strategy.exponential-delay.backoff-multiplier": C + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER",
    "restart-strategy.exponential-delay.jitter-factor": C + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR",
    "restart-strategy.exponential-delay.reset-backoff-threshold": C + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD",
    "restart-strategy.exponential-delay.attempts-before-reset-backoff": C + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS",
    "restart-strategy.fixed-delay.attempts": C + "RestartStrategyOptions#RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS",
    "restart-strategy.fixed-delay.delay": C + "RestartStrategyOptions#RESTART_STRATEGY_FIXED_DELAY_DELAY",
    "taskmanager.registration.timeout": C + "TaskManagerOptions#REGISTRATION_TIMEOUT",
    "cluster.registration.max-timeout": C + "ClusterOptions#MAX_REGISTRATION_TIMEOUT",
    "cluster.registration.error-delay": C + "ClusterOptions#ERROR_REGISTRATION_DELAY",
}


def as_written(value: str) -> object:
    """A value as Flink's toString shows it, in the form the project writes: ``PT168H``/``10000`` -> ms."""
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", value)
    if m:
        h, mins, s = (float(g) if g else 0.0 for g in m.groups())
        return round((h * 3600 + mins * 60 + s) * 1000)
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> FlinkReads:
    return FlinkReads.compile(tmp_path_factory.mktemp("flink-reads"))


@pytest.fixture(scope="module", params=VERSIONS)
def home(request) -> FlinkHome:
    local = find_flink_home()
    if request.param == "2.3.0" and local.version != "2.3.0":
        real_parts.missing(f"this machine's Flink is {local.version}, not 2.3.0")
    return flink_home_for(request.param)


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
