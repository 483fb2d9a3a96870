"""What ``placement plan`` does once its request is built: plan, print the tables, write the plan directory, and
say the ``--json`` summary — in that order, so a reader that stops reading (``| head``) does not lose the plan
(:mod:`placement.cli.streams`).

Kept apart from :mod:`placement.cli.plan_cmd` (the options) so that ``placement plan --help`` and a mistyped option
answer without importing the solver, networkx and the writers.
"""

from __future__ import annotations

import os
import sys
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from placement.cli.plan_exit import finish
from placement.planning import PlanOutcome, PlanRequest, Written, plan, summary_json, write_outcome

if TYPE_CHECKING:
    from rich.console import Console

# rich and the tables are imported where they are printed: --quiet and --json print none, and a scripted plan does
# not wait for them. The tables of several jobs, of --rescale and of the contingencies import their planners' modules
# too, which --quiet, --json and a plan without those options do not otherwise load.


def plan_and_render(request: PlanRequest, out_dir: str, *, as_json: bool, quiet: bool) -> None:
    with solving_status(request):
        outcome = plan(request)
    tables = not as_json and not quiet
    console = None
    if tables:
        from placement.cli.fit import report_console

        console = report_console()
        (print_jobs if outcome.several else print_job)(console, outcome)
    written = None
    if outcome.result.assignment is not None:
        written = write_outcome(outcome, out_dir)
        if console is not None:
            print_written(console, outcome, written, out_dir)
    finish(summary_json(outcome, written.paths if written else None), outcome.result, as_json)


def solving_status(request: PlanRequest) -> AbstractContextManager[object]:
    """A spinner on stderr while the plan is made, on a terminal only (a log or pipe gets nothing of it); not with
    ``--verbose``, whose solver log it would overwrite."""
    if request.verbose or not _may_be_terminal():
        return nullcontext()
    from rich.console import Console

    err = Console(stderr=True)
    if not err.is_terminal:
        return nullcontext()
    jobs = ", ".join(Path(p).name for p in request.profiles)
    return err.status(f"planning {jobs} on {Path(request.inventory).name}…")


def _may_be_terminal() -> bool:
    """False where rich's Console would not take stderr for a terminal either, said without importing rich: stderr is
    no tty and neither of the variables rich lets force one (TTY_COMPATIBLE, FORCE_COLOR) is set. Otherwise rich
    decides."""
    if "TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ:
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return isatty is not None and isatty()
    except ValueError:  # closed: rich says no terminal too
        return False


def print_job(console: Console, outcome: PlanOutcome) -> None:
    from rich.markup import escape

    from placement.cli import plan_tables
    from placement.cli.fit import print_table

    problem, result, rescaled = outcome.problem, outcome.result, outcome.rescaled
    console.print(
        f"[bold]{outcome.profiles[0].job.name}[/] on [bold]{outcome.inventory.name}[/] — "
        f"{len(problem.subtasks)} subtasks, {len(problem.hosts)} hosts"
    )
    plan_tables.print_preamble(
        console,
        problem,
        outcome.running.jobs,
        [*outcome.what_if, *outcome.notes, *outcome.running.notes],
        outcome.capped,
    )
    if rescaled:
        from placement.cli import rescale_tables

        console.print(escape(rescale_tables.targets_line(rescaled.space)), overflow="ignore", crop=False)
    _print_forecast(console, outcome)
    plan_tables.print_outcome(console, result)
    if result.cost is not None:
        print_table(console, plan_tables.links_table(result))
        print_table(console, plan_tables.hosts_table(result))
        if result.cost.paths:
            print_table(console, plan_tables.paths_table(result))
        print_table(console, plan_tables.placement_table(problem, result))
        _print_contingencies(console, outcome)
    if rescaled:
        from placement.cli import rescale_tables

        print_table(console, rescale_tables.parallelism_table(rescaled))
    if outcome.request.compare:
        print_table(console, plan_tables.compare_table(problem, list(outcome.results)))


def print_jobs(console: Console, outcome: PlanOutcome) -> None:
    from rich.markup import escape

    from placement.cli import jobs_tables, plan_tables
    from placement.cli.fit import print_table

    joint, result, parts, others = outcome.joint, outcome.result, outcome.parts, list(outcome.one_by_one)
    problem = joint.problem
    console.print(
        f"[bold]{len(joint.jobs)} jobs[/] ({escape(', '.join(j.name for j in joint.jobs))}) on "
        f"[bold]{outcome.inventory.name}[/] — {len(problem.subtasks)} subtasks, {len(problem.hosts)} hosts"
    )
    plan_tables.print_preamble(
        console,
        problem,
        outcome.running.jobs,
        [*outcome.what_if, *outcome.notes, *outcome.running.notes],
        outcome.capped,
    )
    _print_forecast(console, outcome)
    plan_tables.print_outcome(console, result)
    if result.cost is not None:
        scales = {job.name: job.problem.rate_scale for job in joint.jobs}
        if len(set(scales.values())) == 1:  # one scale for the set: the preamble says it
            scales = {}
        print_table(console, jobs_tables.jobs_table(parts, problem, scales))
        print_table(console, jobs_tables.shared_links_table(problem, result.cost, parts))
        print_table(console, plan_tables.hosts_table(result))
        print_table(console, plan_tables.placement_table(problem, result))
    if others:
        print_table(console, jobs_tables.compare_jobs_table(problem, result, parts, others))
        for o in others[:2]:  # all on server: its violations are the table's "no"
            if o.failed:
                console.print(
                    f"{o.strategy}: {escape(o.failed)} does not fit: {escape(o.reason)}", overflow="ignore", crop=False
                )
            elif o.cost is not None and not o.cost.feasible:
                console.print(
                    f"{o.strategy}: the plans together oversubscribe: {escape(o.cost.violations[0])}"
                    + (f" (and {len(o.cost.violations) - 1} more)" if len(o.cost.violations) > 1 else ""),
                    overflow="ignore",
                    crop=False,
                )
    _print_contingencies(console, outcome)


def _print_forecast(console: Console, outcome: PlanOutcome) -> None:
    from rich.markup import escape

    if outcome.forecast is not None:
        for line in outcome.forecast.lines:
            console.print(escape(line), overflow="ignore", crop=False)


def _print_contingencies(console: Console, outcome: PlanOutcome) -> None:
    from placement.cli import contingency_plan

    contingency_plan.print_all(
        console, outcome.problem, outcome.contingencies, outcome.placement_mode, outcome.request.contingency
    )


def print_written(console: Console, outcome: PlanOutcome, written: Written, out_dir: str) -> None:
    from rich.markup import escape

    for w in written.warnings:
        console.print(f"[yellow]warning: {escape(w)}[/]")
    if outcome.several:
        console.print(
            f"wrote {', '.join(f'{outcome.dirs[n]}/' for n in outcome.names)}, fleet.json and the fleet "
            f"picture to {out_dir}"
        )
    else:
        console.print(f"wrote {', '.join(p.name for p in written.paths)} to {out_dir}")
