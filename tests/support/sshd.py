"""A real OpenSSH server inside a network namespace, for tests that need a "remote host" (ansible, apply).

Usage, with a namespace made by :class:`placement.netns.Namespaces`::

    with Namespaces("pa") as nets:
        wire = nets.add("edge1", "10.202.0.1", "10.202.0.2")
        with sshd_in_namespace(wire.ns, wire.ns_addr, tmp_path / "edge1") as host:
            subprocess.run(host.ssh_argv("hostname"), check=True)
            # host.address, host.port, host.user, host.client_key, host.known_hosts

What :func:`sshd_in_namespace` does, and undoes on exit (also when the body raises):

* generates an ed25519 host key and (unless one is given) an ed25519 client key with ``ssh-keygen``;
* writes ``authorized_keys`` with the client's public key and a ``known_hosts`` holding the host key under
  ``address`` (``[address]:port`` for ports other than 22), so clients keep strict host key checking ON;
* runs ``/usr/sbin/sshd -D -e`` in the namespace, listening only on ``address:port``, keys only (no passwords, no
  PAM), logging to ``<workdir>/sshd.log``; waits until it accepts connections;
* on exit stops that sshd and every session it served (also sessions whose client is still connected; nothing
  else) and deletes the files it wrote (and ``workdir`` when it made it and nothing else is left in it).

The namespace shares the machine's filesystem and users: a login as ``root`` (the default) sees the same files as
the test, except the shells' start-up files of its home: those of ``<workdir>/home`` are mounted over them for this
sshd's sessions, so they do not run this machine's (see :func:`placement.lab.sshd.sshd_argv`).
Needs root (for ``ip netns exec`` and sshd's privilege separation) — check
:func:`placement.netns.netns_available` first — and Debian's openssh-server (:func:`sshd_available`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import psutil

from placement.lab.sshd import sshd_argv

SSHD = Path("/usr/sbin/sshd")
SFTP_SERVER_CANDIDATES = (Path("/usr/lib/openssh/sftp-server"), Path("/usr/libexec/openssh/sftp-server"))
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it; it is a system dir and is left in place


@dataclass(frozen=True)
class SshHost:
    """How to reach the sshd: every path is a file the test may hand to ssh, Ansible or paramiko."""

    namespace: str
    address: str
    port: int
    user: str
    client_key: Path
    known_hosts: Path
    host_public_key: Path
    log: Path
    home: Path  # its shell start-up files are mounted over the login user's for this sshd's sessions
    pid: int  # the listening sshd, in the mount namespace its sessions share

    def ssh_argv(self, *command: str) -> list[str]:
        """``ssh`` with this host's key and known_hosts, host key checking on, batch mode (never prompts)."""
        return [
            "ssh",
            "-i",
            str(self.client_key),
            "-p",
            str(self.port),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "ConnectTimeout=10",
            f"{self.user}@{self.address}",
            *command,
        ]


def sshd_available() -> str | None:
    """None when an sshd can be started here, else why not."""
    if not SSHD.exists():
        return f"{SSHD} is missing (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None or shutil.which("ssh") is None:
        return "ssh / ssh-keygen are missing (apt-get install openssh-client)"
    if os.geteuid() != 0:
        return "sshd in a namespace needs root"
    return None


def generate_key(path: Path, comment: str) -> Path:
    """A fresh passphrase-less ed25519 key pair at ``path`` / ``path.pub``."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        capture_output=True,
        timeout=30,
    )
    return path


def known_hosts_line(address: str, port: int, host_public_key: Path) -> str:
    kind, key = host_public_key.read_text().split()[:2]
    name = address if port == 22 else f"[{address}]:{port}"
    return f"{name} {kind} {key}\n"


def _sshd_config(workdir: Path, address: str, port: int, host_key: Path, authorized_keys: Path) -> str:
    sftp = next((p for p in SFTP_SERVER_CANDIDATES if p.exists()), None)
    lines = [
        f"ListenAddress {address}:{port}" if ":" not in address else f"ListenAddress [{address}]:{port}",
        f"HostKey {host_key}",
        f"AuthorizedKeysFile {authorized_keys}",
        f"PidFile {workdir / 'sshd.pid'}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        # the files live under /tmp, which is world-writable: sshd's ownership checks would refuse them
        "StrictModes no",
        "LogLevel VERBOSE",
        "MaxStartups 50",
    ]
    if sftp is not None:
        lines.append(f"Subsystem sftp {sftp}")
    return "\n".join(lines) + "\n"


def _wait_listening(proc: subprocess.Popen[bytes], address: str, port: int, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection((address, port), timeout=1) as conn:
                if conn.recv(4).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"sshd on {address}:{port} did not answer within {timeout:.0f} s; log: {log}")


@contextmanager
def sshd_in_namespace(
    namespace: str,
    address: str,
    workdir: Path,
    *,
    port: int = 22,
    user: str = "root",
    client_key: Path | None = None,
    timeout: float = 20,
) -> Iterator[SshHost]:
    """Run sshd in ``namespace`` on ``address:port``; yields an :class:`SshHost`. See the module docstring.

    ``address`` must be reachable from the test (e.g. the namespace end of a veth made by ``Namespaces.add``).
    ``client_key`` reuses an existing private key (its ``.pub`` must exist) instead of generating one.
    """
    reason = sshd_available()
    if reason:
        raise RuntimeError(reason)
    workdir = Path(workdir)
    made_workdir = not workdir.exists()
    workdir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    proc: subprocess.Popen[bytes] | None = None
    try:
        host_key = generate_key(workdir / "ssh_host_ed25519_key", f"sshd@{namespace}")
        written += [host_key, host_key.with_suffix(".pub")]
        if client_key is None:
            client_key = generate_key(workdir / "client_ed25519", "placement-test-client")
            written += [client_key, Path(f"{client_key}.pub")]
        authorized_keys = workdir / "authorized_keys"
        authorized_keys.write_text(Path(f"{client_key}.pub").read_text())
        known_hosts = workdir / "known_hosts"
        known_hosts.write_text(known_hosts_line(address, port, Path(f"{host_key}.pub")))
        config = workdir / "sshd_config"
        config.write_text(_sshd_config(workdir, address, port, host_key, authorized_keys))
        log = workdir / "sshd.log"
        written += [authorized_keys, known_hosts, config, log, workdir / "sshd.pid"]
        for path in (host_key, client_key, authorized_keys):
            path.chmod(0o600)
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
        home = workdir / "home"
        with open(log, "wb") as log_fh:
            proc = subprocess.Popen(
                sshd_argv(namespace, config, home, user=user),
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _wait_listening(proc, address, port, log, timeout)
        yield SshHost(
            namespace=namespace,
            address=address,
            port=port,
            user=user,
            client_key=client_key,
            known_hosts=known_hosts,
            host_public_key=Path(f"{host_key}.pub"),
            log=log,
            home=home,
            pid=proc.pid,
        )
    finally:
        if proc is not None:
            _stop(proc, namespace, port)
        for path in written:
            path.unlink(missing_ok=True)
        shutil.rmtree(workdir / "home", ignore_errors=True)
        if made_workdir and not any(workdir.iterdir()):
            workdir.rmdir()


@contextmanager
def mounted_for_sessions(host: SshHost, source: Path, target: Path) -> Iterator[None]:
    """``source`` bind-mounted over ``target`` for ``host``'s SSH sessions only (and what they start), for the
    ``with`` block: a host of its own filesystem at one path, as a real one has (a Flink home at the path the
    inventory names, another one than this machine's there).

    The mount goes into the mount namespace ``ip netns exec`` made for the sshd (mounts do not propagate out of it),
    with ``nsenter``; it is detached lazily on exit, so a process of a session still holding a file there (a
    TaskManager being killed) does not keep it.
    """
    subprocess.run(
        ["nsenter", "-t", str(host.pid), "-m", "mount", "--bind", "--", str(source), str(target)],
        check=True,
        capture_output=True,
        timeout=30,
    )
    try:
        yield
    finally:
        umount = ["nsenter", "-t", str(host.pid), "-m", "umount", "-l", "--", str(target)]
        subprocess.run(umount, check=False, capture_output=True, timeout=30)


def _stop(proc: subprocess.Popen[bytes], namespace: str, port: int) -> None:
    """End the sshd we started and every session it served.

    A connection's sshd calls setsid(): it leaves the listener's process group, so killing the group misses it, and
    once the listener is gone it is re-parented to init. A session whose client never closed (its veth is deleted
    with the namespace) would then live on as ``sshd: root@notty``. So the sessions are found before the listener
    stops — its descendants, plus any sshd in the namespace holding a TCP socket on our port (already orphaned) —
    and ended with it."""
    sessions = _sessions(proc, namespace, port)
    if proc.poll() is None:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    for p in sessions:
        with suppress(psutil.NoSuchProcess):
            p.terminate()
    _, alive = psutil.wait_procs(sessions, timeout=5)
    for p in alive:
        with suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=5)


def _sessions(proc: subprocess.Popen[bytes], namespace: str, port: int) -> list[psutil.Process]:
    found: dict[int, psutil.Process] = {}
    with suppress(psutil.NoSuchProcess):
        found.update((p.pid, p) for p in psutil.Process(proc.pid).children(recursive=True))
    listed = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True, timeout=10)
    for pid in map(int, listed.stdout.split()):
        try:
            p = psutil.Process(pid)
            if pid != proc.pid and p.exe() == str(SSHD) and any(c.laddr.port == port for c in p.net_connections("tcp")):
                found[pid] = p
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return list(found.values())
