"""Row families of the rescale ILP, one function each; the docstring states the inequality.

Notation of :mod:`.model` and :mod:`placement.solver.constraints`: ``c_v(p)`` server cores and ``m_v(p)`` MiB of one
of ``p`` instances, ``σ_h`` host speed, ``ρ``/``μ``/``η`` the policy's CPU, memory and WAN targets. With
``elastic=True`` each capacity row gets a slack ``σ ≥ 0`` (used to explain infeasibility). Rows that cannot bind are
not added. The per-instance rate row (an instance keeps up with its share of the input on its host) is a domain family:
:func:`.domains.instances_keep_up`. The capacity rows, the uplink, the budgets and the latency bound are the families
of :mod:`placement.solver.families` over this model's counts (an instance's figures times the instances a unit of a
variable stands for).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TypeAlias, cast

import pulp

from placement.costmodel.model import Channel, Subtask
from placement.costmodel.rescaled import pointwise
from placement.solver import families
from placement.solver.rescale import objectives
from placement.solver.rescale.model import RescaleModel

Placements: TypeAlias = "list[tuple[Subtask, pulp.LpVariable, int]]"  # (figures, variable, instances per unit of it)


def one_parallelism_per_group(m: RescaleModel) -> None:
    """``Σ_p y[g, p] = 1`` for every forward group ``g`` with a choice."""
    for g in m.space.groups:
        ys = [m.y[(g.id, p)] for p in m.choices.get(g.id, ()) if (g.id, p) in m.y]
        if ys:
            m.lp += pulp.lpSum(ys) == 1, f"one_p_{m._tag(g.id)}"


def every_instance_placed(m: RescaleModel) -> None:
    """``Σ_h z[v, p, h] = p·y[g(v), p]`` for every rescalable ``v`` and ``p`` (``p`` instances at ``p``, none
    otherwise); ``Σ_h x[s, h] = 1`` for every subtask of a per-subtask vertex."""
    for n, key in enumerate(m.domain_x):
        m.lp += pulp.lpSum(m.x[(key, h)] for h in m.domain_x[key]) == 1, f"one_host_{n}"
    for (vid, p), hosts in m.domain_z.items():
        if any(m.z[(vid, p, h)][1] == 1 for h in hosts):  # else z = p·y by substitution
            m.lp += pulp.lpSum(m.z_of(vid, p, h) for h in hosts) == p * m.y_of(vid, p), f"placed_{m._tag(vid)}_{p}"


def slots_bound_counts(m: RescaleModel) -> None:
    """``z[v, p, h] ≤ min(p, slots(h))·y[g(v), p]`` where a host has fewer slots than ``p`` (a slot holds at most one
    instance of a vertex, with slot sharing or without): implied by the slot rows and the sum above for integer
    ``y``, it keeps the LP relaxation from parking a fraction of a choice on a small Pi."""
    if m.elastic:
        return
    for (vid, p, h), var, multiple in m.z_items():
        slots = m.host(h).slots
        if multiple == 1 and slots < p and (m.space.group_of[vid].id, p) in m.y:
            m.lp += var <= slots * m.y[(m.space.group_of[vid].id, p)], f"vub_{m._tag(vid)}_{p}_{h}"


def no_data_down_to_edge(m: RescaleModel) -> None:
    """Nothing flows from a server, or another edge host, down into an edge host ``h``
    (:func:`placement.solver.families.data_down` and its all-to-all form over this model's terms):

    * FORWARD ``u → v``: ``z[v, p, h] ≤ z[u, p, h]`` for every ``p`` (rescalable: as many ``v`` as ``u`` instances
      there at most — they pair up there, see :mod:`.realize`); pointwise between per-subtask vertices (FORWARD,
      RESCALE): ``x[v_j, h] ≤ x[u_i, h]`` for every sender ``u_i`` of ``v_j``;
    * any other edge: ``v`` may be on ``h`` only if all of ``u`` is: ``any[v, h] ≤ a ≤ frac[u, h]`` with a continuous
      ``a[U→V, h] ∈ [0, 1]`` and binary ``any`` (``frac = 1`` exactly when every instance of ``u`` is on ``h``);
      for a per-subtask ``v``: ``x[v_j, h] ≤ a ≤ x[u_i, h]`` as in the plain ILP."""
    edge = [h.name for h in m.ref.edges]
    for n, ch in enumerate(m.ref.channels):
        for h in edge:
            if h in m.hosts_of(ch.target):
                (_pointwise_down if pointwise(ch.strategy) else _all_down)(m, n, ch, h)


def _pointwise_down(m: RescaleModel, n: int, ch: Channel, h: str) -> None:
    u, v = ch.source, ch.target
    if m.is_rescalable(v):
        for p in m.parallelisms(v):
            down = m.z_of(v, p, h)
            if down is not None:
                families.data_down(m.sink, _terms(down), _terms(m.z_of(u, p, h)), f"fwd_{n}_{h}_{p}")
        return
    receivers = [(s.index, [(x, 1.0)]) for s in m.subtasks(v) if (x := m.x_of(s.key, h)) is not None]
    families.data_down_subtasks(
        m.sink, ch, f"{n}_{h}", lambda i: _terms(m.x_of((u, i), h)), receivers, all_form=False, pair="fwd"
    )


def _all_down(m: RescaleModel, n: int, ch: Channel, h: str) -> None:
    u, v = ch.source, ch.target
    if m.is_rescalable(u):
        ups = [("", _terms(m.fraction(u, h)))]
    else:
        ups = [(f"_{s.index}", _terms(m.x_of(s.key, h))) for s in m.subtasks(u)]
    if m.is_rescalable(v):  # lazily: any[v, h] comes with a row of its own, written after the senders' rows
        downs = (("", [(m.occupied(v, h), 1.0)]) for _ in range(1))
    else:
        downs = (
            (f"_{s.index}", [(x, 1.0)])
            for s in m.subtasks(v)
            if (x := m.x_of(s.key, h)) is not None and len(ch.senders(s.index)) > 0
        )
    families.data_down_all(m.sink, f"{n}_{h}", f"all_up_{n}_{h}", ups, downs)


def _terms(term: pulp.LpVariable | pulp.LpAffineExpression | None) -> families.Terms:
    """A variable's or an expression's terms (none where it does not exist)."""
    if term is None:
        return []
    return list(term.items()) if isinstance(term, pulp.LpAffineExpression) else [(term, 1.0)]


def _placed(m: RescaleModel, host: str) -> Placements:
    """(instance figures, variable, instances per unit of the variable) of everything that may run on ``host``."""
    index = cast("dict[str, Placements] | None", m.aux.get(("placed",)))  # aux holds every kind; this key, this index
    if index is None:
        index = defaultdict(list)
        for (key, h), var in m.x.items():
            index[h].append((m.ref.subtask_by_key[key], var, 1))
        for (vid, p, h), var, multiple in m.z_items():
            index[h].append((m.instance(vid, p), var, multiple))
        m.aux[("placed",)] = index
    return index.get(host, [])


def task_slots(m: RescaleModel) -> None:
    """With slot sharing: ``n[v, h] ≤ slots(h)`` for every vertex and host (a slot holds one subtask of each vertex);
    without: ``Σ_v n[v, h] ≤ slots(h)`` (:func:`placement.solver.families.slots`; a row binds when the most instances
    the choices allow there exceed the slots)."""
    for h in m.ref.hosts:

        def most(group: str, host: str = h.name) -> float:
            members = [group] if m.ref.slot_sharing else list(m.ref.vertex_order)
            return sum(m.most(vid, host) for vid in members)

        families.slots(m.sink, m.ref, h.name, h.slots, _placed(m, h.name), most=most)


def cpu_capacity(m: RescaleModel) -> None:
    """``Σ_s c(s)/σ_h·x[s, h] + Σ_{v,p} c_v(p)/σ_h·z[v, p, h] ≤ ρ·cores(h)`` for every host ``h``
    (:func:`placement.solver.families.cpu`)."""
    for h in m.ref.hosts:
        families.cpu(m.sink, m.ref, h, _placed(m, h.name))


def memory_capacity(m: RescaleModel) -> None:
    """``Σ_s m(s)·x[s, h] + Σ_{v,p} m_v(p)·z[v, p, h] ≤ μ·memory(h)`` for every host ``h``
    (:func:`placement.solver.families.memory`)."""
    for h in m.ref.hosts:
        families.memory(m.sink, m.ref, h, _placed(m, h.name))


def wan_bandwidth(m: RescaleModel) -> None:
    """``W_h ≤ min(η·bandwidth(h), g_h)`` for every edge host ``h`` (``W_h`` of :func:`.objectives.wan_mbit`): one
    TCP flow's goodput ``g_h`` for the whole uplink (:func:`placement.solver.families.uplink_one_flow`) — the counts
    ``z[v, p, h]`` have no per-pair product yet, so this model does not spread load over TaskManager pairs."""
    for h in m.ref.edges:
        families.uplink_one_flow(m.sink, m.ref, h, families.terms_of(objectives.wan_mbit(m, h.name)))


def job_uplink_budget(m: RescaleModel) -> None:
    """``W_{J,h} ≤ s_{J,h}·η·bandwidth(h)`` for every job with a share of an uplink
    (:func:`placement.solver.families.uplink_budget`; ``W_{J,h}`` of :func:`.objectives.wan_mbit` over ``J``)."""
    families.uplink_budgets(
        m.sink, m.ref, lambda host, job: families.terms_of(objectives.wan_mbit(m, host, frozenset({job})))
    )


def latency_bound(m: RescaleModel) -> None:
    """``L(P) ≤ B(P)`` for every source→sink path with a bound (``policy.max_latency_ms``), the rows of the plain
    model (:func:`placement.solver.constraints.latency_bound`) over this model's crossings and at each choice of
    parallelism: the flush wait ``F(e)`` and the send time ``T(e, i, h)`` depend on it
    (:func:`.objectives.path_latency_ms`)."""
    for n, path in enumerate(families.bounded_paths(m.ref)):
        families.latency_bound(m.sink, n, path, objectives.path_latency_ms(m, path))


def vanilla_whole_vertices(m: RescaleModel) -> None:
    """Vanilla placement mode (:func:`placement.costmodel.model.vanilla_whole_vertices`): a vertex it cannot split
    runs on one host — ``x[(v, i), h] = x[(v, 0), h]`` for a per-subtask vertex; for a rescalable one a binary
    ``o[v, h]`` with ``Σ_h o[v, h] = 1`` and ``z[v, p, h] ≤ p·o[v, h]``
    (:func:`placement.solver.families.whole_subtasks`, :func:`~placement.solver.families.whole_counts`). None in custom
    mode."""
    for vid in sorted(m.ref.whole_vertices):
        tag = m._tag(vid)
        if not m.is_rescalable(vid):
            first, *rest = m.subtasks(vid)
            for h in m.hosts_of(vid):
                families.whole_subtasks(
                    m.sink, tag, h, _terms(m.x_of(first.key, h)), [(s.index, _terms(m.x_of(s.key, h))) for s in rest]
                )
            continue
        hosts = sorted(m.hosts_of(vid))
        counts = [(p, h, _terms(z)) for p in m.parallelisms(vid) for h in hosts if (z := m.z_of(vid, p, h)) is not None]
        families.whole_counts(m.sink, tag, hosts, counts)


ROW_FAMILIES = (
    one_parallelism_per_group,
    every_instance_placed,
    slots_bound_counts,
    no_data_down_to_edge,
    task_slots,
    cpu_capacity,
    memory_capacity,
    wan_bandwidth,
    job_uplink_budget,
    vanilla_whole_vertices,
    latency_bound,
)


def add_all(m: RescaleModel) -> None:
    for family in ROW_FAMILIES:
        family(m)
