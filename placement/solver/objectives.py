"""Objective terms as linear expressions over ``x``.

* WAN (Mbit/s) — ``W = Σ_{edge h} W_h`` with
  ``W_h = Σ_{U→V} ( Σ_i S(u_i)·x[u_i, h] − Σ_j R(v_j)·x[v_j, h] ) + Σ_s k(s)·x[s, h]``, where ``f(i, j)`` is what the
  pair ``u_i → v_j`` puts on the wire (:meth:`placement.costmodel.model.Channel.flow_mbit`: the edge's own bytes,
  the measured key shares, Flink's pointwise RESCALE wiring, network framing), ``S(u_i) = Σ_j f(i, j)`` what ``u_i``
  sends over the edge, ``R(v_j) = Σ_i f(i, j)`` what ``v_j`` receives, and ``k(s)`` the checkpoint upload of a subtask
  on an edge host (:func:`placement.costmodel.demand.checkpoint_mbit`). This equals
  ``Σ_{i,j} f(i, j)·[u_i on h][v_j not on h]`` exactly because ``x[v_j, h] ≤ x[u_i, h]`` holds for every pair that
  carries data (:func:`placement.solver.constraints.no_data_down_to_edge`) — no product terms needed.
* Server CPU (server cores) — ``Σ_{server h} Σ_s c(s)·x[s, h]``.
* Latency (ms) — ``Σ_{U→V} w(U→V)·d(U→V)`` with path weight ``w`` (share of source→sink paths through the edge) and
  ``d ≥ delay(h)·(x[u_i, h] − x[v_j, h])`` for every pair and edge host ``h`` (for all-to-all edges via
  ``b[U→V, h] ≤ x[v_j, h]``, "all of V is on h"): the worst uplink delay any pair of the edge crosses — every wired
  pair, also one that carried no record when profiled (its route has the delay all the same): the one definition
  :func:`placement.costmodel.evaluate.evaluate` (plan.json's ``objective.latency_ms``, ``--compare``) and the path
  latencies of :mod:`placement.costmodel.latency` use too.

**Combining them** (``Policy.objective``): ``lexicographic`` (default) minimises WAN, then — keeping WAN within
``lexicographic_tolerance`` of its optimum — server CPU, then latency; ``weighted`` minimises
``w_wan·W + w_cpu·CPU + w_lat·L`` in one solve (``Policy.weights``).

**Job priorities** (several jobs, :attr:`placement.costmodel.model.PlacementProblem.priority_classes`): the WAN stage
becomes one stage per priority class, highest first (``W`` of that class's jobs, each kept at its optimum before the
next), then server CPU, then one latency stage per class in the same order (:func:`stages`). Without priorities —
or all jobs of one — the stages are exactly the three above. ``weighted`` has no order to put a class first in, so a
priority is refused there (:func:`placement.solver.ilp.check_weighted`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from typing import TypeAlias

import pulp

from placement.costmodel import latency
from placement.costmodel.model import Channel, HostSpec
from placement.solver.model import IlpModel


def wan_mbit(m: IlpModel, host: str, jobs: frozenset[str] | None = None) -> pulp.LpAffineExpression | None:
    """Uplink traffic of edge host ``host`` (None when nothing can run there); ``jobs``: of those jobs' subtasks only
    (a channel never crosses jobs, so its traffic is its source's job's)."""
    mine = _of_jobs(m, jobs)
    terms: dict[pulp.LpVariable, float] = defaultdict(float)  # a subtask appears once per adjacent channel: add up
    for ch in m.problem.channels:
        if not mine(ch.source):
            continue
        for i, u in m.placed(ch.source, host):
            if ch.sent_mbit(i) > 0:
                terms[u] += ch.sent_mbit(i)
        for j, v in m.placed(ch.target, host):
            received = ch.received_mbit(j)
            if received > 0:
                terms[v] -= received
    for s, var in m.on_host(host):
        if s.checkpoint_mbit > 0 and mine(s.vertex_id):
            terms[var] += s.checkpoint_mbit
    if not terms:
        return None
    return pulp.LpAffineExpression(list(terms.items()))


def _of_jobs(m: IlpModel, jobs: frozenset[str] | None) -> Callable[[str], bool]:
    """A test of a vertex id: is it one of ``jobs``' (every vertex when ``jobs`` is None)."""
    if jobs is None:
        return lambda vid: True
    return lambda vid: m.problem.vertex_job.get(vid) in jobs


def total_wan_mbit(m: IlpModel, jobs: frozenset[str] | None = None) -> pulp.LpAffineExpression:
    """``W`` over every uplink; ``jobs``: those jobs' traffic only (a priority class's stage)."""
    exprs = [e for h in m.problem.edges if (e := wan_mbit(m, h.name, jobs)) is not None]
    return pulp.lpSum(exprs)


StageTerm: TypeAlias = "pulp.LpAffineExpression | Callable[[], pulp.LpAffineExpression]"


def stages(m: IlpModel) -> list[tuple[str, StageTerm]]:
    """The lexicographic stages, in order: (name, expression or a builder of it — latency rows are built only when
    their stage is reached). Names: ``wan``, ``server_cpu``, ``latency``; with priority classes ``wan[p<n>]`` and
    ``latency[p<n>]`` per class (``n`` its priority)."""
    classes = m.problem.priority_classes
    if not classes:
        return [("wan", total_wan_mbit(m)), ("server_cpu", server_cores(m)), ("latency", lambda: latency_ms(m))]
    out: list[tuple[str, StageTerm]] = [(f"wan[p{p}]", total_wan_mbit(m, jobs)) for p, jobs in classes]
    out.append(("server_cpu", server_cores(m)))
    out += [(f"latency[p{p}]", functools.partial(latency_ms, m, jobs)) for p, jobs in classes]
    return out


def server_cores(m: IlpModel) -> pulp.LpAffineExpression:
    return pulp.lpSum(s.server_cores * var for h in m.problem.servers for s, var in m.on_host(h.name))


def latency_ms(m: IlpModel, jobs: frozenset[str] | None = None) -> pulp.LpAffineExpression:
    """Build (once) the delay variables ``d`` and their rows; return ``Σ w·d`` (``jobs``: over those jobs' channels
    only — each channel's ``d`` is built once, whichever class asks first)."""
    if ("latency", jobs) in m.aux:
        return m.aux[("latency", jobs)]
    mine = _of_jobs(m, jobs)
    terms = []
    for n, ch in enumerate(m.problem.channels):
        if ch.path_weight <= 0 or not mine(ch.source):
            continue
        if ("delay", n) in m.aux:
            d = m.aux[("delay", n)]
            if d is not None:
                terms.append((d, ch.path_weight))
            continue
        d = None
        for h in m.problem.edges:
            delay = h.uplink_delay_ms
            ups = m.placed(ch.source, h.name)
            if not ups or delay <= 0:
                continue
            if d is None:
                d = m.lp.add_variable(f"delay_{n}", lowBound=0)
            if ch.all_to_all:
                downs = [m.var((ch.target, j), h.name) for j in range(ch.n_down)]
                b = m.lp.add_variable(f"allv_{n}_{h.name}", lowBound=0, upBound=1)
                for j, v in enumerate(downs):
                    m.lp += b <= (v if v is not None else 0), f"allv_{n}_{h.name}_{j}"
                for i, u in ups:
                    m.lp += d >= delay * (u - b), f"lat_{n}_{h.name}_{i}"
            else:  # pointwise (FORWARD, RESCALE) and GLOBAL: each pair on its own
                for i, u in ups:
                    for j in ch.receivers(i):
                        v = m.var((ch.target, j), h.name)
                        m.lp += d >= delay * (u - (v if v is not None else 0)), f"lat_{n}_{h.name}_{i}_{j}"
        m.aux[("delay", n)] = d
        if d is not None:
            terms.append((d, ch.path_weight))
    expr = pulp.LpAffineExpression(terms)
    m.aux[("latency", jobs)] = expr
    return expr


# ---- predicted path latency (costmodel.latency), for the bound of constraints.latency_bound --------------------------


def bounded_paths(m: IlpModel) -> list[latency.JobPath]:
    """The source→sink paths with a latency bound (refused when the job has too many paths to list)."""
    if not m.problem.latency_bounds:
        return []
    paths = latency.source_sink_paths(m.problem)
    if paths is None:
        from placement.errors import BadInput

        raise BadInput(f"the job has more than {latency.MAX_PATHS} source→sink paths: policy.max_latency_ms cannot be "
                       "planned for it", field="policy.max_latency_ms")
    return [p for p in paths if p.bound_ms is not None]


def _queue_wait(m: IlpModel, host: HostSpec) -> pulp.LpVariable | float:
    """``q_h ≥ Q(W_h/C_h)`` (every chord), built once per uplink; 0 when nothing can cross it."""
    key = ("queue", host.name)
    if key in m.aux:
        return m.aux[key]
    traffic = wan_mbit(m, host.name)
    capacity = host.uplink_mbit or 0.0
    if traffic is None or capacity <= 0:
        m.aux[key] = 0.0
        return 0.0
    q = m.lp.add_variable(f"queue_{host.name}", lowBound=0)
    running = host.running_total("mbit")  # jobs already running on this uplink (plan --running): fixed load
    for k, (a, b) in enumerate(latency.queue_pieces(latency.buffer_service_ms(capacity))):
        m.lp += q >= a * (1.0 / capacity) * traffic + (b + a * running / capacity), f"queue_{host.name}_{k}"
    if m.problem.policy.wan_headroom > latency.MAX_UTILISATION and not m.elastic:
        m.lp += traffic <= latency.MAX_UTILISATION * capacity - running, f"queue_cap_{host.name}"
    m.aux[key] = q
    return q


def _queue_big_m(m: IlpModel, host: HostSpec) -> float:
    capacity = host.uplink_mbit or 0.0
    rho = min(m.problem.policy.wan_headroom, latency.MAX_UTILISATION)
    return latency.queue_ms(rho, latency.buffer_service_ms(capacity)) if capacity > 0 else 0.0


def _edge_crossing(m: IlpModel, n: int, ch: Channel) -> pulp.LpVariable | float:
    """``Z_e``: at least the slowest crossing of channel ``ch`` (delay + send + queue), built once per channel."""
    key = ("crossing", n)
    if key in m.aux:
        return m.aux[key]
    z = None
    for h in m.problem.edges:
        ups = m.placed(ch.source, h.name)
        if not ups:
            continue
        bandwidth = h.uplink_mbit or 0.0
        q = _queue_wait(m, h)
        big_m = _queue_big_m(m, h)
        b = None
        if ch.all_to_all:
            b = m.lp.add_variable(f"lat_allv_{n}_{h.name}", lowBound=0, upBound=1)
            for j in range(ch.n_down):
                v = m.var((ch.target, j), h.name)
                m.lp += b <= (v if v is not None else 0), f"lat_allv_{n}_{h.name}_{j}"
        for i, u in ups:
            crossings = [u - b] if b is not None else [
                u - (v if (v := m.var((ch.target, j), h.name)) is not None else 0) for j in ch.receivers(i)]
            send = latency.transmit_ms(ch, i, bandwidth)
            for k, y in enumerate(crossings):
                if send == float("inf"):  # a link without bandwidth: this subtask's data must not cross it
                    m.lp += y <= 0, f"lat_none_{n}_{h.name}_{i}_{k}"
                    continue
                if z is None:
                    z = m.lp.add_variable(f"crossing_{n}", lowBound=0)
                m.lp += (z >= (h.uplink_delay_ms + send + big_m) * y + q - big_m), f"lat_cross_{n}_{h.name}_{i}_{k}"
    m.aux[key] = z if z is not None else 0.0
    return m.aux[key]


def path_latency_ms(m: IlpModel, path: latency.JobPath) -> pulp.LpVariable:
    """``L_P``: a variable at least the path's predicted latency ``F(P) + max_e Z_e`` (rows of
    :func:`placement.solver.constraints.latency_bound`)."""
    key = ("path", path.vertices)
    if key in m.aux:
        return m.aux[key]
    index = {(ch.source, ch.target): n for n, ch in enumerate(m.problem.channels)}
    tag = len([k for k in m.aux if k[0] == "path"])
    lp = m.lp.add_variable(f"path_latency_{tag}", lowBound=path.flush_ms)
    for e in path.edges:
        n = index[e]
        z = _edge_crossing(m, n, m.problem.channels[n])
        if not isinstance(z, float):
            m.lp += lp >= path.flush_ms + z, f"path_{tag}_edge_{n}"
    m.aux[key] = lp
    return lp
