"""CPU cost of the lab's user-space delay line per Mbit/s, beside a baseline measured in the same run.

For each rate, one UDP flow (iperf3, 1400-byte datagrams, ``--seconds`` long) crosses a veth shaped by htb to a
little above that rate (tests/support/delay_lines.py: the lab's building blocks) with the LTE profile's figures on it
(35 ± 10 ms each way, 0.1 % loss on the uplink), once through the delay lines and once rate only. Rows:

* ``line CPU``: user + system CPU time of both directions' line processes over the flow, as a share of one core
  (``line CPU %``) and that share per Mbit/s received (``line %/Mbit/s``); the uplink's line sees the data, the
  downlink's only iperf3's control packets;
* ``iperf3 CPU``: the sender and receiver of the same flow (this process's reaped children), the baseline: what
  producing and consuming the flow costs on this machine at that moment; a loaded machine makes both rows dearer;
* ``received``: the flow's goodput and its loss, and ``queue drops``: packets the kernel's queues dropped because a
  line lagged (none: the line kept up).

    python benchmarks/delayline_cpu.py [--rates 2,5,10,20] [--seconds 8]   # as root
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "netem")]

import psutil
from netem_helpers import iperf_transfer

from placement.lab.wan import delay_line_unavailable
from placement.netem.line_schedule import LineFigures
from support.delay_lines import emulated_wire

UPLINK = LineFigures(delay_ms=35, jitter_ms=10, loss_pct=0.1, correlation_pct=25)
DOWNLINK = LineFigures(delay_ms=35, jitter_ms=10, correlation_pct=25)
SUBNET = 60


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def cpu_s(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def measure(rate: float, seconds: int, with_line: bool, work: Path) -> dict[str, float]:
    """One flow at ``rate`` Mbit/s: the lines' CPU seconds, iperf3's, the goodput and the loss."""
    up, down = (UPLINK, DOWNLINK) if with_line else (LineFigures(), LineFigures())
    log_dir = work / f"{rate:g}-{with_line}"
    log_dir.mkdir()
    with emulated_wire(SUBNET, rate * 1.25, up, down, log_dir, seed=1) as link:
        pids = list(link.pids.values())
        line_before, iperf_before = cpu_s(pids), children_cpu_s()
        end = iperf_transfer(
            link.wire.ns, link.wire.ns_addr, seconds=seconds, args=("-u", "-b", f"{rate:g}M", "-l", "1400")
        )
        line, iperf = cpu_s(pids) - line_before, children_cpu_s() - iperf_before
        drops = link.queue_drops()
    flow = end["sum"]
    return {
        "line": line,
        "iperf": iperf,
        "mbit": flow["bits_per_second"] / 1e6 * (1 - flow["lost_percent"] / 100),
        "loss": flow["lost_percent"],
        "drops": drops,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rates", default="2,5,10,20", help="Mbit/s, comma-separated")
    parser.add_argument("--seconds", type=int, default=8)
    args = parser.parse_args(argv)
    missing = delay_line_unavailable()
    if os.geteuid() != 0 or missing:
        print(f"delayline_cpu: needs root and the delay line's parts ({missing or 'not root'})", file=sys.stderr)
        return 2
    rates = [float(r) for r in args.rates.split(",")]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min); UDP, 1400 B datagrams, {args.seconds} s a row")
    head = f"{'Mbit/s':>6} {'emulation':<12} {'received':>9} {'loss %':>7} {'line CPU %':>11} {'line %/Mbit/s':>13}"
    print(f"{head} {'iperf3 CPU %':>13} {'queue drops':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for rate in rates:
            for with_line in (False, True):
                m = measure(rate, args.seconds, with_line, Path(tmp))
                per_mbit = f"{100 * m['line'] / args.seconds / m['mbit']:.2f}" if with_line else "-"
                line_pct = f"{100 * m['line'] / args.seconds:.1f}" if with_line else "-"
                print(
                    f"{rate:>6g} {'delay line' if with_line else 'rate only':<12} {m['mbit']:>9.2f} {m['loss']:>7.2f}"
                    f" {line_pct:>11} {per_mbit:>13} {100 * m['iperf'] / args.seconds:>13.1f} {m['drops']:>12}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
