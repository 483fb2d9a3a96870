"""What a TaskManager's Netty server spends sending its subtasks' buffers to another TaskManager (pure; issue 23).

**The cost.** A pair of subtasks in two TaskManagers hands every buffer it flushes to the sender's Netty server, which
writes it to the receiver's connection: a wake-up, a syscall and a message, whatever the buffer holds. So that CPU
goes with the buffers a pair *delivers* a second — one per flush cycle, ``min(records/s, 1000/buffer-timeout)``, plus
every full buffer (:func:`placement.costmodel.traffic.messages_per_s`) — not with its records or bytes. Measured on
this project's machine (Flink 2.3 from the wheel; the IoT job with its sources, Parse and Filter in one TaskManager
and the rest in another, two sending subtasks of one channel each over one connection; the ``Flink Netty*`` threads from
``/proc`` over 40 s): 20.3 deliveries/s → 7.56, 16.7 → 6.83, 2.7 → 1.22 thousandths of a server core, ≈ 0.36 a delivery
a second (:data:`SERVER_CORES_PER_DELIVERY`); the lab's placed Pis that send one stream sat on the same line (one
channel at 10 a second: 3.0–5.7, two bursty SQL channels at ~1.3: 1.0–1.3). A host's figure is that divided by its
speed, as a subtask's CPU is, unless the inventory states its own (``netty_cores_per_delivery``, in that host's cores).

**Once per flush cycle, not per pair.** The placed lab Pis say the work does not add up pair by pair: a Pi sending one
stream to the server spent 3.0–5.7 thousandths of a server core, one sending 4–5 pairs (2–4 sending subtasks)
4.0–6.7, one sending 7 pairs (5 senders) 5.4–7.1 — where 0.36 a delivery would give 14–16. Buffers flushed in the
same cycle go out in one wake-up of the Netty server (on those busier TaskManagers; the quiet one measured above, two
sending subtasks that each flushed on their own cycle, paid for both: 7.56 where this charges 3.6 — on a lab Pi 0.013
of its cores, inside the check's allowance). So a host is charged one delivery per flush cycle of the busiest pair
that leaves it: ``κ_h·min(d_max, flushes/s)`` (:func:`leaving_deliveries`), a constant of the host beside its
TaskManager's baseline (:attr:`placement.costmodel.model.HostSpec.netty_cores`), which every planner takes off the
host's usable cores. Which pairs leave depends on the plan; on an edge host some always do where a source is born
(sinks run on servers unless the host allows them), and the pairs out of those sources stand for the stream that
leaves: a pipeline's chained pairs flush at the pace their source feeds them. A host where nothing is born runs
nothing (no data flows down into an edge host) and is charged nothing. A host that may keep a whole pipeline, sink
and all, is charged as if it sent: the plan errs on the safe side by one flush cycle's work.

**Bursts.** The flush rule assumes a channel that has data whenever the timeout fires. A source that emits its records
in one burst a second (Flink's Table ``datagen`` does) flushes about once a second instead: its channels deliver
1.2–1.3 buffers a second at 130–400 records/s, not 10. Where the profile measured the buffers each subtask got
(``buffers_in_per_s``), each downstream subtask's *ratio* — measured (less the buffers sent full) over the flush cycles
the rule predicts at the profiled rates for all its input pairs — corrects the flush cycles of every pair into it
(:func:`delivery_ratios`); the same count is
what the network framing of :mod:`.traffic` charges on the wire. Several jobs on one host: each job's subtasks
flush on their own cycles, so their charges add up (:mod:`.jobs`).

Events travel as buffers too: where the profile measured them, a job's watermarks are in its counts (the lab's SQL job,
watermarks every 200 ms: 4.2–5.9 buffers a second a channel at ~200 records/s). Not charged: the receiving side's
Netty client (on a server).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from placement.profile.format import JobProfile

if TYPE_CHECKING:
    from placement.costmodel.model import Channel

SERVER_CORES_PER_DELIVERY = 0.00036  # measured (above): server cores per buffer delivered a second
MIN_PREDICTED = 0.5  # deliveries/s: a subtask predicted to get fewer has no ratio (too little to compare)


def host_cores_per_delivery(role: str, speed: float, given: float | None) -> float:
    """``κ_h``: what one buffer a second delivered to another TaskManager costs host ``h``, in its cores — the
    inventory's figure, else the measured server figure over the host's speed; 0 for servers (see the module doc)."""
    if role != "edge":
        return 0.0
    if given is not None:
        return float(given)
    return SERVER_CORES_PER_DELIVERY / speed


def delivery_ratios(
    profile: JobProfile, flushed: Mapping[str, Sequence[float]], full: Mapping[str, Sequence[float]]
) -> dict[str, tuple[float, ...]]:
    """Per vertex whose every subtask was measured: the share of its predicted flush cycles it got — measured
    ``buffers_in_per_s`` less the buffers sent full (``full``: vertex id -> per subtask, all inputs together) over the
    flush cycles the rule predicts (``flushed``, at the profiled rates) — and 1 where too few were predicted to
    compare."""
    out: dict[str, tuple[float, ...]] = {}
    for v in profile.vertices:
        rule, sent_full = flushed.get(v.id), full.get(v.id)
        measured = [s.buffers_in_per_s for s in sorted(v.subtasks, key=lambda s: s.index)]
        if rule is None or sent_full is None or len(rule) != len(measured) or any(m is None for m in measured):
            continue
        out[v.id] = tuple(
            max(0.0, m - f) / p if p >= MIN_PREDICTED else 1.0  # type: ignore[operator]
            for m, p, f in zip(measured, rule, sent_full, strict=True)
        )
    return out


def leaving_deliveries(channels: Iterable[Channel], births: Mapping[tuple[str, int], str]) -> dict[str, float]:
    """Per host where a source subtask is born (``births``: its key -> host): the deliveries a second of the busiest
    pair out of those subtasks, at most one per flush cycle (see the module doc)."""
    out: dict[str, float] = {}
    for ch in channels:
        for i in range(ch.n_up):
            host = births.get((ch.source, i))
            if host is None:
                continue
            out[host] = max(out.get(host, 0.0), min(ch.busiest_deliveries(i), ch.flush_cycles_per_s))
    return out
