"""What a WAN link carries for Flink: TCP goodput under loss and round trip, and the credit cap of an input gate.

Flink multiplexes the channels between two TaskManagers over one TCP connection: ``max-num-tcp-connections`` more
only spread job edges over connections by a random index per intermediate result, so one job edge always rides one
and a plan can count on one flow per TaskManager pair (placement.inventory.network). One flow's goodput:

* **CUBIC** (Linux's and Raspberry Pi OS's default): the average-window response function of RFC 9438 §5.1 (Ha, Rhee
  and Xu), ``(C·(3+β)/(4·(1−β)))^¼ · RTT^¾ / p^¾`` segments with ``C = 0.4``, ``β = 0.7``, or CUBIC's Reno-friendly
  region ``√(3/2) / √p`` (Mathis et al.), whichever is larger — CUBIC runs in the region that gives more.
* **Reno**: the Mathis relation alone.
* **BBR** (v1) does not back off on random loss: the link's rate less what is lost, less the share of time its
  ProbeRTT phase (200 ms plus a round trip every 10 s) keeps a few packets in flight.

Each region's factor (:data:`CALIBRATION`) is what the lab measured over the standard formula's figure, the real
kernel's TCP through the lab's delay line: in the Reno-friendly region what Flink's own connection carried before its
sources were held back, which is less than a backlogged iperf3 flow carries there; in CUBIC's region one iperf3 flow,
which Flink's connection matched. docs/transport.md has both tables. A link without loss carries its rate.

A remote input channel can have only its credit in flight: its exclusive buffers plus, at most, its gate's floating
ones, one memory segment each, per round trip.

Pure: numbers in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from placement.flink.facts import SEGMENT_BYTES

CongestionControl = Literal["cubic", "reno", "bbr"]
CONGESTION_CONTROLS: tuple[CongestionControl, ...] = ("cubic", "reno", "bbr")
DEFAULT_CONGESTION_CONTROL: CongestionControl = "cubic"

MSS_BYTES = 1448  # an Ethernet MTU less IPv4, TCP and the timestamp option
CUBIC_C = 0.4
CUBIC_BETA = 0.7
RENO_CONSTANT = math.sqrt(1.5)
BBR_PROBE_RTT_S = 0.2
BBR_PROBE_RTT_EVERY_S = 10.0

# measured ÷ standard formula, per region (docs/transport.md): the Reno-friendly region from Flink's connection on the
# LTE and 3G profiles (0.8 of the 1.45 a backlogged iperf3 flow gives), the CUBIC region from the satellite profile
CALIBRATION = {"reno": 1.16, "cubic": 0.95}

# Flink's defaults (taskmanager.network.memory.*): 2 exclusive buffers per channel, 8 floating per gate
DEFAULT_BUFFERS_PER_CHANNEL = 2
DEFAULT_FLOATING_BUFFERS_PER_GATE = 8


@dataclass(frozen=True)
class Path:
    """One direction of a WAN link as TCP sees it."""

    bandwidth_mbit: float
    rtt_ms: float  # both directions' delay: a link's one-way ``delay`` each way
    loss: float  # a fraction, 0..1
    congestion_control: CongestionControl = DEFAULT_CONGESTION_CONTROL


@dataclass(frozen=True)
class FlinkNetwork:
    """The taskmanager.network options that bound what crosses a link."""

    buffers_per_channel: int = DEFAULT_BUFFERS_PER_CHANNEL
    floating_buffers_per_gate: int = DEFAULT_FLOATING_BUFFERS_PER_GATE
    segment_bytes: int = SEGMENT_BYTES


def _mbit(segments_per_rtt: float, rtt_s: float) -> float:
    return segments_per_rtt * MSS_BYTES * 8 / rtt_s / 1e6


def reno_window(loss: float) -> float:
    """Mathis: the average congestion window, in segments."""
    return RENO_CONSTANT / math.sqrt(loss)


def cubic_window(loss: float, rtt_s: float) -> float:
    """RFC 9438 §5.1: CUBIC's average window in its own (concave/convex) region, in segments."""
    k = math.pow(CUBIC_C * (3 + CUBIC_BETA) / (4 * (1 - CUBIC_BETA)), 0.25)
    return k * math.pow(rtt_s / loss, 0.75)


def flow_goodput_mbit(path: Path) -> float:
    """What one TCP flow carries over ``path``, Mbit/s (never more than the link's rate)."""
    if path.bandwidth_mbit <= 0:
        return 0.0
    if path.loss <= 0 or path.rtt_ms <= 0:
        return path.bandwidth_mbit
    rtt_s = path.rtt_ms / 1000
    if path.congestion_control == "bbr":
        probing = min(1.0, (BBR_PROBE_RTT_S + rtt_s) / BBR_PROBE_RTT_EVERY_S)
        return path.bandwidth_mbit * (1 - path.loss) * (1 - probing)
    reno = CALIBRATION["reno"] * _mbit(reno_window(path.loss), rtt_s)
    if path.congestion_control == "reno":
        return min(path.bandwidth_mbit, reno)
    cubic = CALIBRATION["cubic"] * _mbit(cubic_window(path.loss, rtt_s), rtt_s)
    return min(path.bandwidth_mbit, max(reno, cubic))


def credit_cap_mbit(rtt_ms: float, network: FlinkNetwork, channels: int = 1) -> float:
    """What one input gate with ``channels`` remote channels can receive over a link of round trip ``rtt_ms``: its
    credit (exclusive buffers per channel plus the floating ones) in flight once per round trip. inf without delay."""
    if rtt_ms <= 0:
        return math.inf
    buffers = network.buffers_per_channel * channels + network.floating_buffers_per_gate
    return buffers * network.segment_bytes * 8 / (rtt_ms / 1000) / 1e6


def loss_wait_ms(path: Path, mbit: float) -> float:
    """The mean extra wait of a packet for retransmissions: a loss holds back what follows it on the connection for
    about a round trip (head-of-line), and a packet waits behind one when a loss happened in the round trip before
    it — ``min(1, p · packets per RTT) · RTT / 2`` on average."""
    if path.loss <= 0 or path.rtt_ms <= 0 or mbit <= 0:
        return 0.0
    per_rtt = mbit * 1e6 / 8 * (path.rtt_ms / 1000) / MSS_BYTES
    return min(1.0, path.loss * per_rtt) * path.rtt_ms / 2
