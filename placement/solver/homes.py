"""Where each subtask may run, in the compact form fleets need: its edge host (its *home*, almost always at most one)
and a set of servers.

:func:`placement.solver.domains.restricted_domain` starts every subtask with every host and filters — ``S × H`` list
entries, 10⁹ for 100 000 subtasks on 10 000 hosts. The same rules leave a subtask at most one edge host: a source's
edge host is where its data is born, and a subtask runs on an edge host only if every sender runs there (the
reachability family), so by induction over the graph no subtask has two. The exception is a subtask that receives
nothing (downstream subtasks ``j > 0`` of a GLOBAL edge): no sender narrows it, so it keeps every edge host the rules
allow. :func:`homes` computes the edge hosts and the allowed servers directly, in ``O(S·servers + sender pairs)``; it
equals ``restricted_domain`` (tests hold it to that) and raises the same :class:`~placement.errors.Infeasible` when a
rule leaves a subtask nowhere to go.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey, thread_keeps_up
from placement.errors import Infeasible
from placement.solver.domains import DOMAIN_FAMILIES, Domain, thread_infeasible


@dataclass(frozen=True)
class Homes:
    edge: dict[SubtaskKey, tuple[str, ...]]  # the edge hosts a subtask may take (one at most, but see the module doc)
    servers: dict[SubtaskKey, tuple[str, ...]]  # the servers it may take, in inventory order

    def domain(self, key: SubtaskKey) -> list[str]:
        """The subtask's hosts in the shape of :data:`placement.solver.domains.Domain`."""
        return list(self.edge[key]) + list(self.servers[key])

    def as_domain(self) -> Domain:
        return {key: self.domain(key) for key in self.edge}


def _rule_servers(s: Subtask, servers: tuple[str, ...]) -> tuple[str, ...]:
    """Servers the rules leave before reachability (sources: their birth server, or every server when unborn)."""
    if s.pinned_to is None and not s.forbidden and not (s.is_source and s.birth):
        return servers  # the common case, one shared tuple: a fleet has 100 000 subtasks and hundreds of servers
    allowed = ([h for h in servers if h == s.birth] if s.birth else servers) if s.is_source else servers
    if s.pinned_to is not None:
        allowed = [h for h in allowed if h in s.pinned_to]
    return tuple(h for h in allowed if h not in s.forbidden)


def _rule_edge(problem: PlacementProblem, s: Subtask) -> frozenset[str]:
    """Edge hosts the rules leave before reachability: a source's birth host, a pin's edge hosts, else every edge host
    that allows the subtask (sinks and stateful operators) and does not forbid it."""
    hosts = problem.host_by_name
    if s.is_source:
        edge = {s.birth} if s.birth and hosts[s.birth].is_edge else set()
    elif s.pinned_to is not None:
        edge = {h for h in s.pinned_to if hosts[h].is_edge}
    else:
        edge = {h.name for h in problem.edges if problem.rules_allow_on(s, h)}
    return frozenset(edge - s.forbidden)


def _fail(family: int, empty: list[Subtask]) -> Infeasible:
    s = empty[0]
    more = f" (and {len(empty) - 1} more subtasks)" if len(empty) > 1 else ""
    detail = f"; it is pinned to {', '.join(sorted(s.pinned_to))}" if s.pinned_to is not None else ""
    return Infeasible(f"{s.label} can run on no host once '{DOMAIN_FAMILIES[family][0]}' applies{detail}{more}")


# the families that can empty a domain (every server passes the first two; the thread's: thread_infeasible)
PINS_FAMILY, REACHABILITY_FAMILY = 2, 4


def _thread_servers(problem: PlacementProblem, s: Subtask, servers: tuple[str, ...], slowest: float) -> tuple[str, ...]:
    """The servers where ``s``'s thread keeps up (the same tuple when it keeps up even on the slowest)."""
    if thread_keeps_up(s.server_cores / slowest, problem.usable_thread):
        return servers
    hosts = problem.host_by_name
    return tuple(h for h in servers if problem.keeps_up(s, hosts[h]))


def homes(problem: PlacementProblem, *, thread: bool = True) -> Homes:
    """Every subtask's edge hosts and servers; raises Infeasible like ``restricted_domain``.

    ``thread=False``: the rules alone, without the one-thread limit (``RULE_DOMAIN_FAMILIES``), to explain a
    shortfall."""
    servers = tuple(h.name for h in problem.servers)
    rule_servers = {s.key: _rule_servers(s, servers) for s in problem.subtasks}
    needs_edge = [s for s in problem.subtasks if not rule_servers[s.key]]  # the rest always has a server
    rule_edge = {s.key: _rule_edge(problem, s) for s in needs_edge}
    empty = [s for s in needs_edge if not rule_edge[s.key]]
    if empty:
        raise _fail(PINS_FAMILY, empty)

    if not thread:
        return _reachable(problem, rule_servers, rule_edge, needs_edge, thread)
    slowest = min((h.speed for h in problem.servers), default=1.0)
    rule_servers = {s.key: _thread_servers(problem, s, rule_servers[s.key], slowest) for s in problem.subtasks}
    needs_edge = [s for s in problem.subtasks if not rule_servers[s.key]]
    hosts = problem.host_by_name
    for s in needs_edge:
        if s.key not in rule_edge:
            rule_edge[s.key] = _rule_edge(problem, s)
    empty = [s for s in needs_edge if not any(problem.keeps_up(s, hosts[h]) for h in rule_edge[s.key])]
    if empty:  # the message of restricted_domain's, over the hosts the first had before, in inventory order as there
        had = rule_edge[empty[0].key] | set(_rule_servers(empty[0], servers))
        raise thread_infeasible(problem, empty, [h.name for h in problem.hosts if h.name in had])
    rule_edge = {
        k: frozenset(h for h in e if problem.keeps_up(problem.subtask_by_key[k], hosts[h]))
        for k, e in rule_edge.items()
    }
    return _reachable(problem, rule_servers, rule_edge, needs_edge, thread)


def _reachable(
    problem: PlacementProblem,
    rule_servers: dict[SubtaskKey, tuple[str, ...]],
    rule_edge: dict[SubtaskKey, frozenset[str]],
    needs_edge: list[Subtask],
    thread: bool,
) -> Homes:
    """The reachability family over the rules' (and the thread's) edge hosts, in topological order."""
    edge_hosts = [h.name for h in problem.edges]
    edge: dict[SubtaskKey, tuple[str, ...]] = {}
    for vid in problem.vertex_order:  # reachability, in topological order
        for s in problem.by_vertex[vid]:
            senders = [(ch.source, i) for ch in problem.inputs[vid] for i in ch.senders(s.index)]
            if senders:
                candidates = edge[senders[0]]
                for u in senders[1:]:  # the edge hosts every sender may take (one at most, bar the exception)
                    if edge[u] != candidates:
                        candidates = tuple(h for h in candidates if h in edge[u])
                    if not candidates:
                        break
                candidates = tuple(h for h in candidates if _allows_edge(problem, s, h, thread))
            else:  # a source, or a subtask no sender feeds
                candidates = (
                    tuple(h for h in edge_hosts if _allows_edge(problem, s, h, thread))
                    if not s.is_source
                    else (tuple(rule_edge[s.key]) if s.key in rule_edge else _source_edge(problem, s, thread))
                )
            edge[s.key] = candidates
    unplaced = [s for s in needs_edge if not edge[s.key]]
    if unplaced:
        raise _fail(REACHABILITY_FAMILY, unplaced)
    return Homes(edge=edge, servers=rule_servers)


def _allows_edge(problem: PlacementProblem, s: Subtask, host: str, thread: bool = True) -> bool:
    """Edge host ``host`` passes the rules before reachability for ``s`` (pins, forbids, sinks and stateful) and
    ``s``'s thread keeps up there."""
    return problem.allows(s, host) and (not thread or problem.keeps_up(s, problem.host_by_name[host]))


def _source_edge(problem: PlacementProblem, s: Subtask, thread: bool = True) -> tuple[str, ...]:
    hosts = problem.host_by_name
    return (
        (s.birth,)
        if (
            s.birth
            and hosts[s.birth].is_edge
            and s.birth not in s.forbidden
            and (not thread or problem.keeps_up(s, hosts[s.birth]))
        )
        else ()
    )
