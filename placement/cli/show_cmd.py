"""``placement show PLAN_DIR``: a written plan's tables again, read from its plan.json — no solver, no inventory.

The tables are ``placement plan``'s own (:mod:`placement.cli.plan_tables`, :mod:`placement.cli.contingency_plan`) over
the figures plan.json records (:mod:`placement.planning.from_plan`); ``--json`` prints ``plan --json``'s summary of
them. A fleet's OUT (fleet.json) shows each job's plan in fleet.json's order.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from placement.cli import contingency_plan, plan_tables
from placement.cli.fit import print_table, report_console
from placement.cli.params import echo_json, json_option, quiet_option
from placement.errors import BadInput
from placement.loading import load_model
from placement.planning.contingency import VANILLA_NOTE
from placement.planning.from_plan import result_from_plan, summary_from_plan
from placement.planning.summary import SUMMARY_FORMAT
from placement.writers.fleetjson import FLEET_FILE, FleetDocument, is_fleet_dir
from placement.writers.planjson import PlanDocument, load_plan


@click.command("show")
@click.argument("plan_dir", type=click.Path(path_type=Path))
@json_option("the summary `placement plan --json` prints, from plan.json (its result only: --compare's are not kept)")
@quiet_option("no tables: each plan's one-line result (or the --json summary) only")
def show(plan_dir: Path, as_json: bool, quiet: bool) -> None:
    """Print the tables of the plan in PLAN_DIR (as `placement plan --out PLAN_DIR` wrote it) again, without solving:
    links, hosts, latency per path, placement and contingencies, from PLAN_DIR/plan.json. A fleet's OUT (fleet.json)
    shows each job's plan (--json: each job's summary under "plans")."""
    plans = _plans(plan_dir)
    if as_json:
        summaries = [summary_from_plan(doc, where) for where, doc in plans]
        # a fleet's: each job's own summary (plan --json's joint figures are not in the jobs' plan.json files)
        out = summaries[0] if not is_fleet_dir(plan_dir) else {"format": SUMMARY_FORMAT, "plans": summaries}
        echo_json(out)
        return
    console = report_console(highlight=False)
    if quiet:
        for _, doc in plans:
            console.print(f"{escape(doc.job)}: {plan_tables.summary_line(result_from_plan(doc))}")
        return
    for n, (where, doc) in enumerate(plans):
        if n:
            console.print()
        print_plan(console, doc, where)


def _plans(plan_dir: Path) -> list[tuple[Path, PlanDocument]]:
    """(directory, plan) of each job: PLAN_DIR's own, or a fleet's in fleet.json's order."""
    if not plan_dir.exists():
        raise BadInput("no such plan directory", source=str(plan_dir))
    if is_fleet_dir(plan_dir):
        fleet = load_model(plan_dir / FLEET_FILE, FleetDocument)
        return [(plan_dir / job.dir, load_plan(plan_dir / job.dir / "plan.json")) for job in fleet.jobs]
    plan_file = plan_dir / "plan.json" if plan_dir.is_dir() else plan_dir
    if not plan_file.is_file():
        raise BadInput("no plan.json in the plan directory (run `placement plan --out DIR`)", source=str(plan_dir))
    return [(plan_file.parent, load_plan(plan_file))]


def print_plan(console: Console, doc: PlanDocument, where: Path) -> None:
    """One plan as ``placement plan`` printed it: the summary line, its tables, the contingencies."""
    inventory = doc.inventory.name or doc.inventory.path
    console.print(
        f"[bold]{escape(doc.job)}[/] on [bold]{escape(inventory)}[/] — {len(doc.assignment)} subtasks, "
        f"{len(doc.hosts)} hosts"
    )
    console.print(
        f"[dim]plan {escape(str(where / 'plan.json'))}: {doc.placement_mode} mode, made {doc.created_at} by "
        f"{escape(doc.tool)}[/]",
        overflow="ignore",
        crop=False,
    )
    for warning in doc.warnings:
        console.print(f"[dim]note: {escape(warning)}[/]", overflow="ignore", crop=False)
    if doc.rescale is not None:
        console.print(escape(_targets_line(doc)), overflow="ignore", crop=False)
    result = result_from_plan(doc)
    console.print(plan_tables.summary_line(result))
    if doc.links:
        print_table(console, plan_tables.links_table(result))
    if doc.hosts:
        print_table(console, plan_tables.hosts_table(result))
    if doc.paths:
        print_table(console, plan_tables.paths_table(result))
    print_table(console, plan_tables.vertex_hosts_table(_vertices(doc)))
    if doc.contingencies:
        print_table(console, contingency_plan.rows_table(_contingency_rows(doc)))
    elif doc.placement_mode == "vanilla":
        console.print(f"[dim]note: {escape(VANILLA_NOTE)}[/]")
    if doc.rescale is not None:
        print_table(console, _parallelism_table(doc))


def _vertices(doc: PlanDocument) -> list[tuple[str, list[str]]]:
    """Each vertex in plan.json's order with the host of each subtask, by index."""
    rows: dict[str, tuple[str, dict[int, str]]] = {}
    for a in doc.assignment:
        rows.setdefault(a.vertex_id, (a.vertex, {}))[1][a.subtask] = a.host
    return [(name, [hosts[i] for i in sorted(hosts)]) for name, hosts in rows.values()]


def _contingency_rows(doc: PlanDocument) -> list[contingency_plan.ContingencyRow]:
    return [
        contingency_plan.ContingencyRow(
            c.lost,
            c.status,
            c.shortfall or "",
            [(m.label, m.to) for m in c.moves],
            c.objective.wan_mbit if c.objective else None,
            c.objective.server_cores if c.objective else None,
        )
        for c in doc.contingencies or ()
    ]


def _targets_line(doc: PlanDocument) -> str:
    """plan --rescale's target line, without the measured rate plan.json does not keep."""
    assert doc.rescale is not None
    names = {a.vertex_id: a.vertex for a in doc.assignment}
    rates = doc.rescale.target_records_per_s
    return "target: " + "; ".join(f"{names.get(vid, vid)} {rate:,.0f} records/s" for vid, rate in rates.items())


def _parallelism_table(doc: PlanDocument) -> Table:
    """plan --rescale's parallelism table as far as plan.json records it: the profiled parallelism and the plan's
    (DS2's figure and why a vertex was held are the planner's, not kept)."""
    assert doc.rescale is not None
    t = Table(title="Parallelism")
    for col in ("vertex", "today", "joint", "joint hosts"):
        t.add_column(col, justify="right" if col in ("today", "joint") else "left")
    ids = list(dict.fromkeys(a.vertex_id for a in doc.assignment))
    for (name, hosts), vid in zip(_vertices(doc), ids, strict=True):
        where = ", ".join(f"{h} ×{n}" if n > 1 else h for h, n in Counter(hosts).items())
        today = doc.rescale.profiled_parallelism.get(vid)
        t.add_row(escape(name), str(today) if today is not None else "–", str(len(hosts)), where)
    return t
