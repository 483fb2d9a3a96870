"""The flink role's TCP congestion control, run for real: ansible-playbook (connection local) inside a fresh network
namespace, whose net.ipv4.tcp_congestion_control is its own, so the machine's stays as it is. Check mode changes
nothing; a run sets the sysctl and the boot file; a second run changes nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from ansible_support import parse_recap, run_role_play

from placement.netns import create_namespace, delete_namespace, netns_available, ns_exec, run
from support import real_parts

pytestmark = [pytest.mark.ansible, pytest.mark.netns]

NAMESPACE = "pa-tcp"
SYSCTL = "/proc/sys/net/ipv4/tcp_congestion_control"
PLAY = """\
- name: The flink role's TCP tasks
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Congestion control
      ansible.builtin.include_role:
        name: flink
        tasks_from: tcp
"""


@pytest.fixture
def namespace():
    real_parts.require(netns_available())
    delete_namespace(NAMESPACE)
    create_namespace(NAMESPACE)
    try:
        yield NAMESPACE
    finally:
        delete_namespace(NAMESPACE)


def _in_effect(ns: str) -> str:
    return run(ns_exec(ns, ["cat", SYSCTL])).stdout.strip()


def _play(tmp_path: Path, ns: str, algorithm: str, *extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "play.yml").write_text(PLAY)
    return run_role_play(
        tmp_path,
        tmp_path / "play.yml",
        "localhost,",
        "-e",
        f"placement_congestion_control={algorithm}",
        "-e",
        f"flink_tcp_sysctl_file={tmp_path / 'sysctl.conf'}",
        *extra,
        wrap=lambda argv: ns_exec(ns, argv),
    )


def test_the_role_sets_the_hosts_congestion_control_once(namespace: str, tmp_path: Path) -> None:
    before = _in_effect(namespace)
    algorithm = "reno" if before != "reno" else "cubic"
    machine = Path(SYSCTL).read_text().strip()

    dry = _play(tmp_path, namespace, algorithm, "--check")
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-2000:]
    assert _in_effect(namespace) == before and not (tmp_path / "sysctl.conf").exists()

    first = _play(tmp_path, namespace, algorithm)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert _in_effect(namespace) == algorithm
    assert (tmp_path / "sysctl.conf").read_text() == f"net.ipv4.tcp_congestion_control = {algorithm}\n"
    assert parse_recap(first.stdout)["localhost"]["changed"] == 2  # the boot file and the sysctl

    again = _play(tmp_path, namespace, algorithm)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert parse_recap(again.stdout)["localhost"]["changed"] == 0
    assert Path(SYSCTL).read_text().strip() == machine  # the root namespace's is untouched
