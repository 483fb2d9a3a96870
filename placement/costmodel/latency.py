"""Predicted latency of each source → sink path of the job under a plan (pure).

A *path* is a chain of job vertices from a source to a sink (:func:`source_sink_paths`). Under a plan its records
travel many subtask-level routes; the planner's rule that no data flows down to an edge host means a route crosses
**at most one** WAN uplink (it starts on an edge host or a server, goes up once, and stays on servers). The predicted
latency of a path is the mean latency of its slowest route::

    L(P) = Σ_{e ∈ P} F(e)  +  max over the crossings of P of ( delay(h) + T(e, i, h) + Q_h(ρ_h) )     (0 if none)

* ``F(e)`` — **buffer-flush wait** of the network exchange ``e`` (every job edge is one: chained operators are inside
  a vertex). A channel (one upstream-downstream subtask pair) sends its buffer when a :data:`BUFFER_BYTES` segment is
  full (every ``B/r`` for a channel filling at ``r`` bytes/s) and whenever its task's output flusher ticks (every
  ``execution.buffer-timeout`` ``τ``, 100 ms by default) — a tick does not start a new buffer, so the two are
  independent, and a record waits for the earlier: :func:`send_wait_ms`, ``τ/2`` for a slow channel, ``τ/3`` for one
  that fills a buffer per tick. ``F(e)`` is that wait averaged over the edge's channels weighted by the bytes they
  carry (what an average record waits). It depends on the rates, not on the placement: local channels flush the same
  way.
* ``delay(h)`` — the uplink's one-way delay (inventory ``links[].delay``).
* ``T(e, i, h)`` — transmission of the record's own network message at the uplink's rate: a flush carries
  ``min(r·τ, B)`` bytes plus :data:`~placement.flink.facts.MESSAGE_HEADER_BYTES`; the largest of upstream
  subtask ``i``'s channels on ``e`` is charged, whole: the receiver hands a buffer on only once all of it arrived.
* ``Q_h(ρ_h)`` — **queueing** at the shaped uplink (htb: a FIFO served at the link's rate) at utilisation
  ``ρ_h = Mbit/s on the link / bandwidth`` under the plan (job data, framing and checkpoint uploads, and what jobs
  already running send: ``plan --running``). Model:
  **M/G/1** with the network message as the service unit — messages from many channels' independent flush timers
  superpose to nearly Poisson arrivals, and Pollaczek–Khinchine gives the mean wait ``W = λ·E[S²] / (2(1 − ρ))``.
  No message exceeds one buffer, ``S ≤ S_max = (B + header)·8 / bandwidth``, so ``λ·E[S²] ≤ ρ·S_max`` and

      ``W ≤ ρ·S_max / (2(1 − ρ))``

  — the **M/D/1 waiting time of a full 32 KiB buffer**, an upper bound for any mix of partial buffers, and a function
  of ``ρ_h`` alone, which the ILP can bound (exact at high rates, where buffers are full; it overstates the wait of a
  link that carries small timeout flushes, where the wait is small anyway next to ``F``).
  The bound's figure — the upper prediction, the ILP's rows (:func:`placement.solver.constraints.latency_bound`)
  and the tests' brute force — is the chord interpolation of that curve at :data:`BREAKPOINTS` (:func:`queue_ms`):
  the curve is convex, so its chords lie above it (a sound upper bound, at most 11 % above it up to ρ = 0.9 and 13 %
  between 0.9 and 0.99) and their maximum is a convex piecewise-linear function an LP writes with one row per piece.
  Past :data:`MAX_UTILISATION` the queue has no useful bound (it grows without limit at ρ → 1): the wait is infinite,
  and a bounded plan keeps every uplink a bounded path crosses at or below it.

Two figures per path, then (:class:`PathLatency`):

* ``latency_ms`` — **the upper bound**: ``L(P)`` above with the chord bound ``Q_h``. The ILP's figure, what
  ``policy.max_latency_ms`` (``bound_ms``) is checked against (a plan over it is infeasible), the tables' "upper"
  columns and the picture's WAN edge labels.
* ``expected_ms`` — **the expected latency**: the same sum with the queue as the Pollaczek–Khinchine mean,
  ``W = Σ_k ρ_k·S_k / (2(1 − ρ_h))``, over the messages **of the other output flushers** crossing the uplink
  (:func:`expected_link_queue_ms`): each channel sends ``max(1/τ, r/B)`` messages/s of ``min(r·τ, B)`` + header bytes
  (:func:`channel_messages`), and a task's channels on one edge are flushed together by its one output flusher — a
  *periodic* stream (every ``τ``, or every full buffer), whose message is sent long before its next one (``ρ < 1``), so
  it never waits for its own previous message; the streams of other flushers are independent of it, and their
  superposition is taken as Poisson (P-K). A lone flusher on a link therefore expects no queue at all (the lab measured
  none at 81 % of a 2 Mbit/s uplink: ``benchmarks/latency_bound_lab.py``), where the Poisson mean of its own messages
  would charge it ~170 ms. The rest of the link's load — checkpoint uploads, what running jobs (and other jobs of a
  joint plan) send, framing beyond the messages' own headers — is taken as full buffers: their message sizes are
  unknown here, and a full buffer is the bound's assumption. The denominator keeps the whole ``ρ_h``: the other
  streams' busy periods include the flusher's own messages. And the message is sent after the link's **burst**
  (inventory ``links[].burst``): a token-bucket shaper — ``placement netem`` and the lab shape with htb, 10 ms of the
  rate and at least 3200 B — refills its bucket between a flusher's messages (the lab's 3200 B at 2 Mbit/s in 13 ms,
  against ``τ`` = 100 ms between them) and lets their first bytes go at once, so the expected send is
  ``max(0, S − burst)`` at the rate; the bound charges every byte at the rate (other traffic may have emptied the
  bucket), and a physical uplink has no burst (0, the default). So ``expected_ms ≤ latency_ms`` always. What the lab
  benchmark compares with the measured p50 of Flink's latency markers. Not counted: a message's wait behind the other
  messages of its own flush (a task flushing several crossing channels at once sends them one after another; the send
  term charges the largest one).

Not modelled: processing time inside the operators (busy time per record is microseconds next to the flush wait),
watermark and window delays (a window's output waits for its window: that is the job's semantics, not the
placement's), credit-based flow control stalls (a backpressured path has no steady-state latency).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import NamedTuple

from placement.costmodel.model import Assignment, Channel, HostSpec, PlacementProblem
from placement.costmodel.traffic import BITS_PER_BYTE, MBIT
from placement.flink.facts import MESSAGE_HEADER_BYTES, SEGMENT_BYTES
from placement.graphs import DiGraph

BUFFER_BYTES = SEGMENT_BYTES  # taskmanager.memory.segment-size: Flink's network buffer, 32 KiB
MAX_UTILISATION = 0.99
BREAKPOINTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.925, 0.95, 0.97, 0.98, MAX_UTILISATION)
MAX_PATHS = 2000  # more source→sink paths than this: no per-path figures (a job graph is rarely that wide)


# ---- the queue -----------------------------------------------------------------------------------------------------


def buffer_service_ms(bandwidth_mbit: float) -> float:
    """``S_max``: ms to send one full network buffer (and its header) at ``bandwidth_mbit``."""
    if bandwidth_mbit <= 0:
        return math.inf
    return (BUFFER_BYTES + MESSAGE_HEADER_BYTES) * BITS_PER_BYTE / (bandwidth_mbit * MBIT) * 1000.0


def md1_wait_ms(rho: float, service_ms: float) -> float:
    """The M/D/1 mean wait ``ρ·S / (2(1 − ρ))`` (``inf`` at ``ρ ≥ 1``)."""
    if rho <= 0:
        return 0.0
    if rho >= 1:
        return math.inf
    return rho * service_ms / (2.0 * (1.0 - rho))


@cache
def _unit_pieces() -> tuple[tuple[float, float], ...]:
    """(slope, intercept) of each chord of ``ρ/(2(1 − ρ))`` between consecutive :data:`BREAKPOINTS` (``S = 1``)."""
    pts = [(r, md1_wait_ms(r, 1.0)) for r in BREAKPOINTS]
    out = []
    for (r0, w0), (r1, w1) in pairwise(pts):
        slope = (w1 - w0) / (r1 - r0)
        out.append((slope, w0 - slope * r0))
    return tuple(out)


def queue_pieces(service_ms: float) -> tuple[tuple[float, float], ...]:
    """The chords of ``Q(ρ)`` for a link whose full buffer takes ``service_ms``: ``Q(ρ) = max_k (a_k·ρ + b_k)`` on
    ``[0, MAX_UTILISATION]``."""
    return tuple((a * service_ms, b * service_ms) for a, b in _unit_pieces())


def queue_ms(rho: float, service_ms: float) -> float:
    """``Q(ρ)``: the piecewise-linear upper bound of the M/D/1 wait of a full buffer (see the module doc); ``inf`` past
    :data:`MAX_UTILISATION`."""
    if rho > MAX_UTILISATION + 1e-9:
        return math.inf
    return max(0.0, max(a * rho + b for a, b in queue_pieces(service_ms)))


def link_queue_ms(h: HostSpec, mbit: float) -> float:
    """Queueing at edge host ``h``'s uplink carrying ``mbit`` of this plan (and what jobs already running send)."""
    mbit += h.running_total("mbit")
    bandwidth = h.uplink_mbit or 0.0
    if bandwidth <= 0:
        return 0.0 if mbit <= 0 else math.inf
    return queue_ms(mbit / bandwidth, buffer_service_ms(bandwidth))


# ---- what a channel adds ---------------------------------------------------------------------------------------------


def _pair_bytes_per_s(ch: Channel, i: int, j: int) -> float:
    return ch.up_out_mbit[i] * ch.share(i, j) * MBIT / BITS_PER_BYTE


def flush_wait_ms(ch: Channel) -> float:
    """``F(e)``: the mean time a record waits for its buffer to be sent, per channel :func:`send_wait_ms` of the
    timeout and the buffer's fill time, weighted by the bytes each channel carries (unweighted when the edge carries
    nothing)."""
    timeout = ch.buffer_timeout_ms
    if timeout <= 0:
        return 0.0  # flushed after every record
    waits, weights = [], []
    for i in range(ch.n_up):
        for j in ch.receivers(i):
            r = _pair_bytes_per_s(ch, i, j)
            fill_ms = BUFFER_BYTES / r * 1000.0 if r > 0 else math.inf
            waits.append(send_wait_ms(timeout, fill_ms))
            weights.append(r)
    if not waits:
        return timeout / 2.0
    total = sum(weights)
    if total <= 0:
        return sum(waits) / len(waits)
    return sum(w * r for w, r in zip(waits, weights)) / total


def send_wait_ms(timeout_ms: float, fill_ms: float) -> float:
    """Mean wait of a record for the next send of its channel: the output flusher's next tick (every ``τ``) or the
    moment its buffer is full (every ``B/r``), whichever comes first. A flush does not start a new buffer — the
    consumer takes what was written and the buffer fills on from there — so the two are independent periodic events:
    for a record arriving at a random time, the next tick is ``U(0, a)`` and the fill ``U(0, b)`` away, and
    ``E[min] = a/2 − a²/(6b)`` with ``a = min(τ, B/r)``, ``b = max(τ, B/r)`` — ``τ/2`` when buffers never fill
    between ticks, ``τ/3`` when they fill once per tick. (Measured on the lab, the source exchanges of the branching
    job, ~300 kB/s each, fill a buffer every ~105 ms: 24 and 29 ms per exchange over four starts, where ``τ/2`` said
    50 and this 34–35; the IoT job's at 111 kB/s: 41, this 44.)"""
    a, b = min(timeout_ms, fill_ms), max(timeout_ms, fill_ms)
    return a / 2.0 if math.isinf(b) else a / 2.0 - a * a / (6.0 * b)


def message_bytes(ch: Channel, i: int, j: int) -> float:
    """Bytes of one network message of channel ``(i, j)``: what it collects between flushes, at most a buffer, plus
    the header (with ``τ = 0``: one record)."""
    r = _pair_bytes_per_s(ch, i, j)
    if ch.buffer_timeout_ms <= 0:
        body = min(ch.bytes_per_record, BUFFER_BYTES)
    else:
        body = min(r * ch.buffer_timeout_ms / 1000.0, BUFFER_BYTES)
    return body + MESSAGE_HEADER_BYTES


def largest_message_bytes(ch: Channel, i: int) -> float:
    """Bytes of the largest message of upstream subtask ``i``'s channels on ``e``."""
    return max((message_bytes(ch, i, j) for j in ch.receivers(i)), default=0.0)


def send_ms(size_bytes: float, bandwidth_mbit: float, burst_bytes: float = 0.0) -> float:
    """ms to send a message of ``size_bytes`` over a link whose first ``burst_bytes`` leave at once (a shaper's full
    token bucket; 0 for the bound and for a physical link)."""
    if bandwidth_mbit <= 0:
        return math.inf
    return max(0.0, size_bytes - burst_bytes) * BITS_PER_BYTE / (bandwidth_mbit * MBIT) * 1000.0


def transmit_ms(ch: Channel, i: int, bandwidth_mbit: float) -> float:
    """``T(e, i, h)``: ms to send the largest message of upstream subtask ``i``'s channels on ``e`` over the link."""
    return send_ms(largest_message_bytes(ch, i), bandwidth_mbit)


# ---- the expected queue: the link's own message mix ------------------------------------------------------------------


def channel_messages(ch: Channel, i: int, j: int) -> tuple[float, float]:
    """(messages/s, bytes each) of channel ``(i, j)``: one message per flush — every ``τ``, or every full buffer when
    it fills faster — so ``max(1/τ, r/B)`` messages of :func:`message_bytes`; with ``τ = 0`` one per record. A
    channel that carries nothing sends nothing (Flink flushes no empty buffer)."""
    r = _pair_bytes_per_s(ch, i, j)
    size = message_bytes(ch, i, j)
    if r <= 0:
        return 0.0, size
    if ch.buffer_timeout_ms <= 0:
        body = size - MESSAGE_HEADER_BYTES  # one record (at most a buffer); size unknown: counted with the rest
        return (r / body if body > 0 else 0.0), size
    return max(1000.0 / ch.buffer_timeout_ms, r / BUFFER_BYTES), size


def mg1_wait_ms(rho: float, full_ms: float, mix: Sequence[tuple[float, float]]) -> float:
    """Pollaczek–Khinchine's mean wait ``Σ_k ρ_k·S_k / (2(1 − ρ))`` (``λ·E[S²] = Σ_k λ_k·S_k² = Σ_k ρ_k·S_k``) at a
    server at utilisation ``rho`` whose known streams ``mix`` are (utilisation ``ρ_k``, service ms ``S_k ≤ full_ms``)
    and whose remaining load ``rho − Σρ_k`` is messages of ``full_ms``.

    ``rho`` is the figure every other term uses (the link's load as :mod:`.evaluate` adds it up): where the streams
    add up to more (framing counted per message here, per record there), they are scaled to it — the mix only shapes
    the load. So the wait is at most the M/D/1 wait of ``full_ms`` at ``rho``, equal to it when every ``S_k`` is."""
    return _mg1_from_sums(rho, full_ms, sum(r for r, _ in mix), sum(r * s for r, s in mix))


def _mg1_from_sums(rho: float, full_ms: float, known: float, known_work: float) -> float:
    """:func:`mg1_wait_ms` from the mix's ``Σρ_k`` and ``Σρ_k·S_k``."""
    if rho <= 0:
        return 0.0
    if rho >= 1:
        return math.inf
    scale = min(1.0, rho / known) if known > 0 else 0.0
    rest = max(0.0, rho - scale * known)
    return (scale * known_work + rest * full_ms) / (2.0 * (1.0 - rho))


def _stream_sums(messages: Iterable[tuple[float, float]], ms_per_byte: float) -> tuple[float, float]:
    """``(Σρ_k, Σρ_k·S_k)`` of (messages/s, bytes) streams on a link that sends a byte in ``ms_per_byte``."""
    rho = work = 0.0
    for rate, size in messages:
        s_ms = size * ms_per_byte
        rho += rate * s_ms / 1000.0
        work += rate * s_ms / 1000.0 * s_ms
    return rho, work


def expected_link_queue_ms(
    h: HostSpec, mbit: float, messages: Iterable[tuple[float, float]], own: Iterable[tuple[float, float]] = ()
) -> float:
    """The expected queue wait at edge host ``h``'s uplink carrying ``mbit`` of this plan (and what jobs already
    running send) for a message of one flusher's stream ``own``, ``messages`` the (messages/s, bytes) of the plan's
    *other* channels crossing it (:func:`channel_messages`): M/G/1 over that mix, the rest of the load — less ``own``,
    which never waits for itself (see the module doc) — as full buffers. At most :func:`link_queue_ms`."""
    bandwidth = h.uplink_mbit or 0.0
    if bandwidth <= 0:
        return 0.0 if mbit + h.running_total("mbit") <= 0 else math.inf
    ms_per_byte = BITS_PER_BYTE / (bandwidth * MBIT) * 1000.0
    return _expected_queue_from_sums(h, mbit, _stream_sums(messages, ms_per_byte), _stream_sums(own, ms_per_byte)[0])


def _expected_queue_from_sums(h: HostSpec, mbit: float, others: tuple[float, float], own_rho: float) -> float:
    """:func:`expected_link_queue_ms` from the other streams' ``(Σρ_k, Σρ_k·S_k)`` and the own stream's ``ρ``."""
    mbit += h.running_total("mbit")
    bandwidth = h.uplink_mbit or 0.0
    if bandwidth <= 0:
        return 0.0 if mbit <= 0 else math.inf
    rho = mbit / bandwidth
    if rho >= 1:
        return math.inf
    own_rho = min(own_rho, rho)
    # P-K's numerator over the others only; the denominator keeps the whole load (the others' messages are served in
    # busy periods that own's messages lengthen too)
    wait = _mg1_from_sums(rho - own_rho, buffer_service_ms(bandwidth), *others)
    return wait * (1.0 - (rho - own_rho)) / (1.0 - rho)


# ---- paths -----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JobPath:
    vertices: tuple[str, ...]  # vertex ids, source first
    name: str  # "Source: Sensors → Parse → Sink"
    flush_ms: float  # Σ F(e) over its edges
    bound_ms: float | None  # policy.max_latency_ms for this path (None: unbounded)

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        return tuple(zip(self.vertices, self.vertices[1:]))


def source_sink_paths(problem: PlacementProblem) -> tuple[JobPath, ...] | None:
    """Every source → sink path of the job graph, in a deterministic order (None: more than :data:`MAX_PATHS`)."""
    cache: tuple[tuple[JobPath, ...] | None] | None = problem.__dict__.get("_latency_paths")
    if cache is not None:
        return cache[0]
    channel = {(ch.source, ch.target): ch for ch in problem.channels}
    g = DiGraph(problem.vertex_order, channel)
    flush = {key: flush_wait_ms(ch) for key, ch in channel.items()}
    order = {v: n for n, v in enumerate(problem.vertex_order)}
    sources = [v for v in problem.vertex_order if g.in_degree(v) == 0]
    sinks = [v for v in problem.vertex_order if g.out_degree(v) == 0]
    paths: list[JobPath] | None = []
    names = problem.vertex_names
    for s in sources:
        reach = g.descendants(s) | {s}  # a fleet's job has thousands of sources and sinks: pairs that connect only
        for t in (t for t in sinks if t in reach):
            for p in sorted(g.simple_paths(s, t) if s != t else [[s]], key=lambda p: [order[v] for v in p]):
                assert paths is not None
                paths.append(
                    JobPath(
                        vertices=tuple(p),
                        name=" → ".join(names[v] for v in p),
                        flush_ms=sum(flush[e] for e in pairwise(p)),
                        bound_ms=problem.latency_bounds.get((s, t)),
                    )
                )
                if len(paths) > MAX_PATHS:
                    paths = None
                    break
            if paths is None:
                break
        if paths is None:
            break
    result = tuple(paths) if paths is not None else None
    problem.__dict__["_latency_paths"] = (result,)  # frozen dataclass: cached like its cached_properties
    return result


@dataclass(frozen=True)
class PathLatency:
    name: str
    vertices: tuple[str, ...]
    latency_ms: float  # the bound: flush_ms + delay_ms + transmit_ms + queue_ms (the ILP's; checked against bound_ms)
    flush_ms: float
    delay_ms: float = 0.0  # of the slowest crossing (0: the path crosses no uplink)
    transmit_ms: float = 0.0
    queue_ms: float = 0.0  # the chord bound of the M/D/1 wait of a full buffer at that uplink
    link: str | None = None  # the uplink of the slowest crossing
    utilisation: float | None = None  # that uplink's, under the plan
    bound_ms: float | None = None  # policy.max_latency_ms for this path
    expected_ms: float | None = None  # flush + the slowest crossing with the M/G/1 mean queue (None: not computed)
    expected_queue_ms: float | None = None  # that mean queue wait (at the crossing slowest by these figures)

    @property
    def over_bound(self) -> bool:
        return self.bound_ms is not None and self.latency_ms > self.bound_ms + 1e-6


Crossing = tuple[float, float, float, float, str]  # (total, delay, transmit, queue, edge host)


class _CrossingSend(NamedTuple):
    """Upstream subtask ``subtask`` of an edge sends across ``host``'s uplink: its delay and its message's send time,
    every byte at the rate (the bound's) and after the link's burst (the expected figure's)."""

    delay: float
    send: float
    expected_send: float
    host: str
    subtask: int


def _slowest(crossings: Iterable[Crossing | None]) -> Crossing | None:
    return max((c for c in crossings if c is not None), key=lambda c: c[0], default=None)


def _crossing_sends(
    problem: PlacementProblem, assignment: Assignment
) -> tuple[
    dict[tuple[str, str], list[_CrossingSend]], dict[str, dict[tuple[tuple[str, str], int], list[tuple[float, float]]]]
]:
    """Per edge: its crossings of an uplink; per uplink and flusher (edge, upstream subtask): the messages of its
    channels that cross."""
    hosts = problem.host_by_name
    sends: dict[tuple[str, str], list[_CrossingSend]] = {}
    messages: dict[str, dict[tuple[tuple[str, str], int], list[tuple[float, float]]]] = {}
    for ch in problem.channels:
        edge = (ch.source, ch.target)
        crossing = sends.setdefault(edge, [])
        for i in range(ch.n_up):
            hu = assignment[(ch.source, i)]
            if not hosts[hu].is_edge:
                continue
            away = [j for j in ch.receivers(i) if assignment[(ch.target, j)] != hu]
            if away:
                h, size = hosts[hu], largest_message_bytes(ch, i)
                crossing.append(
                    _CrossingSend(
                        h.crossing_ms,
                        send_ms(size, h.uplink_mbit or 0.0),
                        send_ms(size, h.uplink_mbit or 0.0, h.uplink_burst_bytes),
                        hu,
                        i,
                    )
                )
                messages.setdefault(hu, {})[(edge, i)] = [channel_messages(ch, i, j) for j in away]
    return sends, messages


def path_latencies(
    problem: PlacementProblem, assignment: Assignment, link_mbit: dict[str, float]
) -> tuple[PathLatency, ...]:
    """:math:`L(P)` of every source → sink path under ``assignment`` (see the module doc), with ``link_mbit`` the
    Mbit/s on each edge host's uplink under it (:func:`placement.costmodel.evaluate.evaluate`'s): the bound and the
    expected figure."""
    paths = source_sink_paths(problem)
    if not paths:
        return ()
    hosts = problem.host_by_name
    sends, messages = _crossing_sends(problem, assignment)
    queue = {h: link_queue_ms(hosts[h], mbit) for h, mbit in link_mbit.items()}
    # per uplink, each flusher's (Σρ_k, Σρ_k·S_k) and the link's totals: a flusher's "others" are the totals less its
    # own, so a link with many crossing flushers costs one pass, not one per flusher
    sums = {
        hu: {
            key: _stream_sums(ms, BITS_PER_BYTE / ((hosts[hu].uplink_mbit or 0.0) * MBIT) * 1000.0)
            for key, ms in by_key.items()
        }
        for hu, by_key in messages.items()
        if (hosts[hu].uplink_mbit or 0.0) > 0
    }
    totals = {hu: (sum(r for r, _ in per.values()), sum(w for _, w in per.values())) for hu, per in sums.items()}

    def expected_queue(edge: tuple[str, str], i: int, hu: str) -> float:
        """What a message of flusher (edge, i) waits at ``hu``'s uplink: the other flushers' messages ahead of it."""
        if hu not in sums:
            return expected_link_queue_ms(hosts[hu], link_mbit[hu], ())
        own_rho, own_work = sums[hu][(edge, i)]
        others = (max(0.0, totals[hu][0] - own_rho), max(0.0, totals[hu][1] - own_work))
        return _expected_queue_from_sums(hosts[hu], link_mbit[hu], others, own_rho)

    def slowest(
        edge: tuple[str, str],
        q: Callable[[tuple[str, str], int, str], float],
        expected: bool,
    ) -> Crossing | None:
        crossings = []
        for c in sends[edge]:
            send, wait = (c.expected_send if expected else c.send), q(edge, c.subtask, c.host)
            crossings.append((c.delay + send + wait, c.delay, send, wait, c.host))
        return _slowest(crossings)

    # the slowest crossing of each edge, by each figure
    worst = {e: slowest(e, lambda _e, _i, hu: queue[hu], False) for e in sends}
    worst_expected = {e: slowest(e, expected_queue, True) for e in sends}
    out = []
    for p in paths:
        bound, mean = _slowest(worst[e] for e in p.edges), _slowest(worst_expected[e] for e in p.edges)
        if bound is None or mean is None:
            out.append(
                PathLatency(
                    name=p.name,
                    vertices=p.vertices,
                    latency_ms=p.flush_ms,
                    flush_ms=p.flush_ms,
                    bound_ms=p.bound_ms,
                    expected_ms=p.flush_ms,
                    expected_queue_ms=0.0,
                )
            )
            continue
        total, delay, tx, q, link = bound
        h = hosts[link]
        out.append(
            PathLatency(
                name=p.name,
                vertices=p.vertices,
                latency_ms=p.flush_ms + total,
                flush_ms=p.flush_ms,
                delay_ms=delay,
                transmit_ms=tx,
                queue_ms=q,
                link=f"{link}→{h.uplink_to}",
                utilisation=(link_mbit[link] + h.running_total("mbit")) / h.uplink_mbit if h.uplink_mbit else None,
                bound_ms=p.bound_ms,
                expected_ms=p.flush_ms + mean[0],
                expected_queue_ms=mean[3],
            )
        )
    return tuple(out)
