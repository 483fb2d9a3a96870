"""Rich tables for ``placement plan`` with several jobs (presentation only): per job, per shared link, and the joint
plan beside planning the jobs one by one."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from placement.costmodel.evaluate import PlanCost
from placement.costmodel.model import PlacementProblem
from placement.solver.one_by_one import OneByOne
from placement.solver.result import PlanResult


def jobs_table(parts: dict[str, PlanResult]) -> Table:
    t = Table(title="Jobs")
    for col in ("job", "WAN Mbit/s", "server cores", "edge cores", "latency ms"):
        t.add_column(col, justify="left" if col == "job" else "right")
    for name, r in parts.items():
        c = r.cost
        assert c is not None
        t.add_row(escape(name), f"{c.wan_mbit:.2f}", f"{c.server_cores:.2f}", f"{c.edge_cores:.2f}", f"{c.latency_ms:.1f}")
    return t


def shared_links_table(problem: PlacementProblem, total: PlanCost, parts: dict[str, PlanResult]) -> Table:
    """Each uplink's Mbit/s per planned job, the running jobs', the total and what is usable."""
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
        t.add_row(load.name, *(f"{x:.2f}" for x in mine), *(f"{ran.get(j, 0.0):.2f}" for j in running),
                  f"{everything:.2f}", f"{load.bandwidth_mbit:g}", f"{load.usable_mbit:.1f}",
                  f"{everything / load.bandwidth_mbit:.0%}" if load.bandwidth_mbit else "–", style=style)
    return t


def compare_jobs_table(problem: PlacementProblem, result: PlanResult, parts: dict[str, PlanResult],
                       others: list[OneByOne]) -> Table:
    """The joint plan beside planning the jobs one by one: each job's WAN and each link's Mbit/s, and whether the plans
    fit together."""
    t = Table(title="Joint vs one by one (in the order of --profile)")
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
        ("joint", parts, result.cost, "yes" if result.cost is not None and result.cost.feasible else "[red]no[/]")]
    for o in others:
        fits = "yes" if o.feasible else "[red]no[/]"  # why: the line after the table
        rows.append((o.strategy, o.results, o.cost, fits))
    for name, results, cost, fits in rows:
        per_job = [f"{results[j].cost.wan_mbit:.2f}" if j in results and results[j].cost is not None else "–"
                   for j in jobs]
        links = [f"{cost.link(h.name).mbit:.2f}" if cost is not None else "–" for h in problem.edges]
        t.add_row(name, *per_job, *links, f"{cost.wan_mbit:.2f}" if cost else "–",
                  f"{cost.server_cores:.2f}" if cost else "–", fits)
    return t
