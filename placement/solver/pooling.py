"""Symmetry removal: identical servers are solved as one pool, then packed back onto the real servers.

Traffic between servers is free, so WAN, server CPU and latency do not depend on *which* of several identical servers
a subtask runs on; only their capacities do. The pooled problem (one host with ``k×`` the cores, memory and slots of
``k`` identical servers) is a relaxation of the original: every plan of the original is a plan of the pool with the
same objective. So when the pool's optimal plan can be packed onto the real servers (first-fit decreasing over cores,
respecting memory and per-vertex slot counts), the packed plan is optimal for the original too. If packing fails, the
caller solves the full model.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace

from placement.costmodel.model import HostSpec, PlacementProblem, SubtaskKey
from placement.solver import families

POOL_SEPARATOR = "+"


def _shape(h: HostSpec) -> tuple[object, ...]:
    return (h.speed, h.cores, h.slots, h.memory_mib, h.allow_stateful, h.allow_sinks, h.baseline_cores, h.running)


def pool_servers(problem: PlacementProblem) -> tuple[PlacementProblem, dict[str, list[HostSpec]]] | None:
    """The pooled problem and pool name -> servers, or None when no two servers can be pooled."""
    named = {s.birth for s in problem.subtasks} | {
        h for s in problem.subtasks for h in (s.pinned_to or frozenset()) | s.forbidden
    }
    groups: dict[tuple[object, ...], list[HostSpec]] = defaultdict(list)
    for h in problem.servers:
        if h.name not in named:  # a server a pin names keeps its identity
            groups[_shape(h)].append(h)
    pools = {f"{g[0].name}{POOL_SEPARATOR}{len(g) - 1}": g for g in groups.values() if len(g) > 1}
    if not pools:
        return None
    member = {h.name for g in pools.values() for h in g}
    hosts = [h for h in problem.hosts if h.name not in member]
    for name, group in pools.items():
        k = len(group)
        hosts.append(
            replace(
                group[0],
                name=name,
                cores=group[0].cores * k,
                baseline_cores=group[0].baseline_cores * k,
                slots=group[0].slots * k,
                memory_mib=group[0].memory_mib * k,
                running=tuple(r for h in group for r in h.running),
            )
        )
    return replace(problem, hosts=tuple(hosts)), pools


def unpool(
    problem: PlacementProblem, assignment: dict[SubtaskKey, str], pools: dict[str, list[HostSpec]]
) -> dict[SubtaskKey, str] | None:
    """Pack each pool's subtasks onto its servers (first-fit decreasing by cores); None if they do not fit."""
    out = dict(assignment)
    for name, servers in pools.items():
        placed = sorted((s for s in problem.subtasks if assignment[s.key] == name), key=lambda s: -s.server_cores)
        cores = {h.name: families.cpu_room(problem, h) for h in servers}
        memory = {h.name: families.memory_room(problem, h) for h in servers}
        slots: dict[str, Counter[str]] = {h.name: Counter() for h in servers}
        for s in placed:
            group = families.slot_group(problem, s)
            fits = [
                h
                for h in servers
                if cores[h.name] >= families.cpu_need(s, h) - 1e-9
                and memory[h.name] >= families.memory_need(s) - 1e-9
                and slots[h.name][group] < h.slots
            ]
            if not fits:
                return None
            best = max(fits, key=lambda h: cores[h.name])  # most room left: keeps the servers balanced
            cores[best.name] -= families.cpu_need(s, best)
            memory[best.name] -= families.memory_need(s)
            slots[best.name][group] += 1
            out[s.key] = best.name
    return out
