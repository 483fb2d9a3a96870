"""Reading tc's output back: what root qdisc an interface has, and per-class counters of what we installed. Pure.

``tc -s -j qdisc show`` gives JSON. htb classes come as text from iproute2 6.1 even with ``-j`` (newer releases may
print JSON); both are accepted. u32 filters give the destination of each class (``match value`` at offset 16 is
the IPv4 destination address).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass, field
from typing import Any

from placement.netem.tc import ROOT_HANDLE
from placement.units import parse_rate_mbit


class TcOutputError(ValueError):
    """tc printed something this parser does not understand."""


@dataclass(frozen=True)
class RootQdisc:
    kind: str
    handle: str

    @property
    def is_ours(self) -> bool:
        return self.kind == "htb" and self.handle == ROOT_HANDLE

    @property
    def is_default(self) -> bool:
        """The kernel's own root (noqueue, pfifo_fast, mq, fq_codel...) has handle 0: and cannot be deleted."""
        return self.handle == "0:"

    def describe(self) -> str:
        return f"{self.kind} {self.handle}"


@dataclass(frozen=True)
class ClassStats:
    classid: str
    dest: str | None
    rate_mbit: float | None
    ceil_mbit: float | None
    bytes: int
    packets: int
    drops: int
    overlimits: int
    leaf: str | None = None  # kind of the leaf qdisc we installed ("netem"), None for htb's default leaf
    delay_ms: float | None = None
    jitter_ms: float | None = None
    loss_pct: float | None = None
    leaf_drops: int = 0


@dataclass(frozen=True)
class InterfaceStatus:
    interface: str
    root: RootQdisc | None
    classes: list[ClassStats] = field(default_factory=list)
    unshaped_packets: int = 0  # sent through htb's direct queue (traffic to no shaped destination)

    @property
    def installed(self) -> bool:
        return self.root is not None and self.root.is_ours


def _json_list(text: str, what: str) -> list[dict[str, Any]]:
    text = text.strip()
    if not text:
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TcOutputError(f"{what}: not JSON ({exc.msg})") from None
    if not isinstance(data, list):
        raise TcOutputError(f"{what}: expected a JSON list")
    return [d for d in data if isinstance(d, dict)]


def parse_root(qdisc_json: str) -> RootQdisc | None:
    """The root qdisc from ``tc -j qdisc show dev X [root]``; None when tc printed nothing (e.g. in a dry run)."""
    for q in _json_list(qdisc_json, "tc qdisc show"):
        if q.get("root"):
            return RootQdisc(kind=str(q.get("kind")), handle=str(q.get("handle")))
    return None


_CLASS_HEAD = re.compile(r"^class htb (?P<id>\S+) .*?\brate (?P<rate>\S+) ceil (?P<ceil>\S+)", re.MULTILINE)
_SENT = re.compile(r"Sent (?P<bytes>\d+) bytes (?P<pkts>\d+) pkt \(dropped (?P<drops>\d+), overlimits (?P<over>\d+)")


def parse_classes(class_out: str) -> dict[str, dict[str, Any]]:
    """classid -> rate, ceil (Mbit/s) and counters, from ``tc -s [-j] class show`` (text or JSON)."""
    text = class_out.strip()
    out: dict[str, dict[str, Any]] = {}
    if text.startswith("["):
        for c in _json_list(text, "tc class show"):
            if c.get("class") != "htb":
                continue
            stats = c.get("stats", c)
            opts = c.get("options", c)
            out[str(c.get("handle"))] = {
                "rate": _rate(opts.get("rate")),
                "ceil": _rate(opts.get("ceil")),
                "bytes": int(stats.get("bytes", 0)),
                "packets": int(stats.get("packets", 0)),
                "drops": int(stats.get("drops", 0)),
                "overlimits": int(stats.get("overlimits", 0)),
            }
        return out
    heads = list(_CLASS_HEAD.finditer(text))
    for n, head in enumerate(heads):
        block = text[head.start() : heads[n + 1].start() if n + 1 < len(heads) else len(text)]
        sent = _SENT.search(block)
        out[head.group("id")] = {
            "rate": _rate(head.group("rate")),
            "ceil": _rate(head.group("ceil")),
            "bytes": int(sent.group("bytes")) if sent else 0,
            "packets": int(sent.group("pkts")) if sent else 0,
            "drops": int(sent.group("drops")) if sent else 0,
            "overlimits": int(sent.group("over")) if sent else 0,
        }
    return out


def _rate(value: object) -> float | None:
    """tc prints rates as text ("20Mbit") or, in JSON, as bytes per second."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value) * 8 / 1e6
    try:
        return parse_rate_mbit(str(value))
    except ValueError:
        return None


def _fraction_to_pct(value: object) -> float | None:
    if not isinstance(value, (int, float)):
        return None
    # iproute2 prints netem percentages in JSON as a fraction of 1
    return float(value) * 100 if value <= 1 else float(value)


def parse_filters(filter_json: str) -> dict[str, str]:
    """classid -> destination network, from ``tc -j filter show dev X parent ede:`` (IPv4 u32 dst matches)."""
    dests: dict[str, str] = {}
    for f in _json_list(filter_json, "tc filter show"):
        opts = f.get("options") or {}
        match = opts.get("match") or {}
        flowid = opts.get("flowid")
        if not flowid or match.get("off") != 16 or f.get("protocol") != "ip":
            continue
        try:
            addr = ipaddress.IPv4Address(int(str(match["value"]), 16))
            prefix = bin(int(str(match["mask"]), 16)).count("1")
        except (KeyError, ValueError):
            continue
        net = ipaddress.IPv4Network(f"{addr}/{prefix}", strict=False)
        dests[str(flowid)] = str(net.network_address) if prefix == 32 else str(net)
    return dests


def parse_status(interface: str, qdisc_json: str, class_out: str, filter_json: str = "") -> InterfaceStatus:
    qdiscs = _json_list(qdisc_json, "tc qdisc show")
    root = parse_root(qdisc_json)
    if root is None or not root.is_ours:
        return InterfaceStatus(interface=interface, root=root)
    root_entry = next(q for q in qdiscs if q.get("root"))
    leaves = {str(q.get("parent")): q for q in qdiscs if not q.get("root")}
    dests = parse_filters(filter_json)
    classes: list[ClassStats] = []
    for classid, c in sorted(parse_classes(class_out).items()):
        if not classid.startswith(ROOT_HANDLE):
            continue
        leaf = leaves.get(classid)
        delay = jitter = loss = None
        if leaf is not None and leaf.get("kind") == "netem":
            opts = leaf.get("options") or {}
            d = opts.get("delay") or {}
            delay = float(d["delay"]) * 1000 if isinstance(d.get("delay"), (int, float)) else 0.0
            jitter = float(d["jitter"]) * 1000 if isinstance(d.get("jitter"), (int, float)) else 0.0
            loss = _fraction_to_pct((opts.get("loss-random") or {}).get("loss")) or 0.0
        classes.append(
            ClassStats(
                classid=classid,
                dest=dests.get(classid),
                rate_mbit=c["rate"],
                ceil_mbit=c["ceil"],
                bytes=c["bytes"],
                packets=c["packets"],
                drops=c["drops"],
                overlimits=c["overlimits"],
                leaf=str(leaf.get("kind")) if leaf is not None else None,
                delay_ms=delay,
                jitter_ms=jitter,
                loss_pct=loss,
                leaf_drops=int(leaf.get("drops", 0)) if leaf is not None else 0,
            )
        )
    options = root_entry.get("options") or {}
    return InterfaceStatus(
        interface=interface, root=root, classes=classes, unshaped_packets=int(options.get("direct_packets_stat", 0))
    )
