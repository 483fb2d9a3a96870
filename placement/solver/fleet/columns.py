"""The column form of the fleet decomposition: one binary per Pi and plan (:mod:`.plans`), one plan per Pi, the
server pools' rows over all of them, and the latency rows per Pi whose plans differ in crossing an edge."""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import numpy as np

from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.solver import families
from placement.solver.fleet.common import (
    EPS,
    Built,
    PoolsOf,
    net_mbit,
    pool_name,
    staged,
)
from placement.solver.fleet.plans import PiPlans, RowKey, TooMany, pi_plans
from placement.solver.highs_model import INF, Rows, SparseMip
from placement.solver.homes import Homes
from placement.solver.server_pools import Pool


class NoPlan(Exception):
    """A Pi has no plan that fits its own rows (the compact form's elastic re-solve explains it)."""


def _pool_rows(
    problem: PlacementProblem,
    pools: list[Pool],
    places: dict[SubtaskKey, list[str]],
    pool_index: dict[str, int],
    shrink: dict[int, float],
) -> dict[RowKey, float]:
    """The pool rows that can bind (everything that may go to the pool exceeds it): key -> capacity."""
    most: dict[RowKey, float] = defaultdict(float)
    for s in problem.subtasks:
        for name in places[s.key]:
            k = pool_index.get(name)
            if k is None:
                continue
            most[("cpu", k)] += families.pool_cpu_need(s)
            most[("memory", k)] += families.memory_need(s)
            most[("slots", k, families.slot_group(problem, s))] += 1
    full = [
        {
            "cpu": families.pool_cpu_room(problem, p.members),  # per pool, in server cores
            "memory": families.pool_memory_room(problem, p.members),
            "slots": sum(h.slots for h in p.members),
        }
        for p in pools
    ]
    rows = {}
    for key, total in most.items():
        factor = shrink.get(key[1], 1.0)
        capacity = full[key[1]][key[0]] * factor
        if key[0] == "slots":
            capacity = float(int(capacity))
        if total > capacity + EPS:
            rows[key] = capacity
    return rows


def column_form(problem: PlacementProblem, hm: Homes, pools: list[Pool], shrink: dict[int, float], mode: str) -> Built:
    """One binary per Pi and plan (:mod:`.plans`), one plan per Pi, the pools' rows over all
    of them, and the latency rows ``d[U→V] ≥ delay(h)·Σ_{plans of h crossing U→V} z``."""
    pool_index = {pool_name(p): k for k, p in enumerate(pools)}
    places: dict[SubtaskKey, list[str]] = {}
    pools_of = PoolsOf(pools)
    for s in problem.subtasks:
        if len(hm.edge[s.key]) > 1:
            raise TooMany(f"{s.label} may run on several edge hosts")
        ks = pools_of(hm.servers[s.key])
        places[s.key] = list(hm.edge[s.key]) + [pool_name(pools[k]) for k in ks]
    rows_cap = _pool_rows(problem, pools, places, pool_index, shrink)
    net = net_mbit(problem)
    lat_channels: dict[str, list[int]] = defaultdict(list)  # source vertex -> channels the latency term counts
    for c, ch in enumerate(problem.channels):
        if ch.path_weight > 0:
            lat_channels[ch.source].append(c)
    by_edge: dict[str, list[tuple[Subtask, list[tuple[str, int | None]]]]] = defaultdict(list)
    server_only: list[Subtask] = []
    for s in problem.subtasks:
        if hm.edge[s.key]:
            by_edge[hm.edge[s.key][0]].append((s, [(n, None) for n in places[s.key]]))
        else:
            server_only.append(s)
    plans: list[PiPlans] = []
    for host, placed in by_edge.items():
        p = pi_plans(problem, host, placed, pool_index, net, rows_cap, lat_channels)
        if len(p.keep) == 0:
            raise NoPlan(host)
        plans.append(p)

    mip, rows = SparseMip(), Rows()
    const = {"wan": 0.0, "cpu": 0.0}
    usage_const: dict[RowKey, float] = defaultdict(float)
    usage_terms: dict[RowKey, list[tuple[int, float]]] = defaultdict(list)
    wan_terms, cpu_terms = [], []
    z_of: list[np.ndarray | None] = []
    for p in plans:
        if len(p.keep) == 1:
            z_of.append(None)
            const["wan"] += p.wan[0]
            const["cpu"] += p.cpu_off[0]
            for key, u in p.usage.items():
                usage_const[key] += u[0]
            continue
        z = mip.add_cols(len(p.keep))
        z_of.append(z)
        rows.add([(int(c), 1.0) for c in z], 1.0, 1.0)
        wan_terms += list(zip(z.tolist(), p.wan.tolist()))
        cpu_terms += list(zip(z.tolist(), p.cpu_off.tolist()))
        for key, u in p.usage.items():
            usage_terms[key] += [(int(c), float(v)) for c, v in zip(z, u) if v]
    slot_group = partial(families.slot_group, problem)
    x_of: dict[SubtaskKey, list[tuple[int, int]]] = {}
    for s in server_only:  # servers only: their pool is a choice only when several pools allow them
        ks = [pool_index[n] for n in places[s.key]]
        const["cpu"] += s.server_cores
        if len(ks) == 1:
            for resource, v in (
                ("cpu", families.pool_cpu_need(s)),
                ("memory", families.memory_need(s)),
                ("slots", 1.0),
            ):
                full = (resource, ks[0]) if resource != "slots" else (resource, ks[0], slot_group(s))
                if full in rows_cap:
                    usage_const[full] += v
            continue
        cols = mip.add_cols(len(ks))
        x_of[s.key] = list(zip(cols.tolist(), ks))
        rows.add([(int(c), 1.0) for c in cols], 1.0, 1.0)
        for c, k in zip(cols.tolist(), ks):
            for key, v in (
                (("cpu", k), families.pool_cpu_need(s)),
                (("memory", k), families.memory_need(s)),
                (("slots", k, slot_group(s)), 1.0),
            ):
                if key in rows_cap:
                    usage_terms[key].append((c, v))
    for key, capacity in rows_cap.items():
        rows.add(usage_terms.get(key, []), -INF, capacity - usage_const[key])
    lat_terms = _column_latency(problem, plans, z_of, mip, rows)
    rows.flush(mip)
    n = mip.n_cols
    wan, cpu, latc = np.zeros(n), np.zeros(n), np.zeros(n)
    for c, v in wan_terms:
        wan[c] += v
    for c, v in cpu_terms:
        cpu[c] += v
    for d, w in lat_terms:
        latc[d] = w

    def decode(values: np.ndarray) -> dict[SubtaskKey, str]:
        out: dict[SubtaskKey, str] = {}
        for p, z in zip(plans, z_of):
            chosen = 0 if z is None else int(np.argmax(values[z]))
            for s in p.fixed:
                out[s.key] = p.host
            for n_, (s, k) in enumerate(zip(p.local, p.local_pool)):
                out[s.key] = p.host if p.keep[chosen, n_] else pool_name(pools[k])
        for s in server_only:
            if s.key in x_of:
                out[s.key] = pool_name(pools[max(x_of[s.key], key=lambda ck: values[ck[0]])[1]])
            else:
                out[s.key] = places[s.key][0]
        return out

    decided = sum(1 for z in z_of if z is None)
    detail = f": {sum(len(p.keep) for p in plans)} plans for {len(plans)} Pis, {decided} of them decided alone"
    return Built(mip, staged(problem, mode, (wan, const["wan"]), (cpu, const["cpu"]), latc), decode, "column", detail)


def _column_latency(
    problem: PlacementProblem, plans: list[PiPlans], z_of: list[np.ndarray | None], mip: SparseMip, rows: Rows
) -> list[tuple[int, float]]:
    """``d[U→V] ≥ delay(h)·Σ_{plans of h that cross U→V} z`` per Pi whose plans differ; the delay of a Pi every plan
    of which crosses is the column's lower bound."""
    floor: dict[int, float] = defaultdict(float)
    terms: dict[int, list[list[tuple[int, float]]]] = defaultdict(list)
    for p, z in zip(plans, z_of):
        delay = problem.host_by_name[p.host].crossing_ms
        for c, cross in p.crossing.items():
            if cross.all():
                floor[c] = max(floor[c], delay)
            elif cross.any() and z is not None:
                terms[c].append([(int(col), -delay) for col in z[cross]])
    out: list[tuple[int, float]] = []
    channels = sorted(set(floor) | set(terms))
    if not channels:
        return out
    d_cols = mip.add_cols(len(channels), 0.0, INF, integer=False)
    lower = np.concatenate(mip.col_lower)
    for d, c in zip(d_cols.tolist(), channels):
        lower[d] = floor.get(c, 0.0)
        for t in terms.get(c, []):
            if max(-v for _, v in t) > floor.get(c, 0.0):  # a row that can bind above the floor
                rows.add([(d, 1.0), *t], 0.0, INF)
        out.append((d, problem.channels[c].path_weight))
    mip.col_lower = [lower]
    return out
