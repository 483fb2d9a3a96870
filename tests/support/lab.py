"""The lab in custom mode for a test module: ``placement lab up`` on inventory/lab.yaml, its state, and ``lab down``
with nothing left behind (namespaces, links, cgroups, processes) — also when the module fails."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from placement.lab.runner import leftovers
from placement.netns import netns_available
from support import real_parts

ROOT = Path(__file__).resolve().parents[2]
PLACEMENT = [str(Path(sys.executable).with_name("placement"))]


def placement_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The installed ``placement`` command, run from the repository (as a user in a checkout would)."""
    return subprocess.run([*PLACEMENT, *args], check=False, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@contextmanager
def custom_lab(work: Path) -> Iterator[dict]:
    """Yields the lab's state (``lab.json``: rest_url, jar, flink_home, lab_inventory, ...)."""
    real_parts.require(netns_available())
    try:
        up = placement_cli("lab", "up", "--inventory", str(ROOT / "inventory" / "lab.yaml"), "--workdir", str(work))
        assert up.returncode == 0, up.stderr
        assert up.stdout.startswith("lab up (custom mode): REST http://127.0.0.1:"), up.stdout
        yield json.loads((work / "lab.json").read_text())
    finally:
        placement_cli("lab", "down", "--workdir", str(work), timeout=300)
    left = leftovers(work)
    assert left == {"namespaces": [], "links": [], "cgroups": [], "pids": []}, left
