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
  ``b[U→V, h] ≤ x[v_j, h]``, "all of V is on h"): the worst uplink delay any pair of the edge crosses.

**Combining them** (``Policy.objective``): ``lexicographic`` (default) minimises WAN, then — keeping WAN within
``lexicographic_tolerance`` of its optimum — server CPU, then latency; ``weighted`` minimises
``w_wan·W + w_cpu·CPU + w_lat·L`` in one solve (``Policy.weights``).
"""

from __future__ import annotations

from collections import defaultdict

import pulp

from placement.solver.model import IlpModel


def wan_mbit(m: IlpModel, host: str) -> pulp.LpAffineExpression | None:
    """Uplink traffic of edge host ``host`` (None when nothing can run there)."""
    terms: dict[pulp.LpVariable, float] = defaultdict(float)  # a subtask appears once per adjacent channel: add up
    for ch in m.problem.channels:
        for i, u in m.placed(ch.source, host):
            if ch.sent_mbit(i) > 0:
                terms[u] += ch.sent_mbit(i)
        for j, v in m.placed(ch.target, host):
            received = ch.received_mbit(j)
            if received > 0:
                terms[v] -= received
    for s, var in m.on_host(host):
        if s.checkpoint_mbit > 0:
            terms[var] += s.checkpoint_mbit
    if not terms:
        return None
    return pulp.LpAffineExpression(list(terms.items()))


def total_wan_mbit(m: IlpModel) -> pulp.LpAffineExpression:
    exprs = [e for h in m.problem.edges if (e := wan_mbit(m, h.name)) is not None]
    return pulp.lpSum(exprs)


def server_cores(m: IlpModel) -> pulp.LpAffineExpression:
    return pulp.lpSum(s.server_cores * var for h in m.problem.servers for s, var in m.on_host(h.name))


def latency_ms(m: IlpModel) -> pulp.LpAffineExpression:
    """Build (once) the delay variables ``d`` and their rows; return ``Σ w·d``."""
    if ("latency",) in m.aux:
        return m.aux[("latency",)]  # type: ignore[return-value]
    terms = []
    for n, ch in enumerate(m.problem.channels):
        if ch.path_weight <= 0:
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
        if d is not None:
            terms.append((d, ch.path_weight))
    expr = pulp.LpAffineExpression(terms)
    m.aux[("latency",)] = expr  # type: ignore[assignment]
    return expr
