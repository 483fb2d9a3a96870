"""Running commands on the hosts of an inventory: locally, over SSH, or not at all (dry run).

Every stage that touches hosts (``netem``, ``apply``) builds argv lists with pure code and hands them to an
:class:`Executor`. Results come back as :class:`CommandResult` values; a failed command with ``check=True`` raises
:class:`CommandFailed` whose message is one line.

SSH verifies host keys by default: keys are loaded from the host's ``known_hosts`` (default ``~/.ssh/known_hosts``)
and an unknown key is refused (paramiko's ``RejectPolicy``). ``accept_new_host_keys=True`` is the explicit opt-in
that records unknown keys, like OpenSSH's ``StrictHostKeyChecking=accept-new``; a *changed* key is refused always.
Authentication is by key file or agent, never a password; nothing here logs the environment or key material.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import posixpath
import shlex
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from placement.errors import PlacementError
from placement.inventory import Host, Inventory, SshSettings
from placement.netns import ns_exec


@dataclass(frozen=True)
class CommandResult:
    host: str
    argv: tuple[str, ...]
    returncode: int
    stdout: str = ""
    stderr: str = ""
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def message(self) -> str:
        """The last line the command printed on stderr (or stdout): what to show a user on failure."""
        lines = (self.stderr.strip() or self.stdout.strip()).splitlines()
        return lines[-1].strip() if lines else f"exit {self.returncode}"

    @property
    def command(self) -> str:
        return shlex.join(self.argv)


class CommandFailed(PlacementError):
    def __init__(self, result: CommandResult):
        self.result = result
        super().__init__(f"{result.host}: `{result.command}` failed: {result.message}")


class HostUnreachable(PlacementError):
    """SSH could not connect or authenticate, or refused the host key."""


class Executor(ABC):
    """Runs argv lists on one host. ``privileged`` commands get ``sudo -n`` where the executor is set up for it."""

    host: str

    def run(
        self,
        argv: Sequence[str],
        *,
        check: bool = True,
        privileged: bool = False,
        mutates: bool = True,
        timeout: float = 60.0,
    ) -> CommandResult:
        """Run ``argv``; ``mutates=False`` marks a read-only query (a dry run may still answer it)."""
        result = self._run(list(argv), privileged=privileged, mutates=mutates, timeout=timeout)
        if check and not result.ok:
            raise CommandFailed(result)
        return result

    @abstractmethod
    def _run(self, argv: list[str], *, privileged: bool, mutates: bool, timeout: float) -> CommandResult: ...

    @abstractmethod
    def _put(self, data: bytes, path: str, mode: int) -> None:
        """Write ``data`` to ``path`` on the host (a plain write; callers make it atomic)."""

    def read_text(self, path: str, *, timeout: float = 30.0) -> str | None:
        """The file's text, or None when it does not exist. A read: a dry run may still answer it."""
        result = self.run(
            ["sh", "-c", 'if [ -e "$1" ]; then cat -- "$1"; else exit 3; fi', "sh", path],
            check=False,
            mutates=False,
            timeout=timeout,
        )
        if result.returncode == 3:
            return None
        if not result.ok:
            raise CommandFailed(result)
        return result.stdout

    def upload_atomic(
        self, path: str, content: str | bytes, *, mode: int = 0o644, keep_previous: bool = True
    ) -> CommandResult:
        """Put ``content`` at ``path`` atomically: write ``<path>.new``, copy the old file to ``<path>.prev``, rename.

        Readers of ``path`` see the old or the new file, never a partial one; ``<path>.prev`` keeps the copy
        :meth:`restore_previous` puts back. Directories are created as needed.
        """
        data = content.encode() if isinstance(content, str) else content
        self.run(["mkdir", "-p", "--", posixpath.dirname(path) or "."])
        self._put(data, path + ".new", mode)
        return self.run(install_new_argv(path, keep_previous=keep_previous))

    def restore_previous(self, path: str) -> CommandResult:
        """Put ``<path>.prev`` back as ``path`` (atomic rename of a copy); without a ``.prev`` the file is removed."""
        return self.run(restore_previous_argv(path))

    def close(self) -> None:  # noqa: B027 - a default: executors without connections have nothing to release
        """Release connections; running commands afterwards reconnects."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def install_new_argv(path: str, *, keep_previous: bool = True) -> list[str]:
    """The command that moves ``<path>.new`` over ``path``, keeping the old one as ``<path>.prev``."""
    keep = 'if [ -e "$1" ]; then cp -p -- "$1" "$1.prev"; fi; ' if keep_previous else ""
    return ["sh", "-c", f'set -e; {keep}mv -f -- "$1.new" "$1"', "sh", path]


def restore_previous_argv(path: str) -> list[str]:
    """The command that puts ``<path>.prev`` back (a copy renamed into place), or removes ``path`` if there is none."""
    script = (
        'set -e; if [ -e "$1.prev" ]; then cp -p -- "$1.prev" "$1.rollback"; mv -f -- "$1.rollback" "$1"; '
        'else rm -f -- "$1"; fi'
    )
    return ["sh", "-c", script, "sh", path]


class LocalExecutor(Executor):
    """Runs commands here with subprocess, optionally inside a network namespace (``ip netns exec``)."""

    def __init__(self, host: str = "localhost", *, netns: str | None = None, sudo: bool = False):
        self.host = host
        self.netns = netns
        self.sudo = sudo

    def _run(self, argv: list[str], *, privileged: bool, mutates: bool, timeout: float) -> CommandResult:
        full = ns_exec(self.netns, argv)
        if privileged and self.sudo and os.geteuid() != 0:
            full = ["sudo", "-n", *full]
        try:
            proc = subprocess.run(full, capture_output=True, text=True, timeout=timeout, check=False)
        except FileNotFoundError:
            return CommandResult(self.host, tuple(argv), 127, stderr=f"{full[0]}: command not found")
        except subprocess.TimeoutExpired:
            return CommandResult(self.host, tuple(argv), 124, stderr=f"timed out after {timeout:g} s")
        return CommandResult(self.host, tuple(argv), proc.returncode, proc.stdout, proc.stderr)

    def _put(self, data: bytes, path: str, mode: int) -> None:
        # Namespaces share the filesystem, so a local write is the same for every netns.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(path, mode)


class DryRunExecutor(Executor):
    """Records and prints each command instead of running it.

    Read-only queries go to ``reader`` when one is given (to see the current state), else they "succeed" with no
    output, which the stages read as "nothing known about this host".
    """

    def __init__(self, host: str, *, echo: Callable[[str], None] | None = print, reader: Executor | None = None):
        self.host = host
        self.echo = echo
        self.reader = reader
        self.commands: list[list[str]] = []

    def _run(self, argv: list[str], *, privileged: bool, mutates: bool, timeout: float) -> CommandResult:
        if not mutates and self.reader is not None:
            return self.reader.run(argv, check=False, privileged=privileged, mutates=False, timeout=timeout)
        if mutates:
            self.commands.append(argv)
            if self.echo is not None:
                self.echo(f"{self.host}: {shlex.join(argv)}")
        return CommandResult(self.host, tuple(argv), 0, dry_run=True)

    def _put(self, data: bytes, path: str, mode: int) -> None:
        self.commands.append(["put", path])
        if self.echo is not None:
            self.echo(f"{self.host}: upload {len(data)} bytes -> {path} (mode {mode:o})")

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()


class SshExecutor(Executor):
    """Runs commands over SSH with fabric, verifying the host key (see the module docstring)."""

    def __init__(
        self,
        host: str,
        address: str,
        settings: SshSettings,
        *,
        accept_new_host_keys: bool = False,
        connect_timeout: float = 10.0,
    ):
        self.host = host
        self.address = address
        self.settings = settings
        self.accept_new_host_keys = accept_new_host_keys
        self.connect_timeout = connect_timeout
        self._conn = None

    @property
    def known_hosts(self) -> Path:
        return Path(os.path.expanduser(self.settings.known_hosts or "~/.ssh/known_hosts"))

    def _connection(self):  # -> fabric.Connection; imported lazily so `placement plan` never loads paramiko
        if self._conn is not None:
            return self._conn
        import paramiko
        from fabric import Connection

        quiet_ssh_library_loggers()

        connect_kwargs: dict[str, object] = {"allow_agent": True, "look_for_keys": self.settings.key is None}
        if self.settings.key:
            connect_kwargs["key_filename"] = os.path.expanduser(self.settings.key)
        conn = Connection(
            self.address,
            user=self.settings.user,
            port=self.settings.port,
            connect_timeout=int(self.connect_timeout),
            connect_kwargs=connect_kwargs,
        )
        client = conn.client
        # fabric defaults to AutoAddPolicy; replace it so an unknown host is refused unless the user opted in.
        known = self.known_hosts
        if self.accept_new_host_keys:
            known.parent.mkdir(parents=True, exist_ok=True)
            known.touch(exist_ok=True)
        if known.is_file():
            client.load_host_keys(str(known))  # also where accepted new keys are saved
        client.set_missing_host_key_policy(
            paramiko.AutoAddPolicy() if self.accept_new_host_keys else paramiko.RejectPolicy()
        )
        try:
            conn.open()
        except paramiko.BadHostKeyException:
            raise HostUnreachable(
                f"{self.host} ({self.address}): host key CHANGED from the one in {known}; refusing to connect"
            ) from None
        except paramiko.SSHException as exc:
            if "not found in known_hosts" in str(exc):
                raise HostUnreachable(
                    f"{self.host} ({self.address}): host key not in {known}; add it (ssh-keyscan) or pass "
                    "--accept-new-host-keys"
                ) from None
            raise HostUnreachable(f"{self.host} ({self.address}): ssh failed: {exc}") from None
        except (OSError, EOFError) as exc:
            raise HostUnreachable(f"{self.host} ({self.address}:{self.settings.port}): cannot connect: {exc}") from None
        self._conn = conn
        return conn

    def _run(self, argv: list[str], *, privileged: bool, mutates: bool, timeout: float) -> CommandResult:
        conn = self._connection()
        command = shlex.join(argv)
        if privileged and self.settings.sudo:
            command = "sudo -n " + command  # -n: fail rather than wait for a password nobody will type
        from invoke.exceptions import CommandTimedOut

        timed_out = CommandResult(self.host, tuple(argv), 124, stderr=f"timed out after {timeout:g} s")
        started = time.monotonic()
        try:
            res = conn.run(command, hide=True, warn=True, in_stream=False, timeout=timeout)
        except CommandTimedOut:
            return timed_out
        except Exception as exc:
            # invoke's messages run over several lines ending in an empty "Stderr:"; the first one says what happened
            first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
            return CommandResult(self.host, tuple(argv), 255, stderr=f"{type(exc).__name__}: {first}")
        if res.exited == -1 and time.monotonic() - started >= timeout:
            return timed_out  # invoke's timer thread may still be finishing when it asks: no exit status, no raise
        return CommandResult(self.host, tuple(argv), res.exited, res.stdout, res.stderr)

    def _put(self, data: bytes, path: str, mode: int) -> None:
        conn = self._connection()
        try:
            sftp = conn.sftp()
            with sftp.open(path, "wb") as fh:
                fh.write(data)
            sftp.chmod(path, mode)
        except Exception as exc:
            raise CommandFailed(
                CommandResult(self.host, ("sftp-put", path), 1, stderr=f"upload to {path} failed: {exc}")
            ) from None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def quiet_ssh_library_loggers() -> None:
    """Keep paramiko's own log records (e.g. "Error reading SSH protocol banner" with a traceback, which Python's
    last-resort handler would print on stderr) out of the output: every failure reaches the user as one line through
    :class:`HostUnreachable` / :class:`CommandFailed` instead."""
    for name in ("paramiko", "invoke", "fabric"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
            logger.addHandler(logging.NullHandler())
        logger.propagate = False


def is_local_address(address: str) -> bool:
    """True when ``address`` (or the name) belongs to this machine's current network namespace."""
    if address in ("localhost", socket.gethostname()):
        return True
    try:
        infos = socket.getaddrinfo(address, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    for family, _, _, _, sockaddr in infos:
        ip = ipaddress.ip_address(sockaddr[0])
        if ip.is_loopback:
            return True
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            try:
                s.bind((sockaddr[0], 0))  # binding succeeds only for an address configured here
                return True
            except OSError:
                continue
    return False


@dataclass
class ExecutorFactory:
    """Chooses how to reach each host: locally when its address is ours (or ``force_local``), else SSH."""

    inventory: Inventory
    dry_run: bool = False
    force_local: bool = False
    accept_new_host_keys: bool = False
    echo: Callable[[str], None] | None = print
    _made: list[Executor] = field(default_factory=list)

    def for_host(self, host: Host) -> Executor:
        ex: Executor
        if self.dry_run:
            ex = DryRunExecutor(host.name, echo=self.echo)
        elif self.force_local or is_local_address(host.address):
            ex = LocalExecutor(host.name, sudo=self.inventory.ssh_for(host).sudo)
        else:
            ex = SshExecutor(
                host.name, host.address, self.inventory.ssh_for(host), accept_new_host_keys=self.accept_new_host_keys
            )
        self._made.append(ex)
        return ex

    def close(self) -> None:
        for ex in self._made:
            ex.close()
        self._made.clear()
