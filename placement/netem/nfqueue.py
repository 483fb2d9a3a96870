"""How packets of one link reach a user-space delay line: iptables rules and the kernel's queue table, as pure argv
builders and parsers (nothing here runs a command).

A line holds a direction's packets at the *receiver's* ingress: ``mangle PREROUTING`` of the receiving namespace,
matched to the one link by input interface and source network, sent to a numbered NFQUEUE. Holding them in the
sender's OUTPUT instead would count them against the sending socket (TCP Small Queues) and throttle TCP far below the
link's rate. Every rule carries a comment starting with :data:`COMMENT_PREFIX` so clearing finds ours and no one
else's. No ``--queue-bypass``: a line that is not running stops its link instead of letting it run undelayed, so a
measurement never silently runs on the wrong link.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

COMMENT_PREFIX = "placement-delayline"
TABLE = "mangle"
CHAIN = "PREROUTING"
QUEUE_TABLE = "/proc/net/netfilter/nfnetlink_queue"


@dataclass(frozen=True)
class QueueRule:
    """Packets in on ``interface`` from ``source`` go to queue ``queue`` (of the namespace the rule is made in)."""

    interface: str
    source: str
    queue: int
    label: str  # names the link and direction in the rule's comment, e.g. "rpi1 uplink"

    def __post_init__(self) -> None:
        if not 0 <= self.queue <= 0xFFFF:
            raise ValueError(f"NFQUEUE numbers are 0..65535, got {self.queue}")

    @property
    def comment(self) -> str:
        return f"{COMMENT_PREFIX} {self.label}"

    def match(self) -> list[str]:
        return [
            "-i",
            self.interface,
            "-s",
            self.source,
            "-m",
            "comment",
            "--comment",
            self.comment,
            "-j",
            "NFQUEUE",
            "--queue-num",
            str(self.queue),
        ]


def add_command(rule: QueueRule) -> list[str]:
    return ["iptables", "-w", "-t", TABLE, "-A", CHAIN, *rule.match()]


def delete_command(rule: QueueRule) -> list[str]:
    return ["iptables", "-w", "-t", TABLE, "-D", CHAIN, *rule.match()]


def list_command() -> list[str]:
    return ["iptables", "-w", "-t", TABLE, "-S", CHAIN]


def our_rules(listing: str, label_prefix: str = "") -> list[str]:
    """The lines of ``iptables -S`` that are our rules (whose label starts with ``label_prefix``)."""
    needle = f"{COMMENT_PREFIX} {label_prefix}"
    return [line for line in listing.splitlines() if line.startswith(f"-A {CHAIN} ") and needle in line]


def delete_listed_command(line: str) -> list[str]:
    """The command that removes the rule ``iptables -S`` printed as ``line`` (``-A CHAIN ...`` -> ``-D CHAIN ...``)."""
    words = shlex.split(line)
    return ["iptables", "-w", "-t", TABLE, "-D", *words[1:]]


@dataclass(frozen=True)
class QueueStats:
    """One row of the kernel's queue table: a bound queue, what it holds and what it dropped."""

    queue: int
    portid: int
    held: int
    dropped_full: int  # the queue was full
    dropped_user: int  # the line could not take them (its socket buffer was full)


def parse_queue_table(text: str) -> dict[int, QueueStats]:
    """``/proc/net/netfilter/nfnetlink_queue``: queue, portid, waiting, copy mode, copy range, dropped, user dropped,
    last id, 1 — one line per bound queue."""
    stats = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 7 and all(f.isdigit() for f in fields[:7]):
            queue, portid, held, _mode, _range, full, user = (int(f) for f in fields[:7])
            stats[queue] = QueueStats(queue, portid, held, full, user)
    return stats
