"""Objective terms of the rescale ILP as linear expressions over ``x``, ``y``, ``z``.

* **WAN** — ``W_h = Σ_{U→V} (sent_h − received_h) + Σ k·(stateful instances on h)``, the identity of the plain ILP
  (:mod:`placement.solver.objectives`), exact because nothing flows down into an edge host. What an instance sends
  and receives over an edge comes from the cost model's own channel at that pair of parallelisms
  (:meth:`placement.costmodel.rescaled.RescaleSpace.channel_at`, :meth:`~placement.costmodel.model.Channel.flow_mbit`:
  the edge's bytes, even shares, BROADCAST copies, Flink's per-channel framing): ``S(p, q)`` what one of ``p``
  instances of ``u`` sends when ``v`` has ``q``, ``R(p, q)`` what one of ``q`` instances of ``v`` receives. So
  ``sent_h = Σ_q y[v, q]·Σ_p S(p, q)·z[u, p, h]`` and ``received_h = Σ_p y[u, p]·Σ_q R(p, q)·z[v, q, h]`` (per-subtask
  vertices: their ``x`` and their one parallelism). The products with ``y`` are written exactly (see
  :func:`_product`); what does not depend on the other end's parallelism needs none. ``k``: checkpoint uploads,
  ``state/p`` per instance.
* **Server CPU** (server cores) — ``Σ_{server h} (Σ_s c(s)·x[s, h] + Σ_{v,p} c_v(p)·z[v, p, h])``.
* **Latency** (ms) — per job edge, the worst uplink delay a pair of it crosses, weighted by the share of source→sink
  paths through it: ``d ≥ delay_h·(any[u, h] − all[v, h])`` (all-to-all), ``d ≥ delay_h·δ`` with
  ``n[u, h] − n[v, h] ≤ N·δ`` (FORWARD between rescalable vertices: some pair is split exactly when fewer ``v`` than
  ``u`` instances are on ``h``), ``d ≥ delay_h·(x[u_i, h] − x[v_i, h])`` (FORWARD between per-subtask vertices).
* **Subtasks** — ``Σ_v n_v``: among plans equal in the three terms above, the one with the fewest instances (DS2's
  "just enough" parallelism; every instance costs a slot, memory and a thread).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeAlias

import pulp

from placement.costmodel import latency
from placement.costmodel.model import Channel
from placement.costmodel.rescaled import pointwise, received_by, sent_by
from placement.profile.format import ShipStrategy
from placement.solver import families
from placement.solver.rescale.model import RescaleModel, Term, or_zero

Count: TypeAlias = "tuple[pulp.LpVariable, int]"  # (variable, instances one unit of it stands for)


def linear(terms: Iterable[tuple[pulp.LpVariable, float]]) -> pulp.LpAffineExpression:
    """``Σ c·var`` over (variable, coefficient) pairs, adding up repeated variables (PuLP's constructor keeps the last
    coefficient of a repeated variable, and a substituted ``z = p·y`` repeats ``y`` across a group's members)."""
    out: dict[pulp.LpVariable, float] = {}
    for var, c in terms:
        out[var] = out.get(var, 0.0) + c
    return pulp.LpAffineExpression([(var, c) for var, c in out.items() if c != 0])


def _channel(m: RescaleModel, ch: Channel, n_up: int, n_down: int) -> Channel:
    cache: dict[tuple[str, str, int, int], Channel] = m.cache("channels")
    key = (ch.source, ch.target, n_up, n_down)
    if key not in cache:
        cache[key] = m.space.channel_at(ch, n_up, n_down)
    return cache[key]


def _instances(m: RescaleModel, vid: str, host: str, p: int) -> list[tuple[int, Count]]:
    """(index, variable) of ``vid``'s instances on ``host`` at parallelism ``p``: the count variable ``z[v, p, h]``
    as instance 0 of a rescalable vertex (they are alike), every ``x[v_i, h]`` of a per-subtask one."""
    if m.is_rescalable(vid):
        pair = m.z.get((vid, p, host))
        return [] if pair is None else [(0, pair)]
    return [(s.index, (var, 1)) for s in m.subtasks(vid) if (var := m.x_of(s.key, host)) is not None]


def _ub(m: RescaleModel, var: pulp.LpVariable, host: str) -> float:
    return min(var.upBound if var.upBound is not None else 1, m.slot_cap(host))


def _terms(flows: Iterable[tuple[float, Count]]) -> list[tuple[float, pulp.LpVariable]]:
    """(coefficient, variable) from (figure per instance, (variable, instances per unit)) pairs."""
    return [(c * multiple, var) for c, (var, multiple) in flows]


def _product(
    m: RescaleModel,
    by_choice: dict[int, list[tuple[float, pulp.LpVariable]]],
    one_active: bool,
    host: str,
    owner: str,
    sense: int,
    tag: str,
) -> pulp.LpAffineExpression:
    """``Σ_p y[owner, p]·E_p`` for one-hot ``y``, ``E_p = Σ c·var``.

    The part every ``E_p`` shares (per variable, the smallest coefficient) is taken out as it is — with ``y`` one-hot
    it is there whichever ``p`` is chosen; usually that is all there is (what a sender emits rarely depends on how many
    receivers share it: only Flink's per-channel framing does). The rest, ``D_p ≥ 0``, gets one ``w_p`` per choice:
    ``w ≥ D − M(1 − y)``, ``w ≥ 0`` when the term only ever costs (``sense`` +1), ``w ≤ D``, ``w ≤ M·y`` when it only
    ever saves (``sense`` −1) — exact either way since ``y`` is binary, and tight because ``M`` bounds ``D`` alone.
    ``one_active``: the variables are counts of one vertex at different ``p`` (at most one is non-zero)."""
    coefficients: dict[pulp.LpVariable, list[float]] = {}
    for k, terms in enumerate(by_choice.values()):
        for c, var in terms:
            coefficients.setdefault(var, [0.0] * len(by_choice))[k] += c
    base = {var: min(cs) for var, cs in coefficients.items()}
    expr = pulp.LpAffineExpression([(var, c) for var, c in base.items() if c != 0])
    for k, p in enumerate(by_choice):
        delta = [(cs[k] - base[var], var) for var, cs in coefficients.items() if cs[k] - base[var] > 1e-12]
        if not delta:
            continue
        sizes = [c * _ub(m, var, host) for c, var in delta]
        bound = max(sizes) if one_active else sum(sizes)
        w = m.lp.add_variable(f"w_{tag}_{p}", lowBound=0)
        y = m.y_of(owner, p)
        d = pulp.LpAffineExpression([(var, c) for c, var in delta])
        if sense > 0:
            m.lp += w >= d - bound * (1 - y), f"w_{tag}_{p}"
        else:
            m.lp += w <= d, f"w_{tag}_{p}_e"
            m.lp += w <= bound * y, f"w_{tag}_{p}_y"
        expr += w
    return expr


def _sent(m: RescaleModel, ch: Channel, host: str, tag: str) -> pulp.LpAffineExpression:
    """What the instances of ``ch``'s source on ``host`` put on the wire over ``ch``, at every parallelism pair."""
    u, v = ch.source, ch.target
    if pointwise(ch.strategy):  # one group: one parallelism for both ends
        return linear(
            (var, c)
            for c, var in _terms(
                (sent_by(_channel(m, ch, p, p if m.is_rescalable(v) else ch.n_down), i), pair)
                for p in m.parallelisms(u)
                for i, pair in _instances(m, u, host, p)
            )
        )
    by_choice = {
        q: _terms(
            (sent_by(_channel(m, ch, p, q), i), pair)
            for p in m.parallelisms(u)
            for i, pair in _instances(m, u, host, p)
        )
        for q in m.parallelisms(v)
    }
    return _product(m, by_choice, m.is_rescalable(u), host, v, +1, f"s{tag}")


def _received(m: RescaleModel, ch: Channel, host: str, tag: str) -> pulp.LpAffineExpression:
    """What the instances of ``ch``'s target on ``host`` receive over ``ch``, at every parallelism pair."""
    u, v = ch.source, ch.target
    if pointwise(ch.strategy):
        return linear(
            (var, c)
            for c, var in _terms(
                (received_by(_channel(m, ch, p if m.is_rescalable(u) else ch.n_up, p), j), pair)
                for p in m.parallelisms(v)
                for j, pair in _instances(m, v, host, p)
            )
        )
    by_choice = {
        p: _terms(
            (received_by(_channel(m, ch, p, q), j), pair)
            for q in m.parallelisms(v)
            for j, pair in _instances(m, v, host, q)
        )
        for p in m.parallelisms(u)
    }
    return _product(m, by_choice, m.is_rescalable(v), host, u, -1, f"r{tag}")


def _payload(m: RescaleModel, ch: Channel) -> float:
    """What the edge carries at all (0: nothing flows, no pair crosses)."""
    return sum(_channel(m, ch, m.parallelisms(ch.source)[0], m.parallelisms(ch.target)[0]).up_out_mbit)


def _checkpoints(m: RescaleModel, host: str, mine: Callable[[str], bool] = lambda vid: True) -> pulp.LpAffineExpression:
    """``Σ k(s)·x[s, h] + Σ k_v(p)·z[v, p, h]``: checkpoint uploads of stateful instances on edge host ``host``."""
    terms = [
        (var, m.ref.subtask_by_key[key].checkpoint_mbit) for (key, h), var in m.x.items() if h == host and mine(key[0])
    ]
    terms += [
        (var, m.instance(vid, p).checkpoint_mbit * k) for (vid, p, h), var, k in m.z_items() if h == host and mine(vid)
    ]
    return linear((var, c) for var, c in terms if c > 0)


def wan_mbit(m: RescaleModel, host: str, jobs: frozenset[str] | None = None) -> pulp.LpAffineExpression | None:
    """Uplink traffic of edge host ``host`` (None when nothing can run there); ``jobs``: of those jobs' instances only
    (a channel never crosses jobs, so its traffic is its source's job's)."""
    key = ("wan", host) if jobs is None else ("wan", host, jobs)
    if key in m.aux:
        return m.aux[key]
    mine: Callable[[str], bool] = (
        (lambda vid: True) if jobs is None else (lambda vid: m.ref.vertex_job.get(vid) in jobs)
    )
    parts = []
    suffix = "" if jobs is None else f"_b{len(m.aux)}"  # a job's own product variables, beside the link's
    for n, ch in enumerate(m.ref.channels):
        if _payload(m, ch) <= 0 or not mine(ch.source):
            continue
        if host in m.hosts_of(ch.source):
            parts.append(_sent(m, ch, host, f"{n}_{host}{suffix}"))
            if host in m.hosts_of(ch.target):
                parts.append(-1 * _received(m, ch, host, f"{n}_{host}{suffix}"))
    parts.append(_checkpoints(m, host, mine))
    expr = pulp.lpSum(parts)
    m.aux[key] = expr if len(expr) > 0 else None
    return m.aux[key]


def total_wan_mbit(m: RescaleModel) -> pulp.LpAffineExpression:
    return pulp.lpSum(e for h in m.ref.edges if (e := wan_mbit(m, h.name)) is not None)


def server_cores(m: RescaleModel) -> pulp.LpAffineExpression:
    servers = {h.name for h in m.ref.servers}
    terms = [(var, m.ref.subtask_by_key[key].server_cores) for (key, h), var in m.x.items() if h in servers]
    terms += [(var, m.instance(vid, p).server_cores * k) for (vid, p, h), var, k in m.z_items() if h in servers]
    return linear(terms)


def subtasks(m: RescaleModel) -> pulp.LpAffineExpression:
    """``Σ_v n_v`` over the rescalable vertices (the others' count is a constant, left out: solvers report bounds
    without the objective's constant, and the stage's gap must compare like with like)."""
    expr = pulp.LpAffineExpression()
    for g in m.space.groups:
        if g.per_subtask or len(m.choices[g.id]) < 2:  # a constant
            continue
        for p in m.choices[g.id]:
            expr += m.y[(g.id, p)] * (p * len(g.members))
    return expr


def latency_ms(m: RescaleModel) -> pulp.LpAffineExpression:
    """Build (once) the delay variables and rows; return ``Σ w·d``."""
    if ("latency",) in m.aux:
        return m.aux[("latency",)]
    terms = []
    for n, ch in enumerate(m.ref.channels):
        # every wired pair that crosses an uplink counts, whatever it carries (an edge of no payload too): the
        # definition of evaluate's latency term and the path latencies' (costmodel.evaluate._channel_crossings)
        if ch.path_weight <= 0:
            continue
        d = None
        for h in m.ref.edges:
            if h.crossing_ms <= 0 or h.name not in m.hosts_of(ch.source):
                continue
            if d is None:
                d = m.lp.add_variable(f"delay_{n}", lowBound=0)
            for k, (_, up, down) in enumerate(_crossing_pairs(m, ch, h.name)):
                m.lp += d >= h.crossing_ms * (up - down), f"lat_{n}_{h.name}_{k}"
        if d is not None:
            terms.append((d, ch.path_weight))
    expr = pulp.LpAffineExpression(terms)
    m.aux[("latency",)] = expr
    return expr


def _crossing_pairs(m: RescaleModel, ch: Channel, host: str) -> Iterator[tuple[int, Term, Term]]:
    """(sender index, ``u`` sends from ``host``, everything it sends from there stays there) of one edge and host — a
    pair crosses the uplink when the first expression is 1 and the second 0; a rescalable sender's instances are
    alike, instance 0 stands for them."""
    u, v = ch.source, ch.target
    if pointwise(ch.strategy) and m.is_rescalable(u):
        tag = f"{m._tag(u)}_{m._tag(v)}_{host}"
        if ("split", tag) not in m.aux:
            delta = m.lp.add_variable(f"split_{tag}", cat=pulp.LpBinary)
            m.lp += m.count(u, host) - m.count(v, host) <= m.max_count(u, host) * delta, f"split_{tag}"
            m.aux[("split", tag)] = delta
        yield 0, m.aux[("split", tag)], 0
        return
    senders = list(m.subtasks(u)) if not m.is_rescalable(u) else []  # a sender of no records crosses all the same
    if pointwise(ch.strategy):
        for s in senders:
            up = m.x_of(s.key, host)
            if up is not None:
                for j in ch.receivers(s.index):
                    yield s.index, up, or_zero(m.x_of((v, j), host))
        return
    down = or_zero(m.x_of((v, 0), host)) if ch.strategy is ShipStrategy.GLOBAL else m.whole(v, host)
    if m.is_rescalable(u):
        yield 0, m.occupied(u, host), down
        return
    for s in senders:
        up = m.x_of(s.key, host)
        if up is not None:
            yield s.index, up, down


# ---- predicted path latency, for the bound of constraints.latency_bound (the rows of placement.solver.families) ------


def _choices(m: RescaleModel, ch: Channel) -> Iterator[tuple[int, int, tuple[pulp.LpVariable, ...]]]:
    """(parallelism of ``ch``'s source, of its target, the ``y`` that are 1 exactly then) of every pair the choices
    allow: one group's parallelism for a pointwise edge (both ends share it), every combination otherwise."""
    u, v = ch.source, ch.target
    pairs: list[tuple[int, int, tuple[Term, ...]]]
    if pointwise(ch.strategy):
        pairs = [(p, p if m.is_rescalable(v) else ch.n_down, (m.y_of(u, p),)) for p in m.parallelisms(u)]
    else:
        pairs = [(p, q, (m.y_of(u, p), m.y_of(v, q))) for p in m.parallelisms(u) for q in m.parallelisms(v)]
    for p, q, ys in pairs:
        if all(not isinstance(y, (int, float)) or y == 1 for y in ys):
            yield p, q, tuple(y for y in ys if not isinstance(y, (int, float)))


def _flush(m: RescaleModel, path: latency.JobPath, sink: families.Sink) -> tuple[float, families.Terms]:
    """``F(P) = Σ_e F(e)``: constant where an edge's flush wait is the same at every choice, else a variable
    ``f_e ≥ F(e at p, q)·(1 − Σ (1 − y))`` per choice (exact: ``y`` is binary and one-hot)."""
    constant, terms = 0.0, []
    index = {(ch.source, ch.target): n for n, ch in enumerate(m.ref.channels)}
    for e in path.edges:
        n = index[e]
        ch = m.ref.channels[n]
        waits = [(latency.flush_wait_ms(_channel(m, ch, p, q)), given) for p, q, given in _choices(m, ch)]
        if max(w for w, _ in waits) - min(w for w, _ in waits) <= 1e-12:
            constant += waits[0][0]
            continue
        key = ("flush", n)
        if key not in m.aux:
            f = sink.fresh(f"flush_{n}")
            for k, (w, given) in enumerate(waits):
                sink.add(
                    families.Row([(f, 1.0), *((y, -w) for y in given)], ">=", w - w * len(given), f"flush_{n}_{k}")
                )
            m.aux[key] = f
        terms.append((m.aux[key], 1.0))
    return constant, terms


def _crossings(m: RescaleModel, n: int, ch: Channel) -> Callable[[str], list[families.Crossing]]:
    """The crossings of ``ch`` at an edge host, one per sender, receiver and choice of parallelism whose send time
    differs (one for all choices where it does not)."""

    def at(host: str) -> list[families.Crossing]:
        bandwidth = m.host(host).uplink_mbit or 0.0
        out = []
        for k, (i, up, down) in enumerate(_crossing_pairs(m, ch, host)):
            indicator = [(up, 1.0)] + ([(down, -1.0)] if not isinstance(down, (int, float)) else [])
            sends = [
                (latency.transmit_ms(_channel(m, ch, p, q), min(i, p - 1), bandwidth), given)
                for p, q, given in _choices(m, ch)
            ]
            if max(t for t, _ in sends) - min(t for t, _ in sends) <= 1e-12:
                out.append(families.Crossing(indicator, sends[0][0], f"{i}_{k}"))
                continue
            out += [families.Crossing(indicator, t, f"{i}_{k}_{c}", given) for c, (t, given) in enumerate(sends)]
        return out

    return at


def path_latency_ms(m: RescaleModel, path: latency.JobPath) -> families.Var:
    """``L_P``: a variable at least the path's predicted latency ``F(P) + max_e Z_e`` at the chosen parallelism."""
    key = ("path", path.vertices)
    if key in m.aux:
        return m.aux[key]
    index = {(ch.source, ch.target): n for n, ch in enumerate(m.ref.channels)}
    tag = len([k for k in m.aux if k[0] == "path"])
    edge_hosts = [h.name for h in m.ref.edges]

    def crossing(n: int) -> Callable[[], families.Var | float]:
        ch = m.ref.channels[n]
        hosts = [h for h in edge_hosts if h in m.hosts_of(ch.source)]
        return lambda: families.edge_crossing(
            sink, m.ref, n, hosts, _crossings(m, n, ch), lambda host: families.terms_of(wan_mbit(m, host)), m.aux
        )

    sink = m.sink
    flush = _flush(m, path, sink)
    lp = families.path_latency(sink, path, tag, flush, [(index[e], crossing(index[e])) for e in path.edges])
    m.aux[key] = lp
    return lp
