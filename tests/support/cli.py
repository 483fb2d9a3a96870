"""Running the installed ``placement`` command in a child process, as a user does.

In-process runners do not see what native code writes to fd 1, cannot receive a real SIGINT, and import the
command's modules once per test session (hiding import-time interrupts); these helpers run the real entry point.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLACEMENT = Path(sys.executable).parent / "placement"
EDGE_LAB = REPO / "inventory" / "edge-lab.yaml"
PROFILES = REPO / "examples" / "profiles"
IOT = PROFILES / "iot-sensors.json"


def run_main(argv: list[object], capsys) -> tuple[int, str, str]:
    """``placement`` run in this process (``placement.cli.main``): its exit code, stdout and stderr. For what needs no
    real process (bad input, tables); the helpers below run the entry point as a user does."""
    import pytest

    from placement.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def run_placement(*args: object, cwd: Path, timeout: float = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(PLACEMENT), *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs
    )


def default_sigint() -> None:
    """In the child before exec: SIGINT at its default. A shell starts background jobs (a suite run with `&`) with
    SIGINT ignored, the ignoring is inherited, and Python then installs no KeyboardInterrupt handler at all."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_placement(*args: object, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [str(PLACEMENT), *map(str, args)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )


def plan_args(out: Path, inventory: Path = EDGE_LAB, profile: Path = IOT) -> list[object]:
    return ["plan", "--inventory", inventory, "--profile", profile, "--out", out]


def unreachable_edge_lab(tmp_path: Path, **server_changes) -> Path:
    """edge-lab with every address on this machine at a closed port: a live-cluster check fails at once (a dry run
    that cannot read the cluster). Each host at a loopback address of its own: an inventory's hosts must have
    distinct addresses."""
    import yaml

    doc = yaml.safe_load(EDGE_LAB.read_text())
    doc["ssh"]["port"] = 1
    for n, host in enumerate(doc["hosts"], start=1):
        host["address"] = f"127.0.0.{n}"
        if host["name"] == "server":
            host.update(server_changes)
    doc["flink"]["rest_url"] = "http://127.0.0.1:1"
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def one_line_error(done: subprocess.CompletedProcess) -> str:
    """The single ``error: …`` line of a failed run (asserts there is exactly one line on stderr, no traceback)."""
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]
