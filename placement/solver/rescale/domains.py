"""Domain families of the rescale ILP: which ``x[s, h]`` and ``z[v, p, h]`` exist, and which ``p`` are left.

A variable outside its domain is never created. The families (one function each, in order):

* **the placement rules** — sources where their data is born, sinks and stateful operators on servers, the user's pins
  and forbids: the families of :mod:`placement.solver.domains`, for every subtask and every instance;
* **every instance keeps up** — the per-``p`` rate row: ``z[v, p, h] = 0`` when ``c_v(p)/σ_h > ρ``, i.e. when an
  instance's share ``A_v/p + B_v`` of the input exceeds ``λ_v·σ_h·ρ``; ``x[s, h] = 0`` when ``c(s)/σ_h > ρ``;
* **no data flows down into an edge host** — an edge host is in a domain only if every sender may run there too
  (implied by the rows of :func:`.constraints.no_data_down_to_edge`; applied in topological order so it propagates);
* **enough room for p** — ``y[g, p] = 0`` when a member of ``g`` has no host at ``p``, or fewer task slots than ``p``
  on the hosts it may use.

An empty domain is an infeasibility with a name: :class:`~placement.errors.Infeasible` says which vertex and why.
"""

from __future__ import annotations

from placement.costmodel.model import PlacementProblem, thread_keeps_up
from placement.costmodel.rescaled import RescaleSpace, pointwise
from placement.errors import Infeasible
from placement.solver import domains as placement_domains
from placement.solver.domains import Domain, fastest_host

# the rules: not the thread (instances_keep_up) nor reachability (reachable_edge_hosts, which needs z's domains)
RULE_FAMILIES = tuple(
    f for f in placement_domains.RULE_DOMAIN_FAMILIES if f[1] is not placement_domains.reachable_edge_hosts
)


def _keeps_up(problem: PlacementProblem, cores: float, host: str) -> bool:
    """An instance needing ``cores`` server cores keeps up on ``host``: the placement problem's own rule."""
    return thread_keeps_up(cores / problem.host_by_name[host].speed, problem.usable_thread)


def subtask_rules(space: RescaleSpace, ref: PlacementProblem) -> Domain:
    """Rule domains of every subtask of ``ref`` (its rescalable vertices at any parallelism: rules are per vertex)."""
    return placement_domains.restricted_domain(ref, RULE_FAMILIES)


def instances_keep_up(
    space: RescaleSpace, ref: PlacementProblem, rules: Domain, choices: dict[str, tuple[int, ...]]
) -> tuple[Domain, dict[tuple[str, int], list[str]]]:
    """Per-subtask: ``x[s, h] = 0`` unless ``c(s)/σ_h ≤ ρ``; rescalable: ``z[v, p, h] = 0`` unless
    ``c_v(p)/σ_h ≤ ρ``."""
    # in the groups' order, not a set's: the model's rows follow it, and a row order that changes with Python's string
    # hashing changed the plan from process to process where a solver is sensitive to it (HiGHS <= 1.9's presolve)
    rescalable = dict.fromkeys(vid for g in space.groups if not g.per_subtask for vid in g.members)
    domain_x = {
        s.key: [h for h in rules[s.key] if _keeps_up(ref, s.server_cores, h)]
        for s in ref.subtasks
        if s.vertex_id not in rescalable
    }
    domain_z: dict[tuple[str, int], list[str]] = {}
    for vid in rescalable:
        allowed = rules[(vid, 0)]
        for p in choices[space.group_of[vid].id]:
            cores = space.instance(vid, p).server_cores
            domain_z[(vid, p)] = [h for h in allowed if _keeps_up(ref, cores, h)]
    return domain_x, domain_z


def reachable_edge_hosts(
    space: RescaleSpace,
    ref: PlacementProblem,
    domain_x: Domain,
    domain_z: dict[tuple[str, int], list[str]],
    choices: dict[str, tuple[int, ...]],
) -> None:
    """Drop an edge host from a domain when a sender cannot run there (in place, topological order):
    a pointwise (FORWARD) pair needs its partner there at the same ``p``; every other edge needs *all* of the upstream
    vertex there — some instance of it may run there at least."""
    edge = {h.name for h in ref.edges}
    # in the groups' order, not a set's: the model's rows follow it, and a row order that changes with Python's string
    # hashing changed the plan from process to process where a solver is sensitive to it (HiGHS <= 1.9's presolve)
    rescalable = dict.fromkeys(vid for g in space.groups if not g.per_subtask for vid in g.members)

    cache: dict[str, set[str]] = {}

    def somewhere(vid: str) -> set[str]:  # final once vid is done: the pass is topological
        if vid not in cache:
            if vid in rescalable:
                cache[vid] = {h for p in choices[space.group_of[vid].id] for h in domain_z[(vid, p)]}
            else:
                cache[vid] = set.intersection(*(set(domain_x[s.key]) for s in ref.by_vertex[vid]))
        return cache[vid]

    for vid in ref.vertex_order:
        for ch in ref.inputs[vid]:
            if vid in rescalable:
                for p in choices[space.group_of[vid].id]:
                    ok = set(domain_z[(ch.source, p)]) if pointwise(ch.strategy) else somewhere(ch.source)
                    domain_z[(vid, p)] = [h for h in domain_z[(vid, p)] if h not in edge or h in ok]
            else:
                whole = None if pointwise(ch.strategy) else somewhere(ch.source)
                for s in ref.by_vertex[vid]:
                    fed_by = list(ch.senders(s.index))
                    if not fed_by:  # GLOBAL: only the first subtask receives anything
                        continue
                    ok = (
                        whole
                        if whole is not None
                        else set.intersection(*(set(domain_x[(ch.source, i)]) for i in fed_by))
                    )
                    domain_x[s.key] = [h for h in domain_x[s.key] if h not in edge or h in ok]


def room_for_parallelism(
    space: RescaleSpace,
    ref: PlacementProblem,
    domain_z: dict[tuple[str, int], list[str]],
    choices: dict[str, tuple[int, ...]],
) -> dict[str, tuple[int, ...]]:
    """``y[g, p] = 0`` when some member has no host at ``p`` or fewer slots than ``p`` on its hosts."""
    slots = {h.name: h.slots for h in ref.hosts}
    out = {}
    for g in space.groups:
        if g.per_subtask:
            out[g.id] = choices[g.id]
            continue
        out[g.id] = tuple(
            p for p in choices[g.id] if all(sum(slots[h] for h in domain_z[(vid, p)]) >= p for vid in g.members)
        )
    return out


def explain_empty(space: RescaleSpace, ref: PlacementProblem, rules: Domain, g_id: str) -> str:
    """Why group ``g_id`` has no parallelism left (for the Infeasible message)."""
    g = next(g for g in space.groups if g.id == g_id)
    rho = ref.policy.cpu_utilisation_target
    names = space.profile.vertex
    hosts = ref.host_by_name
    top = g.choices[-1]
    for vid in g.members:
        allowed = rules[(vid, 0)]
        if not allowed:
            return f"{names(vid).name!r} may run on no host (its pins and forbids leave none)"
        cores = space.instance(vid, top).server_cores
        fastest = fastest_host(ref, allowed)
        if not thread_keeps_up(cores / fastest.speed, rho):
            return (
                f"{names(vid).name!r} cannot keep up even at parallelism {top}: one instance needs "
                f"{cores / fastest.speed:.2f} cores of {fastest.name}, one thread has {rho:.2f} usable"
            )
    slots = sum(hosts[h].slots for h in rules[(g.members[0], 0)])
    return (
        f"{names(g.members[0]).name!r} finds no parallelism in {g.choices[0]}..{top} whose instances keep up and fit "
        f"the task slots of the hosts it may use ({slots}) and are fed from where they may run"
    )


def restricted_domains(
    space: RescaleSpace, ref: PlacementProblem
) -> tuple[Domain, dict[tuple[str, int], list[str]], dict[str, tuple[int, ...]]]:
    """Apply every family; raise :class:`Infeasible` naming the vertex when one is left with nothing."""
    rules = subtask_rules(space, ref)
    choices = {g.id: g.choices for g in space.groups}
    domain_x, domain_z = instances_keep_up(space, ref, rules, choices)
    reachable_edge_hosts(space, ref, domain_x, domain_z, choices)
    empty = [key for key, hosts in domain_x.items() if not hosts]
    if empty:
        s = ref.subtask_by_key[empty[0]]
        allowed = rules[s.key]
        if allowed and not any(_keeps_up(ref, s.server_cores, h) for h in allowed):
            fastest = fastest_host(ref, allowed)
            raise Infeasible(
                f"{s.label} cannot keep up on any host it may run on: it needs "
                f"{s.server_cores / fastest.speed:.2f} cores of one thread on {fastest.name}, "
                f"{ref.policy.cpu_utilisation_target:.2f} usable (its parallelism is fixed: "
                f"{space.group_of[s.vertex_id].reason})"
            )
        raise Infeasible(f"{s.label} can run on no host: every host it may use is cut off from its input")
    choices = room_for_parallelism(space, ref, domain_z, choices)
    for g in space.groups:
        if not choices[g.id]:
            raise Infeasible(explain_empty(space, ref, rules, g.id))
    domain_z = {(vid, p): hosts for (vid, p), hosts in domain_z.items() if p in choices[space.group_of[vid].id]}
    return domain_x, domain_z, choices
