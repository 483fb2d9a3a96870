"""The lab's own Flink home (the wheel's jars by symlink, the scheduler extension as a file of its own) and the pure
parts of its per-namespace sshd. Real javac and the real wheel; no cluster, no root."""

from __future__ import annotations

import shutil

import pytest

from placement.flink.home import find_flink_home
from placement.lab import sshd
from placement.lab.home import make_lab_home, scheduler_dir
from placement.scheduler import installed_extension, launcher_classpath
from support import real_parts

pytestmark = real_parts.needs(None if shutil.which("javac") else "needs a JDK (javac) to build the extension")


def test_the_lab_home_mirrors_the_wheel_and_installs_the_extension_only_there(tmp_path):
    wheel = find_flink_home()
    before = sorted(p.name for p in wheel.lib.iterdir())
    home = make_lab_home(tmp_path, wheel, with_extension=True)
    jars = {p.name: p for p in home.lib.iterdir()}
    links = {n for n, p in jars.items() if p.is_symlink()}
    assert links == {p.name for p in wheel.lib.glob("*.jar")}
    assert all(jars[n].resolve() == (wheel.lib / n).resolve() for n in links)
    ext = installed_extension(home)
    assert ext is not None and not ext.is_symlink() and set(jars) - links == {ext.name}
    assert sorted(p.name for p in wheel.lib.iterdir()) == before  # the wheel's lib/ untouched
    # bin/config.sh's order puts the extension before flink-dist
    cp = launcher_classpath(home).split(":")
    assert cp.index(str(ext)) < cp.index(str(home.lib / f"flink-dist-{wheel.version}.jar")) == len(cp) - 1
    assert home.version == wheel.version and (home.path / "bin" / "bash-java-utils.jar").is_file()
    assert scheduler_dir(home.path).is_dir() and (home.path / "conf").is_dir()
    # idempotent; without the extension (a vanilla lab) it is gone again
    assert make_lab_home(tmp_path, wheel, with_extension=True) == home and installed_extension(home) == ext
    make_lab_home(tmp_path, wheel, with_extension=False)
    assert installed_extension(home) is None and all(p.is_symlink() for p in home.lib.iterdir())


def test_sshd_config_listens_on_the_host_address_with_keys_only_and_sftp(tmp_path):
    text = sshd.sshd_config(
        address="10.203.1.2",
        port=22,
        host_key=tmp_path / "hk",
        authorized_keys=tmp_path / "ak",
        pid_file=tmp_path / "pid",
    )
    lines = text.splitlines()
    assert "ListenAddress 10.203.1.2:22" in lines and f"HostKey {tmp_path / 'hk'}" in lines
    assert "PasswordAuthentication no" in lines and "KbdInteractiveAuthentication no" in lines
    assert "PermitRootLogin prohibit-password" in lines
    assert any(line.startswith("Subsystem sftp ") for line in lines)


@pytest.mark.parametrize(("port", "name"), [(22, "10.203.1.2"), (2222, "[10.203.1.2]:2222")])
def test_known_hosts_lines_name_the_address_as_openssh_does(port, name):
    assert (
        sshd.known_hosts_line("10.203.1.2", port, "ssh-ed25519 AAAAC3Nz sshd@rpi1\n")
        == f"{name} ssh-ed25519 AAAAC3Nz\n"
    )
