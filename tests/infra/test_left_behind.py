"""The suite's own end-of-session check (tests/support/left_behind.py), for real: pytest runs in a subprocess on tiny
test files that leave a process, a network namespace, a cgroup, a qdisc and an iptables rule behind — and on one that
cleans up — with and without pytest-xdist workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from placement.netns import netns_available
from support import real_parts

TESTS = Path(__file__).resolve().parents[1]
pytestmark = real_parts.needs(netns_available())

LEAVES = """
import subprocess
from pathlib import Path

RULE = ["-i", "plleftover0", "-m", "comment", "--comment", "pl-leftover-test", "-j", "ACCEPT"]


def test_leaves_things(tmp_path):
    subprocess.Popen(["sleep", "600"], start_new_session=True)  # detached: its parent's exit does not end it
    subprocess.run(["ip", "netns", "add", "pl-leftover-test"], check=True)
    subprocess.run(["ip", "link", "add", "plleftover0", "type", "veth", "peer", "name", "plleftover1"], check=True)
    subprocess.run(["tc", "qdisc", "add", "dev", "plleftover0", "root", "handle", "1:", "htb"], check=True)
    Path("/sys/fs/cgroup/cpu/pl-leftover-test").mkdir()
    subprocess.run(["iptables", "-w", "-t", "mangle", "-A", "PREROUTING", *RULE], check=True)
"""

CLEAN = """
import subprocess


def test_cleans_up():
    proc = subprocess.Popen(["sleep", "600"])
    subprocess.run(["ip", "netns", "add", "pl-leftover-test"], check=True)
    subprocess.run(["ip", "netns", "delete", "pl-leftover-test"], check=True)
    proc.kill()
    proc.wait()
"""


def run_pytest(tmp_path: Path, source: str, *options: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_tiny.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if k != "PLACEMENT_TEST_SESSION"} | {
        "PYTHONPATH": str(TESTS),
        "PLACEMENT_LEFT_BEHIND_GRACE_S": "2",
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "support.left_behind",
            "-p",
            "no:cacheprovider",
            "-q",
            "--rootdir",
            str(tmp_path),
            *options,
            str(tmp_path / "test_tiny.py"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def remove_what_the_tiny_test_left() -> None:
    subprocess.run(["pkill", "-f", "^sleep 600$"], check=False)
    subprocess.run(["ip", "netns", "delete", "pl-leftover-test"], check=False, capture_output=True)
    subprocess.run(["ip", "link", "delete", "plleftover0"], check=False, capture_output=True)
    Path("/sys/fs/cgroup/cpu/pl-leftover-test").exists() and Path("/sys/fs/cgroup/cpu/pl-leftover-test").rmdir()
    rule = ["-i", "plleftover0", "-m", "comment", "--comment", "pl-leftover-test", "-j", "ACCEPT"]
    subprocess.run(["iptables", "-w", "-t", "mangle", "-D", "PREROUTING", *rule], check=False, capture_output=True)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_session_that_leaves_things_behind_fails_and_names_each(tmp_path, workers):
    try:
        done = run_pytest(tmp_path, LEAVES, *workers)
    finally:
        remove_what_the_tiny_test_left()
    assert done.returncode == 1, done.stdout[-3000:]
    assert "1 passed" in done.stdout  # the test itself passed: the session fails for what it left
    lines = [line for line in done.stdout.splitlines() if line.startswith("LEFT BEHIND")]
    assert any(line.startswith("LEFT BEHIND processes:") and line.endswith("sleep 600") for line in lines), lines
    assert "LEFT BEHIND namespaces: pl-leftover-test" in lines
    assert "LEFT BEHIND links: plleftover0" in lines and "LEFT BEHIND links: plleftover1" in lines
    assert any(line.startswith("LEFT BEHIND qdiscs: qdisc htb 1: dev plleftover0 root") for line in lines), lines
    assert "LEFT BEHIND cgroups: /sys/fs/cgroup/cpu/pl-leftover-test" in lines
    rule = "mangle -A PREROUTING -i plleftover0 -m comment --comment pl-leftover-test -j ACCEPT"
    assert f"LEFT BEHIND iptables rules: {rule}" in lines, lines


def test_a_session_that_cleans_up_passes_and_says_so(tmp_path):
    done = run_pytest(tmp_path, CLEAN, "-n", "2")
    assert done.returncode == 0, done.stdout[-3000:]
    assert (
        "nothing: no process, network namespace, link, cgroup, qdisc or iptables rule of this session remains"
        in done.stdout
    )


def test_cgroups_made_inside_another_managers_cgroup_are_not_the_suites():
    """A sandbox or systemd beside the suite makes cgroups inside its own (pre-existing) subtree: not counted; the
    lab's at the top of a hierarchy and the per-thread caps inside those are."""
    from support.left_behind import CGROUP_MOUNTS, _new_cgroups

    cpu, memory = CGROUP_MOUNTS / "cpu", CGROUP_MOUNTS / "memory"
    before = {str(memory / "process_api"), str(cpu / "system.slice")}
    now = before | {
        str(memory / "process_api" / "3c307afd"),
        str(cpu / "system.slice" / "x.service"),
        str(cpu / "pl-lab-rpi1"),
        str(cpu / "pl-lab-rpi1" / "thread-12"),
        str(memory / "pl-leftover"),
    }
    assert _new_cgroups(before, now) == sorted(
        [str(cpu / "pl-lab-rpi1"), str(cpu / "pl-lab-rpi1" / "thread-12"), str(memory / "pl-leftover")]
    )
