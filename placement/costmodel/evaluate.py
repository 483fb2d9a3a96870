"""What an assignment costs and which rules or capacities it breaks — the independent check of every plan.

The solver encodes the same rules as linear constraints; this module computes them directly from an assignment, so
tests (and ``placement plan --compare``) can hold the solver and the baselines to the same account.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from placement.costmodel.model import Assignment, Channel, HostSpec, PlacementProblem, Subtask
from placement.units import needed_and_usable_mbit

if TYPE_CHECKING:  # latency imports model, as this module does: imported where used, named here for the types
    from placement.costmodel.latency import PathLatency

EPS = 1e-6


@dataclass(frozen=True)
class LinkLoad:
    host: str  # the edge host whose uplink this is
    to: str
    mbit: float
    bandwidth_mbit: float
    usable_mbit: float
    delay_ms: float
    checkpoint_mbit: float = 0.0  # of ``mbit``: checkpoint uploads; the rest is the job's data plane
    loss: float = 0.0  # a fraction
    congestion_control: str = ""
    tcp_mbit: float | None = None  # one TCP flow's goodput where it is below the rate (costmodel.transport)
    credit_mbit: float | None = None  # what one remote input channel's credit carries at its round trip
    # where one TCP flow per TaskManager pair binds (PlacementProblem.pair_bound): (receiving host, Mbit/s of job
    # data from this host's TaskManager to its, what that pair's flow carries), by receiving host
    pairs: tuple[tuple[str, float, float], ...] = ()

    @property
    def data_mbit(self) -> float:
        """The job's records and their network framing (what ``placement lab measure`` reports as job data)."""
        return self.mbit - self.checkpoint_mbit

    @property
    def name(self) -> str:
        return f"{self.host}→{self.to}"

    @property
    def utilisation(self) -> float:
        return self.mbit / self.bandwidth_mbit


@dataclass(frozen=True)
class HostLoad:
    host: str
    role: str
    cores_used: float
    cores_usable: float
    cores: float
    slots_used: int
    slots: int
    memory_mib_used: float
    memory_mib_usable: float
    subtasks: int
    baseline_cores: float = 0.0  # the TaskManager's own CPU (HostSpec.baseline_cores), not in cores_used
    baseline_basis: str = "none"
    netty_cores: float = (
        0.0  # its Netty server's CPU for the stream leaving it (HostSpec.netty_cores), not in cores_used
    )

    @property
    def predicted_cores(self) -> float:
        """What the host's CPU should read: its TaskManager's baseline and Netty work + its subtasks' (calibrated)
        cores."""
        return self.baseline_cores + self.netty_cores + self.cores_used


@dataclass(frozen=True)
class PlanCost:
    links: tuple[LinkLoad, ...]
    hosts: tuple[HostLoad, ...]
    wan_mbit: float
    server_cores: float
    edge_cores: float
    latency_ms: float
    violations: tuple[str, ...]
    paths: tuple[
        PathLatency, ...
    ] = ()  # PathLatency of every source→sink path (costmodel.latency); () when not computed

    @property
    def worst_path(self) -> PathLatency | None:
        """The path with the highest predicted latency (None: no paths)."""
        return max(self.paths, key=lambda p: p.latency_ms, default=None)

    @property
    def feasible(self) -> bool:
        return not self.violations

    def link(self, host: str) -> LinkLoad:
        return next(link for link in self.links if link.host == host)

    def host(self, name: str) -> HostLoad:
        return next(h for h in self.hosts if h.host == name)


def _channel_crossings(
    problem: PlacementProblem,
    ch: Channel,
    assignment: Assignment,
    links: dict[str, float],
    violations: list[str],
    pairs: dict[tuple[str, str], float] | None = None,
) -> float:
    """Add the channel's WAN traffic to ``links``; record inbound-to-edge violations; return its worst crossing delay.

    Upstream subtask ``u_i`` on edge host ``e`` adds ``Σ_{j: v_j not on e} flow(i, j)`` to ``e``'s uplink: every pair
    of :meth:`Channel.pairs` is charged on its own, so skewed keys, pointwise RESCALE and framing come out exact.

    The delay is that of every uplink a wired pair crosses — ``u_i`` on edge host ``e``, a receiver ``v_j`` not on
    ``e`` — whatever the pair carried when it was profiled: the latency term is the delay a record taking that route
    meets, and a route that carried no record then (an idle key range, a quiet sensor) still has one, which its first
    record pays. This is the definition the rest of the cost model already uses — the path latencies and their bounds
    (:func:`placement.costmodel.latency.path_latencies`, :func:`placement.solver.constraints.latency_bound`) count
    every crossing pair — and the solver's latency term (:func:`placement.solver.objectives.latency_ms`) writes it
    as ``d ≥ delay(h)·(x[u_i, h] − x[v_j, h])`` for every pair; until issue #49 this sum left out a pair carrying
    0 Mbit/s, so the latency stage's optimum and plan.json's ``objective.latency_ms`` disagreed on such a plan."""
    hosts = problem.host_by_name
    up = [assignment[(ch.source, i)] for i in range(ch.n_up)]
    down = [assignment[(ch.target, j)] for j in range(ch.n_down)]
    worst_delay = 0.0
    for i, hu in enumerate(up):
        if not hosts[hu].is_edge:
            continue
        crossing = [j for j in ch.receivers(i) if down[j] != hu]
        away = sum(ch.flow_mbit(i, j) for j in crossing)
        if away > 0:
            links[hu] += away
        if pairs is not None:  # ``pairs``: what each TaskManager pair's connection carries
            for j in crossing:
                pairs[(hu, down[j])] = pairs.get((hu, down[j]), 0.0) + ch.flow_mbit(i, j)
        if crossing:
            worst_delay = max(worst_delay, hosts[hu].crossing_ms)
    # Inbound to an edge host: every sender of v_j must sit on v_j's host.
    name = problem.vertex_names
    for j, hv in enumerate(down):
        if not hosts[hv].is_edge:
            continue
        bad = [i for i in ch.senders(j) if up[i] != hv]
        if bad:
            i = bad[0]
            violations.append(
                f"data flows down into edge host {hv}: {name[ch.target]} ({j + 1}/{ch.n_down}) receives from "
                f"{name[ch.source]} ({i + 1}/{ch.n_up}) on {up[i]}"
            )
            worst_delay = max(worst_delay, hosts[hv].crossing_ms)
    return worst_delay


def evaluate(problem: PlacementProblem, assignment: Assignment) -> PlanCost:
    """Cost of ``assignment`` (every subtask -> host name) under the cost model, with every violated rule.

    A subtask is one thread: it keeps up with its input on host ``h`` only if it needs at most ``ρ`` of one core there,
    ``c(s)/σ_h ≤ ρ`` (:meth:`PlacementProblem.keeps_up`) — the same as ``records_in ≤ λ_v·σ_h·ρ`` of
    :mod:`placement.costmodel.rates`. Every planner is held to it, whatever the host's core count."""
    missing = [s.label for s in problem.subtasks if s.key not in assignment]
    if missing:
        raise ValueError(f"assignment misses {len(missing)} subtasks, e.g. {missing[0]}")
    violations = _subtask_violations(problem, assignment) + _split_violations(problem, assignment)
    links = {h.name: 0.0 for h in problem.edges}
    latency = 0.0
    # by TaskManager pair, where one TCP flow per pair binds (a fleet's 10 000 uplinks mostly have none)
    pairs: dict[tuple[str, str], float] | None = {} if any(problem.pair_bound(h) for h in problem.edges) else None
    for ch in problem.channels:
        latency += ch.path_weight * _channel_crossings(problem, ch, assignment, links, violations, pairs)
    checkpoints = {h.name: 0.0 for h in problem.edges}
    for s in problem.subtasks:  # checkpoints of subtasks on an edge host go up its uplink
        if assignment[s.key] in checkpoints:
            checkpoints[assignment[s.key]] += s.checkpoint_mbit
    for h, mbit in checkpoints.items():
        links[h] += mbit
    host_loads = _host_loads(problem, assignment, violations)
    link_loads = _link_loads(problem, links, checkpoints, violations, pairs or {})
    violations += budget_violations(problem, assignment)
    from placement.costmodel.latency import path_latencies  # it imports model, as this module does

    paths = path_latencies(problem, assignment, links)
    for p in paths:
        if p.over_bound:
            violations.append(latency_sentence(p))
    server_cores = sum(hl.cores_used * problem.host_by_name[hl.host].speed for hl in host_loads if hl.role == "server")
    edge_cores = sum(hl.cores_used for hl in host_loads if hl.role == "edge")
    return PlanCost(
        links=tuple(link_loads),
        hosts=tuple(host_loads),
        wan_mbit=sum(links.values()),
        server_cores=server_cores,
        edge_cores=edge_cores,
        latency_ms=latency,
        violations=tuple(violations),
        paths=paths,
    )


def _subtask_violations(problem: PlacementProblem, assignment: Assignment) -> list[str]:
    """Each subtask on a host the rules allow it, where its thread keeps up with its input."""
    violations: list[str] = []
    hosts = problem.host_by_name
    for s in problem.subtasks:
        on = assignment[s.key]
        if on not in hosts:
            raise ValueError(f"{s.label} assigned to unknown host {on!r}")
        if not problem.allows(s, on):
            allowed = problem.allowed_hosts(s)
            why = f"born on {s.birth}" if s.birth else f"allowed: {', '.join(sorted(allowed)) or 'none'}"
            violations.append(f"{s.label} on {on}, which the rules forbid ({why})")
        if not problem.keeps_up(s, hosts[on]):
            violations.append(problem.thread_shortfall(s, hosts[on]))
    return violations


def _split_violations(problem: PlacementProblem, assignment: Assignment) -> list[str]:
    """Vanilla mode's whole vertices, each on one host."""
    violations = []
    for vid in sorted(problem.whole_vertices):
        split = sorted({assignment[s.key] for s in problem.subtasks if s.vertex_id == vid})
        if len(split) > 1:
            violations.append(
                f"{problem.vertex_names[vid]} is split over {', '.join(split)}, which vanilla placement "
                "cannot do (a whole operator per host after the source chain; custom mode can)"
            )
    return violations


def _host_loads(problem: PlacementProblem, assignment: Assignment, violations: list[str]) -> list[HostLoad]:
    """Each host's cores, slots and memory under the assignment; one violation per figure past what it has."""
    host_loads = []
    by_host: dict[str, list[Subtask]] = {h.name: [] for h in problem.hosts}  # one pass: fleets have 10 000 hosts
    for s in problem.subtasks:
        by_host[assignment[s.key]].append(s)
    for h in problem.hosts:
        placed = by_host[h.name]
        cores = sum(s.cores_on(h) for s in placed)
        memory = sum(s.memory_mib for s in placed)
        slots = problem.slots_needed(placed)
        load = HostLoad(
            host=h.name,
            role=h.role,
            cores_used=cores,
            cores_usable=problem.usable_cores(h),
            cores=h.cores,
            slots_used=slots,
            slots=h.slots,
            memory_mib_used=memory,
            memory_mib_usable=problem.usable_memory(h),
            subtasks=len(placed),
            baseline_cores=h.baseline_cores,
            baseline_basis=h.baseline_basis,
            netty_cores=h.netty_cores,
        )
        host_loads.append(load)
        if cores > load.cores_usable + EPS:
            own_cores = h.baseline_cores + h.netty_cores
            own = f" beside its TaskManager's own {own_cores:.2f}" if own_cores > 0 else ""
            violations.append(
                f"host {h.name} needs {cores:.2f} cores, has {load.cores_usable:.2f} usable of {h.cores:g}{own}"
            )
        if slots > h.slots:
            violations.append(f"host {h.name} needs {slots} task slots, has {h.slots}")
        if memory > load.memory_mib_usable + EPS:
            violations.append(f"host {h.name} needs {memory:.0f} MiB, has {load.memory_mib_usable:.0f} usable")
    return host_loads


def _link_loads(
    problem: PlacementProblem,
    links: dict[str, float],
    checkpoints: dict[str, float],
    violations: list[str],
    pairs: dict[tuple[str, str], float],
) -> list[LinkLoad]:
    """Each edge host's uplink under the assignment; a violation where it carries more than its usable share, or
    where one TaskManager pair's connection carries more than one TCP flow's goodput."""
    link_loads = []
    for h in problem.edges:
        flows = _pair_loads(problem, h, pairs, violations)
        link = LinkLoad(
            host=h.name,
            to=h.uplink_to or "",
            mbit=links[h.name],
            bandwidth_mbit=h.uplink_mbit or 0.0,
            usable_mbit=problem.usable_mbit(h),
            delay_ms=h.uplink_delay_ms,
            checkpoint_mbit=checkpoints[h.name],
            loss=h.uplink_loss,
            congestion_control=h.congestion_control,
            tcp_mbit=h.uplink_goodput_mbit,
            credit_mbit=h.uplink_credit_mbit,
            pairs=flows,
        )
        link_loads.append(link)
        if link.mbit > link.usable_mbit + EPS:
            needed, usable = needed_and_usable_mbit(link.mbit, link.usable_mbit)
            violations.append(
                f"link {link.name} needs {needed} Mbit/s, has {link.bandwidth_mbit:g} "
                f"({usable} usable at {problem.policy.wan_headroom:.0%}){problem.uplink_note(h)}"
            )
    return link_loads


def _pair_loads(
    problem: PlacementProblem, h: HostSpec, pairs: dict[tuple[str, str], float], violations: list[str]
) -> tuple[tuple[str, float, float], ...]:
    """Edge host ``h``'s TaskManager pairs (:meth:`PlacementProblem.pair_bound`; none where its uplink has one flow
    for all), each with a violation where its job data is above what one flow carries."""
    if not problem.pair_bound(h):
        return ()
    out = []
    for r in problem.servers:
        mbit, room = pairs.get((h.name, r.name), 0.0), problem.pair_mbit(h, r)
        out.append((r.name, mbit, room))
        if mbit > room + EPS:
            needed, usable = needed_and_usable_mbit(mbit, room)
            violations.append(
                f"link {h.name}→{r.name} needs {needed} Mbit/s between TaskManagers {h.name} and {r.name}, has "
                f"{usable} usable{problem.link_bound_note(h)}"
            )
    return tuple(out)


def job_link_mbit(problem: PlacementProblem, assignment: Assignment, job: str) -> dict[str, float]:
    """What job ``job``'s own subtasks put on each uplink (its records, their framing and its checkpoints): edge host
    -> Mbit/s. Channels never cross jobs, so a channel's traffic is its source's job's."""
    links = {h.name: 0.0 for h in problem.edges}
    ignored: list[str] = []  # evaluate reports the rules; this only adds up
    for ch in problem.channels:
        if problem.vertex_job.get(ch.source) == job:
            _channel_crossings(problem, ch, assignment, links, ignored)
    for s in problem.subtasks:
        if problem.vertex_job.get(s.vertex_id) == job and assignment[s.key] in links:
            links[assignment[s.key]] += s.checkpoint_mbit
    return links


def budget_violations(problem: PlacementProblem, assignment: Assignment) -> list[str]:
    """Each job over its share of an uplink (``jobs[].budget.uplinks``), as a sentence naming the job and the link."""
    out = []
    for job, policy in problem.job_policies.items():
        if not policy.uplink_shares:
            continue
        mine = job_link_mbit(problem, assignment, job)
        for host, share in policy.uplink_shares.items():
            h = problem.host_by_name[host]
            budget = problem.budget_mbit(h, share)
            if mine[host] > budget + EPS:
                out.append(
                    f"job {job} needs {mine[host]:.2f} Mbit/s on link {host}→{h.uplink_to}, its budget there "
                    f"is {budget:.2f} ({share:.0%} of the usable bandwidth)"
                )
    return out


def latency_sentence(p: PathLatency) -> str:
    """ "path Source: Sensors → Parse → Sink: predicted 182.4 ms, bound 150 ms (flush 120.0, rpi1→server: delay 50,
    queue 11.2, send 1.2)"."""
    parts = f"flush {p.flush_ms:.1f}"
    if p.link:
        parts += (
            f", {p.link}: delay {p.delay_ms:g}, queue {p.queue_ms:.1f} at {p.utilisation:.0%}, send {p.transmit_ms:.1f}"
        )
    return f"path {p.name}: predicted {p.latency_ms:.1f} ms, bound {p.bound_ms:g} ms ({parts})"
