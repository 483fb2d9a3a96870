"""Executors: local (also inside a namespace), dry run, and SSH against a real sshd running in a namespace."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from netem_helpers import iperf_transfer, root_qdisc, run_cli, write_inventory

from placement.inventory import SshSettings, load_inventory
from placement.netns import Namespaces, VethPair, run
from placement.remote import (
    CommandFailed,
    DryRunExecutor,
    ExecutorFactory,
    HostUnreachable,
    LocalExecutor,
    SshExecutor,
    is_local_address,
)
from support import real_parts
from support.sshd import SshHost, sshd_available, sshd_in_namespace


def test_local_executor_results_and_one_line_failures() -> None:
    ex = LocalExecutor("here")
    res = ex.run(["echo", "hello"])
    assert (res.ok, res.stdout, res.host, res.argv) == (True, "hello\n", "here", ("echo", "hello"))
    with pytest.raises(CommandFailed, match=r"^here: `sh -c 'echo one; echo boom >&2; exit 3'` failed: boom$"):
        ex.run(["sh", "-c", "echo one; echo boom >&2; exit 3"])
    missing = ex.run(["pn-no-such-binary"], check=False)
    assert (missing.returncode, missing.message) == (127, "pn-no-such-binary: command not found")


def test_dry_run_records_changes_and_answers_queries() -> None:
    printed: list[str] = []
    dry = DryRunExecutor("rpi1", echo=printed.append)
    assert dry.run(["tc", "qdisc", "del", "dev", "eth0", "root"]).dry_run
    assert dry.run(["tc", "-j", "qdisc", "show"], mutates=False).stdout == ""
    assert dry.commands == [["tc", "qdisc", "del", "dev", "eth0", "root"]]
    assert printed == ["rpi1: tc qdisc del dev eth0 root"]
    reading = DryRunExecutor("rpi1", echo=None, reader=LocalExecutor())
    assert reading.run(["echo", "state"], mutates=False).stdout == "state\n"
    assert reading.commands == []


def test_local_addresses() -> None:
    assert is_local_address("127.0.0.1") and is_local_address("localhost")
    assert not is_local_address("192.0.2.77")  # TEST-NET-1: never configured here
    assert not is_local_address("pn-no-such-host.invalid")


@pytest.mark.netns
def test_namespace_executor_and_local_detection(wire: VethPair) -> None:
    inside = LocalExecutor("srv", netns=wire.ns).run(["ip", "-br", "addr", "show", "dev", wire.ns_if])
    assert wire.ns_addr in inside.stdout
    assert is_local_address(wire.host_addr) and not is_local_address(wire.ns_addr)


def test_factory_picks_local_ssh_or_dry_run() -> None:
    inv = load_inventory(Path(__file__).resolve().parents[2] / "inventory" / "edge-lab.yaml")
    rpi1 = inv.host("rpi1")
    assert isinstance(ExecutorFactory(inv, echo=None).for_host(rpi1), SshExecutor)
    assert isinstance(ExecutorFactory(inv, force_local=True).for_host(rpi1), LocalExecutor)
    assert isinstance(ExecutorFactory(inv, dry_run=True, echo=None).for_host(rpi1), DryRunExecutor)
    ssh = ExecutorFactory(inv, echo=None).for_host(rpi1)
    assert ssh.settings.user == "flink" and ssh.settings.key == "~/.ssh/id_ed25519" and not ssh.accept_new_host_keys


# ---- a real sshd in a namespace -------------------------------------------------------------------------------------

SSH_PORT = 2222


@dataclass(frozen=True)
class SshLab:
    wire: VethPair
    sshd: SshHost
    tmp: Path

    @property
    def key(self) -> Path:
        return self.sshd.client_key

    @property
    def host_pub(self) -> str:  # "ssh-ed25519 AAAA..."
        return " ".join(self.sshd.host_public_key.read_text().split()[:2])

    @property
    def known_line(self) -> str:
        return self.sshd.known_hosts.read_text().strip()

    def known_hosts(self, name: str, line: str | None = None) -> Path:
        path = self.tmp / name
        path.write_text(f"{line}\n" if line else "")
        return path

    def settings(self, known_hosts: Path) -> SshSettings:
        return SshSettings(user="root", port=SSH_PORT, key=str(self.key), known_hosts=str(known_hosts))


def _keygen(path: Path) -> None:
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pn-test", "-f", str(path)])


@pytest.fixture
def ssh_lab(netns_required: None, tmp_path: Path) -> Iterator[SshLab]:
    """A real sshd (tests/support/sshd.py) in a namespace joined to this one by a veth."""
    real_parts.require(sshd_available())
    with Namespaces("pn-ssh") as nets:
        wire = nets.add("edge", "10.201.4.1", "10.201.4.2")
        with sshd_in_namespace(wire.ns, wire.ns_addr, tmp_path / "sshd", port=SSH_PORT) as sshd:
            yield SshLab(wire=wire, sshd=sshd, tmp=tmp_path)


@pytest.mark.netns
def test_ssh_refuses_unknown_and_changed_host_keys(ssh_lab: SshLab) -> None:
    empty = ssh_lab.known_hosts("known_empty")
    with (
        SshExecutor("edge", ssh_lab.wire.ns_addr, ssh_lab.settings(empty)) as ex,
        pytest.raises(
            HostUnreachable,
            match=r"host key not in .*known_empty; add it \(ssh-keyscan\) or pass "
            r"--accept-new-host-keys",
        ),
    ):
        ex.run(["true"])
    other = ssh_lab.tmp / "other_key"
    _keygen(other)
    pub = (ssh_lab.tmp / "other_key.pub").read_text().split()
    changed = ssh_lab.known_hosts("known_changed", f"[{ssh_lab.wire.ns_addr}]:{SSH_PORT} {pub[0]} {pub[1]}")
    for accept_new in (False, True):  # opting in to new keys never accepts a changed one
        with (
            SshExecutor("edge", ssh_lab.wire.ns_addr, ssh_lab.settings(changed), accept_new_host_keys=accept_new) as ex,
            pytest.raises(HostUnreachable, match="host key CHANGED"),
        ):
            ex.run(["true"])


@pytest.mark.netns
def test_ssh_runs_commands_with_a_known_key_and_records_accepted_ones(ssh_lab: SshLab) -> None:
    known = ssh_lab.known_hosts("known_good", ssh_lab.known_line)
    with SshExecutor("edge", ssh_lab.wire.ns_addr, ssh_lab.settings(known)) as ex:
        res = ex.run(["sh", "-c", 'id -u; ip -br addr show dev "$1"', "sh", ssh_lab.wire.ns_if])
        assert res.stdout.splitlines()[0] == "0" and ssh_lab.wire.ns_addr in res.stdout
        failed = ex.run(["sh", "-c", "echo nope >&2; exit 4"], check=False)
        assert (failed.returncode, failed.message) == (4, "nope")
    fresh = ssh_lab.known_hosts("known_fresh")
    with SshExecutor("edge", ssh_lab.wire.ns_addr, ssh_lab.settings(fresh), accept_new_host_keys=True) as ex:
        assert ex.run(["echo", "ok"]).stdout == "ok\n"
    assert ssh_lab.host_pub in fresh.read_text()
    with SshExecutor("edge", ssh_lab.wire.ns_addr, ssh_lab.settings(fresh)) as ex:  # strict again, now known
        assert ex.run(["echo", "ok"]).ok


@pytest.mark.netns
@pytest.mark.timeout(180)
def test_netem_over_ssh_shapes_the_remote_host(
    ssh_lab: SshLab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The edge is the namespace behind sshd; the CLI reaches it over SSH because its address is not local."""
    wire = ssh_lab.wire
    inv_path = write_inventory(
        tmp_path / "inv.yaml",
        server_address=wire.host_addr,
        edges=[{"name": "edge1", "address": wire.ns_addr, "interface": wire.ns_if, "link": {"bandwidth": "20mbit"}}],
    )
    doc = inv_path.read_text() + (
        f"ssh:\n  user: root\n  port: {SSH_PORT}\n  key: {ssh_lab.key}\n  known_hosts: {ssh_lab.tmp / 'known_cli'}\n"
    )
    inv_path.write_text(doc)
    ssh_lab.known_hosts("known_cli")  # empty: the first run must refuse
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv_path))
    assert code == 1 and err.count("\n") == 1 and "host key not in" in err
    assert root_qdisc(wire.ns_if, wire.ns) == ("noqueue", "0:")

    ssh_lab.known_hosts("known_cli", ssh_lab.known_line)
    code, out, err = run_cli(capsys, "netem", "apply", "--inventory", str(inv_path))
    assert code == 0, err
    assert root_qdisc(wire.ns_if, wire.ns) == ("htb", "ede:")
    end = iperf_transfer(None, wire.host_addr, client_ns=wire.ns, seconds=3, omit=1)
    achieved = end["sum_received"]["bits_per_second"] / 1e6
    assert achieved == pytest.approx(20, rel=0.10)
    code, out, err = run_cli(capsys, "netem", "show", "--inventory", str(inv_path), "--json")
    [entry] = json.loads(out)["hosts"]
    assert entry["installed"] and entry["classes"][0]["dest"] == wire.host_addr
    assert entry["classes"][0]["bytes"] > 3 * 20e6 / 8 * 0.9  # at least three seconds at 20 Mbit/s went through
    code, out, err = run_cli(capsys, "netem", "clear", "--inventory", str(inv_path))
    assert code == 0 and "cleared; root qdisc is noqueue 0: again" in out
    assert root_qdisc(wire.ns_if, wire.ns) == ("noqueue", "0:")
    assert "PRIVATE KEY" not in out + err and str(os.environ.get("SSH_AUTH_SOCK", "\0")) not in out + err
