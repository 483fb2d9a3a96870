"""Target rates: what every operator has to process when the sources run at a target rate (pure).

DS2's account of an operator (Kalavri et al., OSDI 2018), on the figures of a profile:

* **true processing rate** ``λ_v`` — records one instance handles per second of busy time on a server core
  (``records_in / busy``, busy in server cores after the busy-time rule of :mod:`.demand`). Its inverse is the CPU
  cost of one record: an instance that receives ``r`` records/s needs ``r / λ_v`` server cores, ``r / (λ_v · σ_h)``
  cores of host ``h``, and *keeps up* on ``h`` when that is at most the utilisation target ``ρ`` of its one thread:
  ``r ≤ λ_v · σ_h · ρ``.
* **selectivity** — records out per record in, as measured.

**Propagation.** Each source ``S`` gets a target output rate (``--rate-scale X``: ``X ×`` its measured rate;
``--target-rate "S=records/s"``: that rate), i.e. a factor ``f_S = target / measured``. Downstream, a vertex's factor
is the mean of its inputs' factors weighted by the records each input delivers (``out(u)``, ``× n_v`` for a BROADCAST
input, which hands every instance a copy), and its target input and output are ``f_v ×`` its measured ones — so
selectivities are kept, and at ``f = 1`` every figure is the profile's. A join of a doubled and an unchanged stream
doubles only its share of the doubled one.

**Per instance.** At parallelism ``p`` an instance of ``v`` receives ``A_v / p + B_v`` records/s: ``A_v`` is the
input that is partitioned over the instances (FORWARD, HASH, REBALANCE, RESCALE, GLOBAL), ``B_v`` the broadcast
input every instance sees in full. The output of the vertex does not depend on its own parallelism (broadcast inputs
are taken at their measured share of the output, as profiled). Even shares across instances are assumed: a key skew
measured at one parallelism says nothing about another.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from placement.costmodel import demand
from placement.errors import BadInput
from placement.profile.format import EdgeProfile, JobProfile, ShipStrategy, VertexProfile


@dataclass(frozen=True)
class VertexRates:
    """Target figures of one vertex (records/s of all its instances together unless said otherwise)."""

    vertex_id: str
    factor: float  # target / measured
    records_in_per_s: float  # target input (sources: records they produce)
    records_out_per_s: float  # target output
    partitioned_in: float  # A_v: split evenly over the instances
    broadcast_in: float  # B_v: every instance receives all of it
    cores_per_record: float | None  # 1/λ_v in server-core seconds, beyond the fixed part; None: no record measured
    estimated: bool  # the busy-time rule filled in (see demand)
    fixed_cores: float = 0.0  # server cores an instance uses whatever its rate (demand: the fixed share)
    floor_cores: float = demand.MIN_CORES  # the least an instance costs (demand.floor_cores)

    @property
    def true_rate(self) -> float | None:
        """``λ_v``: records per busy server-core second (None: unknown)."""
        return 1.0 / self.cores_per_record if self.cores_per_record else None

    def instance_in(self, p: int) -> float:
        """Records/s one of ``p`` instances receives: ``A_v / p + B_v``."""
        return self.partitioned_in / p + self.broadcast_in

    def instance_out(self, p: int) -> float:
        return self.records_out_per_s / p

    def instance_cores(self, p: int) -> float:
        """Server cores one of ``p`` instances needs (never below its floor, :func:`.demand.floor_cores`): its fixed
        part and its records' part."""
        if self.cores_per_record is None:
            return self.floor_cores
        return max(self.fixed_cores + self.instance_in(p) * self.cores_per_record, self.floor_cores)

    def min_parallelism(self, cores: float, upper: int) -> int | None:
        """Smallest ``p ≤ upper`` whose instances each need at most ``cores`` server cores (None: none does).
        An instance's need falls as ``p`` grows, so this is a bisection."""
        if self.instance_cores(upper) > cores:
            return None
        low, high = 1, upper
        while low < high:
            mid = (low + high) // 2
            if self.instance_cores(mid) <= cores:
                high = mid
            else:
                low = mid + 1
        return low


def _produced(v: VertexProfile) -> float:
    """What a vertex processes per second as measured: its input, or for a source the records it produces."""
    return v.records_in_per_s or v.records_out_per_s


def cpu_line(v: VertexProfile) -> tuple[float, float | None, bool]:
    """One instance's server cores as ``fixed + records/s × per_record`` (:func:`.demand.at_scale`: the fixed share of
    its cores at the profiled rate, and the rest per record), and whether estimated; ``per_record`` None when no
    record was measured."""
    cores = records = 0.0
    counted = 0
    estimated = False
    for sp in v.subtasks:
        cpu = demand.server_cores(v, sp)
        estimated |= cpu.estimated
        rate = sp.records_in_per_s or sp.records_out_per_s
        if rate > 0:
            cores += cpu.server_cores
            records += rate
            counted += 1
    if records <= 0:
        return 0.0, None, estimated
    theta = demand.fixed_share(v)
    return theta * cores / counted, (1.0 - theta) * cores / records, estimated


def parse_target_rates(text: str, option: str = "--target-rate") -> dict[str, float]:
    """``"Source: A=60000,Source: B=2e4"`` -> ``{"Source: A": 60000.0, ...}`` (records/s per source vertex)."""
    out: dict[str, float] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = item.rpartition("=")
        name = name.strip()
        if not sep or not name:
            raise BadInput(f"{item!r} is not SOURCE=records/s", field=option)
        try:
            rate = float(value)
        except ValueError:
            raise BadInput(f"{value.strip()!r} is not a rate in records/s (in {item!r})", field=option) from None
        if not math.isfinite(rate) or rate < 0:
            raise BadInput(f"{value.strip()!r} is not a rate in records/s (in {item!r})", field=option)
        if name in out:
            raise BadInput(f"{name!r} is given twice", field=option)
        out[name] = rate
    if not out:
        raise BadInput("no SOURCE=records/s given", field=option)
    return out


def source_targets(
    profile: JobProfile,
    *,
    rate_scale: float = 1.0,
    target_rates: Mapping[str, float] | None = None,
    option: str = "--target-rate",
) -> dict[str, float]:
    """Target output (records/s) of every source vertex id: ``target_rates`` (keyed by source name or id) where given,
    else ``rate_scale ×`` the measured output."""
    sources = profile.sources()
    out = {v.id: v.records_out_per_s * rate_scale for v in sources}
    for key, rate in (target_rates or {}).items():
        match = [v for v in sources if key in (v.name, v.id)]
        if not match:
            if any(key in (v.name, v.id) for v in profile.vertices):
                raise BadInput(f"{key!r} is not a source of job {profile.job.name!r}", field=option)
            names = ", ".join(repr(v.name) for v in sources)
            raise BadInput(f"{key!r} names no source of job {profile.job.name!r} (sources: {names})", field=option)
        v = match[0]
        if v.records_out_per_s <= 0 and rate > 0:
            raise BadInput(
                f"source {v.name!r} produced no records in the profile: a target rate cannot be scaled from it",
                field=option,
            )
        out[v.id] = rate
    return out


def propagate(profile: JobProfile, targets: Mapping[str, float]) -> dict[str, VertexRates]:
    """Every vertex's target figures when each source ``s`` produces ``targets[s]`` records/s (see module doc)."""
    factor: dict[str, float] = {}
    rates: dict[str, VertexRates] = {}
    inputs: dict[str, list[EdgeProfile]] = {v.id: [] for v in profile.vertices}
    for e in profile.edges:
        inputs[e.target].append(e)
    for v in profile.topological_vertices():
        edges = inputs[v.id]
        # records each input delivers as measured; a BROADCAST input hands every instance a copy
        weights = [
            (
                e,
                profile.vertex(e.source).records_out_per_s
                * (v.parallelism if e.ship_strategy is ShipStrategy.BROADCAST else 1),
            )
            for e in edges
        ]
        measured = sum(w for _, w in weights)
        if not edges:
            factor[v.id] = (
                targets.get(v.id, v.records_out_per_s) / v.records_out_per_s if v.records_out_per_s > 0 else 1.0
            )
        elif measured > 0:
            factor[v.id] = sum(factor[e.source] * w for e, w in weights) / measured
        else:
            factor[v.id] = sum(factor[e.source] for e in edges) / len(edges)
        f = factor[v.id]
        received = f * _produced(v)
        delivered = sum(factor[e.source] * w for e, w in weights)
        broadcast = sum(factor[e.source] * w for e, w in weights if e.ship_strategy is ShipStrategy.BROADCAST)
        per_instance_broadcast = received * broadcast / delivered / v.parallelism if delivered > 0 else 0.0
        fixed, per_record, estimated = cpu_line(v)
        rates[v.id] = VertexRates(
            vertex_id=v.id,
            factor=f,
            records_in_per_s=received,
            records_out_per_s=f * v.records_out_per_s,
            partitioned_in=received - per_instance_broadcast * v.parallelism,
            broadcast_in=per_instance_broadcast,
            cores_per_record=per_record,
            estimated=estimated,
            fixed_cores=fixed,
            floor_cores=demand.floor_cores(v),
        )
    return rates
