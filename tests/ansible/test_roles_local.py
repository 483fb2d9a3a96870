"""The roles' guards, run for real on this machine (connection local, check mode, no apt, nothing written).

x86_64 is what this machine is; the Raspberry Pi (aarch64) path is exercised by *claiming* the host reports aarch64
(``java_host_arch``), hence "fake" in that test's name: it proves the arm64 package and JAVA_HOME the role picks,
which this x86_64 machine does not have.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from ansible_support import run_role_play

from support import real_parts

pytestmark = pytest.mark.ansible

PLAY = """\
- name: One role alone
  hosts: localhost
  connection: local
  gather_facts: true
  roles:
    - role: {role}
  post_tasks:
    - name: Report what the role chose
      ansible.builtin.debug:
        msg: "JAVA_CHOICE {{ {'package': java_package, 'home': java_home} | to_json }}"
"""


def run_role(tmp_path: Path, role: str, *extra_vars: str) -> subprocess.CompletedProcess[str]:
    playbook = tmp_path / f"{role}.yml"
    playbook.write_text(PLAY.replace("{role}", role))
    extra = [arg for var in extra_vars for arg in ("-e", var)]
    return run_role_play(tmp_path, playbook, "localhost,", "--check", "-e", "java_install=false", *extra)


def choice(stdout: str) -> dict[str, str]:
    line = next(line for line in stdout.splitlines() if "JAVA_CHOICE" in line)
    return json.loads(line.split("JAVA_CHOICE ", 1)[1].rstrip('"').replace('\\"', '"'))


def test_this_x86_64_host_gets_the_amd64_runtime(tmp_path: Path) -> None:
    if platform.machine() != "x86_64":
        real_parts.kernel_fact("machine-not-x86_64", platform.machine())
    if not Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java").exists():
        real_parts.missing("needs Debian's openjdk-17 (/usr/lib/jvm/java-17-openjdk-amd64)")
    proc = run_role(tmp_path, "java", "placement_arch=x86_64")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert choice(proc.stdout) == {"package": "openjdk-17-jre-headless", "home": "/usr/lib/jvm/java-17-openjdk-amd64"}


def test_inventory_arch_that_contradicts_the_host_is_refused(tmp_path: Path) -> None:
    proc = run_role(tmp_path, "java", "placement_arch=aarch64")
    assert proc.returncode != 0
    assert f"reports {platform.machine()} but the inventory says aarch64" in proc.stdout


def test_fake_aarch64_host_gets_the_arm64_runtime_path(tmp_path: Path) -> None:
    proc = run_role(tmp_path, "java", "placement_arch=aarch64", "java_host_arch=aarch64")
    # this machine has no arm64 JVM, so the role stops at its java_home check, naming the arm64 path it expects
    assert proc.returncode != 0
    assert "no /usr/lib/jvm/java-17-openjdk-arm64/bin/java on localhost" in proc.stdout


def test_32_bit_pi_os_is_refused(tmp_path: Path) -> None:
    proc = run_role(tmp_path, "java", "java_host_arch=armv7l")
    assert proc.returncode != 0
    assert "a Raspberry Pi needs a 64-bit OS" in proc.stdout


def any_java_home() -> str:
    java = shutil.which("java")
    if java is None:
        real_parts.missing("needs a java runtime on PATH")
    return str(Path(java).resolve().parents[1])


def test_flink_role_refuses_an_archive_without_sha512(tmp_path: Path) -> None:
    proc = run_role(
        tmp_path,
        "flink",
        "placement_arch=" + platform.machine(),
        "java_home=" + any_java_home(),
        "flink_home=" + str(tmp_path / "flink"),
    )
    assert proc.returncode != 0
    assert "need flink_archive_sha512 (128 hex digits, got 0)" in proc.stdout
    assert not (tmp_path / "flink").exists()


def test_flink_role_refuses_a_host_too_small_for_a_taskmanager(tmp_path: Path) -> None:
    # 1 GiB: 80 % is 819 MiB, 768 MiB in 64 MiB steps -- below the 1024 MiB a TaskManager gets at least
    proc = run_role(
        tmp_path,
        "flink",
        "placement_arch=" + platform.machine(),
        "java_home=" + any_java_home(),
        "flink_archive_sha512=" + "a" * 128,
        "placement_memory_mib=1024",
    )
    assert proc.returncode != 0
    assert "at least 1024 MiB for the TaskManager (got 768)" in proc.stdout


def test_flink_role_refuses_an_unsupported_flink_version_naming_the_supported(tmp_path: Path) -> None:
    proc = run_role(
        tmp_path,
        "flink",
        "placement_arch=" + platform.machine(),
        "java_home=" + any_java_home(),
        "flink_archive_sha512=" + "a" * 128,
        "flink_version=1.18.1",
    )
    assert proc.returncode != 0
    assert "localhost: Flink 1.18.1 is not supported (supported: 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)" in proc.stdout
