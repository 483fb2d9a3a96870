"""Constraint families of the placement ILP, one function each; the docstring states the inequality.

Notation: ``x[s, h]`` binary; ``c(s)`` server cores (``c(s)/σ_h`` on host ``h``), ``m(s)`` MiB, ``o(u_i)`` Mbit/s out;
``ρ`` cpu_utilisation_target, ``μ`` memory_utilisation_target, ``η`` wan_headroom (see :class:`placement.inventory.Policy`).
With ``elastic=True`` each capacity row gets a slack ``σ ≥ 0`` on its right-hand side (used to explain infeasibility).
Rows that cannot bind (even all candidates together fit) are not added.
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from placement.solver import objectives
from placement.solver.model import IlpModel


def one_host_per_subtask(m: IlpModel) -> None:
    """``Σ_h x[s, h] = 1`` for every subtask ``s``."""
    for n, s in enumerate(m.problem.subtasks):
        m.lp += pulp.lpSum(m.x[(s.key, h)] for h in m.domain[s.key]) == 1, f"one_host_{n}"


def task_slots(m: IlpModel) -> None:
    """With slot sharing (Flink's default): ``Σ_i x[(v, i), h] ≤ slots(h)`` for every vertex ``v`` and host ``h`` —
    one slot holds one subtask of each vertex. Without: ``Σ_s x[s, h] ≤ slots(h)``. Several jobs with slot sharing:
    :func:`task_slots_per_job`."""
    if m.problem.vertex_job and m.problem.slot_sharing:
        task_slots_per_job(m)
        return
    for h in m.problem.hosts:
        placed = m.on_host(h.name)
        groups: dict[str, list] = defaultdict(list)
        for s, var in placed:
            groups[s.vertex_id if m.problem.slot_sharing else "all"].append(var)
        for n, (group, vars_) in enumerate(groups.items()):
            if len(vars_) > h.slots:
                slack = m.add_slack(("slots", h.name, group), h.slots)
                m.lp += pulp.lpSum(vars_) <= h.slots + slack, f"slots_{h.name}_{n}"


def task_slots_per_job(m: IlpModel) -> None:
    """Several jobs, slot sharing: a slot holds one subtask of each vertex of one job — jobs never share one — so
    job ``J`` fills ``max_{v∈J} Σ_i x[(v, i), h]`` slots of ``h``. With ``y[J, h] ≥ 0``:
    ``Σ_i x[(v, i), h] ≤ y[J, h]`` for every vertex ``v`` of ``J``, and ``Σ_J y[J, h] ≤ slots(h)``. (``y`` need not be
    integral: the rounded-up maxima satisfy the rows whenever some ``y`` does.)"""
    for h in m.problem.hosts:
        groups: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))  # job -> vertex -> variables
        for s, var in m.on_host(h.name):
            groups[m.problem.vertex_job.get(s.vertex_id, "")][s.vertex_id].append(var)
        if sum(max(len(v) for v in vertices.values()) for vertices in groups.values()) <= h.slots:
            continue  # cannot bind
        used = []
        for n, (job, vertices) in enumerate(groups.items()):
            y = m.lp.add_variable(f"jobslots_{h.name}_{n}", lowBound=0)
            used.append(y)
            for k, vars_ in enumerate(vertices.values()):
                m.lp += pulp.lpSum(vars_) <= y, f"jobslots_{h.name}_{n}_{k}"
        slack = m.add_slack(("slots", h.name, "jobs"), h.slots)
        m.lp += pulp.lpSum(used) <= h.slots + slack, f"slots_{h.name}"


def cpu_capacity(m: IlpModel) -> None:
    """``Σ_s c(s)/σ_h · x[s, h] ≤ ρ · cores(h)`` for every host ``h``."""
    for h in m.problem.hosts:
        placed = m.on_host(h.name)
        cap = m.problem.usable_cores(h)
        if sum(s.cores_on(h) for s, _ in placed) > cap:
            slack = m.add_slack(("cpu", h.name), cap)
            m.lp += pulp.lpSum(s.cores_on(h) * var for s, var in placed) <= cap + slack, f"cpu_{h.name}"


def one_thread(m: IlpModel) -> None:
    """``c(s)/σ_h · x[s, h] ≤ ρ`` for every pair whose thread cannot keep up (a subtask is one thread: one core at most).

    The domain (:func:`placement.solver.domains.one_thread_keeps_up`) leaves no such pair in the model itself; the
    elastic re-solve starts from the rules' domain, where these rows let a thread stretch like any capacity, so a
    thread that cannot keep up is named as what is short rather than the link its input would then cross."""
    rho = m.problem.usable_thread
    for h in m.problem.hosts:
        for s, var in m.on_host(h.name):
            if not m.problem.keeps_up(s, h):
                slack = m.add_slack(("thread", h.name, *map(str, s.key)), rho)
                m.lp += s.cores_on(h) * var <= rho + slack, f"thread_{h.name}_{s.vertex_id}_{s.index}"


def memory_capacity(m: IlpModel) -> None:
    """``Σ_s m(s) · x[s, h] ≤ μ · memory(h)`` for every host ``h``."""
    for h in m.problem.hosts:
        placed = m.on_host(h.name)
        cap = m.problem.usable_memory(h)
        if sum(s.memory_mib for s, _ in placed) > cap:
            slack = m.add_slack(("memory", h.name), cap)
            m.lp += pulp.lpSum(s.memory_mib * var for s, var in placed) <= cap + slack, f"memory_{h.name}"


def wan_bandwidth(m: IlpModel) -> None:
    """``W_h(x) ≤ η · bandwidth(h)`` for every edge host ``h``, with ``W_h`` the uplink traffic of
    :func:`placement.solver.objectives.wan_mbit` (exact given :func:`no_data_down_to_edge`)."""
    for h in m.problem.edges:
        cap = m.problem.usable_mbit(h)
        expr = objectives.wan_mbit(m, h.name)
        if expr is not None:
            slack = m.add_slack(("link", h.name), cap)
            m.lp += expr <= cap + slack, f"wan_{h.name}"


def job_uplink_budget(m: IlpModel) -> None:
    """``W_{J,h}(x) ≤ s_{J,h} · η · bandwidth(h)`` for every job ``J`` with a share ``s_{J,h}`` of edge host
    ``h``'s uplink (``jobs[].budget.uplinks``), ``W_{J,h}`` the part of ``W_h`` that ``J``'s own subtasks send
    (:func:`placement.solver.objectives.wan_mbit` over ``J``). Elastic: a slack named ``("budget", h, J)``, so a budget
    that cannot be met is named as that job's on that link, not as the link."""
    for n, (job, policy) in enumerate(m.problem.job_policies.items()):
        for host, share in policy.uplink_shares.items():
            h = m.problem.host_by_name[host]
            expr = objectives.wan_mbit(m, host, frozenset({job}))
            cap = m.problem.budget_mbit(h, share)
            if expr is not None:
                slack = m.add_slack(("budget", host, job), cap)
                m.lp += expr <= cap + slack, f"budget_{n}_{host}"


def no_data_down_to_edge(m: IlpModel) -> None:
    """``x[v_j, h] ≤ x[u_i, h]`` for every edge host ``h`` and every pair ``u_i → v_j`` that carries data: a subtask runs
    on an edge host only if all its senders run there too (nothing is sent from the server, or another edge host, down
    to an edge host).

    For all-to-all edges (HASH, REBALANCE, BROADCAST) the ``n_U · n_V`` pairs are written with one continuous
    ``a[U→V, h] ∈ [0, 1]`` ("all of U is on h"): ``x[v_j, h] ≤ a ≤ x[u_i, h]`` — ``n_U + n_V`` rows, same integer hull."""
    edge = [h.name for h in m.problem.edges]  # a list: the rows' order must not follow Python's string hashing
    for n, ch in enumerate(m.problem.channels):
        for h in edge:
            down = m.placed(ch.target, h)
            if not down:
                continue
            if not ch.all_to_all:  # FORWARD, RESCALE (pointwise) and GLOBAL: pair by pair
                for j, v in down:
                    for i in ch.senders(j):
                        u = m.var((ch.source, i), h)
                        m.lp += v <= (u if u is not None else 0), f"down_{n}_{h}_{i}_{j}"
            else:
                a = m.lp.add_variable(f"all_{n}_{h}", lowBound=0, upBound=1)
                for i in range(ch.n_up):
                    u = m.var((ch.source, i), h)
                    m.lp += a <= (u if u is not None else 0), f"all_up_{n}_{h}_{i}"
                for j, v in down:
                    m.lp += v <= a, f"all_down_{n}_{h}_{j}"


def vanilla_whole_vertices(m: IlpModel) -> None:
    """``x[(v, i), h] = x[(v, 0), h]`` for every host ``h`` and subtask ``i > 0`` of a vertex ``v`` vanilla placement
    cannot split (:func:`placement.costmodel.model.vanilla_whole_vertices`; none in custom mode)."""
    for vid in sorted(m.problem.whole_vertices):
        subtasks = m.problem.by_vertex[vid]
        first = subtasks[0]
        for h in m.problem.hosts:
            x0 = m.var(first.key, h.name)
            for s in subtasks[1:]:
                xi = m.var(s.key, h.name)
                if x0 is not None or xi is not None:
                    m.lp += (xi if xi is not None else 0) == (x0 if x0 is not None else 0), f"whole_{vid}_{s.index}_{h.name}"


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
    from placement.solver.objectives import path_latency_ms

    for n, path in enumerate(objectives.bounded_paths(m)):
        expr = path_latency_ms(m, path)
        slack = m.add_slack(("latency", str(n)), path.bound_ms)
        m.lp += expr <= path.bound_ms + slack, f"latency_bound_{n}"


ROW_FAMILIES = (one_host_per_subtask, no_data_down_to_edge, task_slots, cpu_capacity, one_thread, memory_capacity,
                wan_bandwidth, job_uplink_budget, vanilla_whole_vertices, latency_bound)


def add_all(m: IlpModel, without: tuple = ()) -> None:
    for family in ROW_FAMILIES:
        if family not in without:
            family(m)
