"""How records travel along a job edge: which downstream subtasks each upstream subtask feeds, what share of its
records each one gets, and what a pair of subtasks puts on the wire.

**Pairs.** Flink wires FORWARD and RESCALE edges *pointwise* (:func:`placement.profile.edge_flows.pointwise_receivers`:
FORWARD ``i → i``; RESCALE from ``p`` to ``q`` subtasks in contiguous blocks, round-robin within a block), GLOBAL to
downstream subtask 0, and HASH, REBALANCE and BROADCAST *all-to-all*.

**Shares** of upstream subtask ``i``'s records reaching downstream ``j``: FORWARD and GLOBAL 1; RESCALE
``1/|receivers(i)|``; REBALANCE ``1/n_V``; HASH the measured share ``s_j`` of ``j`` (key skew; ``1/n_V`` when not
measured); BROADCAST 1 for every ``j`` (a copy each).

**On the wire** (the job's data plane between two TaskManagers): the serialized records plus Flink's network framing.
Each network message carries a header of :data:`~placement.flink.facts.MESSAGE_HEADER_BYTES`; a channel (one
upstream-downstream pair) sends a message when its buffer is flushed — every ``execution.buffer-timeout`` (100 ms by
default) if it has data, or when a :data:`~placement.flink.facts.SEGMENT_BYTES` buffer is full — so it sends
``min(records/s, 1000/timeout) + bytes/s ÷ segment`` messages per second. Framing is charged when the profile says how
the job flushes (``job.buffer_timeout_ms``, which ``placement profile`` always records); a hand-written profile without
it is charged its records' bytes alone. At a few hundred records/s that is 10 × 47 B per second per channel: 4 kbit/s, a
few per cent of a lightly used link; at high rates it vanishes.

Not modelled (and not part of what ``placement lab measure`` calls the job's data): TCP/IP headers, Flink's RPC
(heartbeats, checkpoint acknowledgements, metric dumps: about 20 kbit/s per TaskManager), credit announcements
flowing downstream-to-upstream, checkpoint barriers (one small event per channel per checkpoint).
"""

from __future__ import annotations

from placement.flink.facts import DEFAULT_BUFFER_TIMEOUT_MS, MESSAGE_HEADER_BYTES, SEGMENT_BYTES
from placement.profile.edge_flows import pointwise_receivers, pointwise_senders
from placement.profile.format import ShipStrategy

BITS_PER_BYTE = 8
MBIT = 1e6

# Strategies where every upstream subtask feeds every downstream subtask.
ALL_TO_ALL = frozenset({ShipStrategy.HASH, ShipStrategy.REBALANCE, ShipStrategy.BROADCAST})
POINTWISE = frozenset({ShipStrategy.FORWARD, ShipStrategy.RESCALE})


def output_mbit(records_out_per_s: float, bytes_per_record: float, rate_scale: float = 1.0) -> float:
    """Mbit/s of ``records_out · bytes_per_record · 8 / 10⁶``."""
    return records_out_per_s * bytes_per_record * BITS_PER_BYTE / MBIT * rate_scale


def receivers(strategy: ShipStrategy, i: int, n_up: int, n_down: int) -> range:
    """Downstream subtasks that receive anything from upstream subtask ``i``."""
    if strategy in POINTWISE:
        return pointwise_receivers(i, n_up, n_down)
    if strategy is ShipStrategy.GLOBAL:
        return range(1)
    return range(n_down)


def senders(strategy: ShipStrategy, j: int, n_up: int, n_down: int | None = None) -> range:
    """Upstream subtasks that send anything to downstream subtask ``j``.

    Without ``n_down`` (callers written before RESCALE was wired pointwise) a RESCALE edge counts every upstream
    subtask as a sender — a superset, so rules built on it stay safe; pass ``n_down`` for Flink's real wiring."""
    if strategy is ShipStrategy.FORWARD:
        return range(j, j + 1)
    if strategy is ShipStrategy.RESCALE and n_down is not None:
        return pointwise_senders(j, n_up, n_down)
    if strategy is ShipStrategy.GLOBAL:
        return range(n_up) if j == 0 else range(0)
    return range(n_up)


def share(
    strategy: ShipStrategy, i: int, j: int, n_up: int, n_down: int, receiver_shares: tuple[float, ...] | None = None
) -> float:
    """Fraction of upstream subtask ``i``'s records on this edge that reach downstream subtask ``j``."""
    if j not in receivers(strategy, i, n_up, n_down):
        return 0.0
    if strategy is ShipStrategy.BROADCAST or strategy is ShipStrategy.GLOBAL:
        return 1.0
    if strategy in POINTWISE:
        return 1.0 / len(pointwise_receivers(i, n_up, n_down))
    if strategy is ShipStrategy.HASH and receiver_shares is not None:
        return receiver_shares[j]
    return 1.0 / n_down  # REBALANCE, and HASH without measured shares: keys assumed uniform


def flushes_per_s(buffer_timeout_ms: float) -> float:
    """Buffer flushes per second of a channel that always has data (``inf`` with timeout 0: flush per record)."""
    return float("inf") if buffer_timeout_ms <= 0 else 1000.0 / buffer_timeout_ms


def messages_per_s(payload_mbit: float, bytes_per_record: float, flushes: float, ratio: float = 1.0) -> float:
    """Buffers a channel carrying ``payload_mbit`` of records delivers a second: ``min(records/s, flushes/s)`` flush
    cycles, times ``ratio`` — what the profile measured of them (:mod:`placement.costmodel.deliveries`: a source that
    emits in bursts flushes once a burst, not every timeout) — plus the buffers filled before their timeout."""
    if payload_mbit <= 0:
        return 0.0
    payload_bytes = payload_mbit * MBIT / BITS_PER_BYTE
    if bytes_per_record > 0:
        records = payload_bytes / bytes_per_record
    else:  # record size unknown: assume a flush's worth of records at least
        records = flushes if flushes != float("inf") else 1000.0 / DEFAULT_BUFFER_TIMEOUT_MS
    return min(records, flushes) * ratio + payload_bytes / SEGMENT_BYTES


def framing_mbit(messages: float) -> float:
    """Mbit/s of network-message headers ``messages`` a second add (see the module doc)."""
    return messages * MESSAGE_HEADER_BYTES * BITS_PER_BYTE / MBIT
