"""Server pools generalised beyond identical servers: every set of servers the rules cannot tell apart is one pool.

Which server a subtask runs on changes no objective — traffic between servers is free, server CPU is counted in
server cores ``c(s)`` whatever the server's speed, the latency term only sees uplinks — and, for servers no pin,
forbid or birth tells apart, no rule. Only the capacities differ. A pool of servers ``K`` is one host with

    cores  Σ_{k∈K} cores_k · σ_k   at speed 1     (so ``c(s)`` of the pool's cores: the CPU rows summed, each ×σ_k)
    memory Σ_{k∈K} memory_k        slots Σ_{k∈K} slots_k

Each pooled row is the sum of the members' rows (the CPU rows scaled by ``σ_k``), so every plan of the real servers is a
plan of the pool with the same objective: the pooled problem is a relaxation. When the pool's optimal plan packs onto
the members (:mod:`placement.solver.packing`: greedy, then an exact ILP over just that assignment), it is optimal
for the real servers too; when it does not, the caller solves the full model.

Where the pooled model gains (measured on the hard family of ``benchmarks/hard_jobs.py``, 2 000 subtasks × 200 hosts
with 10 servers of different sizes): the LP relaxation of the full model already has the optimal WAN as its bound,
but its solution is split over servers, and HiGHS spends tens of seconds in cut rounds and sub-MIP heuristics looking
for an integral server assignment; pooled, the relaxation's solution is integral or nearly, and each stage takes a
fraction of a second.

:mod:`placement.solver.pooling` (identical servers, pins kept out) is what ``placement plan --rescale`` uses: its
per-instance rate row depends on the server's speed, which a mixed pool does not have.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from placement.costmodel.model import HostSpec, PlacementProblem, Subtask, SubtaskKey
from placement.solver.packing import pack

POOL_SEPARATOR = "+"


@dataclass(frozen=True)
class Pool:
    name: str
    members: tuple[HostSpec, ...]

    @property
    def host(self) -> HostSpec:
        """The pool as one host (see the module doc)."""
        first = self.members[0]
        return replace(
            first,
            name=self.name,
            speed=1.0,
            cores=sum(h.cores * h.speed for h in self.members),
            thread_speed=max(h.speed for h in self.members),  # a thread keeps up on some member: a relaxation
            baseline_cores=sum(h.baseline_cores * h.speed for h in self.members),
            slots=sum(h.slots for h in self.members),
            memory_mib=sum(h.memory_mib for h in self.members),
            taskmanagers=sum(h.taskmanagers for h in self.members),  # a flow from each edge host to each member
            # running jobs' cores at speed 1, as the pool's
            running=tuple(replace(r, cores=r.cores * h.speed) for h in self.members for r in h.running),
        )


Signature = tuple[frozenset[str], frozenset[str], frozenset[SubtaskKey]]  # pinning vertices, forbidding ones, births


def signatures(problem: PlacementProblem) -> dict[str, Signature]:
    """Per server: the vertices that pin it, the vertices that forbid it, the subtasks born on it."""
    servers = [h.name for h in problem.servers]
    server_names = set(servers)
    pinned: defaultdict[str, set[str]] = defaultdict(set)
    forbidden: defaultdict[str, set[str]] = defaultdict(set)
    born: defaultdict[str, set[SubtaskKey]] = defaultdict(set)
    seen: set[str] = set()
    for s in problem.subtasks:
        if s.birth in server_names:
            born[s.birth].add(s.key)
        if s.vertex_id in seen:
            continue  # pins and forbids are per vertex
        seen.add(s.vertex_id)
        for h in servers:
            if s.pinned_to is not None and h in s.pinned_to:
                pinned[h].add(s.vertex_id)
            if h in s.forbidden:
                forbidden[h].add(s.vertex_id)
    return {h: (frozenset(pinned[h]), frozenset(forbidden[h]), frozenset(born[h])) for h in servers}


def server_classes(problem: PlacementProblem) -> list[Pool]:
    """Every server in exactly one class of servers the rules cannot tell apart (inventory order within and between)."""
    groups: dict[tuple[object, ...], list[HostSpec]] = defaultdict(list)
    by_server = signatures(problem)
    for h in problem.servers:
        groups[by_server[h.name]].append(h)
    return [Pool(f"{g[0].name}{POOL_SEPARATOR}{len(g) - 1}", tuple(g)) for g in groups.values()]


def server_pools(problem: PlacementProblem) -> list[Pool]:
    """The classes of two or more servers: the pools the exact model solves as one host each."""
    return [p for p in server_classes(problem) if len(p.members) > 1]


def pooled_problem(problem: PlacementProblem, pools: list[Pool]) -> PlacementProblem:
    """``problem`` with each pool's servers replaced by the pool host; pins and forbids naming them name the pool."""
    rename = {h.name: p.name for p in pools for h in p.members}
    hosts = [h for h in problem.hosts if h.name not in rename] + [p.host for p in pools]

    def renamed(names: frozenset[str]) -> frozenset[str]:
        return frozenset(rename.get(n, n) for n in names) if rename.keys() & names else names

    subtasks = tuple(
        s
        if s.pinned_to is None and not s.forbidden
        else replace(s, pinned_to=None if s.pinned_to is None else renamed(s.pinned_to), forbidden=renamed(s.forbidden))
        for s in problem.subtasks
    )
    return replace(problem, hosts=tuple(hosts), subtasks=subtasks)


def unpool(
    problem: PlacementProblem, assignment: dict[SubtaskKey, str], pools: list[Pool], *, time_limit: float | None = 30.0
) -> dict[SubtaskKey, str] | None:
    """The assignment with each pool's subtasks packed onto its servers; None when some pool's do not fit."""
    out = dict(assignment)
    by_pool: dict[str, list[Subtask]] = {p.name: [] for p in pools}
    for s in problem.subtasks:
        if assignment[s.key] in by_pool:
            by_pool[assignment[s.key]].append(s)
    for p in pools:
        packed = pack(problem, by_pool[p.name], p.members, time_limit=time_limit)
        if packed is None:
            return None
        out.update(packed)
    return out
