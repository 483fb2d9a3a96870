"""How records travel along a job edge: the share of an upstream subtask's output each downstream subtask receives."""

from __future__ import annotations

from collections.abc import Iterator

from placement.profile.format import ShipStrategy

BITS_PER_BYTE = 8
MBIT = 1e6

# Strategies where every upstream subtask feeds every downstream subtask.
ALL_TO_ALL = frozenset({ShipStrategy.HASH, ShipStrategy.REBALANCE, ShipStrategy.RESCALE, ShipStrategy.BROADCAST})


def output_mbit(records_out_per_s: float, bytes_per_record: float, rate_scale: float = 1.0) -> float:
    """Mbit/s a subtask emits: ``records_out · bytes_per_record · 8 / 10⁶``."""
    return records_out_per_s * bytes_per_record * BITS_PER_BYTE / MBIT * rate_scale


def share(strategy: ShipStrategy, i: int, j: int, n_down: int) -> float:
    """Fraction of upstream subtask ``i``'s output that reaches downstream subtask ``j`` (of ``n_down``)."""
    if strategy is ShipStrategy.FORWARD:
        return 1.0 if i == j else 0.0
    if strategy is ShipStrategy.GLOBAL:
        return 1.0 if j == 0 else 0.0
    if strategy is ShipStrategy.BROADCAST:
        return 1.0
    return 1.0 / n_down  # HASH / REBALANCE / RESCALE: spread evenly (keys assumed uniform)


def receivers(strategy: ShipStrategy, i: int, n_down: int) -> Iterator[int]:
    """Downstream subtasks that receive anything from upstream subtask ``i``."""
    if strategy is ShipStrategy.FORWARD:
        yield i
    elif strategy is ShipStrategy.GLOBAL:
        yield 0
    else:
        yield from range(n_down)


def senders(strategy: ShipStrategy, j: int, n_up: int) -> Iterator[int]:
    """Upstream subtasks that send anything to downstream subtask ``j``."""
    if strategy is ShipStrategy.FORWARD:
        yield j
    elif strategy is ShipStrategy.GLOBAL:
        if j == 0:
            yield from range(n_up)
    else:
        yield from range(n_up)
