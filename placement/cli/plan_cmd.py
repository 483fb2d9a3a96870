"""``placement plan``: inventory + profile -> optimal placement and its artifacts (the options, made a
:class:`placement.planning.PlanRequest`; the plan is :func:`placement.planning.plan`, its tables
:mod:`placement.cli.plan_render`, both imported when the command runs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from placement.cli.params import (
    HTTP_URL,
    RateScale,
    forecast_options,
    horizon_s,
    json_option,
    nonempty_path,
    quiet_option,
    season_s,
)

if TYPE_CHECKING:
    from placement.planning.request import Method, Mode, Objective, Solver


@click.command()
@click.option(
    "--inventory",
    "inventory_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="inventory YAML (`placement examples` lists the shipped ones)",
)
@click.option(
    "--profile",
    "profile_path",
    required=True,
    multiple=True,
    type=click.Path(dir_okay=False),
    help="job profile JSON, as `placement profile` writes it (`placement examples` lists the shipped ones); "
    "repeat it to place several jobs together on the shared hosts and links",
)
@click.option(
    "--running",
    multiple=True,
    type=click.Path(),
    metavar="PLAN",
    help="plan.json, plan directory or fleet directory of jobs that keep running: their use of hosts and "
    "links is fixed load the new plan fits around (repeatable)",
)
@click.option(
    "--running-cluster",
    is_flag=True,
    help="the jobs running in the cluster now (all but the planned ones, by the profiles' job names), read "
    "live: a window of each collected, profiled and its placement priced by the cost model — fixed load "
    "as for --running",
)
@click.option(
    "--rest",
    "rest_url",
    default=None,
    type=HTTP_URL,
    help="with --running-cluster: the JobManager's REST URL (default: the inventory's flink.rest_url)",
)
@click.option(
    "--running-window",
    type=click.FloatRange(min=1),
    default=20.0,
    show_default=True,
    metavar="SECONDS",
    help="with --running-cluster: seconds each running job is collected for",
)
@click.option(
    "--running-warmup",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="with --running-cluster: as `placement profile --warmup` (a younger subtask's samples are left out)",
)
@click.option(
    "--running-ignore-unknown",
    is_flag=True,
    help="with --running-cluster: leave out (with a warning) a running job on a TaskManager the inventory "
    "does not know, instead of refusing",
)
@click.option(
    "--running-keep",
    default=None,
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="with --running-cluster: keep each running job's window (DIR/<job id>/) and its profile "
    "(DIR/<job id>.profile.json)",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    callback=nonempty_path,
    help="directory for the plan files, replaced whole (other files in it are kept)",
)
@click.option(
    "--solver",
    type=click.Choice(["highs", "cbc"]),
    default="highs",
    show_default=True,
    help="MILP solver; highs falls back to cbc when it is unavailable",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="seconds for all solver stages together",
)
@click.option(
    "--gap",
    type=click.FloatRange(min=0, max=1, max_open=True),
    default=1e-4,
    show_default=True,
    help="relative MIP gap at which a stage counts as solved",
)
@click.option(
    "--objective",
    type=click.Choice(["lexicographic", "weighted"]),
    default=None,
    help="override the inventory policy's objective",
)
@click.option(
    "--mode",
    type=click.Choice(["custom", "vanilla"]),
    default=None,
    help="override flink.placement_mode of the inventory",
)
@click.option(
    "--rate-scale",
    "rate_scale",
    type=RateScale(),
    multiple=True,
    metavar="[JOB=]X",
    help="plan for this multiple of the profiled rates (default 1); with several --profile, JOB=X plans "
    "that job at its own multiple, the others at X (repeatable)",
)
@click.option(
    "--rescale",
    is_flag=True,
    help="choose every operator's parallelism together with the placement, for the target rate "
    "(--rate-scale or --target-rate)",
)
@click.option(
    "--target-rate",
    default=None,
    metavar='"SOURCE=records/s,..."',
    help="with --rescale: target records/s per source vertex (others: --rate-scale × measured)",
)
@click.option(
    "--compare",
    is_flag=True,
    help="also evaluate all-on-server and the greedy heuristic (with --rescale: placement alone at today's "
    "parallelism, and DS2's parallelism then placement)",
)
@click.option(
    "--method",
    type=click.Choice(["auto", "exact", "decompose"]),
    default="auto",
    show_default=True,
    help="exact model, or the fleet decomposition (Pi-local model over server pools); auto: decompose "
    "above 5000 subtasks or 500 hosts",
)
@click.option(
    "--max-rate",
    is_flag=True,
    help="find the highest uniform scale of the profiled source rates that fits, what runs out first, "
    "and the plan at that scale",
)
@click.option(
    "--forecast",
    "forecast_history",
    default=None,
    type=click.Path(),
    metavar="HISTORY",
    help="a metrics directory of the job's past (`metrics collect`, e.g. --prometheus --since now-14d): plan for "
    "the peak of its sources' forecast rates within --horizon (the interval's upper bound), and say when the plan "
    "in effect breaks; needs the forecast extra (statsmodels)",
)
@forecast_options("how far ahead of the history's end to plan")
@click.option(
    "--current",
    default=None,
    type=click.Path(),
    metavar="PLAN_DIR",
    help="with --forecast: the plan in effect, whose break is predicted (default: the plan at the profiled rates)",
)
@click.option(
    "--add-host",
    multiple=True,
    metavar="TEMPLATE=N",
    help="what-if: N more hosts like TEMPLATE (a host, or a model such as rpi4b); the file is not changed",
)
@click.option(
    "--link",
    multiple=True,
    metavar="HOST:BANDWIDTH[:DELAY]",
    help="what-if: an edge host's uplink at another bandwidth (and delay), e.g. rpi1:10mbit",
)
@click.option(
    "--require-contingency",
    is_flag=True,
    help="fail (exit 3, nothing written) when some edge host's loss leaves a state nothing fits; by default "
    "the plan names it and has no contingency for that host",
)
@click.option(
    "--no-contingency",
    is_flag=True,
    help="plan no contingencies (where the subtasks run while an edge host or its uplink is lost)",
)
@json_option("machine-readable summary on stdout instead of tables")
@click.option("--verbose", is_flag=True, help="show the solver's own log (on stderr, so --json stays JSON)")
@quiet_option("no tables: warnings, errors and the --json summary only")
@click.option(
    "--strict",
    is_flag=True,
    help="make the input warnings (a pin naming no vertex, another job's profile, a 'bps' rate) errors, exit 2",
)
def plan(
    inventory_path: str,
    profile_path: tuple[str, ...],
    out_dir: str,
    solver: Solver,
    time_limit: float,
    gap: float,
    objective: Objective | None,
    mode: Mode | None,
    rate_scale: tuple[tuple[str | None, float], ...],
    rescale: bool,
    target_rate: str | None,
    compare: bool,
    as_json: bool,
    method: Method = "auto",
    max_rate: bool = False,
    add_host: tuple[str, ...] = (),
    link: tuple[str, ...] = (),
    verbose: bool = False,
    quiet: bool = False,
    strict: bool = False,
    running: tuple[str, ...] = (),
    running_cluster: bool = False,
    rest_url: str | None = None,
    running_window: float = 20.0,
    running_warmup: float = 60.0,
    running_ignore_unknown: bool = False,
    running_keep: str | None = None,
    require_contingency: bool = False,
    no_contingency: bool = False,
    forecast_history: str | None = None,
    horizon: str = "2h",
    forecast_level: float = 80.0,
    current: str | None = None,
    season: str | None = None,
) -> None:
    """Place a job's subtasks on the inventory's hosts, optimally, and write the plan directory.

    Writes OUT/plan.json, OUT/schedulercfg, OUT/redeploy.sh, OUT/placement.json and OUT/plan.{svg,png,dot}. With
    several --profile: OUT/<job>/ (those files, per job), OUT/fleet.json and OUT/fleet.{svg,png,dot}.
    Input that is valid but probably not meant (a pin naming no vertex of the job, a profile of another job than the
    inventory's job.name, a rate in tc's 'bps' = bytes/s) is a warning on stderr, also with --json; --strict makes it
    an error.
    """
    from placement.planning.request import PlanRequest, cluster_read, contingency_mode, rate_scales

    contingency = contingency_mode(require_contingency, no_contingency)
    fleet_scale, job_scales = rate_scales(rate_scale)
    cluster = _cluster_reader(
        cluster_read(running_cluster, rest_url, running_window, running_warmup, running_ignore_unknown, running_keep)
    )
    request = PlanRequest(
        inventory=inventory_path,
        profiles=profile_path,
        out_dir=out_dir,
        solver=solver,
        time_limit=time_limit,
        gap=gap,
        objective=objective,
        mode=mode,
        rate_scale=fleet_scale,
        job_rate_scales=job_scales,
        rescale=rescale,
        target_rate=target_rate,
        compare=compare,
        method=method,
        max_rate=max_rate,
        add_host=add_host,
        link=link,
        verbose=verbose,
        strict=strict,
        running=running,
        contingency=contingency,
        cluster=cluster,
        forecast=forecast_history,
        horizon_s=horizon_s(horizon, forecast_history is not None),
        forecast_level=forecast_level / 100,
        season_s=season_s(season, forecast_history is not None),
        current=current,
    )
    request.validate()  # before the solver's imports: a refused option answers at once
    from placement.cli.imports import import_unswept

    render = import_unswept("placement.cli.plan_render")
    render.plan_and_render(request, out_dir, as_json=as_json, quiet=quiet)


def _cluster_reader(read):
    """The live reader of ``--running-cluster`` (None: not asked); it imports the collector only when it reads."""
    if read is None:
        return None
    from placement.planning.cluster import LiveCluster

    return LiveCluster(read)
