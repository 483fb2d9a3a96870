"""Rich tables for ``placement plan`` with several jobs (presentation only): per job, per shared link, and the joint
plan beside planning the jobs one by one."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from placement.costmodel.evaluate import PlanCost
from placement.costmodel.model import PlacementProblem
from placement.solver.one_by_one import OneByOne
from placement.solver.result import PlanResult


def jobs_table(
    parts: dict[str, PlanResult], problem: PlacementProblem | None = None, scales: dict[str, float] | None = None
) -> Table:
    """Each job's figures; with priorities (``problem``'s job policies) its priority, and its rate scale where the jobs'
    differ (``scales``: job -> scale; ``--rate-scale JOB=X``, or ``--max-rate`` holding a job at its minimum)."""
    policies = problem.job_policies if problem is not None else {}
    ranked = bool(problem is not None and problem.priority_classes)
    scales = scales or {}
    t = Table(title="Jobs")
    cols = (
        "job",
        *(("priority",) if ranked else ()),
        *(("rate scale",) if scales else ()),
        "WAN Mbit/s",
        "server cores",
        "edge cores",
        "latency ms",
    )
    for col in cols:
        t.add_column(col, justify="left" if col == "job" else "right")
    for name, r in parts.items():
        c = r.cost
        assert c is not None
        policy = policies.get(name)
        rank = (str(policy.priority if policy is not None and policy.priority is not None else 0),) if ranked else ()
        scale = (_scale_cell(scales.get(name), policy),) if scales else ()
        t.add_row(
            escape(name),
            *rank,
            *scale,
            f"{c.wan_mbit:.2f}",
            f"{c.server_cores:.2f}",
            f"{c.edge_cores:.2f}",
            f"{c.latency_ms:.1f}",
        )
    return t


def _scale_cell(scale: float | None, policy) -> str:
    if scale is None:
        return "–"
    held = policy is not None and policy.min_rate_scale == scale  # raised to its budget's minimum
    return f"{scale:g} (its minimum)" if held else f"{scale:g}"


def _job_on_link(problem: PlacementProblem, job: str, host: str, mbit: float) -> str:
    """A job's Mbit/s on an uplink, with its budget there when it has one (red when over it)."""
    policy = problem.job_policies.get(job)
    share = policy.uplink_shares.get(host) if policy is not None else None
    if share is None:
        return f"{mbit:.2f}"
    budget = problem.budget_mbit(problem.host_by_name[host], share)
    text = f"{mbit:.2f} ≤ {budget:.2f}"
    return f"[red]{text}[/]" if mbit > budget + 1e-6 else text


def shared_links_table(problem: PlacementProblem, total: PlanCost, parts: dict[str, PlanResult]) -> Table:
    """Each uplink's Mbit/s per planned job (``x ≤ budget`` where the job has a share of it), the running jobs', the
    total and what is usable."""
    running = sorted({r.job for h in problem.edges for r in h.running})
    t = Table(title="WAN links, per job")
    t.add_column("link")
    for col in (*parts, *(f"{j} (running)" for j in running), "total", "bandwidth", "usable", "utilisation"):
        t.add_column(escape(col), justify="right")
    for load in total.links:
        h = problem.host_by_name[load.host]
        ran = {r.job: r.mbit for r in h.running}
        mine = [parts[name].cost.link(load.host).mbit for name in parts]  # type: ignore[union-attr]
        everything = load.mbit + sum(ran.values())
        style = "red" if load.mbit > load.usable_mbit + 1e-6 else None
        t.add_row(
            load.name,
            *(_job_on_link(problem, name, load.host, x) for name, x in zip(parts, mine)),
            *(f"{ran.get(j, 0.0):.2f}" for j in running),
            f"{everything:.2f}",
            f"{load.bandwidth_mbit:g}",
            f"{load.usable_mbit:.1f}",
            f"{everything / load.bandwidth_mbit:.0%}" if load.bandwidth_mbit else "–",
            style=style,
        )
    return t


def compare_jobs_table(
    problem: PlacementProblem, result: PlanResult, parts: dict[str, PlanResult], others: list[OneByOne]
) -> Table:
    """The joint plan beside planning the jobs one by one: each job's WAN and each link's Mbit/s, and whether the plans
    fit together."""
    t = Table(title="Joint vs one by one")
    t.add_column("strategy")
    jobs = [job for job in problem.vertex_job.values()]
    jobs = list(dict.fromkeys(jobs))
    for name in jobs:
        t.add_column(escape(f"{name} WAN"), justify="right")
    for h in problem.edges:
        t.add_column(f"{h.name}→{h.uplink_to}", justify="right")
    for col in ("WAN total", "server cores", "fits"):
        t.add_column(col, justify="right")
    rows: list[tuple[str, dict[str, PlanResult], PlanCost | None, str]] = [
        ("joint", parts, result.cost, "yes" if result.cost is not None and result.cost.feasible else "[red]no[/]")
    ]
    for o in others:
        fits = "yes" if o.feasible else "[red]no[/]"  # why: the line after the table
        rows.append((o.label, o.results, o.cost, fits))
    for name, results, cost, fits in rows:
        per_job = [f"{c.wan_mbit:.2f}" if j in results and (c := results[j].cost) is not None else "–" for j in jobs]
        links = [f"{cost.link(h.name).mbit:.2f}" if cost is not None else "–" for h in problem.edges]
        t.add_row(
            name,
            *per_job,
            *links,
            f"{cost.wan_mbit:.2f}" if cost else "–",
            f"{cost.server_cores:.2f}" if cost else "–",
            fits,
        )
    return t
