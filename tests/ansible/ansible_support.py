"""Helpers for the Ansible tests: running our playbooks, reading the recap, building a Flink archive.

Namespaces for the real runs are named ``pa-...``, interfaces ``pa...``, addresses lie in 10.202.0.0/16.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from support import real_parts

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_DIR = REPO / "ansible"
VENV_BIN = Path(sys.executable).parent

# tests/ is not a package and an unrelated `tests` package sits in site-packages, so the shared helpers are imported
# as `support.*` from the tests directory.


def tool(name: str) -> str | None:
    """An Ansible executable from this virtualenv (preferred) or PATH."""
    candidate = VENV_BIN / name
    return str(candidate) if candidate.exists() else shutil.which(name)


def require_tool(name: str) -> str:
    path = tool(name)
    if path is None:
        real_parts.missing(f"{name} is not installed (pip install -e '.[ansible]')")
    return path


RECAP_LINE = re.compile(r"^(?P<host>\S+)\s*:\s*(?P<counts>(?:\w+=\d+\s*)+)$", re.MULTILINE)


def parse_recap(stdout: str) -> dict[str, dict[str, int]]:
    """``PLAY RECAP`` lines -> {host: {"ok": .., "changed": .., "failed": .., ...}}."""
    recap_at = stdout.rfind("PLAY RECAP")
    if recap_at < 0:
        return {}
    out: dict[str, dict[str, int]] = {}
    for m in RECAP_LINE.finditer(stdout[recap_at:]):
        out[m.group("host")] = {k: int(v) for k, v in (kv.split("=") for kv in m.group("counts").split())}
    return out


@dataclass
class PlaybookRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    recap: dict[str, dict[str, int]]
    seconds: float

    def changed(self, host: str) -> int:
        return self.recap[host]["changed"]

    def describe(self) -> str:
        head = f"`{' '.join(self.argv)}` exited {self.returncode} after {self.seconds:.1f} s"
        lines = self.stdout.splitlines()
        # the failures first (a long --diff would push them out of the tail), then the tail
        failures = [ln for ln in lines if "fatal:" in ln or "[ERROR]" in ln or "FAILED!" in ln]
        return f"{head}\nfailures:\n" + "\n".join(failures) + f"\n...\n{self.stdout[-4000:]}\n{self.stderr[-2000:]}"


class Ansible:
    """Runs our playbooks the way a user does (from ansible/, with its ansible.cfg), isolated in a temporary home."""

    def __init__(self, home: Path, *, fact_cache: bool = False):
        """``fact_cache``: gather each host's facts once and keep them in ``home`` for the next runs (Ansible's
        ``gathering = smart`` with the jsonfile cache), for a module whose hosts stay the same hosts."""
        self.home = home
        # ssh's ControlPath must stay short (108-byte socket paths), so it lives in its own /tmp directory.
        self.log: list[str] = []  # how long each run took (printed by -s / on failure)
        self.control_dir = Path(tempfile.mkdtemp(prefix="pa-cp-"))
        self.env = {
            **os.environ,
            "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
            "ANSIBLE_HOME": str(home / "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": str(home / "ansible-local-tmp"),
            "ANSIBLE_REMOTE_TEMP": str(home / "ansible-remote-tmp"),
            "ANSIBLE_SSH_ARGS": f"-o ControlMaster=auto -o ControlPersist=60s -o ControlPath={self.control_dir}/%C",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        if fact_cache:
            self.env |= {
                "ANSIBLE_GATHERING": "smart",
                "ANSIBLE_CACHE_PLUGIN": "jsonfile",
                "ANSIBLE_CACHE_PLUGIN_CONNECTION": str(home / "fact-cache"),
            }

    def playbook(self, playbook: str, inventory: Path, *args: str, timeout: float = 600) -> PlaybookRun:
        argv = [require_tool("ansible-playbook"), "-i", str(inventory), playbook, *args]
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=ANSIBLE_DIR, env=self.env, capture_output=True, text=True, timeout=timeout)
        seconds = time.monotonic() - started
        self.log.append(f"{seconds:6.1f} s  {playbook} {' '.join(args)}")
        return PlaybookRun(argv, proc.returncode, proc.stdout, proc.stderr, parse_recap(proc.stdout), seconds)

    def close(self) -> None:
        # end our own ssh control masters (each listens on a socket in control_dir), then drop the directory
        for sock in self.control_dir.glob("*"):
            subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "dummy"], capture_output=True, timeout=10)
        shutil.rmtree(self.control_dir, ignore_errors=True)


def run_role_play(
    home: Path, play: Path, inventory: str, *args: str, wrap: Callable[[list[str]], list[str]] = list
) -> subprocess.CompletedProcess[str]:
    """``play`` (which includes our roles) run from ``home`` rather than ansible/, with the host's own python3 as the
    interpreter; ``wrap`` turns the argv into the one to run (e.g. inside a network namespace)."""
    runner = Ansible(home)
    try:
        env = {
            **runner.env,
            "ANSIBLE_ROLES_PATH": str(ANSIBLE_DIR / "roles"),
            "ANSIBLE_PYTHON_INTERPRETER": "/usr/bin/python3",
        }
        argv = [require_tool("ansible-playbook"), "-i", inventory, str(play), *args]
        return subprocess.run(wrap(argv), env=env, cwd=home, capture_output=True, text=True, timeout=300)
    finally:
        runner.close()


@dataclass(frozen=True)
class FlinkArchive:
    path: Path
    sha512: str
    version: str = "2.3.0"


def build_flink_archive(target: Path, version: str = "2.3.0", home: Path | None = None) -> FlinkArchive:
    """A Flink distribution laid out like the official one (flink-<v>/{lib,bin,conf}) from the PyPI wheel's jars, or
    from ``home`` (e.g. another version's, :func:`placement.flink.distribution.flink_home_for`).

    The packages have no start scripts, so this archive installs and configures but cannot be started with
    bin/*.sh; stored (level 0) because jars are compressed already.
    """
    if home is None:
        try:
            import pyflink
        except ImportError:
            real_parts.missing("apache-flink-libraries is not installed")
        home = Path(next(iter(pyflink.__path__)))
    lib, utils = home / "lib", home / "bin" / "bash-java-utils.jar"
    if not (lib / f"flink-dist-{version}.jar").exists() or not utils.exists():
        real_parts.missing(f"{home} is not Flink {version}")
    top = f"flink-{version}"
    with tarfile.open(target, "w:gz", compresslevel=0) as tar:
        for directory in ("lib", "bin", "conf"):
            info = tarfile.TarInfo(f"{top}/{directory}")
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for jar in sorted(lib.glob("*.jar")):
            tar.add(jar, f"{top}/lib/{jar.name}")
        tar.add(utils, f"{top}/bin/bash-java-utils.jar")
    digest = hashlib.sha512()
    with open(target, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return FlinkArchive(target, digest.hexdigest(), version)


def placement_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The installed `placement` command, as a user runs it."""
    exe = tool("placement")
    if exe is None:
        real_parts.missing("the placement command is not installed (pip install -e .)")
    return subprocess.run([exe, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def recap_summary(run: PlaybookRun, hosts: Sequence[str]) -> dict[str, int]:
    return {h: run.recap.get(h, {}).get("changed", -1) for h in hosts}
