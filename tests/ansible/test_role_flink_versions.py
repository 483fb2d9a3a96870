"""The flink role's config for Flink 1.19, 1.20 and 2.3, read back by that Flink itself.

The role's own template and variables are rendered by a real ``ansible-playbook`` on this machine (connection
local, the role's defaults and vars files, nothing else of the role); the result is then loaded by each version's own
GlobalConfiguration (:mod:`support.flink_reads`) and sized by its BashJavaUtils, as its start scripts do. The
1.x guard against a conf dir whose flink-conf.yaml would silently win runs for real too (check mode).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from ansible_support import ANSIBLE_DIR, run_role_play

from placement.flink.distribution import flink_home_for
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.versions import FlinkVersion
from placement.inventory.failure_detection import FailureDetection, flink_config
from support import real_parts
from support.flink_reads import FAILURE_OPTIONS as ALL_FAILURE_OPTIONS
from support.flink_reads import FlinkReads, as_written, tm_process_mib

pytestmark = [pytest.mark.ansible, pytest.mark.flink]

# the failure-detection keys the role's rendered config is read back for, each as every line defines it
FAILURE_OPTIONS = {
    k: ALL_FAILURE_OPTIONS[k]
    for k in (
        "heartbeat.interval",
        "heartbeat.timeout",
        "heartbeat.rpc-failure-threshold",
        "slot.request.timeout",
        "restart-strategy.type",
        "restart-strategy.exponential-delay.initial-backoff",
        "restart-strategy.exponential-delay.attempts-before-reset-backoff",
        "taskmanager.registration.timeout",
        "cluster.registration.max-timeout",
    )
}

VERSIONS = ("1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0")  # one release of every supported line
ROLE = ANSIBLE_DIR / "roles" / "flink"
CONF = "org.apache.flink.configuration."

RENDER = f"""\
- name: Render the flink role's config.yaml for each version
  hosts: jobmanager
  connection: local
  gather_facts: false
  vars_files:
    - {ROLE}/defaults/main.yml
    - {ROLE}/vars/main.yml
  tasks:
    - name: Render
      ansible.builtin.template:
        src: {ROLE}/templates/config.yaml.j2
        dest: "{{{{ out }}}}/{{{{ item }}}}/config.yaml"
        mode: "0644"
      vars:
        flink_version: "{{{{ item }}}}"
      loop: {list(VERSIONS)}
"""

GUARD = """\
- name: The flink role's configure tasks, check mode
  hosts: jobmanager
  connection: local
  gather_facts: false
  tasks:
    - name: Configure
      ansible.builtin.include_role:
        name: flink
        tasks_from: configure
"""


def run_play(tmp_path: Path, play: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "play.yml").write_text(play)
    (tmp_path / "hosts.ini").write_text("[jobmanager]\nlocalhost ansible_connection=local\n")
    return run_role_play(
        tmp_path,
        tmp_path / "play.yml",
        str(tmp_path / "hosts.ini"),
        "-e",
        "placement_cores=4",
        "-e",
        "placement_memory_mib=4096",
        "-e",
        "flink_run_jobmanager=false",
        "-e",
        "flink_savepoint_dir=file:///var/lib/flink/savepoints",
        *extra,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("role-config")
    for version in VERSIONS:
        (out / version).mkdir()
    proc = run_play(out, RENDER, "-e", f"out={out}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def reads(tmp_path_factory) -> FlinkReads:
    return FlinkReads.compile(tmp_path_factory.mktemp("flink-reads"))


def home_of(version: str) -> FlinkHome:
    if version == "2.3.0" and find_flink_home().version != version:
        real_parts.missing(f"this machine's Flink is {find_flink_home().version}, not 2.3.0")
    return flink_home_for(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_reads_the_roles_config_as_meant(rendered, reads, version):
    home, conf_dir = home_of(version), rendered / version
    doc = yaml.safe_load((conf_dir / "config.yaml").read_text())
    # the savepoint directory under the key this version knows (1.20 added execution.checkpointing.savepoint-dir)
    if FlinkVersion.parse(version).at_least(1, 20):
        assert (
            doc["execution"]["checkpointing"]["savepoint-dir"] == "file:///var/lib/flink/savepoints"
            and "state" not in doc
        )
    else:
        assert doc["state"]["savepoints"]["dir"] == "file:///var/lib/flink/savepoints" and "execution" not in doc
    got = reads(
        home,
        conf_dir,
        CONF + "CheckpointingOptions#SAVEPOINT_DIRECTORY",
        CONF + "ExternalResourceOptions#EXTERNAL_RESOURCE_LIST",
        CONF + "TaskManagerOptions#NUM_TASK_SLOTS",
        CONF + "TaskManagerOptions#CPU_CORES",
        CONF + "JobManagerOptions#SCHEDULER",
    )
    assert got == {
        CONF + "CheckpointingOptions#SAVEPOINT_DIRECTORY": "file:///var/lib/flink/savepoints",
        CONF + "ExternalResourceOptions#EXTERNAL_RESOURCE_LIST": "[localhost]",
        CONF + "TaskManagerOptions#NUM_TASK_SLOTS": "4",
        CONF + "TaskManagerOptions#CPU_CORES": "4.0",
        CONF + "JobManagerOptions#SCHEDULER": "Default",
    }
    # 80 % of the 4096 MiB host in 64 MiB steps, as Flink's own memory model of this version sizes it
    assert tm_process_mib(home, conf_dir) == pytest.approx(3264, abs=1)


@pytest.mark.parametrize(("version", "refused"), [("1.20.5", True), ("2.3.0", False)])
def test_a_1x_conf_dir_with_a_flink_conf_yaml_is_refused_2x_ignores_it(tmp_path, version, refused):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "flink-conf.yaml").write_text("taskmanager.numberOfTaskSlots: 1\n")
    proc = run_play(
        tmp_path,
        GUARD,
        "--check",
        "-e",
        f"flink_version={version}",
        "-e",
        f"flink_conf_dir={conf}",
        "-e",
        f"flink_home={tmp_path}/flink",
        "-e",
        f"flink_data_dir={tmp_path}/data",
        "-e",
        f"flink_log_dir={tmp_path}/log",
        "-e",
        f"flink_systemd_dir={tmp_path}/systemd",
        "-e",
        "flink_user=root",
        "-e",
        "flink_group=root",
        "-e",
        "flink_manage_services=false",
        "-e",
        "flink_savepoint_dir=s3://bucket/savepoints",
    )
    message = (
        f"localhost: {conf}/flink-conf.yaml exists, and Flink {version} reads it instead of the config.yaml "
        "this role writes: move its settings into flink_config_extra and remove it"
    )
    if refused:
        assert proc.returncode != 0 and message in proc.stdout, proc.stdout[-3000:]
    else:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        assert "flink-conf.yaml exists" not in proc.stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_reads_the_roles_failure_detection_defaults_as_the_inventory_maps_them(rendered, reads, version):
    """The role's own defaults are the inventory defaults' mapping, and each line reads them back as written."""
    home, conf_dir = home_of(version), rendered / version
    want = flink_config(FailureDetection())
    got = reads(home, conf_dir, *FAILURE_OPTIONS.values())
    assert {k: as_written(got[o]) for k, o in FAILURE_OPTIONS.items()} == {k: want[k] for k in FAILURE_OPTIONS}


def test_the_exported_failure_detection_reaches_the_rendered_config(tmp_path, reads):
    """An inventory's overrides, through `placement inventory ansible`'s variable, in the config the role renders."""
    import json

    from placement.flink.config import nest

    fd = FailureDetection.model_validate(
        {
            "heartbeat_timeout": "30s",
            "slot_request_timeout": "45s",
            "restart": {"strategy": "fixed-delay", "attempts": 50, "initial_delay": "3s"},
        }
    )
    (tmp_path / "fd.json").write_text(json.dumps({"flink_failure_detection_config": nest(flink_config(fd))}))
    out = tmp_path / "out"
    for version in ("1.19.3", "2.3.0"):
        (out / version).mkdir(parents=True)
    play = RENDER.replace(f"loop: {list(VERSIONS)}", "loop: ['1.19.3', '2.3.0']")
    proc = run_play(tmp_path, play, "-e", f"out={out}", "-e", f"@{tmp_path / 'fd.json'}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    fixed = {
        "restart-strategy.fixed-delay.attempts": CONF + "RestartStrategyOptions#RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS",
        "restart-strategy.fixed-delay.delay": CONF + "RestartStrategyOptions#RESTART_STRATEGY_FIXED_DELAY_DELAY",
    }
    for version in ("1.19.3", "2.3.0"):
        got = reads(home_of(version), out / version, *FAILURE_OPTIONS.values(), *fixed.values())
        read = {k: as_written(got[o]) for k, o in {**FAILURE_OPTIONS, **fixed}.items()}
        assert (read["heartbeat.timeout"], read["slot.request.timeout"], read["restart-strategy.type"]) == (
            30000,
            45000,
            "fixed-delay",
        ), (version, got)
        assert (read["restart-strategy.fixed-delay.attempts"], read["restart-strategy.fixed-delay.delay"]) == (50, 3000)
        assert read["heartbeat.interval"] == 2000  # what the inventory left at its default
