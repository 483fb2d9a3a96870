"""plan.json — the contract between ``placement plan`` and ``placement apply`` / the lab.

Versioned by ``format``. ``apply`` refuses a plan whose ``inventory.digest`` differs from the inventory it is given,
or whose vertices (names, parallelism) differ from the running job's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

from pydantic import ConfigDict, Field

from placement import __version__
from placement.loading import Strict, drop_unset, empty_dict, empty_list, load_model

if TYPE_CHECKING:  # annotations only: reading a plan (`placement apply`) loads neither the cost model nor networkx
    from placement.costmodel.evaluate import PlanCost
    from placement.costmodel.model import JobPolicy, PlacementProblem, SubtaskKey
    from placement.solver.result import PlanResult

PLAN_FORMAT: Final = "placement.plan/v1"


class SourceRef(Strict):
    path: str
    digest: str
    name: str | None = None


class SubtaskAssignment(Strict):
    vertex_id: str
    vertex: str
    subtask: int = Field(ge=0, description="0-based")
    parallelism: int
    label: str = Field(description="'<task name> (<i>/<n>)', i 1-based, as the patched scheduler matches it")
    host: str
    address: str


class LinkPrediction(Strict):
    link: str
    source: str = Field(alias="from")
    to: str
    mbit: float
    bandwidth_mbit: float
    usable_mbit: float
    utilisation: float
    # the transport (issue 45): absent in older plans
    delay_ms: float = Field(0.0, description="one way; the round trip is twice that")
    loss_pct: float = 0.0
    congestion_control: str | None = Field(None, description="the sending host's TCP congestion control")
    tcp_mbit: float | None = Field(
        None, description="one TCP flow's goodput under the loss and round trip, where it is below the bandwidth"
    )
    credit_mbit: float | None = Field(
        None, description="what one remote input channel's credit (exclusive + floating buffers) carries per round trip"
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)  # Strict's, and the alias's field name too


class HostPrediction(Strict):
    host: str
    role: str
    address: str
    cores_used: float
    cores: float
    slots_used: int
    slots: int
    memory_mib_used: float
    subtasks: int
    # what `placement show` prints beside the figures above, as `placement plan` does (absent in older plans)
    cores_usable: float | None = Field(None, description="the cores the plan may use (policy.cpu_utilisation_target)")
    memory_mib_usable: float | None = Field(
        None, description="the MiB the plan may use (policy.memory_utilisation_target)"
    )
    # since issue 23 (absent in older plans): the predicted CPU of the host and its parts, in this host's cores;
    # cores_used stays the subtasks' share
    predicted_cores: float | None = Field(None, description="baseline_cores + netty_cores + subtask_cores")
    baseline_cores: float | None = Field(None, description="its TaskManager's own CPU (GC, heartbeats, metrics)")
    subtask_cores: float | None = Field(None, description="its subtasks' calibrated busy-time cores (= cores_used)")
    netty_cores: float | None = Field(
        None,
        description="its Netty server's CPU for the stream that leaves it for "
        "another TaskManager (placement.costmodel.deliveries); absent: none",
    )
    baseline_basis: str | None = Field(None, description="where the baseline comes from (measured, inventory, ...)")


class PathPrediction(Strict):
    """Since issue 25 (absent in older plans): one source→sink path's predicted latency (costmodel.latency)."""

    path: str = Field(description="vertex names, source first, joined by ' → '")
    vertices: list[str] = Field(description="vertex ids, source first")
    latency_ms: float | None = Field(
        description="the bound: flush_ms + delay_ms + transmit_ms + queue_ms, what "
        "bound_ms is checked against; null: it crosses an uplink past 99 % "
        "utilisation, whose queue has no bound"
    )
    flush_ms: float = Field(description="buffer-flush waits of its network exchanges")
    delay_ms: float = Field(0.0, description="the slowest WAN crossing's link delay (0: it crosses none)")
    transmit_ms: float = Field(0.0, description="sending its network message at that link's rate")
    queue_ms: float | None = Field(
        0.0, description="queueing at that uplink (M/D/1 of a full buffer, upper bound); null: past 99 % utilisation"
    )
    link: str | None = Field(None, description="the uplink of the slowest crossing")
    utilisation: float | None = Field(None, description="that uplink's utilisation under the plan")
    bound_ms: float | None = Field(None, description="policy.max_latency_ms for this path")
    # since the expected figure (absent in older plans): latency_ms above keeps its meaning, the bound
    expected_ms: float | None = Field(
        None,
        description="expected latency: the same sum with the queue as the M/G/1 "
        "mean wait of the link's own message mix (expected_queue_ms); "
        "at most latency_ms; absent: an older plan, or the uplink "
        "at 100 % (latency_ms null too)",
    )
    expected_queue_ms: float | None = Field(None, description="that mean queue wait (Pollaczek–Khinchine)")


class Objective(Strict):
    wan_mbit: float
    server_cores: float
    edge_cores: float
    latency_ms: float


class StageInfo(Strict):
    name: str
    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    seconds: float


class SolverInfo(Strict):
    name: str | None
    status: str
    objective_mode: str | None
    gap: float | None
    seconds: float
    stages: list[StageInfo]


class RescaleInfo(Strict):
    """What ``placement plan --rescale`` changed: the plan's parallelism was chosen, not taken from the profile."""

    profiled_parallelism: dict[str, int] = Field(description="vertex id -> parallelism in the profile")
    target_records_per_s: dict[str, float] = Field(description="source vertex id -> target records/s")
    changed: dict[str, list[int]] = Field(
        default_factory=empty_dict, description="vertex name -> [profiled, planned] where they differ"
    )


class UplinkBudgetUse(Strict):
    link: str
    share: float = Field(description="of the link's usable bandwidth (jobs[].budget.uplinks)")
    budget_mbit: float = Field(description="share × bandwidth × policy.wan_headroom")
    mbit: float = Field(description="what this job's plan puts on the link")


class JobBudgetRecord(Strict):
    """A job's rank and budget among jobs planned together (the inventory's jobs[] entry) and its use of the budget."""

    priority: int | None = None
    uplinks: list[UplinkBudgetUse] = Field(default_factory=empty_list)
    min_rate_scale: float | None = None
    rate_scale: float = Field(
        description="the scale this job was planned at (above the fleet's when held at its "
        "min_rate_scale by --max-rate)"
    )


def budget_record(policy: JobPolicy | None, problem: PlacementProblem, cost: PlanCost) -> JobBudgetRecord | None:
    """``policy`` with this job's use against each uplink budget (``problem``, ``cost``: the job's own); None when
    the job has no priority or budget."""
    if policy is None or policy.empty:
        return None
    hosts = problem.host_by_name
    uplinks = [
        UplinkBudgetUse(
            link=f"{host}→{hosts[host].uplink_to}",
            share=share,
            budget_mbit=problem.budget_mbit(hosts[host], share),
            mbit=cost.link(host).mbit,
        )
        for host, share in policy.uplink_shares.items()
    ]
    return JobBudgetRecord(
        priority=policy.priority, uplinks=uplinks, min_rate_scale=policy.min_rate_scale, rate_scale=problem.rate_scale
    )


class ContingencyMove(Strict):
    vertex_id: str
    vertex: str
    subtask: int = Field(ge=0, description="0-based")
    label: str
    host: str = Field(description="where the plan runs it")
    to: str = Field(description="where it runs while the lost host is gone")
    address: str = Field(description="the address of `to`, as the schedulercfg names it")


class ContingencyRecord(Strict):
    """Since issue 43 (absent in older plans): where the subtasks run while one edge host, or its uplink, is lost —
    the same model over that degraded state (placement.costmodel.degraded). The scheduler extension reads it from the
    schedulercfg's ``[lost <address>]`` section."""

    lost: str = Field(description="the edge host")
    address: str
    status: str = Field(description="optimal | feasible | heuristic | infeasible")
    gap: float | None = None
    shortfall: str | None = Field(None, description="infeasible: what is short in that state")
    moves: list[ContingencyMove] = Field(
        default_factory=empty_list, description="this job's subtasks that run elsewhere"
    )
    objective: Objective | None = Field(
        None, description="the degraded state's figures (planned with other jobs: the fleet's, as links and hosts)"
    )
    links: list[LinkPrediction] = Field(default_factory=empty_list)
    hosts: list[HostPrediction] = Field(default_factory=empty_list)


class PlanDocument(Strict):
    format: Literal["placement.plan/v1"] = PLAN_FORMAT
    created_at: str
    tool: str
    job: str
    inventory: SourceRef
    profile: SourceRef
    placement_mode: Literal["custom", "vanilla"]
    rate_scale: float
    objective: Objective
    solver: SolverInfo
    assignment: list[SubtaskAssignment]
    links: list[LinkPrediction]
    hosts: list[HostPrediction]
    warnings: list[str] = Field(default_factory=empty_list)
    parallelism: dict[str, int] = Field(
        default_factory=empty_dict,
        description="vertex id -> parallelism the plan runs it at (absent in older plans: read "
        "it from the assignment); `placement apply` sets what differs from the running job",
    )
    rescale: RescaleInfo | None = Field(None, description="set by `placement plan --rescale`")
    paths: list[PathPrediction] | None = Field(
        None, description="predicted latency per source→sink path (since issue 25; absent in older plans)"
    )
    budget: JobBudgetRecord | None = Field(
        None,
        description="planned with other jobs: its priority and budget from "
        "the inventory's jobs[] entry, and its use of each (absent when unset)",
    )
    contingencies: list[ContingencyRecord] | None = Field(
        None, description="one per edge host: where the subtasks run while it or its uplink is lost (since issue 43)"
    )

    def mapping(self) -> dict[str, list[str]]:
        """vertex name -> host of each subtask (the vanilla-mode placement argument)."""
        out: dict[str, list[str]] = {}
        for a in sorted(self.assignment, key=lambda a: a.subtask):
            out.setdefault(a.vertex, []).append(a.host)
        return out


def solver_info(result: PlanResult) -> SolverInfo:
    return SolverInfo(
        name=result.solver,
        status=result.status,
        objective_mode=result.objective_mode,
        gap=result.gap,
        seconds=result.seconds,
        stages=[
            StageInfo(
                name=s.name,
                status=s.info.status,
                objective=s.info.objective,
                bound=s.info.bound,
                gap=s.info.gap,
                seconds=s.info.seconds,
            )
            for s in result.stages
        ],
    )


def _links(cost: PlanCost) -> list[LinkPrediction]:
    return [
        LinkPrediction(
            link=link.name,
            source=link.host,
            to=link.to,
            mbit=link.mbit,
            bandwidth_mbit=link.bandwidth_mbit,
            usable_mbit=link.usable_mbit,
            utilisation=link.utilisation,
            delay_ms=link.delay_ms,
            loss_pct=link.loss * 100,
            congestion_control=link.congestion_control or None,
            tcp_mbit=link.tcp_mbit,
            credit_mbit=link.credit_mbit,
        )
        for link in cost.links
    ]


def _hosts(cost: PlanCost, problem: PlacementProblem) -> list[HostPrediction]:
    hosts = problem.host_by_name
    return [
        HostPrediction(
            host=h.host,
            role=h.role,
            address=hosts[h.host].address,
            cores_used=h.cores_used,
            cores=h.cores,
            slots_used=h.slots_used,
            slots=h.slots,
            memory_mib_used=h.memory_mib_used,
            subtasks=h.subtasks,
            cores_usable=h.cores_usable,
            memory_mib_usable=h.memory_mib_usable,
            predicted_cores=h.predicted_cores,
            baseline_cores=h.baseline_cores,
            subtask_cores=h.cores_used,
            baseline_basis=h.baseline_basis,
            netty_cores=h.netty_cores or None,
        )
        for h in cost.hosts
    ]


def _objective(cost: PlanCost) -> Objective:
    return Objective(
        wan_mbit=cost.wan_mbit, server_cores=cost.server_cores, edge_cores=cost.edge_cores, latency_ms=cost.latency_ms
    )


def contingency_record(
    problem: PlacementProblem,
    main: Mapping[SubtaskKey, str],
    lost: str,
    result: PlanResult,
    assignment: Mapping[SubtaskKey, str] | None,
    shortfall: str = "",
) -> ContingencyRecord:
    """One contingency of ``problem``'s job: ``result`` is the degraded state's plan (planned with other jobs: the
    fleet's), ``assignment`` this job's part of it, ``main`` this job's plan."""
    hosts = problem.host_by_name
    moves = (
        []
        if assignment is None
        else [
            ContingencyMove(
                vertex_id=s.vertex_id,
                vertex=s.vertex_name,
                subtask=s.index,
                label=s.label,
                host=main[s.key],
                to=assignment[s.key],
                address=hosts[assignment[s.key]].address,
            )
            for s in problem.subtasks
            if assignment[s.key] != main[s.key]
        ]
    )
    cost = result.cost if assignment is not None else None
    return ContingencyRecord(
        lost=lost,
        address=hosts[lost].address,
        status=result.status,
        gap=result.gap,
        shortfall=shortfall or None,
        moves=moves,
        objective=_objective(cost) if cost else None,
        links=_links(cost) if cost else [],
        hosts=_hosts(cost, problem) if cost else [],
    )


def build_plan_document(
    problem: PlacementProblem,
    result: PlanResult,
    *,
    job: str,
    inventory: SourceRef,
    profile: SourceRef,
    placement_mode: Literal["custom", "vanilla"],
    warnings: list[str] | None = None,
    now: datetime | None = None,
    rescale: RescaleInfo | None = None,
    budget: JobBudgetRecord | None = None,
    contingencies: list[ContingencyRecord] | None = None,
) -> PlanDocument:
    """The plan document of a solved ``result`` (pure: the timestamp can be given)."""
    assert result.assignment is not None and result.cost is not None, "only solved plans have a document"
    hosts = problem.host_by_name
    cost = result.cost
    return PlanDocument(
        created_at=(now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        tool=f"placement {__version__}",
        job=job,
        inventory=inventory,
        profile=profile,
        placement_mode=placement_mode,
        rate_scale=problem.rate_scale,
        objective=_objective(cost),
        solver=solver_info(result),
        assignment=[
            SubtaskAssignment(
                vertex_id=s.vertex_id,
                vertex=s.vertex_name,
                subtask=s.index,
                parallelism=s.parallelism,
                label=s.label,
                host=result.assignment[s.key],
                address=hosts[result.assignment[s.key]].address,
            )
            for s in problem.subtasks
        ],
        links=_links(cost),
        hosts=_hosts(cost, problem),
        warnings=list(warnings or []),
        parallelism={vid: problem.by_vertex[vid][0].parallelism for vid in problem.vertex_order},
        rescale=rescale,
        paths=[
            PathPrediction(
                path=p.name,
                vertices=list(p.vertices),
                latency_ms=_finite(p.latency_ms),
                flush_ms=p.flush_ms,
                delay_ms=p.delay_ms,
                transmit_ms=p.transmit_ms,
                queue_ms=_finite(p.queue_ms),
                link=p.link,
                utilisation=p.utilisation,
                bound_ms=p.bound_ms,
                expected_ms=_finite(p.expected_ms),
                expected_queue_ms=_finite(p.expected_queue_ms),
            )
            for p in cost.paths
        ]
        or None,
        budget=budget,
        contingencies=contingencies,
    )


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def render_plan_json(doc: PlanDocument) -> str:
    data = doc.model_dump(mode="json", by_alias=True)
    if data.get("paths") is None:  # issue 25's field: a plan without paths reads as before
        data.pop("paths", None)
    for path in data.get("paths") or ():  # the expected figure's: an older plan's paths dump as they did
        drop_unset(path, "expected_ms", "expected_queue_ms")
    drop_unset(data, "budget")  # issue 24's: a plan without priority or budget reads as before
    drop_unset(data, "contingencies")  # issue 43's: a plan made without them reads as before
    for c in data.get("contingencies") or ():
        for field in ("gap", "shortfall", "objective"):
            drop_unset(c, field)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def load_plan(path: str | Path) -> PlanDocument:
    """Read plan.json (a plan directory is accepted too); errors name the file and field."""
    p = Path(path)
    if p.is_dir():
        p = p / "plan.json"
    return load_model(p, PlanDocument)
