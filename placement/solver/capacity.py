"""Capacity: the highest uniform scale of the profiled source rates the inventory can sustain (``plan --max-rate``).

Planning at ``X×`` the rates (:class:`placement.costmodel.model.PlanOptions` ``rate_scale``) multiplies every rate:
a subtask's CPU (``busy × X``, floored at :func:`placement.costmodel.demand.floor_cores`) and the payload of every pair
of subtasks (plus network framing, which grows with the records up to one message per flush). Memory, slots and
checkpoint uploads do not change. Every capacity row's left-hand side is therefore non-decreasing in ``X`` for a
fixed assignment, so *feasibility is monotone*: if a plan fits at ``X`` it fits below ``X``. Two exact ways to find
the largest ``X``:

* **bisection** (:func:`max_scale_bisection`) — the exact ILP as a yes/no oracle at each scale (it rebuilds the
  problem at that scale, so every term of the cost model is honoured); ``log2(range/tolerance)`` solves.
* **direct** (:func:`max_scale`) — one MILP that maximises ``X`` itself. Within an interval where every rate-dependent
  figure is affine in ``X`` (``a + b·X``; the floors and framing make them piecewise affine), a row
  ``Σ_j (a_j + b_j·X)·x_j ≤ cap`` is linear in ``x`` and ``w_j = X·x_j``, and ``w_j`` is exact for binary ``x_j`` with
  ``w ≤ X_hi·x``, ``w ≥ X_lo·x``, ``w ≤ X``, ``w ≥ X − X_hi·(1 − x)`` (McCormick). The interval comes from a few
  oracle calls (doubling from the profiled rate); the one-thread limit of each (subtask, host) pair is such a row
  with one term, ``x_{s,h} = 1 ⇒ X ≤ ρ·σ_h/c_s`` (the oracle's domain drops the pair above that scale); it is split
  where a figure is not affine (its midpoint is not the
  mean of its ends), and the pieces are solved from the top down — the first that has a plan holds the answer. The
  result is then checked: the plan fits at ``X*`` (:func:`placement.costmodel.evaluate`), and the oracle finds nothing
  at ``X*·(1 + tolerance)``; if that check fails, bisection takes over.

What runs out first is what the elastic re-solve (:mod:`placement.solver.elastic`) names just above ``X*``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal, Protocol

import pulp

from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import Assignment, HostSpec, PlacementProblem, SubtaskKey
from placement.errors import Infeasible, PlacementError
from placement.solver import backends, constraints, families, objectives
from placement.solver.domains import restricted_domain
from placement.solver.ilp import solve
from placement.solver.model import IlpModel, new_model
from placement.solver.result import PlanResult, Shortage, SolverOptions

MAX_SCALE = 1e6  # feasible this far up: nothing binds as the rates grow
MIN_SCALE = 1e-6  # infeasible this far down: nothing fits at any rate
MAX_PIECES = 64  # affine pieces the direct method will solve before leaving it to bisection
Builder = Callable[[float], PlacementProblem]


@dataclass(frozen=True)
class Capacity:
    status: Literal["bounded", "unbounded", "infeasible"]
    scale: float | None  # the highest scale that fits (bounded)
    upper: float | None  # a scale shown not to fit (bounded: scale < upper ≤ scale·(1 + tolerance))
    method: Literal["direct", "bisection"]
    oracle_calls: int
    assignment: dict[SubtaskKey, str] | None = None  # a plan that fits at ``scale``
    binding: tuple[Shortage, ...] = ()  # what is short just above ``scale`` (largest relative shortfall first)
    note: str = ""


class _Fits(Protocol):
    """A yes/no answer per scale that counts how often it was asked (the bracket and the bisection take any)."""

    calls: int

    def __call__(self, scale: float) -> bool: ...


class _Oracle:
    """``fits(X)``: does any plan fit at scale ``X`` (the exact ILP with no objective)."""

    def __init__(self, build: Builder, options: SolverOptions):
        self.build, self.options, self.calls = build, options, 0
        self.cache: dict[float, bool] = {}

    def __call__(self, scale: float) -> bool:
        if scale in self.cache:
            return self.cache[scale]
        self.calls += 1
        problem = self.build(scale)
        try:
            domain = restricted_domain(problem)
        except Infeasible:
            self.cache[scale] = False
            return False
        m = new_model(problem, domain)
        constraints.add_all(m)
        m.lp.setObjective(pulp.LpAffineExpression())
        info = backends.run(
            m.lp,
            self.options.solver,
            time_limit=self.options.time_limit,
            gap=1.0,
            threads=self.options.threads,
            verbose=self.options.verbose,
        )
        if info.status not in ("optimal", "feasible", "infeasible"):
            raise PlacementError(
                f"the solver could not tell within the time limit whether {scale:g}× the rates fit "
                f"({info.status}); raise --time-limit"
            )
        self.cache[scale] = info.status != "infeasible"
        return self.cache[scale]


def _bracket(fits: _Fits) -> tuple[float, float] | Capacity:
    """(lo, hi) with ``fits(lo)`` and not ``fits(hi)``, hi = 2·lo; or the unbounded/infeasible answer."""
    if fits(1.0):
        lo = 1.0
        while fits(lo * 2):
            lo *= 2
            if lo >= MAX_SCALE:
                return Capacity(
                    "unbounded",
                    None,
                    None,
                    "bisection",
                    fits.calls,
                    note=f"still fits at {lo:g}× the rates: nothing binds as they grow",
                )
        return lo, lo * 2
    hi = 1.0
    while not fits(hi / 2):
        hi /= 2
        if hi <= MIN_SCALE:
            return Capacity(
                "infeasible", None, None, "bisection", fits.calls, note=f"nothing fits even at {hi:g}× the rates"
            )
    return hi / 2, hi


def max_scale_bisection(
    build: Builder, options: SolverOptions = SolverOptions(), *, tolerance: float = 1e-4
) -> Capacity:
    """The highest scale by bisection with the exact ILP as oracle, to ``tolerance`` (relative)."""
    fits = _Oracle(build, options)
    bracket = _bracket(fits)
    if isinstance(bracket, Capacity):
        return bracket
    return _bisect(fits, *bracket, tolerance)


def _bisect(fits: _Fits, lo: float, hi: float, tolerance: float, method: str = "bisection") -> Capacity:
    while hi - lo > tolerance * lo:
        mid = math.sqrt(lo * hi) if hi / lo > 2 else (lo + hi) / 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return Capacity("bounded", lo, hi, method, fits.calls)  # type: ignore[arg-type]


# ---- direct ---------------------------------------------------------------------------------------------------------


def _figures(problem: PlacementProblem) -> list[float]:
    """Every rate-dependent figure of the problem: CPU per subtask, what each subtask sends and receives per edge."""
    out = [s.server_cores for s in problem.subtasks]
    for ch in problem.channels:
        out += [ch.sent_mbit(i) for i in range(ch.n_up)] + [ch.received_mbit(j) for j in range(ch.n_down)]
    return out


def _affine(a: list[float], m: list[float], b: list[float]) -> bool:
    return all(math.isclose(y, (x + z) / 2, rel_tol=1e-9, abs_tol=1e-12) for x, y, z in zip(a, m, b))


def _pieces(build: Builder, lo: float, hi: float) -> list[tuple[float, float]] | None:
    """[lo, hi] split where some figure is not affine; None when it takes more than MAX_PIECES."""
    figures: dict[float, list[float]] = {}

    def fig(x: float) -> list[float]:
        if x not in figures:
            figures[x] = _figures(build(x))
        return figures[x]

    todo, done = [(lo, hi)], []
    while todo:
        a, b = todo.pop()
        mid = (a + b) / 2
        if _affine(fig(a), fig(mid), fig(b)) or b - a <= 1e-9 * b:
            done.append((a, b))
        else:
            todo += [(a, mid), (mid, b)]
        if len(done) + len(todo) > MAX_PIECES:
            return None
    return sorted(done, reverse=True)


def _scaled_pairs(
    m: IlpModel,
    pb: PlacementProblem,
    h: HostSpec,
    r: HostSpec,
    scaled_row: Callable[[dict[pulp.LpVariable, float], dict[pulp.LpVariable, float], float, str], None],
) -> None:
    """:func:`placement.solver.families.uplink_pair` at a scale ``X`` in ``[lo, hi]``: each product's ``f`` affine
    in it (``m``'s problem at ``lo``, ``pb`` at ``hi``; the same wiring, only the rates differ)."""
    pa = m.problem
    lo, hi = [], []
    for n, (ca, cb) in enumerate(zip(pa.channels, pb.channels, strict=True)):
        for i, u in m.placed(ca.source, h.name):
            for j in ca.receivers(i):
                v = m.var((ca.target, j), r.name)
                fa, fb = ca.flow_mbit(i, j), cb.flow_mbit(i, j)
                if v is not None and max(fa, fb) > 0:
                    lo.append((fa, [(u, 1.0)], [(v, 1.0)], f"{n}_{i}_{j}"))
                    hi.append(fb)
    room = families.pair_room(pa, h, r)
    if max(sum(f for f, *_ in lo), sum(hi)) <= room:
        return  # cannot bind
    terms = families.pair_products(m.sink, f"{h.name}_{r.name}", lo)
    scaled_row(
        {y: f for y, f in terms},
        {y: f for (y, _), f in zip(terms, hi, strict=True)},
        room,
        f"wan_pair_{h.name}_{r.name}",
    )


def _direct_piece(
    build: Builder,
    lo: float,
    hi: float,
    options: SolverOptions,
) -> tuple[float, dict[SubtaskKey, str]] | None:
    """max X on [lo, hi] with every rate-dependent coefficient affine there: (X*, plan) or None if nothing fits."""
    pa, pb = build(lo), build(hi)
    try:
        domain = restricted_domain(pa)
    except Infeasible:
        return None
    m = new_model(pa, domain)
    mb = IlpModel(problem=pb, domain=domain, lp=m.lp, x=m.x)
    for family in (
        constraints.one_host_per_subtask,
        constraints.no_data_down_to_edge,
        constraints.task_slots,
        constraints.memory_capacity,
        constraints.vanilla_whole_vertices,
    ):
        family(m)
    scale = m.lp.add_variable("scale", lowBound=lo, upBound=hi)
    w: dict[str, pulp.LpVariable] = {}

    def product(var: pulp.LpVariable) -> pulp.LpVariable:
        """``w = X·x`` for binary ``x`` (McCormick, exact at 0/1)."""
        if var.name not in w:
            p = m.lp.add_variable(f"w_{var.name}", lowBound=0, upBound=hi)
            m.lp += p <= hi * var
            m.lp += p >= lo * var
            m.lp += p <= scale
            m.lp += p >= scale - hi * (1 - var)
            w[var.name] = p
        return w[var.name]

    def scaled_row(
        at_lo: dict[pulp.LpVariable, float], at_hi: dict[pulp.LpVariable, float], capacity: float, name: str
    ) -> None:
        terms = []
        for var in at_lo.keys() | at_hi.keys():
            a, b = at_lo.get(var, 0.0), at_hi.get(var, 0.0)
            slope = (b - a) / (hi - lo) if hi > lo else 0.0
            base = a - slope * lo  # coefficient a + slope·(X − lo) = base + slope·X
            if base:
                terms.append(base * var)
            if slope:
                terms.append(slope * product(var))
        if terms:
            m.lp += pulp.lpSum(terms) <= capacity, name

    for h in pa.hosts:  # CPU: c(s, X)/σ_h
        at_lo = {var: families.cpu_need(s, h) for s, var in m.on_host(h.name)}
        at_hi = {var: families.cpu_need(pb.subtask_by_key[s.key], h) for s, var in m.on_host(h.name)}
        scaled_row(at_lo, at_hi, families.cpu_room(pa, h), f"cpu_{h.name}")
    for h in pa.hosts:  # one thread: x[s, h] = 1 ⇒ c(s, X)/σ_h ≤ ρ, i.e. X ≤ the scale where s's thread is full on h
        for s, var in m.on_host(h.name):
            s_hi = pb.subtask_by_key[s.key]
            if not pb.keeps_up(s_hi, h):  # binds inside [lo, hi] (pairs full already at lo left the domain)
                scaled_row(
                    {var: families.cpu_need(s, h)},
                    {var: families.cpu_need(s_hi, h)},
                    families.thread_room(pa),
                    f"thread_{h.name}_{s.vertex_id}_{s.index}",
                )
    for h in pa.edges:  # uplink W_h(X)
        ea, eb = objectives.wan_mbit(m, h.name), objectives.wan_mbit(mb, h.name)
        if ea is not None or eb is not None:
            scaled_row(
                dict(ea.items()) if ea is not None else {},
                dict(eb.items()) if eb is not None else {},
                families.uplink_room(pa, h),
                f"wan_{h.name}",
            )
    for h in pa.edges:  # one TCP flow per TaskManager pair: Σ f(i, j, X)·y ≤ g_h, y ≥ x[u_i, h] + x[v_j, r] − 1
        if pa.pair_bound(h):
            for r in pa.servers:
                _scaled_pairs(m, pb, h, r, scaled_row)
    for job, policy in pa.job_policies.items():  # a job's share of an uplink: W_{J,h}(X) ≤ s·η·bandwidth
        for host, share in policy.uplink_shares.items():
            ea, eb = (objectives.wan_mbit(model, host, frozenset({job})) for model in (m, mb))
            if ea is not None or eb is not None:
                scaled_row(
                    dict(ea.items()) if ea is not None else {},
                    dict(eb.items()) if eb is not None else {},
                    families.budget_room(pa, pa.host_by_name[host], share),
                    f"budget_{job}_{host}",
                )
    m.lp.setObjective(-1.0 * scale)
    info = backends.run(
        m.lp, options.solver, time_limit=options.time_limit, gap=1e-9, threads=options.threads, verbose=options.verbose
    )
    if info.status == "infeasible":
        return None
    if info.objective is None:
        raise PlacementError(f"the solver found no answer within the time limit ({info.status}); raise --time-limit")
    assignment = {s.key: max(domain[s.key], key=lambda h: m.x[(s.key, h)].value() or 0.0) for s in pa.subtasks}
    return scale.value(), assignment


def max_scale(build: Builder, options: SolverOptions = SolverOptions(), *, tolerance: float = 1e-4) -> Capacity:
    """The highest scale, by the direct MILP where the figures are piecewise affine (see the module doc), checked by
    the oracle; bisection when the check fails or the pieces are too many."""
    fits = _Oracle(build, options)
    bracket = _bracket(fits)
    if isinstance(bracket, Capacity):
        return bracket
    lo, hi = bracket
    pieces = _pieces(build, lo, hi)
    if pieces is None:
        return replace(_bisect(fits, lo, hi, tolerance), note="the rates' figures have too many kinks here: bisection")
    for a, b in pieces:
        found = _direct_piece(build, a, b, options)
        if found is None:
            continue
        best, assignment = found
        best = max(lo, min(best, hi))
        safe = best * (1 - 1e-9)
        if evaluate(build(safe), assignment).feasible and not fits(best * (1 + tolerance)):
            return Capacity("bounded", safe, best * (1 + tolerance), "direct", fits.calls, assignment=assignment)
        break
    return replace(
        _bisect(fits, lo, hi, tolerance),  # the check failed: the oracle alone
        note="the direct model's answer did not check out: bisection",
    )


def binding_constraints(
    build: Builder, scale: float, options: SolverOptions, *, step: float = 1e-3
) -> tuple[Shortage, ...]:
    """What is short just above ``scale`` (at ``scale·(1 + step)``): the elastic re-solve's shortfalls."""
    result: PlanResult = solve(build(scale * (1 + step)), options)
    return result.shortages


class _Holds:
    """``fits(X)`` of one fixed placement: does ``assignment`` fit at scale ``X`` (the evaluator, no solver)."""

    def __init__(self, build: Builder, assignment: Assignment):
        self.build, self.assignment, self.calls = build, assignment, 0

    def __call__(self, scale: float) -> bool:
        self.calls += 1
        return evaluate(self.build(scale), self.assignment).feasible


def placement_headroom(build: Builder, assignment: Assignment, *, tolerance: float = 1e-4) -> Capacity:
    """The highest scale at which the fixed ``assignment`` still fits (the plan in effect, not the best plan): the
    same bracket and bisection as :func:`max_scale_bisection`, the evaluator as oracle — monotone for a fixed
    assignment as for the best one (every row's load grows with the scale). Its ``binding``: nothing (the violation
    just above says what runs out, :func:`placement_breaks`)."""
    fits = _Holds(build, assignment)
    bracket = _bracket(fits)
    if isinstance(bracket, Capacity):
        return bracket
    return _bisect(fits, *bracket, tolerance)


def placement_breaks(build: Builder, assignment: Assignment, scale: float) -> tuple[str, ...]:
    """What the fixed ``assignment`` violates at ``scale`` (empty: it fits)."""
    return evaluate(build(scale), assignment).violations
