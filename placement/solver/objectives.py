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
from placement.costmodel.model import Channel
from placement.solver import families
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
            delay = h.crossing_ms
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
    """The source→sink paths with a latency bound (:func:`placement.solver.families.bounded_paths`)."""
    return families.bounded_paths(m.problem)


def _crossings(m: IlpModel, n: int, ch: Channel) -> Callable[[str], list[families.Crossing]]:
    """The crossings of channel ``ch`` at an edge host: ``y = x[u_i, h] − x[v_j, h]`` for a pair, ``x[u_i, h] − b``
    with ``b ≤ x[v_j, h] ∀j`` ("all of V on h") for an all-to-all edge; both are 0/1 given
    :func:`placement.solver.constraints.no_data_down_to_edge`."""

    def at(host: str) -> list[families.Crossing]:
        h = m.problem.host_by_name[host]
        bandwidth = h.uplink_mbit or 0.0
        b = None
        if ch.all_to_all:
            b = m.lp.add_variable(f"lat_allv_{n}_{host}", lowBound=0, upBound=1)
            for j in range(ch.n_down):
                v = m.var((ch.target, j), host)
                m.lp += b <= (v if v is not None else 0), f"lat_allv_{n}_{host}_{j}"
        out = []
        for i, u in m.placed(ch.source, host):
            if b is not None:
                ys = [[(u, 1.0), (b, -1.0)]]
            else:
                ys = [
                    [(u, 1.0)] + ([(v, -1.0)] if (v := m.var((ch.target, j), host)) is not None else [])
                    for j in ch.receivers(i)
                ]
            send = latency.transmit_ms(ch, i, bandwidth)
            out += [families.Crossing(y, send, f"{i}_{k}") for k, y in enumerate(ys)]
        return out

    return at


def path_latency_ms(m: IlpModel, path: latency.JobPath) -> families.Var:
    """``L_P``: a variable at least the path's predicted latency ``F(P) + max_e Z_e`` (rows of
    :func:`placement.solver.families.path_latency` and :func:`~placement.solver.families.edge_crossing`, for
    :func:`placement.solver.constraints.latency_bound`)."""
    key = ("path", path.vertices)
    if key in m.aux:
        return m.aux[key]
    index = {(ch.source, ch.target): n for n, ch in enumerate(m.problem.channels)}
    tag = len([k for k in m.aux if k[0] == "path"])

    def crossing(n: int) -> Callable[[], families.Var | float]:
        ch = m.problem.channels[n]
        hosts = [h.name for h in m.problem.edges if m.placed(ch.source, h.name)]
        return lambda: families.edge_crossing(
            m.sink, m.problem, n, hosts, _crossings(m, n, ch), lambda host: families.terms_of(wan_mbit(m, host)), m.aux
        )

    edges = [(index[e], crossing(index[e])) for e in path.edges]
    lp = families.path_latency(m.sink, path, tag, (path.flush_ms, []), edges)
    m.aux[key] = lp
    return lp
