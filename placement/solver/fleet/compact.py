"""The compact form of the fleet decomposition: a column per subtask and *place* (its Pi, each allowed server pool),
the exact model's rows over them (the capacity and no-data-down families of :mod:`placement.solver.families`,
through a column sink). It covers every problem the column form (:mod:`.columns`) does not, and its elastic re-solve
explains infeasible ones."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.costmodel.running import running_note
from placement.errors import Infeasible
from placement.solver import families, highs_model
from placement.solver.causes import structural_causes, thread_causes
from placement.solver.fleet.common import (
    EPS,
    Built,
    PoolsOf,
    net_mbit,
    pool_name,
    staged,
)
from placement.solver.highs_model import INF, ColumnSink, Rows, SparseMip
from placement.solver.homes import Homes, homes
from placement.solver.result import PlanResult, Shortage, SolverOptions, Stage
from placement.solver.server_pools import POOL_SEPARATOR, Pool


@dataclass
class CompactModel:
    problem: PlacementProblem
    homes: Homes
    pools: list[Pool]
    elastic: bool = False
    mip: SparseMip = field(default_factory=SparseMip)
    places: dict[SubtaskKey, list[tuple[str, int | None]]] = field(default_factory=dict)  # (edge host | pool, column)
    on_edge: dict[str, list[tuple[Subtask, int | None]]] = field(default_factory=lambda: defaultdict(list))
    on_pool: dict[int, list[tuple[Subtask, int | None]]] = field(default_factory=lambda: defaultdict(list))
    slack: dict[tuple[str, ...], tuple[int, float]] = field(default_factory=dict)  # name -> (column, capacity)
    pool_shrink: dict[int, float] = field(
        default_factory=dict
    )  # pool -> factor on its capacities (after a failed pack)
    floors: dict[int, float] = field(default_factory=dict)  # latency column -> delay every plan crosses

    def column(self, key: SubtaskKey, place: str) -> int | bool:
        """The column of subtask ``key`` on ``place``; True when it is fixed there, False when it cannot be there."""
        for name, col in self.places[key]:
            if name == place:
                return True if col is None else col
        return False


def _places(m: CompactModel) -> None:
    """A column per subtask and place (its edge hosts, each pool with an allowed server) unless it has one place."""
    pools_of = PoolsOf(m.pools)
    for s in m.problem.subtasks:
        pools = pools_of(m.homes.servers[s.key])
        names = list(m.homes.edge[s.key]) + [pool_name(m.pools[p]) for p in pools]
        if len(names) == 1:
            cols: list[int | None] = [None]
        else:
            first = m.mip.add_cols(len(names))[0]
            cols = list(range(first, first + len(names)))
        m.places[s.key] = list(zip(names, cols))
        for name, col in zip(names[: len(m.homes.edge[s.key])], cols):
            m.on_edge[name].append((s, col))
        for p, col in zip(pools, cols[len(m.homes.edge[s.key]) :]):
            m.on_pool[p].append((s, col))


def one_place_per_subtask(m: CompactModel, rows: Rows) -> None:
    """``Σ_places x[s, place] = 1`` for every subtask with more than one place."""
    for s in m.problem.subtasks:
        cols = [col for _, col in m.places[s.key] if col is not None]
        if cols:
            rows.add([(c, 1.0) for c in cols], 1.0, 1.0)


def no_data_down_to_edge(m: CompactModel, sink: ColumnSink) -> None:
    """``x[v_j, h] ≤ x[u_i, h]`` for every pair ``u_i → v_j`` and the edge host ``h`` of ``v_j`` (as the exact model,
    :func:`placement.solver.families.data_down_subtasks`; all-to-all edges through ``a[U→V, h]`` when that takes
    fewer rows)."""
    for ch in m.problem.channels:
        local: dict[str, list[tuple[int, int]]] = defaultdict(list)  # edge host -> receivers that may be there
        for j in range(ch.n_down):
            for h, col in m.places[(ch.target, j)]:
                if col is not None and m.problem.host_by_name.get(h) is not None and m.problem.host_by_name[h].is_edge:
                    local[h].append((j, col))
        for h, receivers in local.items():
            all_form = ch.all_to_all and families.all_form_is_smaller(ch.n_up, len(receivers))
            families.data_down_subtasks(
                sink, ch, h, _sender(m, ch.source, h), [(j, [(v, 1.0)]) for j, v in receivers], all_form=all_form
            )


def _sender(m: CompactModel, vid: str, host: str) -> Callable[[int], families.Terms]:
    """Subtask ``i`` of ``vid`` on ``host`` as terms: its column, fixed there (None: 1), or none."""

    def terms(i: int) -> families.Terms:
        col = m.column((vid, i), host)
        return [] if col is False else [(None, 1.0)] if col is True else [(col, 1.0)]

    return terms


def edge_capacity(m: CompactModel, sink: ColumnSink, net: dict[SubtaskKey, float]) -> None:
    """Per edge host ``h``: ``Σ c(s)/σ_h·x ≤ ρ·cores``, ``Σ m(s)·x ≤ μ·memory``, slots per group, and the uplink
    ``W_h = Σ net(s)·x[s, h] ≤ η·bandwidth`` (:mod:`placement.solver.families`; a column None: fixed there)."""
    p = m.problem
    for h in p.edges:
        placed = [(s, c, 1.0) for s, c in m.on_edge.get(h.name, [])]
        if not placed:
            continue
        families.cpu(sink, p, h, placed)
        families.memory(sink, p, h, placed)
        families.slots(sink, p, h.name, h.slots, placed)
        # one flow for the whole uplink: a server pool's column does not say which member receives
        families.uplink_one_flow(sink, p, h, [(c, net[s.key]) for s, c, _ in placed], most=None)


def pool_capacity(m: CompactModel, sink: ColumnSink) -> None:
    """Per pool: ``Σ c(s)·x ≤ Σ_k ρ·cores_k·σ_k``, ``Σ m(s)·x ≤ Σ_k μ·memory_k``, slots per group ``≤ Σ_k slots_k``
    (each the sum of its members' rows: a relaxation, see the module doc)."""
    p = m.problem
    for k, pool in enumerate(m.pools):
        placed = [(s, c, 1.0) for s, c in m.on_pool.get(k, [])]
        if not placed:
            continue
        shrink = m.pool_shrink.get(k, 1.0)
        name = pool_name(pool)
        families.pool_cpu(sink, p, name, pool.members, placed, shrink)
        families.pool_memory(sink, p, name, pool.members, placed, shrink)
        families.slots(sink, p, name, int(sum(h.slots for h in pool.members) * shrink), placed)


def wan_cost(m: CompactModel, net: dict[SubtaskKey, float]) -> tuple[np.ndarray, float]:
    """``Σ_h W_h`` as (column costs, constant)."""
    cost, constant = np.zeros(m.mip.n_cols), 0.0
    for placed in m.on_edge.values():
        for s, c in placed:
            if c is None:
                constant += net[s.key]
            else:
                cost[c] += net[s.key]
    return cost, constant


def server_cpu_cost(m: CompactModel) -> tuple[np.ndarray, float]:
    """``Σ_s c(s)·[s on a server]`` as (column costs, constant)."""
    cost, constant = np.zeros(m.mip.n_cols), 0.0
    for placed in m.on_pool.values():
        for s, c in placed:
            if c is None:
                constant += s.server_cores
            else:
                cost[c] += s.server_cores
    return cost, constant


def latency(m: CompactModel, rows: Rows) -> list[tuple[int, float]]:
    """``d[U→V] ≥ delay(h)·(x[u_i, h] − x[v_j, h])`` per pair and edge host (all-to-all edges through
    ``b[U→V, h] ≤ x[v_j, h]``), as the exact model; returns (column of d, path weight) per edge."""
    p = m.problem
    terms = []
    for ch in p.channels:
        if ch.path_weight <= 0:
            continue
        by_host: dict[str, list[tuple[int, int | bool]]] = defaultdict(list)
        for i in range(ch.n_up):
            for h, col in m.places[(ch.source, i)]:
                host = p.host_by_name.get(h)
                if host is not None and host.is_edge and host.crossing_ms > 0:
                    by_host[h].append((i, True if col is None else col))
        if not by_host:
            continue
        d = int(m.mip.add_cols(1, 0.0, INF, integer=False)[0])
        floor = 0.0
        for h, ups in by_host.items():
            delay = p.host_by_name[h].crossing_ms
            if ch.all_to_all:
                downs = [m.column((ch.target, j), h) for j in range(ch.n_down)]
                b: int | bool
                if all(v is True for v in downs):
                    b = True
                elif any(v is False for v in downs):
                    b = False
                else:
                    b = int(m.mip.add_cols(1, integer=False)[0])
                    for v in downs:
                        if v is not True:
                            rows.add([(b, 1.0), (v, -1.0)], -INF, 0.0)
                pairs = [(u, b) for _, u in ups]
            else:
                pairs = [(u, m.column((ch.target, j), h)) for i, u in ups for j in ch.receivers(i)]
            for u, v in pairs:  # d − delay·x_u + delay·x_v ≥ 0, with fixed ends moved to the right
                if u is False or v is True:
                    continue
                if u is True and v is False:
                    floor = max(floor, delay)
                    continue
                row, rhs = [(d, 1.0)], 0.0
                if u is True:
                    rhs += delay
                else:
                    row.append((u, -delay))
                if v is not False:
                    row.append((v, delay))
                rows.add(row, rhs, INF)
        m.floors[d] = floor
        terms.append((d, ch.path_weight))
    return terms


def build_compact(
    problem: PlacementProblem, hm: Homes, pools: list[Pool], *, elastic: bool, shrink: dict[int, float] | None = None
) -> tuple[CompactModel, dict[SubtaskKey, float], list[tuple[int, float]]]:
    """The compact form: a column per subtask and place (the fallback, and the elastic re-solve)."""
    m = CompactModel(problem, hm, pools, elastic=elastic, pool_shrink=dict(shrink or {}))
    _places(m)
    rows = Rows()
    one_place_per_subtask(m, rows)
    sink = ColumnSink(m.mip, rows, elastic, m.slack)
    no_data_down_to_edge(m, sink)
    net = net_mbit(problem)
    edge_capacity(m, sink, net)
    pool_capacity(m, sink)
    lat = latency(m, rows) if not elastic else []
    rows.flush(m.mip)
    return m, net, lat


def compact_form(problem: PlacementProblem, hm: Homes, pools: list[Pool], shrink: dict[int, float], mode: str) -> Built:
    m, net, lat = build_compact(problem, hm, pools, elastic=False, shrink=shrink)
    _fix_floors(m)
    return Built(m.mip, _stage_costs(m, net, lat, mode), lambda values: _assignment(m, values), "compact")


def _stage_costs(
    m: CompactModel, net: dict[SubtaskKey, float], lat: list[tuple[int, float]], mode: str
) -> list[tuple[str, np.ndarray, float]]:
    """(name, cost vector, constant) per stage."""
    n = m.mip.n_cols
    wan, wan_c = wan_cost(m, net)
    cpu, cpu_c = server_cpu_cost(m)
    latc = np.zeros(n)
    for d, w in lat:
        latc[d] = w
    return staged(m.problem, mode, (wan, wan_c), (cpu, cpu_c), latc)


def _assignment(m: CompactModel, values: np.ndarray) -> dict[SubtaskKey, str]:
    out = {}
    for s in m.problem.subtasks:
        places = m.places[s.key]
        out[s.key] = places[0][0] if places[0][1] is None else max(places, key=lambda pc: values[pc[1]])[0]
    return out


def _fix_floors(m: CompactModel) -> None:
    """Latency columns start at the delay every plan crosses (a source's output leaving its Pi, say)."""
    lower = np.concatenate(m.mip.col_lower)
    for d, floor in m.floors.items():
        lower[d] = floor
    m.mip.col_lower = [lower]


def infeasible_result(
    problem: PlacementProblem, hm: Homes, pools: list[Pool], options: SolverOptions, stages: list[Stage], mode: str
) -> PlanResult:
    """Elastic re-solve of the same model: a slack per capacity row, ``min Σ slack/capacity`` (as
    :mod:`placement.solver.elastic`), reported as shortages of links, hosts and server pools."""
    m, _, _ = build_compact(problem, hm, pools, elastic=True)
    cost = np.zeros(m.mip.n_cols)
    for col, capacity in m.slack.values():
        cost[col] = 1.0 / capacity
    h = m.mip.build(cost)
    info = highs_model.solve(
        h, time_limit=options.time_limit, gap=options.gap, threads=options.threads, verbose=options.verbose
    )
    if info.objective is None:
        reason = f"no placement fits, and the elastic re-solve found no explanation ({info.status})"
        return PlanResult("ilp", "infeasible", None, None, stages=tuple(stages), reason=reason, objective_mode=mode)
    values = np.asarray(h.getSolution().col_value)
    shortages = _shortages(problem, pools, {name: values[col] for name, (col, _) in m.slack.items()})
    as_hosts = tuple(_as_host(problem, pools, s) for s in shortages)
    causes = structural_causes(problem, hm.as_domain(), as_hosts)
    # the cause first: a thread that cannot keep up where its input is (the compact model has no thread row)
    with contextlib.suppress(Infeasible):
        shortages = thread_causes(problem, homes(problem, thread=False).as_domain(), as_hosts) + shortages
    reason = "; ".join([s.message for s in shortages] or ["no placement fits"])
    return PlanResult(
        "ilp",
        "infeasible",
        None,
        None,
        stages=tuple(stages),
        shortages=shortages,
        causes=causes,
        reason="; ".join((reason, *causes)),
        objective_mode=mode,
    )


def _shortages(
    problem: PlacementProblem, pools: list[Pool], slack: dict[tuple[str, ...], float]
) -> tuple[Shortage, ...]:
    hosts = problem.host_by_name
    by_name = {pool_name(p): p for p in pools}
    out = []
    for name, over in slack.items():
        if over <= EPS:
            continue
        kind, where = name[0], name[1]
        if where in by_name and where not in hosts:  # a pool of several servers
            members = by_name[where].members
            usable = {
                "cpu": families.pool_cpu_room(problem, members),
                "memory": families.pool_memory_room(problem, members),
                "slots": float(sum(h.slots for h in members)),
            }[kind]
            capacity = {
                "cpu": sum(h.cores * h.speed for h in members),
                "memory": sum(h.memory_mib for h in members),
                "slots": usable,
            }[kind]
            resource = f"{where} ({', '.join(h.name for h in members)})"
        else:
            h = hosts[where]
            usable = {
                "link": families.one_flow_room(problem, h),
                "cpu": families.cpu_room(problem, h),
                "memory": families.memory_room(problem, h),
                "slots": float(h.slots),
            }[kind]
            capacity = {"link": h.uplink_mbit or 0.0, "cpu": h.cores, "memory": h.memory_mib, "slots": float(h.slots)}[
                kind
            ]
            resource = f"{where}→{h.uplink_to}" if kind == "link" else where
        detail, running = "", ""
        if kind == "slots" and name[2] in problem.vertex_names:
            detail = f" for {problem.vertex_names[name[2]]}"
        if where in hosts:  # jobs already running there (plan --running): name them
            what, unit = {
                "link": ("mbit", " Mbit/s"),
                "cpu": ("cores", ""),
                "memory": ("memory_mib", " MiB"),
                "slots": ("slots", ""),
            }[kind]
            running = running_note(hosts[where], what, unit)
            if kind == "slots":
                capacity += hosts[where].running_total("slots")
        out.append(Shortage(kind, resource, usable + over, usable, capacity, detail, running))  # type: ignore[arg-type]
    out.sort(key=lambda s: -(s.needed - s.usable) / max(s.usable, EPS))
    return tuple(out)


def _as_host(problem: PlacementProblem, pools: list[Pool], s: Shortage) -> Shortage:
    """A pool's shortage as one of its servers' (what :func:`structural_causes` looks up)."""
    if s.kind == "link" or s.resource in problem.host_by_name:
        return s
    return replace(s, resource=s.resource.split(" ")[0].split(POOL_SEPARATOR)[0])
