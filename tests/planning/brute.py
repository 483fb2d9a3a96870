"""A brute-force planner that shares nothing with the ILP: backtracking over every host for every subtask, pruned only
by the rules written out again here, every complete assignment judged by :func:`placement.costmodel.evaluate`.

The pruning is sound because each check is one :func:`evaluate` makes too (a pruned branch has no assignment the
evaluator would accept): a subtask on a host the rules forbid (``PlacementProblem.allows``); a subtask on a host where
its one thread cannot keep up (``PlacementProblem.keeps_up``, evaluate's first rule); a subtask on an edge host
whose senders are not all there; a host whose cores, memory or slots are already over (they only grow as more
subtasks are added).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from placement.costmodel import PlacementProblem, evaluate

EPS = 1e-6


def lexicographic_key(cost) -> tuple[float, float, float]:
    return (round(cost.wan_mbit, 6), round(cost.server_cores, 6), round(cost.latency_ms, 6))


def brute_force(pr: PlacementProblem, *, max_leaves: int = 200_000):
    """(best cost by WAN, then server CPU, then latency; number of feasible assignments; leaves evaluated)."""
    order = [s for vid in pr.vertex_order for s in pr.by_vertex[vid]]
    senders = {s.key: [(ch.source, i) for ch in pr.inputs[s.vertex_id] for i in ch.senders(s.index)] for s in order}
    cores: dict[str, float] = defaultdict(float)
    memory: dict[str, float] = defaultdict(float)
    slots: dict[str, Counter] = defaultdict(Counter)
    assignment: dict = {}
    state = {"best": None, "feasible": 0, "leaves": 0}

    def fits(s, h) -> bool:
        host = pr.host_by_name[h]
        group = s.vertex_id if pr.slot_sharing else "all"
        return (
            cores[h] + s.cores_on(host) <= pr.usable_cores(host) + EPS
            and memory[h] + s.memory_mib <= pr.usable_memory(host) + EPS
            and slots[h][group] + 1 <= host.slots
        )

    def visit(k: int) -> None:
        if k == len(order):
            state["leaves"] += 1
            assert state["leaves"] <= max_leaves, "instance too big to enumerate"
            cost = evaluate(pr, assignment)
            if cost.feasible:
                state["feasible"] += 1
                if state["best"] is None or lexicographic_key(cost) < lexicographic_key(state["best"]):
                    state["best"] = cost
            return
        s = order[k]
        for host in pr.hosts:
            h = host.name
            if not pr.allows(s, h) or not pr.keeps_up(s, host) or not fits(s, h):
                continue
            if host.is_edge and any(assignment[u] != h for u in senders[s.key]):
                continue
            group = s.vertex_id if pr.slot_sharing else "all"
            assignment[s.key] = h
            cores[h] += s.cores_on(host)
            memory[h] += s.memory_mib
            slots[h][group] += 1
            visit(k + 1)
            cores[h] -= s.cores_on(host)
            memory[h] -= s.memory_mib
            slots[h][group] -= 1
            del assignment[s.key]

    visit(0)
    return state["best"], state["feasible"], state["leaves"]
