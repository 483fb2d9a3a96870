"""Packing the subtasks a plan puts on a pool of servers onto the real servers (a feasibility problem, no objective).

Traffic between servers is free and server CPU is counted in server cores (``c(s)``, whatever the server's speed), so
which server of a pool a subtask takes changes no objective — only whether every server's cores (``c(s)/σ_k``),
memory and task slots hold. :func:`pack` tries two greedy orders (fast, enough when there is room) and then an exact
ILP over just this assignment, so a packing that exists is found.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence

import numpy as np

from placement.costmodel.model import (
    HostSpec,
    PlacementProblem,
    Subtask,
    SubtaskKey,
    thread_keeps_up,
)
from placement.solver import families, highs_model
from placement.solver.highs_model import INF, ColumnSink, Rows, SparseMip

EPS = 1e-9


def _group(problem: PlacementProblem, s: Subtask) -> str:
    """The slot group (:func:`placement.solver.families.slot_group`)."""
    return families.slot_group(problem, s)


def _greedy(
    problem: PlacementProblem, items: Sequence[Subtask], servers: Sequence[HostSpec], balance: bool
) -> dict[SubtaskKey, str] | None:
    """Decreasing dominant share (cores, memory, or the item's slot group); each item to the fitting server with the
    most room left in its tightest dimension (``balance``) or the least. Vectorised over the servers: a fleet packs
    tens of thousands of subtasks onto hundreds of them."""
    cap_cores = np.array([families.cpu_room(problem, h) for h in servers])
    cap_memory = np.array([families.memory_room(problem, h) for h in servers])
    slots = np.array([h.slots for h in servers], dtype=float)
    speed = np.array([h.speed for h in servers])
    cores, memory = cap_cores.copy(), cap_memory.copy()
    used: dict[str, np.ndarray] = {}
    total_cores = float(cap_cores @ speed) or 1.0
    total_memory = float(cap_memory.sum()) or 1.0
    group_size = Counter(_group(problem, s) for s in items)
    out: dict[SubtaskKey, str] = {}
    order = sorted(
        items,
        key=lambda s: (
            -max(
                s.server_cores / total_cores,
                s.memory_mib / total_memory,
                group_size[_group(problem, s)] / (slots.sum() or 1.0),
            )
        ),
    )
    safe_cores, safe_memory = np.maximum(cap_cores, 1e-12), np.maximum(cap_memory, 1e-12)
    for s in order:
        group = _group(problem, s)
        in_group = used.setdefault(group, np.zeros(len(servers)))
        need = s.server_cores / speed
        # one thread: at most ρ of one core; the rule's <= is numpy's here, one answer per server
        keeps_up = thread_keeps_up(need, families.thread_room(problem))  # type: ignore[arg-type]
        fits = (cores >= need - EPS) & (memory >= s.memory_mib - EPS) & (in_group < slots) & keeps_up
        if not fits.any():
            return None
        room = np.minimum(
            np.minimum((cores - need) / safe_cores, (memory - s.memory_mib) / safe_memory),
            (slots - in_group - 1) / np.maximum(slots, 1.0),
        )
        room = np.where(fits, room, -np.inf if balance else np.inf)
        k = int(np.argmax(room) if balance else np.argmin(room))
        cores[k] -= need[k]
        memory[k] -= s.memory_mib
        in_group[k] += 1
        out[s.key] = servers[k].name
    return out if _slots_hold(problem, items, servers, out) else None


def _slots_hold(
    problem: PlacementProblem, items: Sequence[Subtask], servers: Sequence[HostSpec], out: dict[SubtaskKey, str]
) -> bool:
    """Several jobs share the servers: a slot per group is not enough, each job fills its own slots
    (:meth:`PlacementProblem.slots_needed`) — checked on the packing, which the exact packing then repairs."""
    if not problem.vertex_job:
        return True
    by_server: dict[str, list[Subtask]] = {h.name: [] for h in servers}
    for s in items:
        by_server[out[s.key]].append(s)
    return all(problem.slots_needed(by_server[h.name]) <= h.slots for h in servers)


def _exact(
    problem: PlacementProblem, items: Sequence[Subtask], servers: Sequence[HostSpec], time_limit: float | None
) -> dict[SubtaskKey, str] | None:
    """``Σ_k y[s, k] = 1``; ``y[s, k] = 0`` where ``s``'s thread cannot keep up on ``k``;
    per server ``Σ c(s)/σ_k·y ≤ ρ·cores``, ``Σ m(s)·y ≤ μ·memory``, slots per group — the families of
    :mod:`placement.solver.families` as arrays (``y`` is an ``n × k`` matrix: their figures, written at once)."""
    n, k = len(items), len(servers)
    mip = SparseMip()
    y = mip.add_cols(n * k).reshape(n, k)  # y[s, k]
    mip.add_rows(n, 1.0, 1.0, np.repeat(np.arange(n), k), y.ravel(), np.ones(n * k))
    slow = [(i, j) for i, s in enumerate(items) for j, h in enumerate(servers) if not problem.keeps_up(s, h)]
    if slow:  # y[s, k] = 0 where s's one thread cannot keep up on server k
        rows = np.array(slow)
        mip.add_rows(len(slow), -INF, 0.0, np.arange(len(slow)), y[rows[:, 0], rows[:, 1]], np.ones(len(slow)))
    cores = np.array([s.server_cores for s in items])
    memory = np.array([s.memory_mib for s in items])
    speed = np.array([h.speed for h in servers])
    mip.add_rows(
        k,
        -INF,
        [families.cpu_room(problem, h) for h in servers],
        np.tile(np.arange(k), n),
        y.ravel(),
        (cores[:, None] / speed[None, :]).ravel(),
    )
    mip.add_rows(
        k,
        -INF,
        [families.memory_room(problem, h) for h in servers],
        np.tile(np.arange(k), n),
        y.ravel(),
        np.repeat(memory, k),
    )
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(items):
        groups.setdefault(_group(problem, s), []).append(i)
    if problem.vertex_job and problem.slot_sharing:
        _job_slot_rows(problem, mip, items, servers, y)
        groups = {}
    for members in groups.values():
        members_ = np.array(members)
        if len(members_) > min(h.slots for h in servers):
            mip.add_rows(
                k,
                -INF,
                [h.slots for h in servers],
                np.tile(np.arange(k), len(members_)),
                y[members_].ravel(),
                np.ones(len(members_) * k),
            )
    h = mip.build(np.zeros(mip.n_cols))
    info = highs_model.solve(h, time_limit=time_limit, gap=1.0)
    if info.status not in ("optimal", "feasible"):
        return None
    values = np.asarray(h.getSolution().col_value)[: n * k].reshape(n, k)  # y first; per-job shares after
    return {s.key: servers[int(np.argmax(values[i]))].name for i, s in enumerate(items)}


def _job_slot_rows(
    problem: PlacementProblem, mip: SparseMip, items: Sequence[Subtask], servers: Sequence[HostSpec], y: np.ndarray
) -> None:
    """Several jobs share the servers: per server :func:`placement.solver.families.job_slots` over ``y[·, k]`` (a share
    ``u[J, k]`` per job; jobs never share a slot)."""
    rows = Rows()
    sink = ColumnSink(mip, rows, elastic=False, slack={}, eps=EPS)
    for k, h in enumerate(servers):
        families.job_slots(sink, problem, h.name, h.slots, [(s, int(y[i, k]), 1.0) for i, s in enumerate(items)])
    rows.flush(mip)


def pack(
    problem: PlacementProblem, items: Sequence[Subtask], servers: Sequence[HostSpec], *, time_limit: float | None = 30.0
) -> dict[SubtaskKey, str] | None:
    """Subtask -> server for ``items`` on ``servers`` within every capacity, or None when no packing exists (or none
    was found within ``time_limit``)."""
    if not items:
        return {}
    if len(servers) == 1:
        h = servers[0]
        fits = (
            all(problem.keeps_up(s, h) for s in items)
            and sum(families.cpu_need(s, h) for s in items) <= families.cpu_room(problem, h) + EPS
            and sum(families.memory_need(s) for s in items) <= families.memory_room(problem, h) + EPS
            and problem.slots_needed(list(items)) <= h.slots
        )
        return {s.key: h.name for s in items} if fits else None
    start = time.monotonic()
    for balance in (True, False):
        out = _greedy(problem, items, servers, balance)
        if out is not None:
            return out
    left = None if time_limit is None else max(1.0, time_limit - (time.monotonic() - start))
    return _exact(problem, items, servers, left)
