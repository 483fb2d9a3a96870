"""One encoding of each constraint family of the placement ILPs, shared by every model (issue 44).

A family says what is summed, against what capacity, with which headroom, and writes the rows over the model's own
variables: the plain ILP's ``x[s, h]``, the rescale ILP's counts ``z[v, p, h]`` (an instance's figures times the
instances one unit of the variable stands for), the fleet's compact columns (a Pi or a server pool), the packing's
``y[s, k]``. Variables are opaque here: a family hands :class:`Row` objects to the model's :class:`Sink` (a PuLP
problem, :class:`PulpSink`, or a :class:`~placement.solver.highs_model.SparseMip`'s row collector), which knows what
a variable is, how large it may be and how a capacity row stretches when elastic.

Notation of :mod:`placement.solver.constraints`: ``c(s)`` server cores (``c(s)/σ_h`` on host ``h``), ``m(s)`` MiB,
``ρ``/``μ``/``η`` the policy's CPU, memory and WAN targets. Rows that cannot bind are not added; what the most a row's
left-hand side can reach is, is the model's to say (its variables' bounds, or a tighter figure it knows).

The vectorised packing (:mod:`placement.solver.packing`) and the column form of the fleet
(:mod:`placement.solver.fleet.columns`, :mod:`~placement.solver.fleet.plans`) build their arrays from the figures
below (``*_need``, ``*_room``) rather than row by row: their variable spaces are matrices, but what they sum against
what is the same. Where a family has two equivalent forms (the pairs of :func:`data_down` or the all-to-all form of
:func:`data_down_all`), both are here and the model picks one (the compact model by row count,
:func:`all_form_is_smaller`).

Which model has which family — ``row``: this module's rows over the model's variables; ``domain``: the pairs it
forbids are not variables at all (:mod:`placement.solver.domains`, :mod:`placement.solver.homes`,
:mod:`placement.solver.rescale.domains`); ``arrays``: this module's figures written as arrays; ``—``: cannot apply:

================== ======= ======= ========== ============ ============= ============
family             plain   rescale max-rate   fleet column fleet compact packing
================== ======= ======= ========== ============ ============= ============
CPU, memory        row     row     affine (1) arrays (2)   row           arrays
pool CPU, memory   —       —       —          arrays       row           —
slots, job slots   row     row     row        arrays (3)   row           arrays, row
one thread         row (4) domain  affine (1) domain       domain        domain
uplink             row     row     affine (1) arrays (2)   row           — (5)
uplink pairs       row     — (12)  affine (1) — (12)       — (12)        — (5)
uplink budgets     row     row     affine (1) — (6)        — (6)         — (5)
no data down       row     row     row        by plan (7)  row           — (5)
whole vertices     row     row     row        — (8)        — (8)         — (9)
latency bound      row     row     — (10)     — (6)        — (6)         — (5)
pins, births, ...  domain  domain  domain     domain       domain        by pool (11)
================== ======= ======= ========== ============ ============= ============

(1) :func:`placement.solver.capacity.max_scale`'s direct model: the same figures as rows affine in the scale it
maximises (products with it, McCormick), not through a sink; its other rows are the plain model's.
(2) A Pi's plans are filtered by its own rows (:func:`placement.solver.fleet.plans.pi_plans`); the pools' rows are
arrays over the plans. (3) A pool's slot rows are per slot group also with several jobs: the sum of its members'
per-vertex rows, implied by their job-slot rows — a relaxation, like every pool row; the packing holds the job slots.
(4) The domain leaves no pair whose thread cannot keep up; the row binds in the elastic re-solve, which starts from
the rules' domain, so a thread is named as what is short. (5) The packing places on servers: no uplink, no edge host,
no latency. (6) The decomposition refuses a latency bound, job priorities and budgets
(:func:`placement.solver.methods.solve_with`): its Pi plans see neither the queue at their uplink nor a job's share
of it. (7) A Pi's plans are the down-closed sets of its subtasks (:func:`placement.solver.fleet.plans.ideals`): no
plan keeps a receiver and sends its sender away. (8) The decomposition refuses vanilla mode
(:func:`placement.solver.methods.choose_method`, :func:`placement.solver.fleet.solve_decomposed`): a whole operator
ties Pis and servers together. (9) The packing may split a whole vertex over a pool's servers; the evaluator then
refuses the packed plan and the full model, which has the rows, plans it (:func:`placement.solver.ilp.solve`; the
rescale model's :mod:`placement.solver.pooling` likewise). (10) ``--max-rate`` refuses a latency bound
(:meth:`placement.planning.request.PlanRequest.check_latency_bounds`). (11) A pool's servers share every pin,
forbid and birth (:func:`placement.solver.server_pools.server_classes`). (12) One TCP flow for the whole uplink
(:func:`uplink_one_flow`), a safe under-estimate with several servers: the rescale model's counts of instances have
no product per TaskManager pair, and a fleet pool's column does not say which member receives.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

import pulp

from placement.costmodel import latency
from placement.costmodel.model import Channel, HostSpec, PlacementProblem, Subtask

Var = Hashable  # a model's variable: a PuLP variable, a column index; None in a term: fixed at 1
Terms = list[tuple[Var, float]]
Placed = Iterable[tuple[Subtask, Var, float]]  # (one instance's figures, its variable, instances per unit of it)
# what a model builds once and asks again (the queue and crossing variables; 0.0: none), among its other memos
Memo: TypeAlias = dict[tuple[object, ...], object]


@dataclass(frozen=True)
class Row:
    """``Σ c·var  sense  rhs``; ``slack``: a capacity row that stretches by a slack of that name when elastic."""

    terms: Terms
    sense: Literal["<=", ">=", "=="]
    rhs: float
    name: str
    slack: tuple[str, ...] | None = None


class Sink(Protocol):
    elastic: bool
    eps: float  # a row whose left-hand side can exceed its capacity by no more than this cannot bind

    def add(self, row: Row) -> None: ...

    def fresh(self, name: str, low: float = 0.0, up: float | None = None, binary: bool = False) -> Var: ...

    def upper(self, var: Var) -> float: ...


class PulpSink:
    """Rows into a PuLP problem; ``add_slack(name, capacity)`` is the model's (0 when not elastic)."""

    def __init__(
        self,
        lp: pulp.LpProblem,
        add_slack: Callable[[tuple[str, ...], float], pulp.LpAffineExpression | float],
        elastic: bool,
        eps: float = 0.0,
    ) -> None:
        self.lp, self.add_slack, self.elastic, self.eps = lp, add_slack, elastic, eps

    def add(self, row: Row) -> None:
        summed: dict[Var, float] = {}
        for var, c in row.terms:
            summed[var] = summed.get(var, 0.0) + c
        expr = pulp.LpAffineExpression(list(summed.items()))
        rhs = row.rhs + self.add_slack(row.slack, row.rhs) if row.slack is not None else row.rhs
        self.lp += (expr <= rhs if row.sense == "<=" else expr >= rhs if row.sense == ">=" else expr == rhs), row.name

    def fresh(self, name: str, low: float = 0.0, up: float | None = None, binary: bool = False) -> pulp.LpVariable:
        if binary:
            return self.lp.add_variable(name, cat=pulp.LpBinary)
        return self.lp.add_variable(name, lowBound=low, upBound=up)

    def upper(self, var: pulp.LpVariable) -> float:
        return 1.0 if var.upBound is None else var.upBound


# ---- figures: what a subtask needs of a host and what the host has for it --------------------------------------------


def cpu_need(s: Subtask, h: HostSpec) -> float:
    """``c(s)/σ_h``: a subtask's cores on host ``h``."""
    return s.cores_on(h)


def pool_cpu_need(s: Subtask) -> float:
    """``c(s)``: a subtask's server cores, what it takes of a pool's cores at speed 1 (and the server-CPU objective)."""
    return s.server_cores


def cpu_room(problem: PlacementProblem, h: HostSpec) -> float:
    """``ρ·cores(h)`` less what the TaskManager and running jobs use (:meth:`PlacementProblem.usable_cores`)."""
    return problem.usable_cores(h)


def pool_cpu_room(problem: PlacementProblem, members: Sequence[HostSpec]) -> float:
    """A pool of servers in server cores: ``Σ_k ρ·cores_k·σ_k`` (each member's :func:`cpu_room` at its speed)."""
    return sum(cpu_room(problem, h) * h.speed for h in members)


def memory_need(s: Subtask) -> float:
    return s.memory_mib


def memory_room(problem: PlacementProblem, h: HostSpec) -> float:
    """``μ·memory(h)`` less what running jobs use."""
    return problem.usable_memory(h)


def pool_memory_room(problem: PlacementProblem, members: Sequence[HostSpec]) -> float:
    return sum(memory_room(problem, h) for h in members)


def slot_group(problem: PlacementProblem, s: Subtask) -> str:
    """One slot holds one subtask of each vertex with slot sharing (Flink's default), one subtask without."""
    return s.vertex_id if problem.slot_sharing else "all"


def thread_room(problem: PlacementProblem) -> float:
    """``ρ`` of one core: a subtask is one thread."""
    return problem.usable_thread


def uplink_room(problem: PlacementProblem, h: HostSpec) -> float:
    """``η·bandwidth(h)`` — or one TCP flow's goodput where that is lower and the uplink has one receiving
    TaskManager — less what running jobs send (:meth:`PlacementProblem.usable_mbit`): the room of a model that
    writes :func:`uplink_pair` rows."""
    return problem.usable_mbit(h)


def one_flow_room(problem: PlacementProblem, h: HostSpec) -> float:
    """The uplink as one TCP flow (:meth:`PlacementProblem.one_flow_mbit`) less what running jobs send: the room of a
    model without :func:`uplink_pair` rows."""
    return max(0.0, problem.one_flow_mbit(h) - h.running_total("mbit"))


def pair_room(problem: PlacementProblem, h: HostSpec, to: HostSpec) -> float:
    """One TCP flow's goodput from ``h``'s TaskManager to ``to``'s (:meth:`PlacementProblem.pair_mbit`)."""
    return problem.pair_mbit(h, to)


def budget_room(problem: PlacementProblem, h: HostSpec, share: float) -> float:
    """A job's share of ``η·bandwidth(h)`` (:meth:`PlacementProblem.budget_mbit`)."""
    return problem.budget_mbit(h, share)


# ---- capacity rows ---------------------------------------------------------------------------------------------------


def capacity(
    sink: Sink, slack: tuple[str, ...], terms: Terms, room: float, name: str, most: float | None = None
) -> None:
    """``Σ terms ≤ room`` — stretching by a slack named ``slack`` when elastic — unless it cannot bind: ``most``, the
    largest the left-hand side can be (default: every positive term at its variable's bound), is within ``room``."""
    if most is None:
        most = sum(c * sink.upper(var) for var, c in terms if c > 0)
    if most > room + sink.eps:
        sink.add(Row(terms, "<=", room, name, slack=slack))


def cpu(sink: Sink, problem: PlacementProblem, h: HostSpec, placed: Placed, name: str | None = None) -> None:
    """``Σ c(s)/σ_h · n[s, h] ≤ ρ·cores(h)``."""
    terms = [(var, cpu_need(s, h) * k) for s, var, k in placed]
    capacity(sink, ("cpu", h.name), terms, cpu_room(problem, h), name or f"cpu_{h.name}")


def memory(sink: Sink, problem: PlacementProblem, h: HostSpec, placed: Placed, name: str | None = None) -> None:
    """``Σ m(s) · n[s, h] ≤ μ·memory(h)``."""
    terms = [(var, memory_need(s) * k) for s, var, k in placed]
    capacity(sink, ("memory", h.name), terms, memory_room(problem, h), name or f"memory_{h.name}")


def pool_cpu(
    sink: Sink, problem: PlacementProblem, pool: str, members: Sequence[HostSpec], placed: Placed, shrink: float = 1.0
) -> None:
    """``Σ c(s) · x[s, pool] ≤ Σ_k ρ·cores_k·σ_k`` (server cores; the sum of the members' rows, a relaxation)."""
    terms = [(var, pool_cpu_need(s) * k) for s, var, k in placed]
    capacity(sink, ("cpu", pool), terms, pool_cpu_room(problem, members) * shrink, f"cpu_{pool}")


def pool_memory(
    sink: Sink, problem: PlacementProblem, pool: str, members: Sequence[HostSpec], placed: Placed, shrink: float = 1.0
) -> None:
    """``Σ m(s) · x[s, pool] ≤ Σ_k μ·memory_k``."""
    terms = [(var, memory_need(s) * k) for s, var, k in placed]
    capacity(sink, ("memory", pool), terms, pool_memory_room(problem, members) * shrink, f"memory_{pool}")


def slots(
    sink: Sink,
    problem: PlacementProblem,
    where: str,
    room: int,
    placed: Placed,
    most: Callable[[str], float] | None = None,
) -> None:
    """With slot sharing ``Σ_i n[(v, i), h] ≤ slots(h)`` for every vertex ``v`` (one slot holds one subtask of each
    vertex), without ``Σ_s n[s, h] ≤ slots(h)``; several jobs with slot sharing: :func:`job_slots`. ``most``: group ->
    the most subtasks of it the model allows here, where that is less than its variables' bounds add up to."""
    placed = list(placed)
    if problem.vertex_job and problem.slot_sharing:
        job_slots(sink, problem, where, room, placed)
        return
    groups: dict[str, Terms] = defaultdict(list)
    for s, var, k in placed:
        groups[slot_group(problem, s)].append((var, k))
    for n, (group, terms) in enumerate(groups.items()):
        capacity(
            sink,
            ("slots", where, group),
            terms,
            room,
            f"slots_{where}_{n}",
            most=most(group) if most is not None else None,
        )


def job_slots(sink: Sink, problem: PlacementProblem, where: str, room: int, placed: Placed) -> None:
    """Several jobs, slot sharing: a slot holds one subtask of each vertex of one job — jobs never share one — so job
    ``J`` fills ``max_{v∈J} Σ_i n[(v, i), h]`` slots. With ``N_J`` the most subtasks a vertex of ``J`` has here and a
    share ``u[J, h] ∈ [0, 1]``: ``Σ_i n[(v, i), h] ≤ N_J·u[J, h]`` for every vertex ``v`` of ``J``, and
    ``Σ_J N_J·u[J, h] ≤ slots(h)``. (``u`` need not be integral: the rounded-up maxima satisfy the rows whenever some
    ``u`` does.)"""
    jobs: dict[str, dict[str, Terms]] = defaultdict(lambda: defaultdict(list))  # job -> vertex -> terms
    for s, var, k in placed:
        jobs[problem.vertex_job.get(s.vertex_id, "")][s.vertex_id].append((var, k))
    biggest = {
        job: max(sum(k * sink.upper(var) for var, k in terms) for terms in vertices.values())
        for job, vertices in jobs.items()
    }
    if sum(biggest.values()) <= room:
        return  # cannot bind
    used: Terms = []
    for n, (job, vertices) in enumerate(jobs.items()):
        u = sink.fresh(f"jobslots_{where}_{n}", 0.0, 1.0)
        used.append((u, biggest[job]))
        for k, terms in enumerate(vertices.values()):
            sink.add(Row([*terms, (u, -biggest[job])], "<=", 0.0, f"jobslots_{where}_{n}_{k}"))
    capacity(sink, ("slots", where, "jobs"), used, room, f"slots_{where}")


def one_thread(sink: Sink, problem: PlacementProblem, h: HostSpec, s: Subtask, var: Var) -> None:
    """``c(s)/σ_h · x[s, h] ≤ ρ`` (a subtask is one thread: one core at most), always written: the model asks for it
    only where the thread cannot keep up (elsewhere the domain leaves no such pair)."""
    sink.add(
        Row(
            [(var, cpu_need(s, h))],
            "<=",
            thread_room(problem),
            f"thread_{h.name}_{s.vertex_id}_{s.index}",
            slack=("thread", h.name, *map(str, s.key)),
        )
    )


def uplink(
    sink: Sink, problem: PlacementProblem, h: HostSpec, traffic: Terms | None, most: float | None = math.inf
) -> None:
    """``W_h ≤ η·bandwidth(h)``, ``W_h`` the uplink traffic as the model writes it (``most``: as :func:`capacity`;
    by default always written — a sum of what is sent less what is received has no cheap bound)."""
    if traffic is not None:
        capacity(sink, ("link", h.name), traffic, uplink_room(problem, h), f"wan_{h.name}", most=most)


def uplink_one_flow(
    sink: Sink, problem: PlacementProblem, h: HostSpec, traffic: Terms | None, most: float | None = math.inf
) -> None:
    """``W_h ≤ min(η·bandwidth(h), g_h)``, ``g_h`` one TCP flow's goodput: the uplink of a model that writes no
    :func:`uplink_pair` rows, which counts one flow for the whole uplink — a safe under-estimate with several
    receiving TaskManagers, and :func:`uplink` itself with one (``most``: as there)."""
    if traffic is not None:
        room = one_flow_room(problem, h)
        capacity(sink, ("link", h.name, "one flow"), traffic, room, f"wan_{h.name}", most=most)


Product = tuple[float, Terms, Terms, str]  # f, the sender's terms on the edge host, the receiver's on the other, a tag


def pair_products(sink: Sink, tag: str, products: Iterable[Product]) -> Terms:
    """``Σ f·y`` with ``y ≥ a + b − 1``, ``y ∈ [0, 1]``, for every product ``f·a·b`` of two 0/1 terms: in a row that
    bounds ``Σ f·y`` from above, ``y`` is ``a·b`` wherever it matters (``y = 1`` exactly when both are 1)."""
    out: Terms = []
    for f, a, b, suffix in products:
        y = sink.fresh(f"pair_{tag}_{suffix}", 0.0, 1.0)
        sink.add(Row([(y, 1.0), *_minus(a), *_minus(b)], ">=", -1.0, f"pair_{tag}_{suffix}"))
        out.append((y, f))
    return out


def uplink_pair(sink: Sink, problem: PlacementProblem, h: HostSpec, to: HostSpec, products: Sequence[Product]) -> None:
    """``Σ_{u_i→v_j} f(i, j)·x[u_i, h]·x[v_j, r] ≤ g_h`` (products by :func:`pair_products`): what the subtasks on
    edge host ``h`` send to those on receiving host ``r`` rides one TCP connection (Flink multiplexes every channel
    between two TaskManagers over one), which carries one flow's goodput ``g_h`` (``r`` a pool: one per member).
    Written only where it can bind — ``h``'s flow below its rate (:meth:`PlacementProblem.pair_bound`) and the
    products' sum above ``g_h``; elastic: a slack ``("pair", h, r)``, so a pair is named as what is short."""
    if not problem.pair_bound(h):
        return
    room = pair_room(problem, h, to)
    if sum(f for f, *_ in products) <= room + sink.eps:
        return
    terms = pair_products(sink, f"{h.name}_{to.name}", products)
    sink.add(Row(terms, "<=", room, f"wan_pair_{h.name}_{to.name}", slack=("pair", h.name, to.name)))


def uplink_budget(
    sink: Sink, problem: PlacementProblem, n: int, job: str, h: HostSpec, share: float, traffic: Terms | None
) -> None:
    """``W_{J,h} ≤ s_{J,h}·η·bandwidth(h)``: job ``J``'s own traffic on edge host ``h``'s uplink within its share
    (``jobs[].budget.uplinks``). Elastic: a slack ``("budget", h, J)``, so a budget that cannot be met is named as
    that job's on that link, not as the link."""
    if traffic is not None:
        sink.add(
            Row(traffic, "<=", budget_room(problem, h, share), f"budget_{n}_{h.name}", slack=("budget", h.name, job))
        )


def uplink_budgets(sink: Sink, problem: PlacementProblem, traffic_of: Callable[[str, str], Terms | None]) -> None:
    """:func:`uplink_budget` for every job and uplink share; ``traffic_of(host, job)``: that job's traffic there."""
    for n, (job, policy) in enumerate(problem.job_policies.items()):
        for host, share in policy.uplink_shares.items():
            uplink_budget(sink, problem, n, job, problem.host_by_name[host], share, traffic_of(host, job))


# ---- nothing flows down into an edge host ----------------------------------------------------------------------------


def _minus(terms: Terms) -> Terms:
    return [(var, -c) for var, c in terms]


def data_down(sink: Sink, down: Terms, up: Terms, name: str) -> None:
    """``down ≤ up``: a receiver on edge host ``h`` only if its sender is there too (its terms there: a variable, a
    count, a share; empty where it cannot be). A sender fixed on ``h`` holds it: not written."""
    if any(var is None for var, _ in up):
        return
    sink.add(Row([*down, *_minus(up)], "<=", 0.0, name))


def data_down_all(
    sink: Sink, where: str, var_name: str, ups: Iterable[tuple[str, Terms]], downs: Iterable[tuple[str, Terms]]
) -> None:
    """An all-to-all edge ``U → V`` at one edge host: ``down ≤ a ≤ up`` for every sender ``up`` and receiver ``down``
    with one continuous ``a[U→V, h] ∈ [0, 1]`` ("all of U is on h") — ``n_U + n_V`` rows for the ``n_U · n_V`` pairs,
    the same integer hull. ``ups``/``downs``: (suffix of the row's name, terms); taken in that order, after ``a``
    (a receiver's terms may be built with rows of their own, which then follow the senders' rows)."""
    a = sink.fresh(var_name, 0.0, 1.0)
    for suffix, up in ups:
        data_down(sink, [(a, 1.0)], up, f"all_up_{where}{suffix}")
    for suffix, down in downs:
        data_down(sink, down, [(a, 1.0)], f"all_down_{where}{suffix}")


def all_form_is_smaller(n_up: int, n_down: int) -> bool:
    """Whether :func:`data_down_all` takes fewer rows than the pairs (a model that counts its rows picks by it)."""
    return n_up * n_down > n_up + n_down


def data_down_subtasks(
    sink: Sink,
    ch: Channel,
    where: str,
    sender: Callable[[int], Terms],
    receivers: Iterable[tuple[int, Terms]],
    all_form: bool,
    pair: str = "down",
    var_name: str | None = None,
) -> None:
    """:func:`data_down` over one channel's subtasks at one edge host: ``x[v_j, h] ≤ x[u_i, h]`` for every receiver
    ``v_j`` that may be there and each of its senders ``u_i`` (``sender(i)``: its terms there), or with ``all_form``
    :func:`data_down_all` over every ``u_i`` and every receiver that has a sender. Names: ``{pair}_{where}_{i}_{j}``,
    the all-form's ``a`` ``var_name`` (default ``all_{where}``)."""
    if all_form:
        data_down_all(
            sink,
            where,
            var_name or f"all_{where}",
            ((f"_{i}", sender(i)) for i in range(ch.n_up)),
            ((f"_{j}", down) for j, down in receivers if len(ch.senders(j)) > 0),
        )
        return
    for j, down in receivers:
        for i in ch.senders(j):
            data_down(sink, down, sender(i), f"{pair}_{where}_{i}_{j}")


# ---- vanilla placement's whole vertices ------------------------------------------------------------------------------


def whole_subtasks(sink: Sink, tag: str, host: str, first: Terms, rest: Iterable[tuple[int, Terms]]) -> None:
    """``x[(v, i), h] = x[(v, 0), h]`` for every subtask ``i > 0`` of a vertex vanilla placement cannot split
    (``rest``: ``i`` and its terms on ``host``; ``x[(v, 0), h] = 0`` where ``(v, i)`` cannot be there, nothing where
    neither can)."""
    for i, xi in rest:
        if xi or first:
            sink.add(Row([*xi, *_minus(first)] if xi else first, "==", 0.0, f"whole_{tag}_{i}_{host}"))


def whole_counts(sink: Sink, tag: str, hosts: Sequence[str], counts: Iterable[tuple[int, str, Terms]]) -> None:
    """The same for a vertex whose parallelism is chosen (the rescale model's counts): a binary ``o[v, h]`` with
    ``Σ_h o[v, h] = 1`` and ``z[v, p, h] ≤ p·o[v, h]`` (``counts``: ``p``, ``h`` and the terms of ``z[v, p, h]``)."""
    one = {h: sink.fresh(f"whole_{tag}_{h}", binary=True) for h in hosts}
    sink.add(Row([(o, 1.0) for o in one.values()], "==", 1.0, f"whole_{tag}"))
    for p, h, z in counts:
        sink.add(Row([*z, (one[h], -float(p))], "<=", 0.0, f"whole_{tag}_{p}_{h}"))


def var_terms(var: Var | None) -> Terms:
    """One variable's terms (none where it was never created)."""
    return [] if var is None else [(var, 1.0)]


def terms_of(expr: pulp.LpAffineExpression | None) -> Terms | None:
    """A PuLP expression's terms (None stays None: nothing can run there)."""
    return None if expr is None else list(expr.items())


# ---- the latency bound -----------------------------------------------------------------------------------------------


def bounded_paths(problem: PlacementProblem) -> list[latency.JobPath]:
    """The source→sink paths with a latency bound (refused when the job has too many paths to list)."""
    if not problem.latency_bounds:
        return []
    paths = latency.source_sink_paths(problem)
    if paths is None:
        from placement.errors import BadInput

        raise BadInput(
            f"the job has more than {latency.MAX_PATHS} source→sink paths: policy.max_latency_ms cannot be "
            "planned for it",
            field="policy.max_latency_ms",
        )
    return [p for p in paths if p.bound_ms is not None]


@dataclass(frozen=True)
class Crossing:
    """One way a channel's data may leave an edge host: ``indicator`` (terms of an expression that is 1 when it does,
    at most 0 when it does not, given the model's rows) costs ``send_ms`` to transmit when every variable of ``given``
    is 1 (the rescale model's choice of parallelism that ``send_ms`` is at; empty: whatever is chosen)."""

    indicator: Terms
    send_ms: float
    tag: str
    given: tuple[Var, ...] = ()


def queue_wait(sink: Sink, problem: PlacementProblem, h: HostSpec, traffic: Terms | None, memo: Memo) -> Var | float:
    """``q_h ≥ a_k·W_h/C_h + b_k`` for every chord of the queueing curve
    (:func:`placement.costmodel.latency.queue_pieces`), built once per uplink; 0 when nothing can cross it. Past
    :data:`~placement.costmodel.latency.MAX_UTILISATION` the queue has no bound: ``W_h ≤ 0.99·C_h`` when the headroom
    ``η`` allows more."""
    key = ("queue", h.name)
    if key in memo:
        return memo[key]
    capacity_ = h.uplink_mbit or 0.0
    if traffic is None or capacity_ <= 0:
        memo[key] = 0.0
        return 0.0
    q = sink.fresh(f"queue_{h.name}")
    running = h.running_total("mbit")  # jobs already running on this uplink (plan --running): fixed load
    for k, (a, b) in enumerate(latency.queue_pieces(latency.buffer_service_ms(capacity_))):
        slope = a * (1.0 / capacity_)
        sink.add(
            Row(
                [(q, 1.0), *((var, -(slope * c)) for var, c in traffic)],
                ">=",
                b + a * running / capacity_,
                f"queue_{h.name}_{k}",
            )
        )
    if problem.policy.wan_headroom > latency.MAX_UTILISATION and not sink.elastic:
        sink.add(Row(traffic, "<=", latency.MAX_UTILISATION * capacity_ - running, f"queue_cap_{h.name}"))
    memo[key] = q
    return q


def queue_big_m(problem: PlacementProblem, h: HostSpec) -> float:
    """``M_h = Q(ρ_max)``, ``ρ_max = min(η, 0.99)``: the largest ``q_h`` any plan needs."""
    capacity_ = h.uplink_mbit or 0.0
    rho = min(problem.policy.wan_headroom, latency.MAX_UTILISATION)
    return latency.queue_ms(rho, latency.buffer_service_ms(capacity_)) if capacity_ > 0 else 0.0


def edge_crossing(
    sink: Sink,
    problem: PlacementProblem,
    n: int,
    hosts: Iterable[str],
    crossings: Callable[[str], list[Crossing]],
    traffic: Callable[[str], Terms | None],
    memo: Memo,
) -> Var | float:
    """``Z_e ≥ (d_h + T + M_h)·y + q_h − M_h`` for every crossing ``y`` of channel ``n`` at the edge hosts ``hosts``
    its source may run on (``−(d_h + T + M_h)`` more per ``given`` variable that is 0, so a crossing at another
    parallelism never binds); a crossing that cannot be sent (no bandwidth) is forbidden. Built once per channel."""
    key = ("crossing", n)
    if key in memo:
        return memo[key]
    z = None
    for host in hosts:
        h = problem.host_by_name[host]
        q = queue_wait(sink, problem, h, traffic(host), memo)
        big_m = queue_big_m(problem, h)
        for c in crossings(host):
            given = [(g, 1.0) for g in c.given]
            if c.send_ms == math.inf:  # a link without bandwidth: this subtask's data must not cross it
                sink.add(Row([*c.indicator, *given], "<=", float(len(given)), f"lat_none_{n}_{host}_{c.tag}"))
                continue
            if z is None:
                z = sink.fresh(f"crossing_{n}")
            k = h.crossing_ms + c.send_ms + big_m
            terms = [(z, 1.0), *((var, -k * a) for var, a in c.indicator)]
            if not isinstance(q, float):
                terms.append((q, -1.0))
            terms += [(g, -k) for g, _ in given]
            sink.add(Row(terms, ">=", -big_m - k * len(given), f"lat_cross_{n}_{host}_{c.tag}"))
    memo[key] = z if z is not None else 0.0
    return memo[key]


def path_latency(
    sink: Sink,
    path: latency.JobPath,
    tag: int,
    flush: tuple[float, Terms],
    crossings: Iterable[tuple[int, Callable[[], Var | float]]],
) -> Var:
    """``L_P ≥ F(P) + Z_e`` for every edge ``e`` of ``P`` (``crossings``: its channel and a builder of its ``Z_e``,
    :func:`edge_crossing`) and ``L_P ≥ F(P)``; ``flush``: ``F(P)`` as a constant and terms (the rescale model's flush
    waits depend on the parallelism; the plain model's are constant)."""
    constant, terms = flush
    lp = sink.fresh(f"path_latency_{tag}", low=constant)
    rest = [(var, -c) for var, c in terms]
    for n, build in crossings:
        z = build()
        if not isinstance(z, float):
            sink.add(Row([(lp, 1.0), (z, -1.0), *rest], ">=", constant, f"path_{tag}_edge_{n}"))
    if rest:
        sink.add(Row([(lp, 1.0), *rest], ">=", constant, f"path_{tag}_flush"))
    return lp


def latency_bound(sink: Sink, n: int, path: latency.JobPath, lp: Var) -> None:
    """``L_P ≤ B(P)`` (elastic: plus a slack ``("latency", n)``, the n-th bounded path)."""
    sink.add(Row([(lp, 1.0)], "<=", path.bound_ms or 0.0, f"latency_bound_{n}", slack=("latency", str(n))))
