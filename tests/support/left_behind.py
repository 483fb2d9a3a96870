"""The suite checks itself at its end: no process, network namespace, link, cgroup or qdisc it made is left behind.

A snapshot is taken when the session starts (on the controller when tests run in pytest-xdist workers) and compared
when it ends, after the workers have exited:

* network namespaces (``ip netns list``) and links of the root namespace (``ip -o link``);
* cgroups under every cgroup v1 hierarchy mounted at ``/sys/fs/cgroup/*`` (the lab's CPU quotas, per-thread caps),
  not those made inside another manager's cgroup that was there before (:func:`_new_cgroups`);
* qdiscs of the root namespace (``tc qdisc show``; a namespace's go with it);
* iptables rules of the root namespace's tables (``iptables -S`` of mangle, filter, nat: the delay lines' NFQUEUE
  rules live in mangle; a namespace's go with it);
* processes of this session still alive: every process the tests start inherits :data:`MARKER` in its environment;
  those started by a test sshd for an SSH session do not, so a process whose command line names the session's
  temporary directory counts too (Flink's JVMs log there, sshd and Prometheus keep their files there).

Processes may take a moment to go after their parent (a worker's JVMs, a stopped cluster), so the check waits up to
:data:`GRACE_S` for the process list to empty before it reports. Anything left fails the session (exit 1) and is
listed in a "left behind" section. ``tests/conftest.py`` imports the hooks; elsewhere ``-p support.left_behind``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MARKER = "PLACEMENT_TEST_SESSION"
GRACE_S = float(os.environ.get("PLACEMENT_LEFT_BEHIND_GRACE_S", "30"))
CGROUP_MOUNTS = Path("/sys/fs/cgroup")


def _lines(argv: list[str]) -> set[str]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {line.strip() for line in done.stdout.splitlines() if line.strip()}


def _namespaces() -> set[str]:
    return {line.split()[0] for line in _lines(["ip", "netns", "list"])}


def _links() -> set[str]:
    # "7: pllab1h@if6: <BROADCAST,...> ..." -> "pllab1h"
    return {line.split(":")[1].strip().split("@")[0] for line in _lines(["ip", "-o", "link", "show"]) if ":" in line}


def _qdiscs() -> set[str]:
    # "qdisc htb 1: dev pllab1h root refcnt 2 r2q 10 ..." -> "qdisc htb 1: dev pllab1h root" (counters vary)
    return {" ".join(line.split()[:6]) for line in _lines(["tc", "qdisc", "show"])}


def _iptables_rules() -> set[str]:
    if shutil.which("iptables") is None:
        return set()
    return {
        f"{table} {line}"
        for table in ("mangle", "filter", "nat")
        for line in _lines(["iptables", "-w", "-t", table, "-S"])
        if line.startswith("-A ")  # "-P/-N" lines are the tables' own chains and policies
    }


def _cgroups() -> set[str]:
    found: set[str] = set()
    if not CGROUP_MOUNTS.is_dir():
        return found
    for hierarchy in CGROUP_MOUNTS.iterdir():
        if not (hierarchy / "cgroup.procs").exists():
            continue
        for directory, _, _ in os.walk(hierarchy):
            if directory != str(hierarchy):
                found.add(directory)
    return found


def _new_cgroups(before: set[str], now: set[str]) -> list[str]:
    """Cgroups made since the start that the suite can have made: the lab's sit at the top of a hierarchy, and its
    per-thread caps inside those. New ones inside a cgroup that was there before (a process manager's own subtree,
    e.g. a sandbox's per-command cgroups or systemd's slices) belong to whoever runs beside the suite."""

    def ours(path: str) -> bool:
        parent = os.path.dirname(path)
        return os.path.dirname(parent) == str(CGROUP_MOUNTS) or (parent not in before and ours(parent))

    return sorted(path for path in now - before if ours(path))


def _session_processes(marker: str, basetemp: str | None) -> dict[int, str]:
    """pid -> command line of live processes that belong to this session (see the module doc)."""
    mine = {os.getpid(), os.getppid()}
    needle = f"{MARKER}={marker}".encode()
    found: dict[int, str] = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) in mine:
            continue
        try:
            environ = (proc / "environ").read_bytes()
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z" or not cmdline:  # a zombie is gone already; kernel threads have no command line
            continue
        if needle in environ.split(b"\0") or (basetemp and basetemp in cmdline):
            found[int(proc.name)] = cmdline[:200]
    return found


@dataclass
class Snapshot:
    marker: str
    namespaces: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)
    qdiscs: set[str] = field(default_factory=set)
    cgroups: set[str] = field(default_factory=set)
    iptables: set[str] = field(default_factory=set)


def start() -> Snapshot:
    """Mark this process's environment (children inherit it) and take the machine's state."""
    marker = os.environ.setdefault(MARKER, uuid.uuid4().hex)
    return Snapshot(marker, _namespaces(), _links(), _qdiscs(), _cgroups(), _iptables_rules())


def left_behind(before: Snapshot, basetemp: str | None) -> dict[str, list[str]]:
    """What the session made and did not remove (empty lists: clean)."""
    deadline = time.monotonic() + GRACE_S
    processes = _session_processes(before.marker, basetemp)
    while processes and time.monotonic() < deadline:
        time.sleep(1.0)
        processes = _session_processes(before.marker, basetemp)
    return {
        "processes": [f"{pid} {cmd}" for pid, cmd in sorted(processes.items())],
        "namespaces": sorted(_namespaces() - before.namespaces),
        "links": sorted(_links() - before.links),
        "qdiscs": sorted(_qdiscs() - before.qdiscs),
        "cgroups": _new_cgroups(before.cgroups, _cgroups()),
        "iptables rules": sorted(_iptables_rules() - before.iptables),
    }


# ---- hooks (imported by tests/conftest.py) ------------------------------------------------------------------------
_BEFORE = pytest.StashKey[Snapshot]()
_LEFT = pytest.StashKey[dict]()


def _controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # a pytest-xdist worker has it


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist starts the workers: they inherit the session's marker
def pytest_sessionstart(session: pytest.Session) -> None:
    if _controller(session.config):
        session.config.stash[_BEFORE] = start()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not _controller(config) or _BEFORE not in config.stash or session.testscollected == 0:
        return
    basetemp = str(config._tmp_path_factory.getbasetemp())  # the workers' temporary directories are inside it
    left = left_behind(config.stash[_BEFORE], basetemp)
    config.stash[_LEFT] = left
    if any(left.values()) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    left = config.stash.get(_LEFT, None)
    if left is None:
        return
    tr = terminalreporter
    tr.section("left behind")
    if not any(left.values()):
        tr.write_line(
            "nothing: no process, network namespace, link, cgroup, qdisc or iptables rule of this session remains"
        )
        return
    for kind, what in left.items():
        for thing in what:
            tr.write_line(f"LEFT BEHIND {kind}: {thing}", red=True)
