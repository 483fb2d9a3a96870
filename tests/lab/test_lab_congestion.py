"""Each lab host's TCP congestion control, for real: ``lab up``'s namespaces and veths with the inventory's
``hosts[].congestion_control`` put on their routes (``congctl``), ``lab status`` reading it back, and a real TCP
connection through them sending with it at both ends (``ss -ti``); an algorithm the kernel lacks is refused."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
import yaml

from placement.errors import BadInput
from placement.inventory import Inventory, load_inventory
from placement.lab import congestion, runner
from placement.lab import topology as topo
from placement.netns import netns_available, ns_exec, run
from support import real_parts
from support.lab import links_without_flink

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "inventory" / "lab.yaml"
PORT = 47311


def _lab_inventory(tmp_path: Path, **algorithms: str) -> tuple[Path, Inventory]:
    doc = yaml.safe_load(LAB.read_text())
    for h in doc["hosts"]:
        if h["name"] in algorithms:
            h["congestion_control"] = algorithms[h["name"]]
    path = tmp_path / "lab.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, load_inventory(str(path))


def test_an_algorithm_the_kernel_lacks_is_refused_naming_the_field(tmp_path: Path) -> None:
    path, inv = _lab_inventory(tmp_path, rpi1="reno")
    listing = tmp_path / "tcp_available_congestion_control"
    listing.write_text("reno cubic\n")
    congestion.check_available(inv, str(path), listing)  # rpi2 and the server: cubic by default
    path, inv = _lab_inventory(tmp_path, rpi2="bbr")
    with pytest.raises(BadInput) as refused:
        congestion.check_available(inv, str(path), listing)
    assert refused.value.field == "hosts[2].congestion_control"
    assert str(refused.value).startswith(f"{path}: hosts[2].congestion_control: bbr is not available")
    assert "\n" not in str(refused.value)


def _algorithms_here() -> tuple[str, str]:
    """The edge's and the server's algorithm for the test: bbr against reno where the kernel has bbr."""
    have = congestion.available()
    if {"bbr", "reno"} <= have:
        return "bbr", "reno"
    if {"reno", "cubic"} <= have:
        return "reno", "cubic"
    real_parts.missing(f"this kernel offers no two of bbr, reno, cubic: {sorted(have)}")
    raise AssertionError("unreachable")


@pytest.fixture
def lab_links(tmp_path: Path):
    """The lab's namespaces and veths as ``lab up`` makes them, with rpi1 and the server on two algorithms."""
    real_parts.require(netns_available())
    edge, server = _algorithms_here()
    path, inv = _lab_inventory(tmp_path, rpi1=edge, server=server)
    congestion.check_available(inv, str(path))
    plan = topo.plan_lab(inv, tmp_path, machine_cores=2)

    def routes() -> dict:
        congestion.put_into_effect(plan, congestion.wanted(inv))
        return {}  # no emulator processes

    with links_without_flink(tmp_path, plan, str(path), routes):
        yield plan, edge, server


@pytest.mark.netns
def test_the_routes_carry_each_hosts_algorithm_and_status_reads_it_back(lab_links, tmp_path: Path) -> None:
    plan, edge, server = lab_links
    rpi1 = plan.host("rpi1")
    assert all(f"congctl {edge}" in line for line in _route_lines("pl-lab-rpi1"))
    assert all("congctl cubic" in line for line in _route_lines("pl-lab-rpi2"))
    root = [line for line in _route_lines(None) if " dev pllab" in line]
    assert root and all(f"congctl {server}" in line for line in root)
    others = [line for line in _route_lines(None) if " dev pllab" not in line]
    assert not any("congctl" in line for line in others)  # the machine's own routes stay as they were
    st = {h["name"]: h["congestion_control"] for h in runner.status(tmp_path)["hosts"]}
    assert st == {"server": server, "rpi1": edge, "rpi2": "cubic"}
    assert rpi1.host_if in congestion.server_devices(plan)


def _route_lines(namespace: str | None) -> list[str]:
    lines = run(ns_exec(namespace, ["ip", "-o", "route", "show"])).stdout.splitlines()
    return [line for line in lines if line.strip()]


@pytest.mark.netns
def test_a_connection_through_the_lab_sends_with_each_ends_algorithm(lab_links) -> None:
    _plan, edge, server = lab_links
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((topo.SERVER_ADDRESS, PORT))
        listener.listen(1)
        hold = "import socket, sys, time; s = socket.create_connection((sys.argv[1], int(sys.argv[2]))); time.sleep(30)"
        client = subprocess.Popen(ns_exec("pl-lab-rpi1", ["python3", "-c", hold, topo.SERVER_ADDRESS, str(PORT)]))
        try:
            listener.settimeout(20)
            accepted, _ = listener.accept()
            with accepted:
                sent = run(ns_exec("pl-lab-rpi1", ["ss", "-tin", "dst", f"{topo.SERVER_ADDRESS}:{PORT}"])).stdout
                received = run(["ss", "-tin", "src", f"{topo.SERVER_ADDRESS}:{PORT}"]).stdout
        finally:
            client.kill()
            client.wait(timeout=10)
    print(f"edge side:\n{sent}\nserver side:\n{received}")
    assert _algorithm(sent) == edge and _algorithm(received) == server


def _algorithm(ss_info: str) -> str | None:
    """The congestion control ``ss -ti`` names for its one connection."""
    found = {w for w in ss_info.split() if w in ("bbr", "reno", "cubic")}
    assert len(found) <= 1, ss_info
    return found.pop() if found else None
