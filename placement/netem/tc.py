"""The one place that knows how a WAN link is spelled in ``tc``: pure functions from shapes to argv lists.

Nothing here runs a command. ``placement netem`` runs these on real hosts (locally or over SSH), the lab runs them on
its veth links and the Ansible export writes them into a playbook, so all three shape links identically.

Layout installed on an interface (all of it under one root, so clearing is a single delete)::

    root  htb  handle ede:  default 0            unclassified traffic bypasses shaping (htb's direct queue)
      class ede:10  htb rate R ceil R            one class per destination, in the order given
        filter u32 match ip dst D/32 -> ede:10
        leaf  10:  netem delay .. loss ..        only when the shape asks for delay, jitter or loss

The root handle ``ede:`` marks the qdisc as ours: ``show`` and ``clear`` recognise it and never touch a root qdisc
someone else installed.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass

from placement.netem.figures import check_link_figures
from placement.units import format_rate, format_time

ROOT_MAJOR = 0xEDE
ROOT_HANDLE = f"{ROOT_MAJOR:x}:"
FIRST_MINOR = 0x10
MAX_SHAPES = 0xFFFF - FIRST_MINOR

# htb refills tokens on the kernel timer; a burst worth BURST_SECONDS of traffic keeps it at the configured rate
# at every rate we care about (a too-small burst undershoots fast links), and at least two full frames so slow
# links can always send a packet.
BURST_SECONDS = 0.010
MIN_BURST_BYTES = 2 * 1600
QUANTUM_BYTES = 1514  # one Ethernet frame; only sharing between classes uses it, and it silences htb's r2q warning
NETEM_MIN_LIMIT = 1000  # netem's own default queue length, in packets
FRAME_BYTES = 1500


@dataclass(frozen=True)
class Shape:
    """Traffic to ``dest`` (an address or network) leaves at ``rate_mbit`` and, with netem, late and lossy."""

    dest: str
    rate_mbit: float
    delay_ms: float = 0
    jitter_ms: float = 0
    loss_pct: float = 0
    correlation_pct: float = 0

    def __post_init__(self) -> None:
        ipaddress.ip_network(self.dest, strict=False)  # ValueError for names: tc matches addresses only
        if not (math.isfinite(self.rate_mbit) and self.rate_mbit > 0):
            raise ValueError(f"rate must be positive, got {self.rate_mbit!r} Mbit/s")
        check_link_figures(self.delay_ms, self.jitter_ms, self.loss_pct, self.correlation_pct)

    @property
    def needs_netem(self) -> bool:
        return self.delay_ms > 0 or self.jitter_ms > 0 or self.loss_pct > 0

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(self.dest, strict=False)


def class_id(index: int) -> str:
    return f"{ROOT_MAJOR:x}:{FIRST_MINOR + index:x}"


def leaf_handle(index: int) -> str:
    return f"{FIRST_MINOR + index:x}:"


def burst_bytes(rate_mbit: float) -> int:
    return max(MIN_BURST_BYTES, math.ceil(rate_mbit * 1e6 / 8 * BURST_SECONDS))


def netem_limit(shape: Shape) -> int:
    """Packets netem may hold: twice what the link carries during the longest delay, so delay never drops packets."""
    in_flight = shape.rate_mbit * 1e6 / 8 * (shape.delay_ms + shape.jitter_ms) / 1000 / FRAME_BYTES
    return max(NETEM_MIN_LIMIT, math.ceil(2 * in_flight))


def _pct(value: float) -> str:
    return f"{value:g}%"


def netem_args(shape: Shape) -> list[str]:
    """The netem options of a shape (``delay 50ms 5ms 25% loss 1% 25%``)."""
    args = ["limit", str(netem_limit(shape))]
    if shape.delay_ms > 0 or shape.jitter_ms > 0:
        args += ["delay", format_time(shape.delay_ms)]
        if shape.jitter_ms > 0:
            args.append(format_time(shape.jitter_ms))
            if shape.correlation_pct > 0:
                args.append(_pct(shape.correlation_pct))
    if shape.loss_pct > 0:
        args += ["loss", _pct(shape.loss_pct)]
        if shape.correlation_pct > 0:
            args.append(_pct(shape.correlation_pct))
    return args


def _filter(interface: str, shape: Shape, index: int) -> list[str]:
    net = shape.network
    if net.version == 4:
        proto, prio, match = "ip", "1", ["match", "ip", "dst", str(net)]
    else:  # u32 filters of different protocols may not share a priority
        proto, prio, match = "ipv6", "2", ["match", "ip6", "dst", str(net)]
    return [
        "tc",
        "filter",
        "add",
        "dev",
        interface,
        "parent",
        ROOT_HANDLE,
        "protocol",
        proto,
        "prio",
        prio,
        "u32",
        *match,
        "flowid",
        class_id(index),
    ]


def apply_commands(interface: str, shapes: Sequence[Shape], *, with_netem: bool = True) -> list[list[str]]:
    """Commands that install ``shapes`` on a interface whose root qdisc is still the kernel's default.

    Replacing an earlier installation is ``clear_commands`` first (the caller knows whether one exists).
    """
    if not shapes:
        raise ValueError("no shapes to apply")
    if len(shapes) > MAX_SHAPES:
        raise ValueError(f"at most {MAX_SHAPES} destinations per interface")
    dests = [s.network for s in shapes]
    if len(set(dests)) != len(dests):
        raise ValueError("two shapes for the same destination")
    cmds = [["tc", "qdisc", "add", "dev", interface, "root", "handle", ROOT_HANDLE, "htb", "default", "0"]]
    for i, shape in enumerate(shapes):
        rate, burst = format_rate(shape.rate_mbit), str(burst_bytes(shape.rate_mbit))
        cmds.append(
            [
                "tc",
                "class",
                "add",
                "dev",
                interface,
                "parent",
                ROOT_HANDLE,
                "classid",
                class_id(i),
                "htb",
                "rate",
                rate,
                "ceil",
                rate,
                "burst",
                burst,
                "cburst",
                burst,
                "quantum",
                str(QUANTUM_BYTES),
            ]
        )
        cmds.append(_filter(interface, shape, i))
    if with_netem:
        cmds += [leaf_command(interface, shape, i) for i, shape in enumerate(shapes) if shape.needs_netem]
    return cmds


def leaf_command(interface: str, shape: Shape, index: int) -> list[str]:
    return [
        "tc",
        "qdisc",
        "add",
        "dev",
        interface,
        "parent",
        class_id(index),
        "handle",
        leaf_handle(index),
        "netem",
        *netem_args(shape),
    ]


def is_netem_command(argv: Sequence[str]) -> bool:
    """True for the netem leaf commands ``apply_commands`` emits (the ones a kernel without sch_netem refuses)."""
    return len(argv) > 2 and argv[:3] == ["tc", "qdisc", "add"] and "netem" in argv


def clear_commands(interface: str) -> list[list[str]]:
    """Removing our root removes its classes, filters and leaves; the kernel puts its default root qdisc back."""
    return [["tc", "qdisc", "del", "dev", interface, "root", "handle", ROOT_HANDLE]]


def root_query_command(interface: str) -> list[str]:
    return ["tc", "-j", "qdisc", "show", "dev", interface, "root"]


def stats_commands(interface: str) -> list[list[str]]:
    """What ``show`` reads: qdiscs as JSON (netem leaves, root counters) and htb classes with statistics.

    iproute2 6.1 prints htb classes as text even with ``-j``; the parser accepts both.
    """
    return [
        ["tc", "-s", "-j", "qdisc", "show", "dev", interface],
        ["tc", "-s", "-j", "class", "show", "dev", interface],
    ]


def filter_query_command(interface: str) -> list[str]:
    return ["tc", "-j", "filter", "show", "dev", interface, "parent", ROOT_HANDLE]
