"""Constraint families that fix variables to zero: they shrink each subtask's *domain* (the hosts it may take).

Each family takes the problem and the current domain and returns the narrower one; its docstring states the constraint
it realises. Variables outside the domain are never created, which is what keeps 2000-subtask × 200-host instances
small: a subtask fed from several edge hosts can only run on a server.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from placement.costmodel.model import HostSpec, PlacementProblem, Subtask, SubtaskKey
from placement.errors import Infeasible

Domain = dict[SubtaskKey, list[str]]


def sources_stay_where_data_is_born(problem: PlacementProblem, domain: Domain) -> Domain:
    """``x[s, h] = 0`` for every source subtask ``s`` and host ``h ≠ birth(s)``;
    a source without a birth pin: ``x[s, h] = 0`` for every edge host ``h``."""
    out = dict(domain)
    edge = {h.name for h in problem.edges}
    for s in problem.subtasks:
        if s.is_source:
            out[s.key] = [h for h in domain[s.key] if (h == s.birth if s.birth else h not in edge)]
    return out


def sinks_and_stateful_on_servers(problem: PlacementProblem, domain: Domain) -> Domain:
    """``x[s, h] = 0`` for an edge host ``h`` when ``s`` is a sink and ``h`` does not ``allow_sinks``, or ``s`` is
    stateful and ``h`` does not ``allow_stateful`` — unless the user pinned ``s``'s operator (a pin overrides this)."""
    out = dict(domain)
    for s in problem.subtasks:
        if s.pinned_to is None and not s.is_source:
            out[s.key] = [h for h in domain[s.key] if problem.rules_allow_on(s, problem.host_by_name[h])]
    return out


def user_pins_and_forbids(problem: PlacementProblem, domain: Domain) -> Domain:
    """``x[s, h] = 0`` for ``h ∉ pins(v)`` when operator ``v`` is pinned, and for ``h ∈ forbid(v)``."""
    out = dict(domain)
    for s in problem.subtasks:
        hosts = domain[s.key]
        if s.pinned_to is not None:
            hosts = [h for h in hosts if h in s.pinned_to]
        out[s.key] = [h for h in hosts if h not in s.forbidden]
    return out


def one_thread_keeps_up(problem: PlacementProblem, domain: Domain) -> Domain:
    """``x[s, h] = 0`` when ``s``'s one thread cannot keep up on ``h``: ``c(s)/σ_h > ρ``
    (:meth:`placement.costmodel.model.PlacementProblem.keeps_up`). Exact — no plan may put ``s`` there — and it makes
    the model smaller; the elastic re-solve puts back the pairs it took away (:func:`rule_domain`), as rows that may
    stretch, to explain an infeasible plan."""
    out = dict(domain)
    hosts = problem.host_by_name
    for s in problem.subtasks:
        out[s.key] = [h for h in domain[s.key] if problem.keeps_up(s, hosts[h])]
    return out


def reachable_edge_hosts(problem: PlacementProblem, domain: Domain) -> Domain:
    """``x[v_j, h] = 0`` for an edge host ``h`` when some sender ``u_i`` of ``v_j`` has ``x[u_i, h] = 0``.

    This is implied by :func:`placement.solver.constraints.no_data_down_to_edge` (``x[v_j, h] ≤ x[u_i, h]``) and
    applied in topological order, so it propagates along the graph."""
    out = dict(domain)
    edge = {h.name for h in problem.edges}
    for vid in problem.vertex_order:
        for s in problem.by_vertex[vid]:
            hosts = out[s.key]
            for ch in problem.inputs[vid]:
                for i in ch.senders(s.index):
                    up = set(out[(ch.source, i)])
                    hosts = [h for h in hosts if h not in edge or h in up]
            out[s.key] = hosts
    return out


THREAD_FAMILY = "one thread keeps up"
DomainFamily = tuple[str, Callable[[PlacementProblem, Domain], Domain]]  # (description, the hosts it leaves)
DOMAIN_FAMILIES: tuple[DomainFamily, ...] = (
    ("sources stay where their data is born", sources_stay_where_data_is_born),
    ("sinks and stateful operators stay on servers", sinks_and_stateful_on_servers),
    ("user pins and forbids", user_pins_and_forbids),
    (THREAD_FAMILY, one_thread_keeps_up),
    ("no data flows down into an edge host", reachable_edge_hosts),
)
# The rules alone (no thread limit): where a subtask could run if its thread were fast enough. The elastic re-solve
# starts from these, with the thread limit as a row that may stretch, so it can name a thread as what is short.
RULE_DOMAIN_FAMILIES = tuple(f for f in DOMAIN_FAMILIES if f[0] != THREAD_FAMILY)


def restricted_domain(problem: PlacementProblem, families: Sequence[DomainFamily] = DOMAIN_FAMILIES) -> Domain:
    """Apply every domain family; a subtask left with no host makes the problem infeasible, and we say which rule did
    it."""
    domain: Domain = {s.key: [h.name for h in problem.hosts] for s in problem.subtasks}
    for description, family in families:
        domain_before, domain = domain, family(problem, domain)
        empty = [problem.subtask_by_key[k] for k, hosts in domain.items() if not hosts]
        if empty:
            s = empty[0]
            more = f" (and {len(empty) - 1} more subtasks)" if len(empty) > 1 else ""
            if description == THREAD_FAMILY:  # the thread is the cause: say so, on the fastest host it had
                raise thread_infeasible(problem, empty, domain_before[s.key])
            detail = ""
            if s.pinned_to is not None:
                detail = f"; it is pinned to {', '.join(sorted(s.pinned_to))}"
            raise Infeasible(f"{s.label} can run on no host once '{description}' applies{detail}{more}")
    return domain


def filtered_domain(problem: PlacementProblem, families: Sequence[DomainFamily] = DOMAIN_FAMILIES) -> Domain:
    """Every domain family applied, as :func:`restricted_domain`, but a subtask left with no host keeps an empty
    list (for explaining an infeasible problem: which hosts each subtask had, whatever emptied another's)."""
    domain: Domain = {s.key: [h.name for h in problem.hosts] for s in problem.subtasks}
    for _, family in families:
        domain = family(problem, domain)
    return domain


def rule_domain(problem: PlacementProblem) -> Domain | None:
    """The rules' domain (:data:`RULE_DOMAIN_FAMILIES`: no thread limit), or None when the rules alone leave a
    subtask no host (then there is no thread to blame)."""
    try:
        return restricted_domain(problem, RULE_DOMAIN_FAMILIES)
    except Infeasible:
        return None


def fastest_host(problem: PlacementProblem, names: Iterable[str]) -> HostSpec:
    """The fastest of the hosts ``names`` (by speed; the first of equals, in the order given)."""
    return max((problem.host_by_name[h] for h in names), key=lambda h: h.speed)


def thread_infeasible(problem: PlacementProblem, empty: Sequence[Subtask], allowed: Iterable[str]) -> Infeasible:
    """The thread family left the subtasks ``empty`` no host: the first cannot keep up on the fastest of the hosts
    ``allowed`` it had before (and so on none of them)."""
    more = f" (and {len(empty) - 1} more subtasks)" if len(empty) > 1 else ""
    fastest = fastest_host(problem, allowed)
    return Infeasible(f"{problem.thread_shortfall(empty[0], fastest)}, nor on any other host it may run on{more}")
