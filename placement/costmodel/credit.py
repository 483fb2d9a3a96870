"""Where a channel crossing an uplink carries more than its credit lets through in a round trip.

A remote input channel may have its exclusive buffers and, at most, its gate's floating ones in flight; at a long
round trip that caps the channel below what the link and TCP carry (placement.costmodel.transport). Buffers cost
memory on the receiving TaskManager only (nothing flows down into an edge host, so that is a server), 32 KiB each per
remote channel: the plan does not give up a placement for it, it names the ``flink.network`` setting that lifts it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from placement.costmodel.model import Assignment, PlacementProblem
from placement.costmodel.transport import FlinkNetwork


@dataclass(frozen=True)
class CreditNeed:
    link: str
    channel: str  # "Source → Target (i/n → j/m)"
    mbit: float
    credit_mbit: float
    buffers_per_channel: int  # the fewest exclusive buffers that carry it without the floating ones


def credit_needs(problem: PlacementProblem, assignment: Assignment, network: FlinkNetwork) -> list[CreditNeed]:
    """The busiest crossing channel of each uplink whose flow is above its credit (empty when all fit)."""
    worst: dict[str, CreditNeed] = {}
    names = problem.vertex_names
    for ch in problem.channels:
        for i in range(ch.n_up):
            h = problem.host_by_name[assignment[(ch.source, i)]]
            if not h.is_edge or h.uplink_credit_mbit is None:
                continue
            for j in ch.receivers(i):
                if assignment[(ch.target, j)] == h.name:
                    continue
                mbit = ch.flow_mbit(i, j)
                if mbit <= h.uplink_credit_mbit or (h.name in worst and worst[h.name].mbit >= mbit):
                    continue
                rtt_s = 2 * h.uplink_delay_ms / 1000
                buffers = math.ceil(mbit * 1e6 / 8 * rtt_s / network.segment_bytes - 1e-9)
                worst[h.name] = CreditNeed(
                    link=f"{h.name}→{h.uplink_to}",
                    channel=f"{names[ch.source]} → {names[ch.target]} ({i + 1}/{ch.n_up} → {j + 1}/{ch.n_down})",
                    mbit=mbit,
                    credit_mbit=h.uplink_credit_mbit,
                    buffers_per_channel=max(buffers, network.buffers_per_channel),
                )
    return list(worst.values())


def credit_notes(needs: list[CreditNeed], network: FlinkNetwork) -> list[str]:
    """One note per uplink, and the setting that lifts them all."""
    if not needs:
        return []
    notes = [
        f"link {n.link}: channel {n.channel} carries {n.mbit:.3g} Mbit/s, its credit "
        f"({network.buffers_per_channel} + {network.floating_buffers_per_gate} buffers a round trip) "
        f"{n.credit_mbit:.3g}: it would back-pressure"
        for n in needs
    ]
    buffers = max(n.buffers_per_channel for n in needs)
    notes.append(
        f"set flink.network.buffers_per_channel: {buffers} (taskmanager.network.memory.buffers-per-channel; "
        f"{buffers * network.segment_bytes // 1024} KiB per remote input channel on the receiving TaskManager)"
    )
    return notes
