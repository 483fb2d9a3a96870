"""A real OpenSSH server per lab edge host, so ``placement apply`` reaches the lab's "hosts" the way it reaches real
ones.

The lab's edge hosts are network namespaces; apply talks to every inventory host over SSH with the host key verified
(the server's address 10.203.0.1 is this machine's, so apply runs the server's commands locally, as it does on any
JobManager host it runs on). ``lab up`` therefore gives each edge namespace an sshd listening on the namespace's
address, port 22 (the namespace has its own network stack, so no system sshd is in the way):

* one client key for the lab (``<workdir>/ssh/lab_ed25519``), authorised for ``root`` on every lab sshd;
* one ed25519 host key per host and a ``known_hosts`` holding exactly those keys under the hosts' addresses, which
  the lab inventory names (``ssh.known_hosts``) — strict host key checking stays on;
* keys only (no passwords, no PAM), SFTP for apply's atomic uploads, a log per host (``<workdir>/ssh/<host>/sshd.log``);
* shell start-up files of its own per host (``<workdir>/ssh/<host>/home/.bashrc`` and so on, mounted over the login
  user's for that sshd only): a Pi does not run this machine's. They would otherwise run before every command — a
  ``pyenv init`` in root's ``.bashrc`` takes a lock that a killed session leaves behind, and from then on every
  command over SSH waits a minute for it.

The sshd processes live in the edge namespaces, so ``lab down`` ends them with everything else in those namespaces.
Pure builders (:func:`sshd_config`, :func:`known_hosts_line`) are tested without root.
"""

from __future__ import annotations

import pwd
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError
from placement.netns import ns_exec
from placement.polling import poll

SSHD = Path("/usr/sbin/sshd")
SFTP_SERVERS = (Path("/usr/lib/openssh/sftp-server"), Path("/usr/libexec/openssh/sftp-server"))
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it (a system dir: made if missing, kept)
SSH_PORT = 22
SSH_USER = "root"
CLIENT_KEY = "lab_ed25519"
KNOWN_HOSTS = "known_hosts"


@dataclass(frozen=True)
class LabSsh:
    """What the lab inventory's ``ssh:`` section names."""

    user: str
    key: Path
    known_hosts: Path
    port: int = SSH_PORT


def ssh_dir(work_dir: Path) -> Path:
    return Path(work_dir) / "ssh"


def sshd_unavailable() -> str | None:
    """None when sshd can run here, else why not (one line)."""
    if not SSHD.exists():
        return f"{SSHD} is missing: the lab's hosts are reached over SSH (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is missing (apt-get install openssh-client)"
    return None


def sshd_config(*, address: str, port: int, host_key: Path, authorized_keys: Path, pid_file: Path) -> str:
    sftp = next((p for p in SFTP_SERVERS if p.exists()), SFTP_SERVERS[0])
    return (
        "\n".join(
            [
                f"ListenAddress {address}:{port}",
                f"HostKey {host_key}",
                f"AuthorizedKeysFile {authorized_keys}",
                f"PidFile {pid_file}",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",  # the lab's work dir may sit under /tmp, whose permissions sshd's checks would refuse
                "LogLevel VERBOSE",
                "MaxStartups 50",
                f"Subsystem sftp {sftp}",
            ]
        )
        + "\n"
    )


def known_hosts_line(address: str, port: int, host_public_key: str) -> str:
    kind, key = host_public_key.split()[:2]
    name = address if port == 22 else f"[{address}]:{port}"
    return f"{name} {kind} {key}\n"


def _keygen(path: Path, comment: str) -> Path:
    for stale in (path, path.with_name(path.name + ".pub")):
        stale.unlink(missing_ok=True)
    proc = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if proc.returncode != 0:
        raise PlacementError(f"ssh-keygen for {path} failed: {(proc.stderr or proc.stdout).strip()}")
    path.chmod(0o600)
    return path


def client_key(work_dir: Path) -> Path:
    """The lab's client key (made once per lab start)."""
    d = ssh_dir(work_dir)
    d.mkdir(parents=True, exist_ok=True)
    d.chmod(0o700)
    return _keygen(d / CLIENT_KEY, "placement-lab")


def start_sshd(
    work_dir: Path, host: str, namespace: str, address: str, key: Path, *, port: int = SSH_PORT, timeout: float = 20.0
) -> tuple[int, str]:
    """Start sshd for ``host`` in ``namespace`` on ``address:port``; returns its pid and its ``known_hosts`` line."""
    d = ssh_dir(work_dir) / host
    d.mkdir(parents=True, exist_ok=True)
    host_key = _keygen(d / "ssh_host_ed25519_key", f"sshd@{host}")
    authorized = d / "authorized_keys"
    authorized.write_text(key.with_name(key.name + ".pub").read_text())
    authorized.chmod(0o600)
    config = d / "sshd_config"
    config.write_text(
        sshd_config(address=address, port=port, host_key=host_key, authorized_keys=authorized, pid_file=d / "sshd.pid")
    )
    pid = _serve(d, host, namespace, address, port, timeout)
    return pid, known_hosts_line(address, port, host_key.with_name(host_key.name + ".pub").read_text())


def restart_sshd(
    work_dir: Path, host: str, namespace: str, address: str, *, port: int = SSH_PORT, timeout: float = 20.0
) -> int:
    """Start ``host``'s sshd again with the config, host key and authorized key it had (a Pi that boots keeps its
    keys: the known_hosts line still holds); returns its pid."""
    return _serve(ssh_dir(work_dir) / host, host, namespace, address, port, timeout)


def _serve(d: Path, host: str, namespace: str, address: str, port: int, timeout: float) -> int:
    """sshd on the config in ``d``, once it answers on ``address:port``."""
    config = d / "sshd_config"
    PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    log = d / "sshd.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            sshd_argv(namespace, config, d / "home"),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def answers() -> bool:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()
            raise PlacementError(f"sshd for lab host {host} exited ({proc.returncode}): {tail[-1] if tail else log}")
        try:
            with socket.create_connection((address, port), timeout=1) as conn:
                return conn.recv(4).startswith(b"SSH-")
        except OSError:
            return False

    if not poll(answers, bool, timeout=timeout, every=0.1)[1]:
        raise PlacementError(f"sshd for lab host {host} does not answer on {address}:{port} (log {log})")
    return proc.pid


# the shells' start-up files a login user's home may hold (bash, sh, zsh): what a session would run before a command
STARTUP_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".bash_logout",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".zlogout",
)


def sshd_argv(namespace: str, config: Path, home: Path, *, user: str = SSH_USER) -> list[str]:
    """sshd on ``config`` in ``namespace``, its sessions running the shell start-up files in ``home`` instead of
    those of ``user``'s home (each one there that exists gets an empty file of ``home`` bind-mounted over it).

    Only those files: the rest of the home stays as it is, since the machine's own tools may live there (a pyenv
    interpreter a venv links to). ``ip netns exec`` runs its command in a mount namespace of its own (mounts propagate
    into it, not out), so the binds are seen by this sshd and its sessions only. sshd by absolute path (it
    re-executes itself); -D: no daemonising (its pid is the caller's to record), -e: log to stderr.
    """
    home.mkdir(parents=True, exist_ok=True)
    login_home = Path(pwd.getpwnam(user).pw_dir)
    binds: list[str] = []
    for name in STARTUP_FILES:
        if (login_home / name).is_file():
            (home / name).touch(exist_ok=True)
            binds += [str(home / name), str(login_home / name)]
    mount_then_exec = 'while [ "$1" != -- ]; do mount --bind -- "$1" "$2" || exit 1; shift 2; done; shift; exec "$@"'
    sshd = [str(SSHD), "-D", "-e", "-f", str(config)]
    return ns_exec(namespace, ["sh", "-c", mount_then_exec, "sh", *binds, "--", *sshd])


def write_known_hosts(work_dir: Path, lines: list[str]) -> Path:
    path = ssh_dir(work_dir) / KNOWN_HOSTS
    path.write_text("".join(lines))
    path.chmod(0o600)
    return path
