"""Constraint families of the placement ILP, one function each; the docstring states the inequality.

Notation: ``x[s, h]`` binary; ``c(s)`` server cores (``c(s)/σ_h`` on host ``h``), ``m(s)`` MiB, ``o(u_i)`` Mbit/s out;
``ρ`` cpu_utilisation_target, ``μ`` memory_utilisation_target, ``η`` wan_headroom (see
:class:`placement.inventory.Policy`). With ``elastic=True`` each capacity row gets a slack ``σ ≥ 0`` on its right-hand
side (used to explain infeasibility).
Rows that cannot bind (even all candidates together fit) are not added. The capacity rows, the thread row, the uplink,
the budgets and the latency bound are written once in :mod:`placement.solver.families`, which every model instantiates;
the functions here say which of the plain model's variables each family runs over.
"""

from __future__ import annotations

from collections.abc import Callable

import pulp

from placement.costmodel.model import Subtask
from placement.solver import families, objectives
from placement.solver.model import IlpModel


def one_host_per_subtask(m: IlpModel) -> None:
    """``Σ_h x[s, h] = 1`` for every subtask ``s``."""
    for n, s in enumerate(m.problem.subtasks):
        m.lp += pulp.lpSum(m.x[(s.key, h)] for h in m.domain[s.key]) == 1, f"one_host_{n}"


def _placed(m: IlpModel, host: str) -> list[tuple[Subtask, pulp.LpVariable, int]]:
    return [(s, var, 1) for s, var in m.on_host(host)]


def task_slots(m: IlpModel) -> None:
    """With slot sharing (Flink's default): ``Σ_i x[(v, i), h] ≤ slots(h)`` for every vertex ``v`` and host ``h`` —
    one slot holds one subtask of each vertex. Without: ``Σ_s x[s, h] ≤ slots(h)``. Several jobs with slot sharing:
    :func:`placement.solver.families.job_slots` (:func:`families.slots`)."""
    for h in m.problem.hosts:
        families.slots(m.sink, m.problem, h.name, h.slots, _placed(m, h.name))


def cpu_capacity(m: IlpModel) -> None:
    """``Σ_s c(s)/σ_h · x[s, h] ≤ ρ · cores(h)`` for every host ``h`` (:func:`placement.solver.families.cpu`)."""
    for h in m.problem.hosts:
        families.cpu(m.sink, m.problem, h, _placed(m, h.name))


def one_thread(m: IlpModel) -> None:
    """``c(s)/σ_h · x[s, h] ≤ ρ`` for every pair whose thread cannot keep up (a subtask is one thread: one core at
    most).

    The domain (:func:`placement.solver.domains.one_thread_keeps_up`) leaves no such pair in the model itself; the
    elastic re-solve starts from the rules' domain, where these rows let a thread stretch like any capacity, so a
    thread that cannot keep up is named as what is short rather than the link its input would then cross."""
    for h in m.problem.hosts:
        for s, var in m.on_host(h.name):
            if not m.problem.keeps_up(s, h):
                families.one_thread(m.sink, m.problem, h, s, var)


def memory_capacity(m: IlpModel) -> None:
    """``Σ_s m(s) · x[s, h] ≤ μ · memory(h)`` for every host ``h`` (:func:`placement.solver.families.memory`)."""
    for h in m.problem.hosts:
        families.memory(m.sink, m.problem, h, _placed(m, h.name))


def wan_bandwidth(m: IlpModel) -> None:
    """``W_h(x) ≤ η · bandwidth(h)`` for every edge host ``h``, with ``W_h`` the uplink traffic of
    :func:`placement.solver.objectives.wan_mbit` (exact given :func:`no_data_down_to_edge`)."""
    for h in m.problem.edges:
        families.uplink(m.sink, m.problem, h, families.terms_of(objectives.wan_mbit(m, h.name)))


def wan_pairs(m: IlpModel) -> None:
    """``Σ_{u_i→v_j} f(i, j)·y ≤ g_h`` with ``y ≥ x[u_i, h] + x[v_j, r] − 1`` for every edge host ``h`` whose TCP
    flow is below its rate and every server ``r`` (:func:`placement.solver.families.uplink_pair`): one connection per
    TaskManager pair carries one flow. The uplink row then has the rate alone (:meth:`PlacementProblem.link_mbit`)."""
    for h in m.problem.edges:
        if not m.problem.pair_bound(h):
            continue
        for r in m.problem.servers:
            products = [
                (f, [(u, 1.0)], [(v, 1.0)], f"{n}_{i}_{j}")
                for n, ch in enumerate(m.problem.channels)
                for i, u in m.placed(ch.source, h.name)
                for j in ch.receivers(i)
                if (f := ch.flow_mbit(i, j)) > 0 and (v := m.var((ch.target, j), r.name)) is not None
            ]
            families.uplink_pair(m.sink, m.problem, h, r, products)


def job_uplink_budget(m: IlpModel) -> None:
    """``W_{J,h}(x) ≤ s_{J,h} · η · bandwidth(h)`` for every job ``J`` with a share ``s_{J,h}`` of edge host
    ``h``'s uplink (``jobs[].budget.uplinks``), ``W_{J,h}`` the part of ``W_h`` that ``J``'s own subtasks send
    (:func:`placement.solver.objectives.wan_mbit` over ``J``; :func:`placement.solver.families.uplink_budget`)."""
    families.uplink_budgets(
        m.sink, m.problem, lambda host, job: families.terms_of(objectives.wan_mbit(m, host, frozenset({job})))
    )


def no_data_down_to_edge(m: IlpModel) -> None:
    """``x[v_j, h] ≤ x[u_i, h]`` for every edge host ``h`` and every pair ``u_i → v_j`` that carries data: a subtask
    runs on an edge host only if all its senders run there too (nothing is sent from the server, or another edge host,
    down to an edge host).

    For all-to-all edges (HASH, REBALANCE, BROADCAST) the ``n_U · n_V`` pairs are written with one continuous
    ``a[U→V, h] ∈ [0, 1]`` ("all of U is on h"): ``x[v_j, h] ≤ a ≤ x[u_i, h]`` — ``n_U + n_V`` rows, same integer hull
    (:func:`placement.solver.families.data_down_subtasks`)."""
    edge = [h.name for h in m.problem.edges]  # a list: the rows' order must not follow Python's string hashing
    for n, ch in enumerate(m.problem.channels):
        for h in edge:
            down = m.placed(ch.target, h)
            if down:
                families.data_down_subtasks(
                    m.sink,
                    ch,
                    f"{n}_{h}",
                    _sender(m, ch.source, h),
                    [(j, [(v, 1.0)]) for j, v in down],
                    all_form=ch.all_to_all,
                )


def _sender(m: IlpModel, vid: str, host: str) -> Callable[[int], families.Terms]:
    return lambda i: families.var_terms(m.var((vid, i), host))


def vanilla_whole_vertices(m: IlpModel) -> None:
    """``x[(v, i), h] = x[(v, 0), h]`` for every host ``h`` and subtask ``i > 0`` of a vertex ``v`` vanilla placement
    cannot split (:func:`placement.costmodel.model.vanilla_whole_vertices`; none in custom mode;
    :func:`placement.solver.families.whole_subtasks`)."""
    for vid in sorted(m.problem.whole_vertices):
        first, *rest = m.problem.by_vertex[vid]
        for h in m.problem.hosts:
            families.whole_subtasks(
                m.sink,
                vid,
                h.name,
                families.var_terms(m.var(first.key, h.name)),
                [(s.index, families.var_terms(m.var(s.key, h.name))) for s in rest],
            )


def latency_bound(m: IlpModel) -> None:
    """``L(P) ≤ B(P)`` for every source→sink path ``P`` with a bound (``policy.max_latency_ms``), ``L`` the predicted
    latency of :mod:`placement.costmodel.latency`, written with :func:`placement.solver.objectives.path_latency_ms`:

    * ``q_h ≥ a_k·W_h(x)/C_h + b_k`` for every chord ``k`` of the queueing curve and ``q_h ≥ 0`` — ``q_h`` is at least
      the chords' maximum ``Q(ρ_h)``, the same convex piecewise-linear upper bound of the M/D/1 wait the prediction uses
      (no approximation beyond that one: ``ρ_h = W_h/C_h`` is linear in ``x``);
    * ``Z_e ≥ (d_h + T(e, i, h))·y + q_h − M_h·(1 − y)`` for every crossing indicator ``y`` of edge ``e`` at edge host
      ``h`` — ``y = x[u_i, h] − x[v_j, h]`` for a pair, ``x[u_i, h] − b`` with ``b ≤ x[v_j, h] ∀j`` ("all of V on h")
      for an all-to-all edge; both are 0/1 given :func:`no_data_down_to_edge` — and ``M_h = Q(ρ_max)``, the largest
      ``q_h`` any plan needs (``ρ_max = min(η, 0.99)``), so a row whose ``y = 0`` never binds;
    * ``L_P ≥ F(P) + Z_e`` for every edge ``e`` of ``P``, ``L_P ≥ F(P)``, and ``L_P ≤ B(P)`` (elastic: plus a slack);
    * ``W_h ≤ 0.99·C_h`` on every uplink a bounded path may cross (past it the queue has no bound), when the headroom
      ``η`` allows more.

    A route crosses at most one uplink (nothing flows down to an edge host), so ``L_P = F(P) + max_e Z_e`` is the
    prediction's slowest crossing exactly."""
    for n, path in enumerate(objectives.bounded_paths(m)):
        families.latency_bound(m.sink, n, path, objectives.path_latency_ms(m, path))


ROW_FAMILIES = (
    one_host_per_subtask,
    no_data_down_to_edge,
    task_slots,
    cpu_capacity,
    one_thread,
    memory_capacity,
    wan_bandwidth,
    wan_pairs,
    job_uplink_budget,
    vanilla_whole_vertices,
    latency_bound,
)


def add_all(m: IlpModel, without: tuple[Callable[[IlpModel], None], ...] = ()) -> None:
    for family in ROW_FAMILIES:
        if family not in without:
            family(m)
