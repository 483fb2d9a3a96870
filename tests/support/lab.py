"""The lab in custom mode for test modules: ``placement lab up`` on inventory/lab.yaml, its state, and ``lab down``
with nothing left behind (namespaces, links, cgroups, processes) — also when a module fails.

Modules that run one after the other on the same lab (their fixture asks for ``shared_custom_lab``; the collection
puts them next to each other, tests/conftest.py) share one start: ``lab up`` and ``lab down`` take ~30 s together.
The last of them brings it down, before any other module starts a lab of its own under the same names."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

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
    assert_nothing_left(work)


LEFTOVER_KINDS = {"namespaces", "links", "cgroups", "pids", "iptables rules"}


@contextmanager
def links_without_flink(work: Path, plan, inventory: str, links: Callable[[], dict]) -> Iterator[dict]:
    """The lab's namespaces and veths for ``plan`` as ``lab up`` makes them, and its state file, without Flink (a REST
    address nothing answers on: status reads it as "no TaskManager registered"); ``links`` puts the links into effect
    and returns the state's processes. Everything is gone afterwards."""
    from placement.lab import runner

    runner.down(work)
    state = runner._plan_state(plan, inventory)
    try:
        runner._make_server_side()
        for h in plan.edges:
            runner._make_edge(h)
        state.update(status="up", rest_url="http://127.0.0.1:9", processes=links())
        runner._write_state(work, state)
        yield state
    finally:
        runner.down(work)
        assert not any(runner.leftovers(work).values())


def assert_nothing_left(work: Path) -> None:
    """No lab's namespace, link, cgroup, process or iptables rule is left (every kind ``leftovers`` reports, each
    empty; a kind it stopped reporting fails too)."""
    left = leftovers(work)
    assert set(left) == LEFTOVER_KINDS and not any(left.values()), left


SHARED = "shared_custom_lab"  # the fixture name: modules whose fixture asks for it share one lab


class SharedCustomLab:
    """One custom-mode lab, started by the first module that asks for it and brought down after the last."""

    def __init__(self, work: Path):
        self.work = work
        self._lab = None  # the custom_lab context while the lab is up
        self._state: dict | None = None

    def up(self) -> dict:
        """The lab's state, ``lab up`` first unless it is up already."""
        if self._state is None:
            lab = custom_lab(self.work)
            self._state = lab.__enter__()
            self._lab = lab
        return self._state

    def down(self) -> None:
        """``lab down`` (nothing left behind, or it raises), once."""
        lab, self._lab, self._state = self._lab, None, None
        if lab is not None:
            lab.__exit__(None, None, None)


def next_module_shares(request: pytest.FixtureRequest) -> bool:
    """Whether the test that runs after this module's last one uses the shared lab too (then it stays up)."""
    items = request.session.items
    mine = [n for n, item in enumerate(items) if getattr(item, "module", None) is request.module]
    after = mine[-1] + 1 if mine else len(items)
    return after < len(items) and SHARED in items[after].fixturenames


@contextmanager
def module_on_shared_lab(request: pytest.FixtureRequest, shared: SharedCustomLab) -> Iterator[dict]:
    """The shared lab for one module: up (if the module before did not leave it up), and down after the module
    unless the next module shares it too."""
    try:
        yield shared.up()
    finally:
        if not next_module_shares(request):
            shared.down()


@pytest.fixture(scope="session")
def shared_custom_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedCustomLab]:
    shared = SharedCustomLab(tmp_path_factory.mktemp("custom-lab") / "lab")
    try:
        yield shared
    finally:
        shared.down()  # a run that ended (or was cut short) inside a module
