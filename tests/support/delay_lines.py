"""A wire with the lab's user-space delay line on it, for the real tests of tests/netem and
benchmarks/delayline_cpu.py: the root namespace plays the edge, a namespace ``pn-dl<subnet>-srv`` the server
(addresses 10.201.<subnet>.0/30, the netem tests' share).

The same building blocks as the lab (:mod:`placement.lab.wan`): htb on the edge's veth for the rate, the uplink held
at the server's ingress (a rule in its namespace, the line's queue opened there), the downlink at the edge's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from placement.lab import stopping
from placement.lab.wan import bound_queues, start_line
from placement.netem import nfqueue
from placement.netem.delayline import line_command
from placement.netem.line_schedule import LineFigures
from placement.netem.tc import Shape, apply_commands
from placement.netns import Namespaces, VethPair, ns_exec, run

QUEUE_BASE = 0xEC00  # the lab's are 0xED00 + i and 0xEE00 + i
COUNTS = re.compile(r"passed (\d+), lost (\d+)")


@dataclass
class EmulatedWire:
    wire: VethPair
    up: nfqueue.QueueRule
    down: nfqueue.QueueRule
    logs: dict[str, Path]
    pids: dict[str, int] = field(default_factory=dict)

    def stop_lines(self) -> dict[str, tuple[int, int]]:
        """Stop the lines (they let what they hold go) and return each one's (passed, lost) from its log."""
        for rule, ns in ((self.up, self.wire.ns), (self.down, None)):
            run(ns_exec(ns, nfqueue.delete_command(rule)), check=False)
        stopping.stop(list(self.pids.values()), timeout=10)
        counts = {}
        for name in list(self.pids):
            found = COUNTS.findall(self.logs[name].read_text())
            counts[name] = (int(found[-1][0]), int(found[-1][1])) if found else (0, 0)
        self.pids.clear()
        return counts

    def queue_drops(self) -> int:
        """Packets a queue itself dropped (full, or the line's socket could not take them): none, or a line lagged."""
        up = bound_queues(self.wire.ns).get(self.up.queue)
        down = bound_queues(None).get(self.down.queue)
        return sum(s.dropped_full + s.dropped_user for s in (up, down) if s is not None)


@contextmanager
def emulated_wire(
    subnet: int, rate_mbit: float, up: LineFigures, down: LineFigures, log_dir: Path, *, seed: int | None = None
) -> Iterator[EmulatedWire]:
    with Namespaces(f"pn-dl{subnet}") as nets:
        wire = nets.add("srv", f"10.201.{subnet}.1", f"10.201.{subnet}.2")
        for argv in apply_commands(wire.host_if, [Shape(wire.ns_addr, rate_mbit)]):
            run(argv)
        label = f"pn-dl{subnet}"
        link = EmulatedWire(
            wire,
            up=nfqueue.QueueRule(wire.ns_if, wire.host_addr, QUEUE_BASE + 2 * subnet, f"{label} uplink"),
            down=nfqueue.QueueRule(wire.host_if, wire.ns_addr, QUEUE_BASE + 2 * subnet + 1, f"{label} downlink"),
            logs={"uplink": log_dir / "uplink.log", "downlink": log_dir / "downlink.log"},
        )
        try:
            for name, rule, figures, ns in (("uplink", link.up, up, wire.ns), ("downlink", link.down, down, None)):
                if figures.any:
                    argv = line_command(rule.queue, rule.label, figures, netns=ns, seed=seed)
                    link.pids[name] = start_line(argv, rule, ns, link.logs[name])
            yield link
        finally:
            link.stop_lines()
