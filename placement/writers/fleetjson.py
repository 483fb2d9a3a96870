"""fleet.json — the summary of several jobs planned together (``placement plan --profile a.json --profile b.json``).

Each job's own plan directory (``OUT/<job>/plan.json`` and the rest) is what ``apply`` reads, as for one job; this
document says which jobs were planned together, where each one's plan is, how much of each shared link and host each
job uses (and the jobs already running, ``--running``), the totals, and how the joint model was solved.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from placement import __version__
from placement.loading import Strict, drop_unset, empty_dict, empty_list
from placement.writers.planjson import JobBudgetRecord, Objective, SolverInfo, SourceRef, solver_info

if (
    TYPE_CHECKING
):  # annotations only: reading a fleet (`placement apply --plan`) loads neither the cost model nor networkx
    from placement.costmodel.evaluate import PlanCost
    from placement.costmodel.jobs import JointProblem
    from placement.solver.result import PlanResult

FLEET_FILE = "fleet.json"  # beside the jobs' plan directories in the OUT of `placement plan --profile a --profile b`


def is_fleet_dir(path: Path) -> bool:
    """A directory `placement plan` wrote for several jobs: fleet.json, and no plan.json of its own."""
    return path.is_dir() and (path / FLEET_FILE).is_file() and not (path / "plan.json").exists()


FLEET_FORMAT = "placement.fleet/v1"


class FleetJob(Strict):
    job: str
    dir: str = Field(description="its plan directory, relative to fleet.json's")
    profile: SourceRef
    objective: Objective
    budget: JobBudgetRecord | None = Field(
        None,
        description="its priority and budget (the inventory's jobs[] entry) and its use of each; absent when unset",
    )


class RunningJob(Strict):
    job: str
    plan: str = Field(
        description="the plan.json it runs by, as given to --running; read live (--running-cluster): "
        "'cluster <REST URL> job <id>, measured over <window> s'"
    )


class LinkShare(Strict):
    link: str
    source: str = Field(alias="from")
    to: str
    mbit: float = Field(description="the planned jobs together (running jobs not included)")
    bandwidth_mbit: float
    usable_mbit: float = Field(description="under the headroom, less what running jobs send")
    utilisation: float = Field(description="planned and running jobs together, of the bandwidth")
    jobs: dict[str, float] = Field(description="job -> Mbit/s it puts on this link")
    running: dict[str, float] = Field(default_factory=empty_dict, description="running job -> Mbit/s (its plan's)")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)  # Strict's, and the aliases' field names too


class HostShare(Strict):
    host: str
    role: str
    cores: float
    cores_used: float = Field(description="the planned jobs' subtasks, in this host's cores")
    cores_usable: float
    slots_used: int
    slots: int = Field(description="free for the planned jobs (the host's less the running jobs')")
    memory_mib_used: float
    # absent in fleets planned before apply checked memory: apply's order then leaves memory unchecked
    memory_mib_usable: float | None = Field(None, description="under the memory target, less the running jobs'")
    jobs: dict[str, dict[str, float]] = Field(description="job -> {cores, slots, memory_mib, subtasks}")
    running: dict[str, dict[str, float]] = Field(default_factory=empty_dict)


class FleetDocument(Strict):
    format: str = FLEET_FORMAT
    created_at: str
    tool: str
    inventory: SourceRef
    jobs: list[FleetJob]
    running: list[RunningJob] = Field(default_factory=empty_list)
    objective: Objective = Field(description="the fleet's: every planned job's figures added up")
    solver: SolverInfo
    links: list[LinkShare]
    hosts: list[HostShare]
    warnings: list[str] = Field(default_factory=empty_list)
    compare: list[dict[str, Any]] | None = Field(
        None, description="--compare: the joint plan beside planning the jobs one by one"
    )


def _objective(cost: PlanCost) -> Objective:
    return Objective(
        wan_mbit=cost.wan_mbit, server_cores=cost.server_cores, edge_cores=cost.edge_cores, latency_ms=cost.latency_ms
    )


def build_fleet_document(
    joint: JointProblem,
    result: PlanResult,
    costs: dict[str, PlanCost],
    *,
    dirs: dict[str, str],
    inventory: SourceRef,
    profiles: dict[str, SourceRef],
    running: list[RunningJob],
    warnings: list[str] | None = None,
    compare: list[dict[str, Any]] | None = None,
    now: datetime | None = None,
    budgets: dict[str, JobBudgetRecord | None] | None = None,
) -> FleetDocument:
    """The fleet summary of a solved joint ``result``; ``costs``: each job's own evaluation (job -> PlanCost)."""
    assert result.cost is not None
    problem, total = joint.problem, result.cost
    links = []
    for load in total.links:
        h = problem.host_by_name[load.host]
        on_link = {r.job: r.mbit for r in h.running if r.mbit > 0}
        links.append(
            LinkShare(
                link=load.name,
                source=load.host,
                to=load.to,
                mbit=load.mbit,
                bandwidth_mbit=load.bandwidth_mbit,
                usable_mbit=load.usable_mbit,
                running=on_link,
                utilisation=(load.mbit + sum(on_link.values())) / load.bandwidth_mbit if load.bandwidth_mbit else 0.0,
                jobs={name: c.link(load.host).mbit for name, c in costs.items()},
            )
        )
    hosts = []
    for hl in total.hosts:
        h = problem.host_by_name[hl.host]
        per_job = {}
        for name, c in costs.items():
            mine = c.host(hl.host)
            per_job[name] = {
                "cores": mine.cores_used,
                "slots": mine.slots_used,
                "memory_mib": mine.memory_mib_used,
                "subtasks": mine.subtasks,
            }
        hosts.append(
            HostShare(
                host=hl.host,
                role=hl.role,
                cores=hl.cores,
                cores_used=hl.cores_used,
                cores_usable=hl.cores_usable,
                slots_used=hl.slots_used,
                slots=hl.slots,
                memory_mib_used=hl.memory_mib_used,
                memory_mib_usable=hl.memory_mib_usable,
                jobs=per_job,
                running={r.job: {"cores": r.cores, "slots": r.slots, "memory_mib": r.memory_mib} for r in h.running},
            )
        )
    return FleetDocument(
        created_at=(now or datetime.now(timezone.utc)).isoformat(timespec="seconds"),
        tool=f"placement {__version__}",
        inventory=inventory,
        jobs=[
            FleetJob(
                job=job.name,
                dir=dirs[job.name],
                profile=profiles[job.name],
                objective=_objective(costs[job.name]),
                budget=(budgets or {}).get(job.name),
            )
            for job in joint.jobs
        ],
        running=running,
        objective=_objective(total),
        solver=solver_info(result),
        links=links,
        hosts=hosts,
        warnings=list(warnings or []),
        compare=compare,
    )


def render_fleet_json(doc: FleetDocument) -> str:
    data = doc.model_dump(mode="json", by_alias=True)
    for job in data["jobs"]:  # a fleet without priorities or budgets reads as before
        drop_unset(job, "budget")
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
