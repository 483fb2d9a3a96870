"""The sshd test fixture (tests/support/sshd.py) leaves nothing behind: not the listener, not a session whose client is
still connected when the fixture ends, not the command such a session runs."""

from __future__ import annotations

import os
import subprocess
import time

import psutil
import pytest

from placement.netns import Namespaces, netns_available
from support import real_parts
from support.sshd import SSHD, sshd_available, sshd_in_namespace


def _in_namespace(ns: str) -> set[int]:
    listed = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10, check=True)
    return set(map(int, listed.stdout.split()))


def _processes(pids: set[int]) -> list[tuple[psutil.Process, str, str]]:
    """(process, name, executable) of those still there (a pre-auth child may come and go)."""
    out = []
    for pid in pids:
        try:
            p = psutil.Process(pid)
            out.append((p, p.name(), p.exe()))
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.mark.netns
def test_sessions_still_connected_end_with_the_fixture(tmp_path):
    real_parts.require(netns_available())
    real_parts.require(sshd_available())
    with Namespaces("pn-sshfx") as nets:
        wire = nets.add("edge", "10.201.77.1", "10.201.77.2")
        with sshd_in_namespace(wire.ns, wire.ns_addr, tmp_path / "sshd", port=2222) as host:
            listener = _in_namespace(wire.ns)
            # a client that never hangs up: its session (sshd in a session of its own) runs `sleep` in the namespace
            client = subprocess.Popen(
                host.ssh_argv("sleep", "600"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    sessions = _processes(_in_namespace(wire.ns) - listener)
                    if any(name == "sleep" for _, name, _ in sessions):
                        break
                    time.sleep(0.1)
                assert any(name == "sleep" for _, name, _ in sessions), sessions
                # the session's sshd called setsid(): killing the listener's process group would miss it
                assert any(exe == str(SSHD) and p.pid == os.getpgid(p.pid) for p, _, exe in sessions)
            except BaseException:
                client.kill()
                raise
        try:
            assert _in_namespace(wire.ns) == set()  # the namespace still exists; nothing runs in it
            assert not [p for p, _, _ in sessions if p.is_running()]
        finally:
            client.kill()
            client.wait(timeout=10)
