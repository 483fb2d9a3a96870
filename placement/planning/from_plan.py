"""A written plan read back: plan.json (the contract) as the result ``placement plan`` printed it, for
``placement show`` — its tables and its ``--json`` summary, without the inventory, the profile or a solver.

plan.json records the chosen plan's figures, not the strategies ``--compare`` set beside it, so the summary's
``results`` hold the plan's own result only (what ``plan --json`` says without ``--compare``). Figures an older plan
does not record (a host's usable cores and memory) read as NaN, which the tables print as ``–``; its links' delay as
0, as plan.json's default says.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from placement.costmodel.evaluate import HostLoad, LinkLoad, PlanCost
from placement.costmodel.latency import PathLatency
from placement.planning.summary import ONE_JOB_KEYS, SUMMARY_FORMAT, result_json
from placement.solver.backends import SolveInfo
from placement.solver.result import PlanResult, Stage
from placement.writers.planjson import ContingencyRecord, HostPrediction, LinkPrediction, PathPrediction, PlanDocument

NOT_RECORDED = math.nan  # a figure an older plan.json does not hold


def result_from_plan(doc: PlanDocument) -> PlanResult:
    """The plan's result as the planner returned it: status, solver stages, figures (no assignment keys: the tables
    of a written plan read its assignment rows)."""
    solver = doc.solver
    stages = tuple(
        Stage(s.name, SolveInfo(solver.name or "", s.status, s.objective, s.bound, s.gap, s.seconds))
        for s in solver.stages
    )
    links = tuple(_link(link) for link in doc.links)
    hosts = tuple(_host(h) for h in doc.hosts)
    cost = PlanCost(
        links=links,
        hosts=hosts,
        wan_mbit=doc.objective.wan_mbit,
        server_cores=doc.objective.server_cores,
        edge_cores=doc.objective.edge_cores,
        latency_ms=doc.objective.latency_ms,
        violations=_violations(links, hosts),
        paths=tuple(_path(p) for p in doc.paths or ()),
    )
    return PlanResult(
        strategy="ilp" if stages else (solver.name or "plan"),
        status=_status(solver.status),
        assignment=None,
        cost=cost,
        stages=stages,
        objective_mode=solver.objective_mode,
    )


def _status(status: str) -> Literal["optimal", "feasible", "heuristic"]:
    """A written plan's solver status (only a solved plan is written; "given": a plan made by hand, as tests do)."""
    if status == "optimal":
        return "optimal"
    return "heuristic" if status == "heuristic" else "feasible"


def _link(link: LinkPrediction) -> LinkLoad:
    return LinkLoad(
        host=link.source,
        to=link.to,
        mbit=link.mbit,
        bandwidth_mbit=link.bandwidth_mbit,
        usable_mbit=link.usable_mbit,
        delay_ms=link.delay_ms,
        loss=link.loss_pct / 100,
        congestion_control=link.congestion_control or "",
        tcp_mbit=link.tcp_mbit,
        credit_mbit=link.credit_mbit,
    )


def _host(h: HostPrediction) -> HostLoad:
    return HostLoad(
        host=h.host,
        role=h.role,
        cores_used=h.cores_used,
        cores_usable=NOT_RECORDED if h.cores_usable is None else h.cores_usable,
        cores=h.cores,
        slots_used=h.slots_used,
        slots=h.slots,
        memory_mib_used=h.memory_mib_used,
        memory_mib_usable=NOT_RECORDED if h.memory_mib_usable is None else h.memory_mib_usable,
        subtasks=h.subtasks,
        baseline_cores=h.baseline_cores or 0.0,
        baseline_basis=h.baseline_basis or "none",
        netty_cores=h.netty_cores or 0.0,
    )


def _path(p: PathPrediction) -> PathLatency:
    return PathLatency(
        name=p.path,
        vertices=tuple(p.vertices),
        latency_ms=math.inf if p.latency_ms is None else p.latency_ms,  # null: past 99 %, no bound
        flush_ms=p.flush_ms,
        delay_ms=p.delay_ms,
        transmit_ms=p.transmit_ms,
        queue_ms=math.inf if p.queue_ms is None else p.queue_ms,
        link=p.link,
        utilisation=p.utilisation,
        bound_ms=p.bound_ms,
        expected_ms=p.expected_ms,
        expected_queue_ms=p.expected_queue_ms,
    )


def _violations(links: tuple[LinkLoad, ...], hosts: tuple[HostLoad, ...]) -> tuple[str, ...]:
    """What the recorded figures say is over its usable share (plan.json does not list the evaluation's own)."""
    over = [f"link {link.name}" for link in links if link.mbit > link.usable_mbit + 1e-6]
    over += [f"host {h.host} cores" for h in hosts if h.cores_used > h.cores_usable + 1e-6]  # NaN: not over
    return tuple(over)


def summary_from_plan(doc: PlanDocument, plan_dir: Path) -> dict:
    """``placement plan --json``'s summary of one job, as far as plan.json records it."""
    entries: dict = {
        "format": SUMMARY_FORMAT,
        "job": doc.job,
        "inventory": doc.inventory.name or doc.inventory.path,
        "results": [result_json(result_from_plan(doc))],
        "assignment": {a.label: a.host for a in doc.assignment},
    }
    if doc.rescale is not None:  # plan --json's is per strategy; plan.json holds the joint plan's
        names = {a.vertex_id: a.vertex for a in doc.assignment}
        entries["parallelism"] = {"joint": {names[vid]: p for vid, p in doc.parallelism.items() if vid in names}}
    if doc.contingencies:
        entries["contingencies"] = [_contingency_json(c) for c in doc.contingencies]
    entries["out"] = sorted(str(p) for p in plan_dir.rglob("*") if p.is_file())  # what is there now, by name
    return {key: entries[key] for key in ONE_JOB_KEYS if key in entries}


def _contingency_json(c: ContingencyRecord) -> dict:
    row: dict = {"lost": c.lost, "status": c.status, "moves": len(c.moves)}
    if c.objective is not None:
        row.update(wan_mbit=c.objective.wan_mbit, server_cores=c.objective.server_cores)
    if c.shortfall:
        row["shortfall"] = c.shortfall
    return row
