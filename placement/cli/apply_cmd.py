"""``placement apply PLAN_DIR --inventory FILE``: put a plan into effect on the running job (SSH + Flink REST).

Preflight first (nothing changes until every check passes), then: lock, stop with savepoint, install the placement
(custom: schedulercfg; vanilla: TaskManager resources + ``--placement``), resubmit from the savepoint, verify planned
vs actual, record, unlock. Any failure after the stop rolls back. ``--dry-run`` prints what moves against the running
job (:mod:`placement.apply.diff`) and every step, and changes nothing.
Exit codes: 0 applied or already in effect, 1 failed (rolled back or refused by preflight), 2 bad input or stale plan.

A plan that changes parallelism (``placement plan --rescale``; custom mode) is resubmitted through the JobGraph
submitter on the JobManager host (see the README's apply section): a REST jar run cannot change an unmodified job's
parallelism on Flink 2.3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import click
from rich.console import Console
from rich.table import Table

from placement.apply import ApplyFailed, ApplyOutcome, Prepared, execute, prepare
from placement.apply.diff import placement_diff
from placement.apply.fleet import (
    FleetFailed,
    FleetOutcome,
    FleetPrepared,
    describe_fleet,
    execute_fleet,
    load_fleet,
    prepare_fleet,
)
from placement.apply.model import ClusterView
from placement.apply.preflight import PreflightFailed, describe_reads
from placement.apply.request import ApplyRequest, load_request
from placement.apply.verify import VerifyRow
from placement.cli import apply_json
from placement.cli.fit import print_table
from placement.cli.params import echo_json, json_option, quiet_option
from placement.errors import BadInput, PlacementError
from placement.writers.fleetjson import is_fleet_dir


def _print_plan(console: Console, prepared: Prepared) -> None:
    plan = prepared.plan
    req = prepared.request
    console.print(f"job {plan.job_id} ({prepared.view.job_name}), {plan.mode} mode, plan {req.plan_dir / 'plan.json'}")
    _print_diff(console, prepared)
    for note in plan.notes:
        console.print(f"  note: {note}", markup=False, highlight=False)
    console.print("preflight read (done, changes nothing):")
    for line in describe_reads(req):
        console.print(f"      {line}", markup=False, highlight=False)
    if prepared.unchecked:
        console.print(
            "NOT CHECKED (the cluster could not be read; the steps below assume the job runs with the "
            "plan's vertices and the inventory's TaskManagers):",
            markup=False,
            highlight=False,
        )
        for problem in prepared.unchecked:
            console.print(f"      {problem}", markup=False, highlight=False)
    console.print("steps:")
    for i, step in enumerate(plan.steps, 1):
        console.print(f"  {i:2d}. [{step.phase}] {step.describe()}", markup=False, highlight=False)
    console.print("on a failure after the stop, roll back:")
    for i, step in enumerate(plan.rollback, 1):
        console.print(f"  r{i}. [{step.phase}] {step.describe()}", markup=False, highlight=False)


MOVES_SHOWN = 40  # a fleet's plan can move thousands of subtasks: the first ones listed, the rest counted


def diff_lines(req: ApplyRequest, view: ClusterView) -> list[str]:
    """What the plan changes against the running job, Terraform-like: one line per subtask that moves, the ones that
    stay counted; one line when the cluster could not be read."""
    diff = placement_diff(req, view)
    if diff is None:
        return ["placement against the running job: unknown, the cluster could not be read"]
    lines = ["placement against the running job:"]
    lines += [f"  {m.line()}" for m in diff.moves[:MOVES_SHOWN]]
    if len(diff.moves) > MOVES_SHOWN:
        lines.append(f"  … and {len(diff.moves) - MOVES_SHOWN} more")
    lines.append(f"  {diff.summary()}")
    return lines


def _print_diff(console: Console, prepared: Prepared, indent: str = "") -> None:
    for line in diff_lines(prepared.request, prepared.view):
        console.print(indent + line, markup=False, highlight=False)


def _verify_table(rows: tuple[VerifyRow, ...] | list[VerifyRow]) -> Table:
    by_index = any(r.planned_subtasks is not None for r in rows)
    what = "subtask indices" if by_index else "subtasks"
    table = Table(title=f"planned vs actual ({what} per vertex and TaskManager)")
    for col in ("vertex", "host", "planned", "actual", ""):
        table.add_column(col, justify="right" if col in ("planned", "actual") else "left")
    for r in rows:
        planned, actual = r.cells()
        table.add_row(r.vertex, r.host, planned, actual, "[green]ok[/green]" if r.ok else "[red]WRONG[/red]")
    return table


@click.command("apply")
@click.argument("plan_dir", type=click.Path(path_type=Path), required=False)
@click.option(
    "--plan",
    "plan_file",
    type=click.Path(path_type=Path),
    help="the plan: DIR/plan.json as `placement plan --out DIR` wrote it (or DIR); instead of PLAN_DIR. "
    "A fleet's OUT (`placement plan --profile a.json --profile b.json --out OUT`: OUT/fleet.json) "
    "applies every job in it as one change",
)
@click.option(
    "--inventory",
    "inventory",
    required=True,
    type=click.Path(path_type=Path),
    help="inventory YAML the plan was made from",
)
@click.option(
    "--job", "job_id", help="id of the running job (default: the running job named job.name in the inventory)"
)
@click.option("--job-name", help="name of the running job")
@click.option("--jar", help="job jar to upload and resubmit (default: job.jar from the inventory)")
@click.option("--jar-id", help="id of a jar already uploaded to the JobManager")
@click.option(
    "--dry-run",
    is_flag=True,
    help="print which subtasks move from where to where, then every SSH command and REST call in order; change nothing",
)
@click.option(
    "--yes", "consent", is_flag=True, help="allow restarting a JobManager or TaskManager where the config must change"
)
@click.option(
    "--accept-new-host-keys", is_flag=True, help="learn unknown SSH host keys (a changed key is always refused)"
)
@click.option(
    "--audit-log", type=click.Path(path_type=Path), help="JSON-lines audit log (default: PLAN_DIR/apply-audit.jsonl)"
)
@click.option(
    "--settle",
    "settle_s",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="seconds the placed job must stay RUNNING without a restart before apply calls it done (0: no wait)",
)
@click.option(
    "--fleet-order",
    type=click.Choice(["auto", "stop-all"]),
    default="auto",
    show_default=True,
    help="a fleet: auto moves one job at a time where an order never overloads a link or host, else stops "
    "all first; stop-all always stops every job first, then starts all",
)
@json_option(
    "the result as one JSON document on stdout (what moves, the preflight, every step's status, planned vs actual, "
    "the outcome); the report goes to stderr, the exit code is the same"
)
@quiet_option("no report: warnings, errors and the last line (or the --json document) only")
def apply(
    plan_dir: Path | None,
    plan_file: Path | None,
    inventory: Path,
    job_id: str | None,
    job_name: str | None,
    jar: str | None,
    jar_id: str | None,
    dry_run: bool,
    consent: bool,
    accept_new_host_keys: bool,
    audit_log: Path | None,
    settle_s: float,
    fleet_order: Literal["auto", "stop-all"],
    as_json: bool,
    quiet: bool,
) -> None:
    """Put the plan in PLAN_DIR (or --plan DIR/plan.json) into effect on the running Flink job: savepoint, redeploy,
    verify, roll back.

    Custom mode applies a plan that changes parallelism (placement plan --rescale): the job is resubmitted from the
    savepoint through the JobGraph submitter, which apply installs and runs on the JobManager host (it needs Java
    there, as Flink does; the job's jar is uploaded there from --jar/job.jar, or found in the JobManager's upload
    directory for --jar-id). Vanilla mode refuses such a plan.

    A fleet (PLAN_DIR or --plan is the OUT of `placement plan --profile a.json --profile b.json --out OUT`, holding
    fleet.json) is applied as one change: every job's preflight first (nothing changes until all pass); then the
    jobs one at a time in an order that never puts more on an uplink than the plans allow, or, where no such order
    exists, every job stopped first and then all started; any failure rolls every stopped job back from its own
    savepoint. Each job is the running job of its plan's name, resubmitted with the inventory's jobs: entry of that
    name (or job:), so --job, --job-name, --jar and --jar-id do not apply. The audit log is OUT/apply-audit.jsonl."""
    if (plan_dir is None) == (plan_file is None):
        raise BadInput("give the plan once: PLAN_DIR or --plan DIR/plan.json", field="--plan")
    plan_dir = plan_dir or plan_file
    assert plan_dir is not None
    # --json: stdout is the document alone, the report goes to stderr
    console = Console(highlight=False, soft_wrap=True, stderr=as_json, quiet=quiet)
    last = Console(highlight=False, soft_wrap=True, stderr=as_json)  # the last line, which -q keeps
    if is_fleet_dir(plan_dir):
        given = [
            name
            for name, value in (("--job", job_id), ("--job-name", job_name), ("--jar", jar), ("--jar-id", jar_id))
            if value
        ]
        if given:
            raise BadInput(
                f"{given[0]} names one job; a fleet's jobs are found by their plans' names and resubmitted with "
                "the inventory's jobs: entries",
                field=given[0],
            )
        apply_fleet(
            console,
            plan_dir,
            inventory,
            dry_run=dry_run,
            consent=consent,
            settle_s=settle_s,
            accept_new_host_keys=accept_new_host_keys,
            audit_log=audit_log,
            fleet_order=fleet_order,
            last=last,
            as_json=as_json,
        )
        return
    if fleet_order != "auto":
        raise BadInput(
            f"{plan_dir} is one job's plan; --fleet-order applies to a fleet's OUT (fleet.json)", field="--fleet-order"
        )
    req = load_request(
        plan_dir,
        inventory,
        job_id=job_id,
        job_name=job_name,
        jar=jar,
        jar_id=jar_id,
        consent=consent,
        settle_s=settle_s,
    )
    report: dict = {"part": apply_json.unread_job_json(req, dry_run, [])}
    try:
        apply_job(console, last, req, report, dry_run=dry_run, accept=accept_new_host_keys, audit_log=audit_log)
    except PreflightFailed as exc:
        if "prepared" not in report:  # refused before the cluster was read: the problems are the request's
            report["part"]["preflight"]["problems"] = list(exc.problems)
        report["outcome"] = apply_json.refused_json(exc, exc.problems)
        raise
    except ApplyFailed as exc:
        report["part"] = _ran_json(report["prepared"], dry_run, exc.outcome)
        report["outcome"] = apply_json.failed_json(exc, exc.outcome)
        raise
    except PlacementError as exc:
        report["outcome"] = apply_json.failed_json(exc)
        raise
    finally:
        if as_json and "outcome" in report:
            echo_json(apply_json.document(report["part"], report["outcome"]))


def _ran_json(prepared: Prepared, dry_run: bool, outcome: ApplyOutcome) -> dict:
    return apply_json.job_json(prepared, dry_run=dry_run, outcome=outcome, rows=outcome.rows)


def apply_job(
    console: Console,
    last: Console,
    req: ApplyRequest,
    report: dict,
    *,
    dry_run: bool,
    accept: bool,
    audit_log: Path | None,
) -> None:
    """One job's apply, said on ``console`` (its last line on ``last``); ``report`` gets its JSON part and outcome
    (an exception leaves what was known in it: the caller adds the error)."""
    prepared = prepare(req, dry_run=dry_run, accept_new_host_keys=accept)
    report["prepared"] = prepared
    report["part"] = apply_json.job_json(prepared, dry_run=dry_run)
    try:
        if prepared.plan.noop:
            last.print(prepared.plan.noop_reason, markup=False)
            rows = _current_rows(prepared)
            print_table(console, _verify_table(rows))
            outcome = None
            if not dry_run:
                outcome = execute(
                    prepared, audit_path=audit_log or req.plan_dir / "apply-audit.jsonl", echo=lambda s: None
                )
            report["part"] = apply_json.job_json(prepared, dry_run=dry_run, outcome=outcome, rows=rows)
            said = {"status": "noop", "message": prepared.plan.noop_reason}  # a dry run: nothing recorded
            report["outcome"] = apply_json.outcome_json(outcome) if outcome is not None else said
            return
        _print_plan(console, prepared)
        if dry_run and prepared.unchecked:  # the steps are shown, but a dry run is a preflight: it did not pass
            report["part"]["preflight"]["problems"] = list(prepared.unchecked)
            raise PreflightFailed(
                [
                    "could not check the cluster: "
                    + prepared.unchecked[0]
                    + (f" (and {len(prepared.unchecked) - 1} more, above)" if len(prepared.unchecked) > 1 else "")
                ]
            )
        if dry_run:
            last.print(DRY_RUN_PASSED)
            report["outcome"] = {"status": "dry-run", "message": DRY_RUN_PASSED}
            return
        try:
            outcome = execute(
                prepared,
                audit_path=audit_log or req.plan_dir / "apply-audit.jsonl",
                echo=_echo(console, last),
            )
        except ApplyFailed as exc:
            if exc.outcome.rows:
                print_table(console, _verify_table(exc.outcome.rows))
            raise
        print_table(console, _verify_table(outcome.rows))
        extra = (
            f" (stop requested -> RUNNING again: {outcome.downtime_s:.1f} s)" if outcome.downtime_s is not None else ""
        )
        last.print(f"{outcome.message}; savepoint {outcome.savepoint}{extra}", markup=False)
        report["part"] = _ran_json(prepared, dry_run, outcome)
        report["outcome"] = apply_json.outcome_json(outcome)
    finally:
        prepared.close()


def _echo(console: Console, last: Console):
    """The runner's lines: on the report, but its warnings on ``last`` (-q keeps them)."""

    def echo(line: str) -> None:
        (last if line.startswith("warning:") else console).print(line, markup=False, highlight=False)

    return echo


DRY_RUN_PASSED = "dry run: preflight passed; nothing was changed"


def apply_fleet(
    console: Console,
    fleet_dir: Path,
    inventory: Path,
    *,
    dry_run: bool,
    consent: bool,
    settle_s: float,
    accept_new_host_keys: bool,
    audit_log: Path | None,
    fleet_order: Literal["auto", "stop-all"] = "auto",
    last: Console | None = None,
    as_json: bool = False,
) -> None:
    """A fleet's apply, said on ``console`` (its last line on ``last``); with ``as_json`` its document on stdout,
    whatever the end (the exception goes on to the caller)."""
    report: dict = {}
    try:
        _apply_fleet(
            console,
            last or console,
            fleet_dir,
            inventory,
            report,
            dry_run=dry_run,
            consent=consent,
            settle_s=settle_s,
            accept_new_host_keys=accept_new_host_keys,
            audit_log=audit_log,
            fleet_order=fleet_order,
        )
    except PreflightFailed as exc:
        report["outcome"] = apply_json.refused_json(exc, exc.problems)
        raise
    except FleetFailed as exc:
        report["outcomes"] = exc.outcome.outcomes
        report["outcome"] = {**_fleet_outcome_json(exc.outcome), "error": str(exc)}
        raise
    except PlacementError as exc:
        report["outcome"] = apply_json.failed_json(exc)
        raise
    finally:
        if as_json and "outcome" in report:
            echo_json(_fleet_document(fleet_dir, dry_run, report))


def _fleet_document(fleet_dir: Path, dry_run: bool, report: dict) -> dict:
    fp: FleetPrepared | None = report.get("prepared")
    outcomes: dict[str, ApplyOutcome] = report.get("outcomes", {})
    jobs = []
    plans = fp.plans() if fp is not None else {}
    for name, prepared in (fp.jobs if fp is not None else {}).items():
        outcome = outcomes.get(name)
        rows = outcome.rows if outcome is not None else ()
        part = apply_json.job_json(prepared, dry_run=dry_run, outcome=outcome, rows=rows, plan=plans.get(name))
        jobs.append({**part, "name": name})
    order = None
    if fp is not None:
        order = {"strategy": fp.order.strategy, "jobs": list(fp.order.jobs), "reason": fp.order.reason}
    return apply_json.fleet_document(fleet_dir, dry_run, order, jobs, report["outcome"])


def _fleet_outcome_json(o: FleetOutcome) -> dict:
    return {"status": o.status, "message": o.message, "seconds": o.seconds}


def _apply_fleet(
    console: Console,
    last: Console,
    fleet_dir: Path,
    inventory: Path,
    report: dict,
    *,
    dry_run: bool,
    consent: bool,
    settle_s: float,
    accept_new_host_keys: bool,
    audit_log: Path | None,
    fleet_order: Literal["auto", "stop-all"],
) -> None:
    freq = load_fleet(fleet_dir, inventory, consent=consent, settle_s=settle_s)
    fp = prepare_fleet(freq, dry_run=dry_run, accept_new_host_keys=accept_new_host_keys, fleet_order=fleet_order)
    report["prepared"] = fp
    try:
        for name, prepared in fp.jobs.items():
            console.print(
                f"job {name}: {prepared.view.job_id}, {prepared.plan.mode} mode, plan "
                f"{prepared.request.plan_dir / 'plan.json'}",
                markup=False,
            )
            if not prepared.plan.noop:
                _print_diff(console, prepared, indent="  ")
            for note in prepared.plan.notes if not prepared.plan.noop else (prepared.plan.noop_reason,):
                console.print(f"  note: {note}", markup=False, highlight=False)
            console.print("  preflight read (done, changes nothing):")
            for line in describe_reads(prepared.request):
                console.print(f"      {line}", markup=False, highlight=False)
            for problem in prepared.unchecked:
                console.print(f"  NOT CHECKED: {problem}", markup=False, highlight=False)
        for line in describe_fleet(fp.order, fp.plans(), fp.load_notes):
            console.print(line, markup=False, highlight=False)
        unchecked = [f"job {n}: {p}" for n, prepared in fp.jobs.items() for p in prepared.unchecked]
        if dry_run and unchecked:
            raise PreflightFailed(
                [
                    "could not check the cluster: "
                    + unchecked[0]
                    + (f" (and {len(unchecked) - 1} more, above)" if len(unchecked) > 1 else "")
                ]
            )
        if dry_run:
            last.print(FLEET_DRY_RUN_PASSED)
            report["outcome"] = {"status": "dry-run", "message": FLEET_DRY_RUN_PASSED}
            return
        try:
            outcome = execute_fleet(
                fp,
                audit_path=audit_log or fleet_dir / "apply-audit.jsonl",
                echo=_echo(console, last),
            )
        except FleetFailed as exc:
            for name, job_outcome in exc.outcome.outcomes.items():
                if job_outcome.rows:
                    console.print(f"job {name}:", markup=False)
                    print_table(console, _verify_table(job_outcome.rows))
            raise
        for name, job_outcome in outcome.outcomes.items():
            console.print(f"job {name}:", markup=False)
            print_table(console, _verify_table(job_outcome.rows))
            down = f" (down {job_outcome.downtime_s:.1f} s)" if job_outcome.downtime_s is not None else ""
            console.print(f"  {job_outcome.message}; savepoint {job_outcome.savepoint}{down}", markup=False)
        last.print(outcome.message, markup=False)
        report["outcomes"] = outcome.outcomes
        report["outcome"] = _fleet_outcome_json(outcome)
    finally:
        fp.close()


FLEET_DRY_RUN_PASSED = "dry run: preflight of every job passed; nothing was changed"


def _current_rows(prepared: Prepared) -> list[VerifyRow]:
    from placement.apply.planner import planned_subtasks
    from placement.apply.preflight import planned_counts
    from placement.apply.verify import compare, compare_subtasks
    from placement.apply.vertices import match_vertices, planned_vertices

    req, view = prepared.request, prepared.view
    if req.mode == "custom":
        match = match_vertices(planned_vertices(req.plan.assignment), view.running_vertices)
        return compare_subtasks(planned_subtasks(req), match, view.subtask_hosts)
    return compare(planned_counts(req), view.actual, list(dict.fromkeys(a.vertex for a in req.plan.assignment)))
