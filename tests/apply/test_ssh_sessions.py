"""What a command over SSH meets on an emulated host: its own home, and a timeout that says so.

The emulated hosts share this machine's users and files. Their sessions used to run this machine's shell start-up
files too: root's ``.bashrc`` ran ``pyenv init``, whose rehash lock a killed session left behind, and from then on
every command over SSH waited a minute for the lock and failed with an empty message. The sshd here is real
(tests/support/sshd.py, in a network namespace); the home is bind-mounted for its sessions only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from apply_support import SshLab

from placement.inventory import SshSettings
from placement.remote import SshExecutor

pytestmark = [pytest.mark.netns]


def executor(ssh_lab: SshLab, name: str) -> SshExecutor:
    host = ssh_lab.hosts[name]
    key, known = str(ssh_lab.client_key), str(host.known_hosts)
    settings = SshSettings(user=host.user, port=host.port, key=key, known_hosts=known)
    return SshExecutor(name, host.address, settings)


def test_a_session_runs_the_hosts_own_start_up_files_not_this_machines(ssh_lab: SshLab):
    host = ssh_lab.hosts["rpi1"]
    machine_rc = Path.home() / ".bashrc"
    own_rc = host.home / ".bashrc"
    own_rc.write_text("echo own-bashrc-ran >&2\n")
    try:
        with executor(ssh_lab, "rpi1") as ex:
            result = ex.run(["sh", "-c", 'stat -c %d:%i "$HOME/.bashrc" 2>/dev/null; true'])
            # the rest of the home is the machine's: a venv's interpreter may link into it (pyenv)
            python = ex.run([sys.executable, "-c", "print(6 * 7)"])
    finally:
        own_rc.write_text("")  # truncated, not removed: the bind holds this inode for the module's other sessions
    own = own_rc.stat()
    if machine_rc.is_file():  # this machine's (and CI's) root has one: the session sees the host's file in its place
        assert result.stdout.strip() == f"{own.st_dev}:{own.st_ino}"
        assert "own-bashrc-ran" in result.stderr  # the login shell still reads its start-up file: the Pi's own
    assert python.stdout.strip() == "42"
    # this process's mount namespace never saw the bind
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    assert not any(line.split()[4] == str(machine_rc) for line in mounts)


def test_a_command_that_outlives_its_timeout_fails_with_a_message_that_says_so(ssh_lab: SshLab):
    with executor(ssh_lab, "rpi1") as ex:
        result = ex.run(["sleep", "30"], check=False, timeout=1)
        assert (result.returncode, result.message) == (124, "timed out after 1 s")
        assert ex.run(["true"]).ok  # the connection is still usable
