"""``placement watch``: keep a job's placement right while its workload moves (collect -> profile -> plan -> apply).

The loop is :class:`placement.watch.loop.Watch`; this module gives it the planner (:func:`placement.planning.plan`,
what ``placement plan`` runs: with one profile, or with one per job when several jobs are watched and re-planned
together), a prompt for ``--apply ask``, a live status (rich) and a clean stop on Ctrl-C/SIGTERM.
"""

from __future__ import annotations

import math
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from placement.cli.params import forecast_options, horizon_s, quiet_option, season_s
from placement.costmodel.jobs import dir_names
from placement.errors import BadInput, PlacementError
from placement.planning.request import PlanRequest
from placement.watch.loop import Watch
from placement.watch.options import ApplyMode, JobsPlanFn, PlanFn, PlanOutcome, Status, WatchOptions
from placement.watch.policy import PolicyConfig
from placement.watch.pricing import peak_use
from placement.watch.signals import DriftThresholds, Window

if TYPE_CHECKING:
    from placement.planning.outcome import PlanOutcome as Planned
    from placement.profile.pipeline import Engine
    from placement.solver.result import PlanResult
    from placement.watch.policy import Proposal


def _request(inventory: Path, profiles: Sequence[Path], out_dir: Path, **options) -> PlanRequest:
    """What the loop asks of the planner: ``placement plan --inventory INV --profile … --out DIR`` and ``options``,
    planned as a user's plan is."""
    return PlanRequest(
        inventory=str(inventory), profiles=tuple(str(p) for p in profiles), out_dir=str(out_dir), **options
    )


def _given(scale: float) -> float:
    """A scale as the loop has always handed it to the planner: to four places."""
    return float(f"{scale:.4f}")


def _planned(request: PlanRequest, out_dir: Path, plan_file: str) -> tuple[Planned, bool]:
    """Plan ``request`` and write its directory when something is placed; whether it is a plan to read back."""
    from placement.planning import plan, write_outcome

    outcome = plan(request)
    if outcome.result.assignment is not None:
        write_outcome(outcome, out_dir)
    return outcome, outcome.result.status != "infeasible" and (out_dir / plan_file).is_file()


def _infeasible(result: PlanResult) -> tuple[str, ...]:
    return tuple(s.message for s in result.shortages) or (result.reason or "no placement fits",)


def _figures(result: PlanResult) -> tuple[bool, float | None]:
    """Whether the plan fits its capacities, and its WAN Mbit/s."""
    return (result.cost.feasible, result.cost.wan_mbit) if result.cost is not None else (True, None)


def plan_jobs_command(inventory: Path) -> JobsPlanFn:
    """The planner for several jobs watched together: :func:`placement.planning.plan` of every job's profile, each
    job at its own scale (``placement plan --profile A --profile B … --rate-scale A=S_A …``: one joint model over
    the shared uplinks and hosts), written to a fleet directory, what ``placement apply --plan DIR`` applies as one
    change. Each job's part — its plan directory, links and assignment — is read back as the one-job planner reads a
    plan."""
    from placement.loading import load_model
    from placement.writers.fleetjson import FLEET_FILE, FleetDocument
    from placement.writers.planjson import load_plan

    def run(profiles: Mapping[str, Path], out_dir: Path, scales: Mapping[str, float]) -> PlanOutcome:
        request = _request(
            inventory, list(profiles.values()), out_dir, job_rate_scales={name: _given(x) for name, x in scales.items()}
        )
        outcome, written = _planned(request, out_dir, FLEET_FILE)
        if not written:
            return PlanOutcome(out_dir, False, None, _infeasible(outcome.result))
        fleet = load_model(out_dir / FLEET_FILE, FleetDocument)
        jobs, paths = {}, []
        for name, job in zip(profiles, outcome.names):  # the plan names the jobs in --profile order
            doc = load_plan(out_dir / outcome.dirs[job])
            paths += [(p.latency_ms, p.bound_ms) for p in doc.paths or ()]
            jobs[name] = PlanOutcome(
                out_dir / outcome.dirs[job],
                True,
                sum(link.mbit for link in doc.links),
                links={link.source: link.mbit for link in doc.links},
                assignment={(a.vertex_id, a.subtask): a.host for a in doc.assignment},
            )
        feasible, wan = _figures(outcome.result)
        return PlanOutcome(
            out_dir,
            feasible,
            wan,
            links={link.source: link.mbit for link in fleet.links},
            jobs=jobs,
            peak=peak_use(
                ((link.mbit, link.bandwidth_mbit) for link in fleet.links),
                ((h.cores_used, h.cores) for h in fleet.hosts),
                paths,
            ),
        )

    return run


def plan_command(inventory: Path, *, rescale: bool) -> PlanFn:
    """The planner the loop calls on drift: :func:`placement.planning.plan` of the window's profile at the loop's
    rate scale (``placement plan --inventory INV --profile P --out DIR [--rescale] --rate-scale S``), so watch plans
    exactly as a user would."""
    from placement.writers.planjson import load_plan

    def run(profile: Path, out_dir: Path, rate_scale: float) -> PlanOutcome:
        request = _request(inventory, [profile], out_dir, rate_scale=_given(rate_scale), rescale=rescale)
        outcome, written = _planned(request, out_dir, "plan.json")
        if not written:
            return PlanOutcome(out_dir, False, None, _infeasible(outcome.result))
        doc = load_plan(out_dir)
        feasible, wan = _figures(outcome.result)
        return PlanOutcome(
            out_dir,
            feasible,
            wan,
            links={link.source: link.mbit for link in doc.links},
            assignment={(a.vertex_id, a.subtask): a.host for a in doc.assignment},
            peak=peak_use(
                ((link.mbit, link.bandwidth_mbit) for link in doc.links),
                ((h.cores_used, h.cores) for h in doc.hosts),
                ((p.latency_ms, p.bound_ms) for p in doc.paths or ()),
            ),
        )

    return run


def render(status: Status, options: WatchOptions) -> Group:
    several = len(options.names) > 1
    head = Text.assemble(
        ("placement watch ", "bold"),
        f"{', '.join(options.names)} · apply {options.apply} · ",
        *(
            (f"{status.phase}\n",)
            if several
            else (f"job {status.job_id or '—'} · {status.phase} · collector: {status.collector}\n",)
        ),
        *(
            f"  {name}: job {status.job_ids.get(name) or '—'} · collector: {status.collectors.get(name, 'starting')}\n"
            for name in (options.names if several else ())
        ),
        f"ticks {status.ticks} · applied {status.applies} · rolled back {status.rolled_back}",
    )
    parts: list = [head]
    windows = status.windows if several else ({options.job_name: status.window} if status.window else {})
    for name, w in windows.items():
        parts.append(_window_table(w, options, f"{name}: " if several else ""))
    for d in status.drifts:
        parts.append(Text(f"drift: {d.message or d.kind + ' ' + d.subject}", style="yellow"))
    p = status.proposal
    if p is not None:
        planned = "nothing fits" if p.planned_wan_mbit is None else f"{p.planned_wan_mbit:.2f} Mbit/s"
        parts.append(
            Text(
                f"re-plan{' (every job together)' if several else ''}: running {p.current_wan_mbit:.2f} "
                f"Mbit/s{breaks(p)} → plan {planned}, {p.moves} moves"
            )
        )
    f = status.foresight
    if f is not None:
        parts.append(Text(f"forecast: {f['action']}: {f['reason']}", style="magenta"))
    if status.decision is not None:
        style = {"apply": "bold green", "hold": "cyan", "wait": "dim", "steady": "green"}[status.decision.action]
        parts.append(Text(f"decision: {status.decision.action}: {status.decision.reason}", style=style))
    return Group(*parts)


def _window_table(w: Window, options: WatchOptions, title: str) -> Table:
    """One job's window: its sources, its uplink use, backpressure and latency against their limits."""
    table = Table(title=f"{title}window {(w.end_ms - w.start_ms) / 1000:.0f} s", title_justify="left")
    for col in ("what", "measured", "limit"):
        table.add_column(col, justify="left" if col == "what" else "right")
    for name, rate in w.source_rates.items():
        table.add_row(f"source {name}", f"{rate:,.0f} rec/s", "")
    for link in w.links:
        table.add_row(f"uplink {link.host}", f"{link.mbit:.2f} Mbit/s", f"{link.usable_mbit:.2f}")
    table.add_row("max backpressure", f"{w.max_backpressure():.0f} ms/s", f"{options.thresholds.backpressure_ms:.0f}")
    for key, ms in w.latency.items():  # measured (latency markers) next to the bound, where tracked
        bound = w.latency_bounds.get(key)
        table.add_row(f"latency p50 {key}", f"{ms:.1f} ms", "" if bound is None else f"{bound:g}")
    worst = max((p for p in w.paths if p.bound_ms is not None), key=lambda p: p.latency_ms, default=None)
    if worst is not None:  # the worst bounded path, as the model prices it
        shown = f"{worst.latency_ms:.1f} ms" if math.isfinite(worst.latency_ms) else "unbounded (uplink past 99 %)"
        table.add_row(f"predicted {worst.name}", shown, f"{worst.bound_ms:g}")
    return table


def breaks(p: Proposal) -> str:
    """ " (breaks capacity)", " (breaks a latency bound)", both, or nothing: what the running placement breaks."""
    capacity = len(p.current_latency_breaches) < len(p.current_violations)
    what = [w for w, there in (("capacity", capacity), ("a latency bound", bool(p.current_latency_breaches))) if there]
    return f" (breaks {' and '.join(what)})" if what else ""


def forecast_notes(status: Status) -> list[str]:
    """The tick's notes on the forecast (``--forecast``: why there is none, what a source lacks), said once each by
    the loop: printed above the decision line, not only in the log."""
    return [n for n in status.notes if n.startswith(("no forecast:", "forecast:"))]


def _line(status: Status, several: bool = False) -> str:
    """A decision as one line (output to a pipe): its action and reason, and the sources' rates (several jobs: each
    job's, named)."""
    d = status.decision
    w = status.window
    rates = ", ".join(f"{k} {v:,.0f}/s" for k, v in (w.source_rates.items() if w else ()))
    if several:
        rates = "; ".join(
            f"{job}: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in jw.source_rates.items())
            for job, jw in status.windows.items()
        )
    return f"tick {status.ticks}: {d.action if d else '?'}: {d.reason if d else ''}" + (f" [{rates}]" if rates else "")


@click.command("watch")
@click.option(
    "--inventory",
    "inventory",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="inventory YAML the job runs on (as for `placement plan` and `placement apply`)",
)
@click.option(
    "--job-name",
    "job_names",
    multiple=True,
    help="name of the running job to keep placed; repeated: several jobs kept placed together (one joint "
    "re-plan of all of them on any job's drift, applied as one change)",
)
@click.option("--fleet", is_flag=True, help="watch every job of the inventory's `jobs:` list together")
@click.option(
    "--apply",
    "apply_mode",
    type=click.Choice(["never", "ask", "auto"]),
    default="never",
    show_default=True,
    help="never: print and record decisions; ask: ask on the terminal; auto: apply like `placement apply`",
)
@click.option("--rescale", is_flag=True, help="re-plan parallelism too (`placement plan --rescale`)")
@click.option("--interval", type=float, default=30.0, show_default=True, help="seconds between decisions")
@click.option("--window", type=float, default=90.0, show_default=True, help="seconds of samples each decision profiles")
@click.option("--sample", type=float, default=2.0, show_default=True, help="collector sampling interval, seconds")
@click.option(
    "--flush", type=float, default=10.0, show_default=True, help="seconds per Parquet part (window granularity)"
)
@click.option("--keep", type=float, default=900.0, show_default=True, help="seconds of history kept on disk")
@click.option(
    "--keep-mb", type=click.IntRange(min=1), default=256, show_default=True, help="MiB of history kept at most"
)
@click.option("--warmup", type=float, default=60.0, show_default=True, help="as `placement profile --warmup`")
@click.option("--cooldown", type=float, default=120.0, show_default=True, help="seconds after a change before another")
@click.option(
    "--stabilization",
    type=float,
    default=300.0,
    show_default=True,
    help="seconds a cheaper plan must be proposed without a break before it is applied",
)
@click.option(
    "--min-gain", type=float, default=0.15, show_default=True, help="relative WAN saving a cheaper plan needs"
)
@click.option(
    "--rate-change",
    type=float,
    default=0.25,
    show_default=True,
    help="relative move of a source's rate that counts as drift",
)
@click.option(
    "--reprice-change",
    type=float,
    default=0.10,
    show_default=True,
    help="after an apply: relative gap between the first warm window's rates and the ones its plan was made "
    "for that re-plans it",
)
@click.option(
    "--backpressure",
    type=float,
    default=100.0,
    show_default=True,
    help="ms/s of backpressure that counts as drift when sustained",
)
@click.option(
    "--sustained",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="windows in a row backpressure must last",
)
@click.option("--settle", type=float, default=10.0, show_default=True, help="as `placement apply --settle`")
@click.option(
    "--plan",
    "plan_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="the plan directory in effect (the one `placement apply` put there): while a planned TaskManager is "
    "lost the job runs in its contingency, and once it is back for --cooldown the watch restores this "
    "plan (default: the placement running when the watch starts is held, and not restored)",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="rolling history, window snapshots and plans (default ./watch-<job name>)",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSON-lines decision log (default WORK_DIR/decisions.jsonl)",
)
@click.option(
    "--engine",
    type=click.Choice(["spark", "pandas"]),
    default="spark",
    show_default=True,
    help="how each window is profiled, as `placement profile --engine`",
)
@click.option("--spark-master", help="Spark master URL (default local[*])")
@click.option("--duration", type=float, help="stop after this many seconds (default: until Ctrl-C / SIGTERM)")
@click.option(
    "--forecast",
    "forecast_history",
    default=None,
    type=click.Path(path_type=Path),
    metavar="HISTORY",
    help="a metrics directory of the jobs' past (`metrics collect`, e.g. --prometheus --since now-14d; two days at "
    "least), the rolling history appended to it: relieve ahead of the break the forecast predicts, move back only "
    "when the cheaper plan holds the whole next horizon, reactive when the load leaves the forecast's interval; "
    "needs the forecast extra (statsmodels)",
)
@forecast_options("how far ahead of each decision to look")
@quiet_option("no live view or decision lines: warnings, errors and the closing line only")
def watch(
    inventory: Path,
    job_names: tuple[str, ...],
    fleet: bool,
    apply_mode: ApplyMode,
    rescale: bool,
    interval: float,
    window: float,
    sample: float,
    flush: float,
    keep: float,
    keep_mb: int,
    warmup: float,
    cooldown: float,
    stabilization: float,
    min_gain: float,
    rate_change: float,
    reprice_change: float,
    backpressure: float,
    sustained: int,
    settle: float,
    work_dir: Path | None,
    log_path: Path | None,
    engine: Engine,
    spark_master: str | None,
    duration: float | None,
    quiet: bool = False,
    plan_dir: Path | None = None,
    forecast_history: Path | None = None,
    horizon: str = "2h",
    forecast_level: float = 80.0,
    season: str | None = None,
) -> None:
    """Watch a running job and keep its placement right: collect a rolling window, profile it, detect drift,
    re-plan, and (with --apply auto/ask) apply through `placement apply`. Every decision goes to a JSON-lines log.

    Several jobs (--job-name repeated, or --fleet): each job has its own collector and window, drift is detected per
    job, and any job's drift re-plans all of them together (`placement plan --profile A --profile B`), applied as one
    change (`placement apply --plan FLEET_DIR`). Each must have its entry in the inventory's `jobs:` (what apply
    resubmits it with).

    With --forecast HISTORY each decision also reads the sources' forecast (as `plan --forecast`): a relief is
    applied ahead of the predicted break by the lead time (the last apply's duration, --warmup and a margin), a dip
    the forecast expects moves nothing, and a load outside its interval is left to the reactive decisions."""
    names = _job_names(inventory, job_names, fleet, rescale)
    ahead_s = _forecast_options(forecast_history, horizon)
    cycle_s = season_s(season, forecast_history is not None)
    job_name = names[0]
    try:
        thresholds = DriftThresholds(
            rate_change=rate_change,
            backpressure_ms=backpressure,
            sustained_windows=sustained,
            reprice_change=reprice_change,
        )
        policy = PolicyConfig(min_gain=min_gain, cooldown_s=cooldown, stabilization_s=stabilization)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    work_dir = work_dir or Path("watch-" + "+".join(dir_names(names)))
    options = WatchOptions(
        inventory_path=inventory,
        job_name=job_name,
        job_names=names if len(names) > 1 else (),
        work_dir=work_dir,
        apply=apply_mode,
        interval_s=interval,
        window_s=window,
        sample_s=sample,
        flush_s=flush,
        keep_s=keep,
        keep_bytes=keep_mb << 20,
        warmup_s=warmup,
        settle_s=settle,
        engine=engine,
        spark_master=spark_master,
        thresholds=thresholds,
        policy=policy,
        log_path=log_path or work_dir / "decisions.jsonl",
        duration_s=duration,
        plan_dir=plan_dir,
        forecast_history=forecast_history,
        horizon_s=ahead_s,
        forecast_level=forecast_level / 100,
        season_s=cycle_s,
    )
    console = Console(highlight=False)
    live = Live(console=console, refresh_per_second=2, transient=False) if console.is_terminal and not quiet else None

    def on_update(status: Status) -> None:
        if live is not None:
            live.update(render(status, options))
        elif status.phase == "decided" and not quiet:
            for note in forecast_notes(status):  # each said once by the loop: why there is no forecast
                click.echo(note)
            click.echo(_line(status, len(names) > 1))

    def ask(decision, proposal) -> bool:
        if live is not None:
            live.stop()
        try:
            return click.confirm(f"{decision.reason}\napply {proposal.plan_dir}?", default=False)
        finally:
            if live is not None:
                live.start()

    planner = (
        {"plan_fn": plan_command(inventory, rescale=rescale)}
        if len(names) == 1
        else {"plan_jobs_fn": plan_jobs_command(inventory)}
    )
    loop = Watch(
        options, **planner, ask_fn=ask if apply_mode == "ask" and sys.stdin.isatty() else None, on_update=on_update
    )

    def stop(signum, frame) -> None:  # an apply in progress runs to its end (applied or rolled back) first
        loop.stop()

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if live is not None:
            live.start()
        status = loop.run()
    finally:
        if live is not None:
            live.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    click.echo(
        f"watch stopped after {status.ticks} decisions: {status.applies} applied, {status.rolled_back} rolled back; "
        f"log {options.log_path}"
    )
    unseen = [n for n in names if not status.job_ids.get(n)]
    if unseen and status.ticks:  # it never saw a job: not a watch that found nothing to change
        why = status.decision.reason if status.decision else "no decision was made"
        raise PlacementError(f"the watch never saw job {', '.join(map(repr, unseen))}: {why}")


def _forecast_options(history: Path | None, horizon: str) -> float:
    """``--horizon`` in seconds; with ``--forecast`` the extra it needs is asked for before anything starts."""
    seconds = horizon_s(horizon, history is not None)
    if history is not None:
        from placement.planning.forecasting import require_statsmodels  # the forecaster's: --forecast's alone

        require_statsmodels()
    return seconds


def _job_names(inventory: Path, given: tuple[str, ...], fleet: bool, rescale: bool) -> tuple[str, ...]:
    """The jobs to watch: the --job-name given, or (--fleet) every entry of the inventory's ``jobs:``. Several must
    each be named once and have their ``jobs:`` entry (what ``placement apply --plan FLEET_DIR`` resubmits each
    with); they are re-planned at the parallelism they run (``placement plan`` with several profiles)."""
    if fleet and given:
        raise BadInput(
            "--fleet watches every job of the inventory's jobs: list; give --job-name or --fleet, not both",
            field="--fleet",
        )
    if not fleet and not given:
        raise BadInput(
            "name the job to watch (repeat it for several, or --fleet for every job of the inventory's jobs:)",
            field="--job-name",
        )
    twice = next((n for i, n in enumerate(given) if n in given[:i]), None)
    if twice is not None:
        raise BadInput(f"job {twice!r} is named twice", field="--job-name")
    if len(given) == 1 and not fleet:
        return given
    from placement.inventory import load_inventory

    inv = load_inventory(inventory)
    listed = [j.name for j in inv.jobs if j.name is not None]  # each has its name: load_inventory checks it
    if fleet and not listed:
        raise BadInput(f"{inventory} has no jobs: list to watch", field="--fleet")
    names = tuple(listed) if fleet else given
    unknown = [n for n in names if inv.fleet_job(n) is None]
    if unknown:
        raise BadInput(
            f"job {unknown[0]!r} has no entry in {inventory}'s jobs: (what apply resubmits it with when the "
            f"jobs are applied together; listed: {', '.join(listed) or 'none'})",
            field="--job-name",
        )
    if rescale and len(names) > 1:
        raise BadInput(
            "chooses one job's parallelism; several jobs are re-planned at the parallelism they run", field="--rescale"
        )
    return names
