"""Every plan of one Pi, enumerated: the columns of the fleet decomposition (:mod:`placement.solver.fleet`).

A Pi's plan is the set of its subtasks it keeps (the rest go to their server pool). Reachability makes that set
*down-closed* — a subtask stays only if the senders it has on the Pi stay — so a Pi's plans are the ideals of the small
graph of its own subtasks (a lane of five operators has six, a fan-out of two such lanes 36). They are enumerated once
per *shape* (the graph, not its figures; a fleet has a few dozen shapes), filtered by the Pi's own rows (CPU, memory,
slots, uplink), and described by what the rest of the problem sees of them:

* ``wan`` — the Pi's uplink traffic ``W_h`` (the WAN objective, :mod:`placement.solver.objectives`);
* ``cpu_off`` — server cores of the subtasks it sends to servers (the server-CPU objective);
* ``usage`` — what it puts on each server pool's CPU, memory and slot rows that can bind;
* ``crossing`` — which job edges cross its uplink (the latency term, ``d[U→V] ≥ delay·[crosses]``).

A plan no better than another in every one of these (less or equal WAN, server cores, pool usage, crossings) is
dropped: whichever stage is being optimised and whatever the pools hold, the other one is as good. What is left is a
handful of plans per Pi; a Pi left with one is decided.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np

from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.solver import families

RowKey = tuple[str, int] | tuple[str, int, str]  # a pool row: ("cpu" | "memory", pool) or ("slots", pool, slot group)

MAX_PLANS = 4096  # per Pi; a Pi with more (a very wide graph of its own) is planned by the compact model
EPS = 1e-6


class TooMany(Exception):
    """A Pi has more plans than :data:`MAX_PLANS`, or a subtask the column form does not cover."""


@dataclass(frozen=True)
class PiPlans:
    host: str
    local: tuple[Subtask, ...]  # the subtasks it may keep or send away (each to one pool)
    local_pool: tuple[int, ...]  # the pool each goes to when sent away
    fixed: tuple[Subtask, ...]  # subtasks that can only run here
    keep: np.ndarray  # bool (plans × local): which local subtasks a plan keeps
    wan: np.ndarray
    cpu_off: np.ndarray
    usage: dict[RowKey, np.ndarray]  # pool row key -> per plan
    crossing: dict[int, np.ndarray]  # channel index -> bool per plan (only channels that may cross here)


_IDEALS: dict[tuple[tuple[int, ...], ...], np.ndarray] = {}


def ideals(preds: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """All down-closed subsets of nodes ``0..n-1`` (``preds[i]`` ⊂ ``0..i-1``) as a bool matrix; cached per shape."""
    cached = _IDEALS.get(preds)
    if cached is not None:
        return cached
    masks = [0]
    for i, ps in enumerate(preds):
        need = 0
        for p in ps:
            need |= 1 << p
        masks += [m | (1 << i) for m in masks if m & need == need]
        if len(masks) > MAX_PLANS:
            raise TooMany(f"more than {MAX_PLANS} plans")
    arr = np.array(masks, dtype=np.int64)
    out = ((arr[:, None] >> np.arange(len(preds))) & 1).astype(bool)
    _IDEALS[preds] = out
    return out


PARETO_LIMIT = 600  # pairwise comparison above this many plans costs more than it saves: keep them all


def _pareto(attrs: np.ndarray) -> np.ndarray:
    """Indices of rows no other row is ≤ in every column (duplicates: the first kept)."""
    n = len(attrs)
    if n <= 1 or n > PARETO_LIMIT:
        return np.arange(n)
    le = np.all(attrs[:, None, :] <= attrs[None, :, :] + 1e-9, axis=2)  # le[a, b]: a ≤ b everywhere
    eq = le & le.T
    earlier_equal = np.triu(eq, k=1)  # a < b equal rows: b is dropped
    strictly = le & ~eq
    dominated = strictly.any(axis=0) | earlier_equal.any(axis=0)
    return np.flatnonzero(~dominated)


def pi_plans(
    problem: PlacementProblem,
    host: str,
    placed: list[tuple[Subtask, list[tuple[str, int | None]]]],
    pool_of_place: dict[str, int],
    net: dict[SubtaskKey, float],
    pool_rows: dict[RowKey, float],
    latency_channels: dict[str, list[int]],
) -> PiPlans:
    """The Pi's feasible, undominated plans. ``placed``: its subtasks with their places; ``pool_rows``: the pool rows
    that can bind (key -> capacity; keys ``("cpu", k)``, ``("memory", k)``, ``("slots", k, group)``);
    ``latency_channels``: per source vertex, the channels on source→sink paths (those the latency term counts)."""
    h = problem.host_by_name[host]
    local: list[Subtask] = []
    local_pool: list[int] = []
    fixed: list[Subtask] = []
    for s, places in placed:
        names = [n for n, _ in places]
        if names == [host]:
            fixed.append(s)
        elif len(names) == 2 and names[0] == host and names[1] in pool_of_place:
            local.append(s)
            local_pool.append(pool_of_place[names[1]])
        else:
            raise TooMany(f"{s.label} has places {names}")
    index = {s.key: n for n, s in enumerate(local)}
    fixed_keys = {s.key for s in fixed}
    preds = []
    inputs = problem.inputs
    for s in local:
        ps = set()
        for ch in inputs[s.vertex_id]:
            for i in ch.senders(s.index):
                u = (ch.source, i)
                if u in index:
                    ps.add(index[u])
                elif u not in fixed_keys:
                    raise TooMany(f"{s.label} reads from a subtask off {host}")
        preds.append(tuple(sorted(ps)))
    keep = ideals(tuple(preds))
    kf = keep.astype(float)
    n_local = len(local)

    def vec(values: Iterable[float]) -> np.ndarray:
        return np.fromiter(values, dtype=float, count=n_local)

    ok = np.ones(len(keep), dtype=bool)
    cpu = kf @ vec(families.cpu_need(s, h) for s in local) + sum(families.cpu_need(s, h) for s in fixed)
    ok &= cpu <= families.cpu_room(problem, h) + EPS
    mem = kf @ vec(families.memory_need(s) for s in local) + sum(families.memory_need(s) for s in fixed)
    ok &= mem <= families.memory_room(problem, h) + EPS
    groups: dict[str, list[int]] = defaultdict(list)
    fixed_groups: dict[str, int] = defaultdict(int)
    slot_group = partial(families.slot_group, problem)
    for n, s in enumerate(local):
        groups[slot_group(s)].append(n)
    for s in fixed:
        fixed_groups[slot_group(s)] += 1
    if problem.vertex_job and problem.slot_sharing:  # several jobs: Σ_jobs max_v (problem.slots_needed)
        ok &= _job_slots(problem, keep, groups, fixed_groups) <= h.slots
    else:
        for g, members in groups.items():
            if len(members) + fixed_groups[g] > h.slots:
                ok &= keep[:, members].sum(axis=1) + fixed_groups[g] <= h.slots
    wan = kf @ vec(net[s.key] for s in local) + sum(net[s.key] for s in fixed)
    ok &= wan <= families.one_flow_room(problem, h) + EPS  # the compact model's uplink row (one flow for it)
    keep, kf, wan = keep[ok], kf[ok], wan[ok]
    off = 1.0 - kf
    cores = vec(families.pool_cpu_need(s) for s in local)
    cpu_off = off @ cores
    pools = np.array(local_pool, dtype=np.int64)
    usage: dict[RowKey, np.ndarray] = {}
    for key in pool_rows:
        kind, k = key[0], key[1]
        in_pool = pools == k
        if not in_pool.any():
            continue
        if kind == "cpu":
            weights = np.where(in_pool, cores, 0.0)
        elif kind == "memory":
            weights = np.where(in_pool, vec(families.memory_need(s) for s in local), 0.0)
        else:
            assert len(key) == 3  # ("slots", pool, slot group)
            group = key[2]
            weights = np.where(in_pool & np.array([slot_group(s) == group for s in local]), 1.0, 0.0)
        if weights.any():
            usage[key] = off @ weights
    crossing = _crossings(problem, host, local, fixed, keep, latency_channels) if h.crossing_ms > 0 else {}
    attrs = [wan, cpu_off, *usage.values(), *(c.astype(float) for c in crossing.values())]
    best = _pareto(np.column_stack(attrs)) if len(keep) else np.arange(0)
    return PiPlans(
        host,
        tuple(local),
        tuple(local_pool),
        tuple(fixed),
        keep[best],
        wan[best],
        cpu_off[best],
        {k: v[best] for k, v in usage.items()},
        {c: v[best] for c, v in crossing.items()},
    )


def _job_slots(
    problem: PlacementProblem, keep: np.ndarray, groups: dict[str, list[int]], fixed_groups: dict[str, int]
) -> np.ndarray:
    """Per plan: the slots it fills when several jobs share the Pi — each job as many as its most numerous vertex
    here, jobs added up (a slot never holds two jobs' subtasks)."""
    per_job: dict[str, np.ndarray] = {}
    for g in {*groups, *fixed_groups}:
        members = groups.get(g, [])
        count = (keep[:, members].sum(axis=1) if members else np.zeros(len(keep))) + fixed_groups.get(g, 0)
        job = problem.vertex_job.get(g, "")
        per_job[job] = np.maximum(per_job[job], count) if job in per_job else count
    return sum(per_job.values(), np.zeros(len(keep)))


def _crossings(
    problem: PlacementProblem,
    host: str,
    local: list[Subtask],
    fixed: list[Subtask],
    keep: np.ndarray,
    channels: dict[str, list[int]],
) -> dict[int, np.ndarray]:
    """Per channel: does the plan send any of it up the uplink — some ``u_i`` here whose receiver ``v_j`` is not (on an
    all-to-all edge: not all of ``V`` is here), as the exact model's latency rows."""
    index = {s.key: n for n, s in enumerate(local)}
    fixed_keys = {s.key for s in fixed}
    on = np.ones((len(keep), 1), dtype=bool)

    def here(key: SubtaskKey) -> np.ndarray | bool:
        if key in index:
            return keep[:, index[key]]
        return key in fixed_keys

    out: dict[int, np.ndarray] = {}
    by_vertex: dict[str, list[Subtask]] = defaultdict(list)
    for s in (*local, *fixed):
        by_vertex[s.vertex_id].append(s)
    for c in sorted(c for vid in by_vertex for c in channels.get(vid, ())):  # only edges out of this Pi's vertices
        ch = problem.channels[c]
        ups = by_vertex[ch.source]
        cross = np.zeros(len(keep), dtype=bool)
        if ch.all_to_all:
            all_here = on[:, 0].copy()
            for j in range(ch.n_down):
                all_here &= here((ch.target, j))
            for u in ups:
                cross |= here(u.key) & ~all_here
        else:
            for u in ups:
                for j in ch.receivers(u.index):
                    cross |= here(u.key) & ~np.asarray(here((ch.target, j)))
        out[c] = cross
    return out
