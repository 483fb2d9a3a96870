"""The user-space delay line measured against itself, for real: kernel TCP and UDP through a veth whose uplink and
downlink packets the line holds (tests/support/delay_lines.py), iperf3 for rate and loss, refused TCP connects
for the round trip.

Tolerances: the round trip can only be longer than set (a busy machine wakes the line late), so it is held to the set
figure from below and a few per cent above, on the quickest of several samples; loss is held to the binomial bound of
the packets counted (5 sigma), and the line's own count to the seeded schedule exactly.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from netem_helpers import connect_rtt_ms, iperf_transfer

from placement.lab.wan import delay_line_unavailable
from placement.netem import tc
from placement.netem.line_schedule import LineFigures, LineSchedule
from placement.netns import VethPair, ns_exec, run
from support import real_parts
from support.delay_lines import emulated_wire

pytestmark = [pytest.mark.netns, pytest.mark.timeout(240)]

NO_LINE = LineFigures()
FRAME, TCP_PAYLOAD = 1514, 1448


@pytest.fixture(autouse=True)
def delay_line_parts(netns_required: None) -> None:
    """iptables, the kernel's NFQUEUE and the netfilterqueue package are real parts (support/real_parts.py)."""
    real_parts.require(delay_line_unavailable())


def test_a_round_trip_takes_twice_the_one_way_delay(tmp_path: Path) -> None:
    one_way = LineFigures(delay_ms=35)
    with emulated_wire(41, 20, one_way, one_way, tmp_path) as link:
        rtt = connect_rtt_ms(link.wire.ns_addr, samples=15)
    print(f"set one-way delay 35 ms each way: round trip {rtt:.2f} ms")
    assert 70.0 <= rtt <= 70.0 * 1.05


def test_one_way_delay_on_the_uplink_alone_is_the_whole_round_trip(tmp_path: Path) -> None:
    # the guard of the test above: each line adds its own direction's delay, not the round trip's
    with emulated_wire(42, 20, LineFigures(delay_ms=40), NO_LINE, tmp_path) as link:
        rtt = connect_rtt_ms(link.wire.ns_addr, samples=15)
    print(f"uplink 40 ms, downlink none: round trip {rtt:.2f} ms")
    assert 40.0 <= rtt <= 40.0 * 1.05


def test_tcp_through_the_line_carries_the_set_rate(tmp_path: Path) -> None:
    figures = LineFigures(delay_ms=10, jitter_ms=2)
    with emulated_wire(43, 20, figures, figures, tmp_path) as link:
        end = iperf_transfer(link.wire.ns, link.wire.ns_addr, seconds=8, omit=2)
        drops = link.queue_drops()
    achieved = end["sum_received"]["bits_per_second"] / 1e6
    # htb counts whole frames (1514 B on a 1500 B MTU); iperf3 counts TCP payload (1448 B with timestamps)
    ceiling = 20 * TCP_PAYLOAD / FRAME
    print(f"20 Mbit/s, 10 ± 2 ms each way: TCP goodput {achieved:.2f} Mbit/s of {ceiling:.2f}, queue drops {drops}")
    assert drops == 0
    assert ceiling * 0.94 <= achieved <= ceiling * 1.02


def busy_machine_drops(wire: VethPair) -> tuple[int, int]:
    """Packets the kernel dropped because this machine was busy: before the line (the sender's htb queue overflowing
    when a descheduled sender catches up in a burst, the receiving interface's backlog full) and after it (a receiver
    that read too slowly: /proc/net/snmp's RcvbufErrors in the server's namespace)."""
    shaper = sum(q.get("drops", 0) for q in json.loads(run(tc.stats_commands(wire.host_if)[0]).stdout))
    read = run(ns_exec(wire.ns, ["cat", f"/sys/class/net/{wire.ns_if}/statistics/rx_dropped", "/proc/net/snmp"]))
    lines = [line.split() for line in read.stdout.splitlines()]
    names, values = (fields for fields in lines if fields[0] == "Udp:")
    return shaper + int(lines[0][0]), int(values[names.index("RcvbufErrors")])


def test_udp_through_the_line_loses_the_set_share_and_the_line_loses_what_its_seed_says(tmp_path: Path) -> None:
    loss, seed = LineFigures(delay_ms=5, jitter_ms=5, loss_pct=2), 11
    with emulated_wire(44, 20, loss, NO_LINE, tmp_path, seed=seed) as link:
        end = iperf_transfer(link.wire.ns, link.wire.ns_addr, seconds=8, args=("-u", "-b", "6M", "-l", "200"))
        drops, (before, after) = link.queue_drops(), busy_machine_drops(link.wire)
        (passed, lost) = link.stop_lines()["uplink"]
    udp = end["sum"]
    sent, udp_lost = udp["packets"], udp["lost_packets"]
    seen = passed + lost  # the datagrams and iperf3's control connection
    p = loss.loss_pct / 100
    band = 5 * math.sqrt(seen * p * (1 - p))
    print(
        f"{sent} datagrams, {udp_lost} lost ({udp_lost / sent:.3%}; {before} + {after} by a busy machine); "
        f"the line lost {lost} of {seen} ({lost / seen:.3%}, set 2 %, bound ±{band:.0f})"
    )
    assert drops == 0
    assert abs(lost - seen * p) <= band
    # the line's count is its schedule's with that seed, exactly
    replay = LineSchedule(loss, random.Random(seed))
    assert sum(replay.admit(i * 1e-3) is None for i in range(seen)) == lost
    # the receiver misses what the line dropped of the datagrams, and what a loaded machine dropped itself; the rest
    # of what the line saw was iperf3's control connection
    assert 0 <= lost - (udp_lost - before - after) <= seen - (sent - before)
    # the line keeps order: jitter of ±5 ms on 3 750 datagrams a second reorders none
    assert udp.get("out_of_order", 0) == 0


@pytest.mark.parametrize(("loss_pct", "low", "high"), [(0.1, 2.0, 15.0), (0.0, 17.0, 20.6)])
def test_one_cubic_flow_on_the_lte_profile_collapses_with_its_loss(
    tmp_path: Path, loss_pct: float, low: float, high: float
) -> None:
    # netem/lte.yaml: 20 Mbit/s, 35 ± 10 ms each way, 0.1 % loss at 25 % correlation on the uplink. Issue 45 measured
    # one CUBIC flow at 8.4-9.6 Mbit/s on it and 18.4 without the loss: the ranges hold on a loaded machine and
    # fail when loss or delay are not emulated.
    up = LineFigures(delay_ms=35, jitter_ms=10, loss_pct=loss_pct, correlation_pct=25)
    down = LineFigures(delay_ms=35, jitter_ms=10, correlation_pct=25)
    with emulated_wire(45, 20, up, down, tmp_path, seed=45) as link:
        end = iperf_transfer(link.wire.ns, link.wire.ns_addr, seconds=20, omit=3, args=("-C", "cubic"))
    achieved = end["sum_received"]["bits_per_second"] / 1e6
    print(f"LTE, loss {loss_pct} %: one CUBIC flow {achieved:.2f} Mbit/s of 20")
    assert low <= achieved <= high
