"""Each lab host's TCP congestion control (``hosts[].congestion_control``), put into effect per route.

``net.ipv4.tcp_congestion_control`` is per network namespace, but the lab's server side is the root namespace: the
sysctl there would change this whole machine (and it is read-only in a container). A route's ``congctl`` attribute
does the same for the sockets that use the route, accepted ones too, and stays within the lab: an edge host's
namespace gets it on all its routes, the server on the root namespace's routes through the lab's veths only. A socket
takes its route's algorithm when it opens, so this runs before any TaskManager starts.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from placement.costmodel.transport import DEFAULT_CONGESTION_CONTROL
from placement.errors import BadInput
from placement.inventory import Inventory
from placement.lab.topology import LabPlan
from placement.netns import ns_exec, run

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")


def wanted(inv: Inventory) -> dict[str, str]:
    """Host name -> the algorithm it sends with (the plan's default where the inventory names none)."""
    return {h.name: h.congestion_control or DEFAULT_CONGESTION_CONTROL for h in inv.hosts}


def available(path: Path = AVAILABLE) -> frozenset[str]:
    try:
        return frozenset(path.read_text().split())
    except OSError:
        return frozenset()


def check_available(inv: Inventory, source: str | None, path: Path = AVAILABLE) -> None:
    """Refuse an algorithm this kernel lacks, after trying to load its module (``tcp_<algo>``)."""
    for i, h in enumerate(inv.hosts):
        algo = h.congestion_control or DEFAULT_CONGESTION_CONTROL
        if algo in available(path):
            continue
        if shutil.which("modprobe"):
            run(["modprobe", f"tcp_{algo}"], check=False)
        have = available(path)
        if algo not in have:
            raise BadInput(
                f"{algo} is not available in this kernel (tcp_available_congestion_control: "
                f"{' '.join(sorted(have)) or 'unreadable'}; modprobe tcp_{algo} did not load it)",
                source=source,
                field=f"hosts[{i}].congestion_control",
            )


def _routes(namespace: str | None, devices: Iterable[str] | None = None, *, check: bool = True) -> list[list[str]]:
    """The routes of ``namespace`` (None: the root namespace), only those through ``devices`` when given."""
    out = run(ns_exec(namespace, ["ip", "-o", "route", "show"]), check=check).stdout
    routes = [line.split() for line in out.splitlines() if line.strip()]
    if devices is None:
        return routes
    only = set(devices)
    return [r for r in routes if _device(r) in only]


def _device(route: Sequence[str]) -> str | None:
    return route[route.index("dev") + 1] if "dev" in route else None


def _without_congctl(route: Sequence[str]) -> list[str]:
    words = [w for w in route if w != "linkdown"]  # a flag `ip route show` prints, not one `ip route change` takes
    if "congctl" in words:
        at = words.index("congctl")
        del words[at : at + 2]
    return words


def set_routes(namespace: str | None, algorithm: str, devices: Iterable[str] | None = None) -> None:
    """``congctl algorithm`` on the routes of ``namespace`` (None: the root namespace) — through ``devices`` only when
    given."""
    for route in _routes(namespace, devices):
        run(ns_exec(namespace, ["ip", "route", "change", *_without_congctl(route), "congctl", algorithm]))


def read_back(namespace: str | None, devices: Iterable[str] | None = None) -> str | None:
    """The algorithm the routes of ``namespace`` (through ``devices``) carry: one name, several joined by ``/``, or
    None where no route sets one (the namespace's default applies)."""
    found = []
    for route in _routes(namespace, devices, check=False):  # a half-dead lab's status still reads what is left
        words = list(route)
        algo = words[words.index("congctl") + 1] if "congctl" in words else None
        if algo is not None and algo not in found:
            found.append(algo)
        if algo is None:
            return None
    return "/".join(found) or None


def server_devices(plan: LabPlan | Sequence[dict]) -> list[str]:
    """The root namespace's lab veths (from the plan, or the hosts of the lab's state file)."""
    if isinstance(plan, LabPlan):
        return [h.host_if for h in plan.edges if h.host_if]
    return [h["host_if"] for h in plan if h.get("namespace") and h.get("host_if")]


def put_into_effect(plan: LabPlan, algorithms: dict[str, str]) -> None:
    """Every lab host's algorithm (``algorithms``: :func:`wanted`) on its routes: an edge's in its namespace, the
    server's on the root namespace's routes through the lab's veths."""
    for h in plan.hosts:
        if h.namespace:
            set_routes(h.namespace, algorithms[h.name])
        else:
            set_routes(None, algorithms[h.name], server_devices(plan))


def host_status(host: dict, hosts: Sequence[dict]) -> str | None:
    """What ``lab status`` shows for a host of the state file: the algorithm its routes carry."""
    if host.get("namespace"):
        return read_back(host["namespace"])
    return read_back(None, server_devices(hosts))
