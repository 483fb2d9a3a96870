"""What travels along each job edge, from Flink's per-subtask figures (pure; used by :mod:`placement.profile.rules`).

**What Flink 2.3 reports** (measured on a real cluster, every vertex and subtask listed): per subtask, task-scoped
``numRecordsIn``/``numRecordsOut``/``numBytesIn``/``numBytesOut`` (+ ``…PerSecond``), ``numBuffersOut``,
``numBytesInLocal``/``numBytesInRemote``; per operator ``<op>.numRecordsIn``/``<op>.numRecordsOut``;
``Shuffle.Netty.Output.Buffers.*`` and ``Shuffle.Netty.Input.Buffers.*`` are pool and queue gauges. Nothing is per
job edge: ``numBytesOut`` sums every output partition and counts a broadcast record once per receiver;
``numRecordsOut`` counts every record once, side-output records included; ``numBytesIn``/``numRecordsIn`` sum every
input gate (a two-input operator has one ``numRecordsIn`` for both); local/remote splits by locality, not by gate;
per-gate metrics (``taskmanager.network.detailed-metrics``) are queue lengths. So the edges are resolved from both
ends, in this order (the first rule that applies wins; ``basis`` records which):

1. **producer** — the upstream vertex has this one output edge: its ``numBytesOut`` (÷ receivers for BROADCAST) and
   ``numRecordsOut`` are the edge's, subtask by subtask.
2. **consumer** — the downstream vertex has this one input edge: its subtasks' ``numBytesIn``/``numRecordsIn`` (÷
   receivers for BROADCAST: each receives a copy) are the edge's. Upstream subtask ``i`` is credited with exactly what
   its receivers got where Flink wires them pointwise (FORWARD; RESCALE with more downstream than upstream subtasks),
   else with a share of the total in proportion to its own ``numBytesOut`` (equal shares if unknown).
3. **remainder** — of the edges at one vertex all but one are known: the last gets what is left of the vertex's
   total (``numBytesOut`` for an upstream vertex, ``numBytesIn`` for a downstream one). Repeated until nothing changes.
4. **fan-out rule** — what is still open (an output that fans out into consumers that have other inputs too): each
   open edge carries the same records (Flink sends a record to every consumer of its stream), the bytes left of
   ``numBytesOut`` split evenly over the copies they deliver. Side outputs break this rule (they carry other
   records); they are resolved by rule 2 whenever their consumer has no other input.

**Key skew.** For a HASH edge the downstream subtasks' shares of the records are measured (``receiver_shares``):
from their ``numBytesIn`` (records if bytes are missing) — exact when the downstream vertex has this one input,
its shares over all inputs together otherwise. Every upstream subtask is assumed to spread its keys alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placement.profile.format import ShipStrategy, copies

EPS = 1e-9


@dataclass(frozen=True)
class SubtaskIO:
    """Mean per-second figures of one subtask (None: Flink did not report it)."""

    records_in: float | None = None
    records_out: float | None = None
    bytes_in: float | None = None
    bytes_out: float | None = None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    strategy: ShipStrategy


@dataclass(frozen=True)
class EdgeFigures:
    records_per_s: tuple[float, ...]  # per upstream subtask, one copy
    bytes_per_s: tuple[float, ...]
    basis: str
    receiver_shares: tuple[float, ...] | None = None


def pointwise_receivers(i: int, n_up: int, n_down: int) -> range:
    """Downstream subtasks Flink connects to upstream subtask ``i`` on a POINTWISE edge (FORWARD, RESCALE).

    Flink's rule (``VertexInputInfoComputationUtils.computeVertexInputInfoForPointwise``): with ``n_up >= n_down``
    downstream ``j`` consumes upstream ``[⌊j·n_up/n_down⌋, ⌊(j+1)·n_up/n_down⌋)``, so upstream ``i`` feeds the one
    ``j = ⌈(i+1)·n_down/n_up⌉ − 1``; with fewer upstream subtasks, upstream ``i`` feeds downstream
    ``[⌈i·n_down/n_up⌉, ⌈(i+1)·n_down/n_up⌉)``."""
    if n_up >= n_down:
        j = -(-(i + 1) * n_down // n_up) - 1
        return range(j, j + 1)
    return range(-(-i * n_down // n_up), -(-(i + 1) * n_down // n_up))


def pointwise_senders(j: int, n_up: int, n_down: int) -> range:
    """Upstream subtasks feeding downstream ``j`` on a POINTWISE edge (the inverse of :func:`pointwise_receivers`)."""
    if n_up >= n_down:
        return range(j * n_up // n_down, (j + 1) * n_up // n_down)
    i = j * n_up // n_down
    return range(i, i + 1)


def _known(figures: list[float] | None) -> list[float]:
    """An edge's figures once a rule set them (the rules read only edges they or an earlier rule completed)."""
    assert figures is not None
    return figures


def _vector(rows: Sequence[SubtaskIO], attr: str) -> list[float] | None:
    """One figure of every subtask of a vertex; None when no subtask reported it (a single gap counts as 0)."""
    values = [getattr(r, attr) for r in rows]
    if all(v is None for v in values):
        return None
    return [max(0.0, v) if v is not None else 0.0 for v in values]


def _weights(rows: Sequence[SubtaskIO]) -> list[float]:
    """How an upstream vertex's subtasks share what it sends: by their numBytesOut, else numRecordsOut, else evenly."""
    for attr in ("bytes_out", "records_out"):
        v = _vector(rows, attr)
        if v is not None and sum(v) > EPS:
            total = sum(v)
            return [x / total for x in v]
    return [1.0 / len(rows)] * len(rows)


def _split(total: float, weights: Sequence[float]) -> list[float]:
    return [total * w for w in weights]


class _Solver:
    def __init__(self, parallelism: Mapping[str, int], io: Mapping[str, Sequence[SubtaskIO]], edges: Sequence[Edge]):
        self.p = parallelism
        self.io = io
        self.edges = edges
        self.m = [copies(e.strategy, parallelism[e.target]) for e in edges]
        self.outs: dict[str, list[int]] = {}
        self.ins: dict[str, list[int]] = {}
        for k, e in enumerate(edges):
            self.outs.setdefault(e.source, []).append(k)
            self.ins.setdefault(e.target, []).append(k)
        self.bytes: list[list[float] | None] = [None] * len(edges)
        self.records: list[list[float] | None] = [None] * len(edges)
        self.basis: list[str | None] = [None] * len(edges)

    def _set(self, k: int, records: list[float], bytes_: list[float], basis: str) -> None:
        self.records[k], self.bytes[k], self.basis[k] = records, bytes_, basis

    def _open(self, ks: Sequence[int]) -> list[int]:
        return [k for k in ks if self.bytes[k] is None]

    def producer(self) -> None:
        for k, e in enumerate(self.edges):
            rows = self.io[e.source]
            bo = _vector(rows, "bytes_out")
            if len(self.outs[e.source]) == 1 and bo is not None:
                ro = _vector(rows, "records_out") or [0.0] * len(rows)
                self._set(k, ro, [b / self.m[k] for b in bo], "producer")

    def consumer(self) -> None:
        for k in self._open(range(len(self.edges))):
            e = self.edges[k]
            down = self.io[e.target]
            bi = _vector(down, "bytes_in")
            if len(self.ins[e.target]) != 1 or bi is None:
                continue
            ri = _vector(down, "records_in") or [0.0] * len(down)
            n_up, n_down = self.p[e.source], self.p[e.target]
            w = _weights(self.io[e.source])
            if e.strategy in (ShipStrategy.FORWARD, ShipStrategy.RESCALE):  # pointwise: receivers are known
                rec, byt = [0.0] * n_up, [0.0] * n_up
                for j in range(n_down):
                    senders = pointwise_senders(j, n_up, n_down)
                    ws = [w[i] for i in senders]
                    total = sum(ws)
                    for i, wi in zip(senders, ws, strict=True):
                        share = wi / total if total > EPS else 1.0 / len(senders)
                        rec[i] += ri[j] * share
                        byt[i] += bi[j] * share
                self._set(k, rec, byt, "consumer")
            else:
                self._set(k, _split(sum(ri) / self.m[k], w), _split(sum(bi) / self.m[k], w), "consumer")

    def remainder(self) -> bool:
        changed = False
        for vid, ks in self.outs.items():
            open_ = self._open(ks)
            rows = self.io[vid]
            bo = _vector(rows, "bytes_out")
            if len(open_) != 1 or bo is None:
                continue
            k = open_[0]
            ro = _vector(rows, "records_out") or [0.0] * len(rows)
            done = [x for x in ks if x != k]
            byt, rec = [], []
            for i in range(len(rows)):
                left = bo[i] - sum(_known(self.bytes[x])[i] * self.m[x] for x in done)
                byt.append(max(0.0, left) / self.m[k])
                # records: a side output carries what the other outputs did not; a fan-out carries them all again
                rest = ro[i] - sum(_known(self.records[x])[i] for x in done)
                rec.append(rest if rest > 0.02 * ro[i] else ro[i])
            self._set(k, rec, byt, "remainder")
            changed = True
        for vid, ks in self.ins.items():
            open_ = self._open(ks)
            bi = _vector(self.io[vid], "bytes_in")
            if len(open_) != 1 or bi is None:
                continue
            k = open_[0]
            ri = _vector(self.io[vid], "records_in") or [0.0] * len(bi)
            done = [x for x in ks if x != k]
            got_b = sum(sum(_known(self.bytes[x])) * self.m[x] for x in done)
            got_r = sum(sum(_known(self.records[x])) * self.m[x] for x in done)
            w = _weights(self.io[self.edges[k].source])
            self._set(
                k,
                _split(max(0.0, sum(ri) - got_r) / self.m[k], w),
                _split(max(0.0, sum(bi) - got_b) / self.m[k], w),
                "remainder",
            )
            changed = True
        return changed

    def fan_out_rule(self) -> None:
        for vid, ks in self.outs.items():
            open_ = self._open(ks)
            rows = self.io[vid]
            bo = _vector(rows, "bytes_out")
            if not open_ or bo is None:
                continue
            ro = _vector(rows, "records_out") or [0.0] * len(rows)
            done = [x for x in ks if x not in open_]
            delivered = sum(self.m[k] for k in open_)
            byt = [
                max(0.0, bo[i] - sum(_known(self.bytes[x])[i] * self.m[x] for x in done)) / delivered
                for i in range(len(rows))
            ]
            for k in open_:
                self._set(k, list(ro), list(byt), "fan-out rule")

    def shares(self, k: int) -> tuple[float, ...] | None:
        e = self.edges[k]
        if e.strategy is not ShipStrategy.HASH:
            return None
        for attr in ("bytes_in", "records_in"):
            v = _vector(self.io[e.target], attr)
            if v is not None and sum(v) > EPS:
                return tuple(x / sum(v) for x in v)
        return None


def attribute(
    parallelism: Mapping[str, int], io: Mapping[str, Sequence[SubtaskIO]], edges: Sequence[Edge]
) -> list[EdgeFigures | None]:
    """Per edge (in the order given): what each upstream subtask puts on it, by the rules above; None for an edge
    no rule can resolve (its upstream vertex reported no bytes at all)."""
    s = _Solver(parallelism, io, edges)
    s.producer()
    s.consumer()
    while s.remainder():
        pass
    s.fan_out_rule()
    out: list[EdgeFigures | None] = []
    for k in range(len(edges)):
        rec, byt, basis = s.records[k], s.bytes[k], s.basis[k]
        out.append(
            None
            if rec is None or byt is None or basis is None
            else EdgeFigures(tuple(rec), tuple(byt), basis, s.shares(k))
        )
    return out
