"""Rich tables for ``placement plan`` (presentation only)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence

from rich.markup import escape
from rich.table import Table

from placement.cli.fit import print_table
from placement.costmodel.model import PlacementProblem
from placement.solver.result import PlanResult


def summary_line(result: PlanResult) -> str:
    if result.cost is None:  # the reason goes to the one-line error (and the shortfalls to their table): said once
        return f"[bold red]{result.status}[/]"
    c = result.cost
    solver = ""
    if result.stages:
        gap = f"{result.gap:.2%}" if result.gap is not None else "n/a"
        solver = (
            f" ({result.solver}, {result.objective_mode}, {len(result.stages)} stage"
            f"{'s' if len(result.stages) > 1 else ''}, {result.seconds:.2f} s, gap {gap})"
        )
    colour = "green" if result.status in ("optimal", "feasible") else "red"
    return (
        f"[bold {colour}]{result.status}[/]{solver}\n"
        f"WAN {c.wan_mbit:.2f} Mbit/s · server {c.server_cores:.2f} cores · edge {c.edge_cores:.2f} cores · "
        f"latency term {c.latency_ms:.1f} ms"
    )


def shortfalls_table(result: PlanResult) -> Table:
    t = Table(title="What is short")
    running = any(s.running for s in result.shortages)  # plan --running: which running jobs take part of it
    for col in ("resource", "needs", "has", "usable", "short by", *(("running jobs take",) if running else ())):
        t.add_column(col, justify="left" if col in ("resource", "running jobs take") else "right")
    for s in result.shortages:
        needed, usable = s.figures
        unit = {
            "link": " Mbit/s",
            "budget": " Mbit/s",
            "cpu": " cores",
            "thread": " cores",
            "memory": " MiB",
            "slots": " slots",
            "latency": " ms",
        }[s.kind]
        if s.kind == "thread":  # one subtask's thread, of one core
            name = escape(f"thread of {s.detail} on {s.resource}")
        elif s.kind == "latency":  # a source→sink path over its policy.max_latency_ms
            name = escape(f"latency of {s.resource}")
        elif s.kind == "budget":  # one job's share of an uplink (jobs[].budget.uplinks)
            name = escape(f"budget of job {s.detail} on link {s.resource}")
        elif s.kind == "link":  # the detail is a sentence on TCP: the one-line error below carries it
            name = escape(f"link {s.resource}" + (" (one TCP flow)" if s.detail else ""))
        else:
            name = escape(f"host {s.resource}{s.detail}")
        taken = (
            (escape(s.running.removeprefix(" after running jobs ").removeprefix(" after running job ")),)
            if running
            else ()
        )
        t.add_row(name, needed + unit, f"{s.capacity:g}", usable, f"{s.needed - s.usable:.3g}{unit}", *taken)
    return t


def links_table(result: PlanResult) -> Table:
    t = Table(title="WAN links")
    assert result.cost is not None
    lossy = any(link.loss > 0 for link in result.cost.links)  # the transport columns only where a link loses packets
    for col in (
        "link",
        "Mbit/s",
        "bandwidth",
        "usable",
        "utilisation",
        "delay ms",
        *(("loss", "one TCP flow") if lossy else ()),
    ):
        t.add_column(col, justify="right" if col != "link" else "left")
    for link in result.cost.links:
        style = "red" if link.mbit > link.usable_mbit + 1e-6 else None
        tcp = (
            (
                f"{link.loss:.2%}",
                f"{link.tcp_mbit:.3g} ({link.congestion_control})" if link.tcp_mbit is not None else "–",
            )
            if lossy
            else ()
        )
        t.add_row(
            link.name,
            f"{link.mbit:.2f}",
            f"{link.bandwidth_mbit:g}",
            f"{link.usable_mbit:.1f}",
            f"{link.utilisation:.0%}",
            f"{link.delay_ms:g}",
            *tcp,
            style=style,
        )
    return t


def hosts_table(result: PlanResult) -> Table:
    t = Table(title="Hosts")
    assert result.cost is not None
    baselines = any(h.baseline_cores > 0 for h in result.cost.hosts)  # measured TaskManager CPU (issue 23)
    cols = (
        "host",
        "role",
        "cores used",
        "usable",
        *(("TM baseline", "predicted") if baselines else ()),
        "slots",
        "memory MiB",
        "subtasks",
    )
    for col in cols:
        t.add_column(col, justify="left" if col in ("host", "role") else "right")
    for h in result.cost.hosts:
        extra = (f"{h.baseline_cores:.2f}", f"{h.predicted_cores:.2f}") if baselines else ()
        t.add_row(
            h.host,
            h.role,
            f"{h.cores_used:.2f}",
            _figure(h.cores_usable, ".2f"),
            *extra,
            f"{h.slots_used}/{h.slots}",
            f"{h.memory_mib_used:.0f}/{_figure(h.memory_mib_usable, '.0f')}",
            str(h.subtasks),
        )
    return t


def _figure(x: float, spec: str) -> str:
    """A figure, or ``–`` where it is not known (NaN: a plan read back that does not record it)."""
    return "–" if math.isnan(x) else format(x, spec)


def _ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x:.1f}" if x != float("inf") else "∞"  # an uplink past 99 %: its queue has no bound


def paths_table(result: PlanResult) -> Table:
    """Predicted latency per source→sink path (costmodel.latency): the expected figure and the upper bound (the
    ILP's, held to policy.max_latency_ms), their parts, and the policy's bound."""
    t = Table(
        title="Latency per path (predicted, ms)",
        caption="expected: the queue as the M/G/1 mean of the link's own messages; upper: as a full-buffer upper "
        "bound — the ILP's figure, checked against policy.max_latency_ms (column bound)",
    )
    for col in ("path", "expected", "upper", "flush", "crosses", "delay", "send", "queue exp / upper", "bound"):
        t.add_column(col, justify="left" if col in ("path", "crosses") else "right")
    assert result.cost is not None
    for p in result.cost.paths:
        crosses = f"{p.link} at {p.utilisation:.0%}" if p.link and p.utilisation is not None else (p.link or "–")
        t.add_row(
            escape(p.name),
            _ms(p.expected_ms),
            _ms(p.latency_ms),
            f"{p.flush_ms:.1f}",
            crosses,
            f"{p.delay_ms:g}" if p.link else "–",
            f"{p.transmit_ms:.1f}" if p.link else "–",
            f"{_ms(p.expected_queue_ms)} / {_ms(p.queue_ms)}" if p.link else "–",
            f"{p.bound_ms:g}" if p.bound_ms is not None else "–",
            style="red" if p.over_bound else None,
        )
    return t


def placement_table(problem: PlacementProblem, result: PlanResult) -> Table:
    assignment = result.assignment
    assert assignment is not None
    return vertex_hosts_table(
        (problem.vertex_names[vid], [assignment[s.key] for s in problem.by_vertex[vid]]) for vid in problem.vertex_order
    )


def vertex_hosts_table(rows: Iterable[tuple[str, Sequence[str]]]) -> Table:
    """The placement table: each vertex (name, the host of each of its subtasks) in the order given."""
    t = Table(title="Placement")
    t.add_column("vertex")
    t.add_column("parallelism", justify="right")
    t.add_column("hosts")
    for name, hosts in rows:
        where = ", ".join(f"{h} ×{n}" if n > 1 else h for h, n in Counter(hosts).items())
        t.add_row(escape(name), str(len(hosts)), where)
    return t


def compare_table(problem: PlacementProblem, results: list[PlanResult]) -> Table:
    t = Table(title="Strategies compared")
    t.add_column("strategy", no_wrap=True)
    t.add_column("status", no_wrap=True)
    for h in problem.edges:
        t.add_column(f"{h.name}→{h.uplink_to} Mbit/s", justify="right")
    for col in (
        "WAN total",
        "server cores",
        "edge cores",
        "latency ms",
        "worst path expected ms",
        "worst path upper ms",
        "feasible",
    ):
        t.add_column(col, justify="right")
    for r in results:
        if r.cost is None:
            t.add_row(r.strategy, r.status, *["–"] * len(problem.edges), "–", "–", "–", "–", "–", "–", "no")
            continue
        links = [f"{r.cost.link(h.name).mbit:.2f}" for h in problem.edges]
        worst = r.cost.worst_path  # the slowest by the bound; its expected figure beside it
        figures = (_ms(worst.expected_ms), _ms(worst.latency_ms)) if worst is not None else ("–", "–")
        t.add_row(
            r.strategy,
            r.status,
            *links,
            f"{r.cost.wan_mbit:.2f}",
            f"{r.cost.server_cores:.2f}",
            f"{r.cost.edge_cores:.2f}",
            f"{r.cost.latency_ms:.1f}",
            *figures,
            "yes" if r.cost.feasible else "[red]no[/]",
        )
    return t


def print_preamble(
    console, problem: PlacementProblem, running: list[tuple[str, str]], whatif_notes: list[str], capped
) -> None:
    """What `plan` says before its result: the running jobs it took as fixed load, its notes (the input warnings
    aside: those go to stderr, also with --json) and --max-rate's line."""
    for job, path in running:
        console.print(f"[dim]running: {escape(job)} ({escape(path)}) as fixed load[/]", overflow="ignore", crop=False)
    for w in [*whatif_notes, *problem.warnings]:
        if w not in problem.input_warnings:  # escape(): vertex names such as "Writer[out_t]" are not markup
            console.print(f"[dim]note: {escape(w)}[/]", overflow="ignore", crop=False)
    if capped is not None:
        console.print(escape(capped.line), overflow="ignore", crop=False)


def print_outcome(console, result: PlanResult) -> None:
    """The result's summary line, its notes, the shortfall table and the causes."""
    console.print(summary_line(result))
    for note in result.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    if result.shortages:
        print_table(console, shortfalls_table(result))
    for cause in result.causes:
        console.print(f"why: {escape(cause)}", overflow="ignore", crop=False)
