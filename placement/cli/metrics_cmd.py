"""``placement metrics collect``: sample a running Flink job's per-subtask metrics into a Parquet history."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from placement.cli.params import HTTP_URL, echo_json, json_option, nonempty_path, quiet_option

if TYPE_CHECKING:  # imported where used: --help loads no collector
    from placement.collect.layout import RunManifest

METRICS_SUMMARY_FORMAT = "placement.metrics-summary/v1"  # what a reader of --json checks first


@click.group()
def metrics() -> None:
    """Collect metrics from a running Flink job (layout: placement/collect/layout.py)."""


@metrics.command("collect")
@click.option(
    "--rest",
    "rest_url",
    type=HTTP_URL,
    help="JobManager REST URL, e.g. http://127.0.0.1:8081 (with --prometheus: where the "
    "job graph, checkpoint sizes and TaskManagers come from)",
)
@click.option("--job", "job_id", help="job id")
@click.option("--job-name", help="name of a running job (instead of --job)")
@click.option("--duration", type=float, help="seconds to sample")
@click.option("--interval", type=float, default=1.0, show_default=True, help="seconds between samples")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    callback=nonempty_path,
    help="metrics directory (created)",
)
@click.option("--flush", type=float, default=30.0, show_default=True, help="seconds between Parquet parts")
@click.option(
    "--metrics-timeout",
    type=float,
    default=30.0,
    show_default=True,
    help="how long to wait for a freshly started job's metrics to appear",
)
@click.option("--run-id", help="run id (default: UTC start time + random suffix)")
@click.option(
    "--prometheus",
    "prometheus_url",
    metavar="URL",
    type=HTTP_URL,
    help="read the history from Prometheus (which scrapes Flink's Prometheus reporter) instead of polling REST",
)
@click.option(
    "--since", metavar="TIME", help="with --prometheus: start (now-2h, Unix seconds or ISO 8601, UTC if no zone)"
)
@click.option("--until", metavar="TIME", default="now", show_default=True, help="with --prometheus: end")
@click.option(
    "--step",
    metavar="DURATION",
    help="with --prometheus: sample interval (15s, 1m…; default: the scrape interval of the job's targets)",
)
@click.option(
    "--graph",
    type=click.Path(),
    metavar="FILE",
    help="with --prometheus and no --rest: the job graph, from an earlier run's _manifest.json (or a "
    "metrics dir) or a saved GET /jobs/<id> answer",
)
@click.option(
    "--lookback",
    metavar="DURATION",
    default="10m",
    show_default=True,
    help="with --prometheus: how far before --since to look for the start of the running attempts",
)
@click.option(
    "--metric-prefix",
    default="flink_taskmanager_job_task_",
    show_default=True,
    help="with --prometheus: series name before the Flink metric name",
)
@click.option(
    "--inventory",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="the hosts (with their ssh: settings): also record each TaskManager JVM's CPU per thread from its "
    "host's /proc, over SSH as apply reaches them — what profile calibrates each operator's CPU with",
)
@json_option("what was written (each run's directory, files, samples, window, source) as JSON on stdout")
@quiet_option("no progress bar: errors and the closing line (or the --json summary) only")
@click.pass_context
def collect(
    ctx,
    rest_url,
    job_id,
    job_name,
    duration,
    interval,
    out_dir,
    flush,
    metrics_timeout,
    run_id,
    prometheus_url,
    since,
    until,
    step,
    graph,
    lookback,
    metric_prefix,
    inventory,
    as_json,
    quiet,
) -> None:
    """Sample busy/idle/backpressured time and record/byte rates of every subtask every INTERVAL seconds for
    DURATION seconds, plus the job graph, where each subtask runs, checkpointed state and TaskManagers.
    Ctrl-C stops early and keeps what was collected.

    With --prometheus, read the same figures for --since..--until from Prometheus instead (no live job needed; one
    run per job id in the window); the job graph comes from --rest or --graph."""
    from placement.collect.collector import CollectOptions
    from placement.collect.collector import collect as run_collect
    from placement.errors import BadInput
    from placement.inventory import load_inventory

    if bool(job_id) == bool(job_name):
        raise BadInput("give exactly one of --job ID or --job-name NAME", field="--job")
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise BadInput("exists and is not a directory", source=out_dir, field="--out")
    if prometheus_url:
        manifests = _from_prometheus(ctx, prometheus_url, quiet, say=_closing_line(as_json))
        if as_json:
            echo_json(metrics_summary("prometheus", prometheus_url, Path(out_dir), manifests))
        return
    for option in ("since", "step", "graph"):
        if ctx.params[option] is not None:
            raise BadInput("applies to --prometheus only", field=f"--{option}")
    if not rest_url:
        raise BadInput("give --rest URL (or --prometheus URL to read a history from Prometheus)", field="--rest")
    if duration is None:
        raise BadInput("give how many seconds to sample", field="--duration")
    options = CollectOptions(
        rest_url=rest_url,
        out_dir=Path(out_dir),
        job_id=job_id,
        job_name=job_name,
        duration_s=duration,
        interval_s=interval,
        flush_s=flush,
        metrics_timeout_s=metrics_timeout,
        run_id=run_id,
        inventory=load_inventory(inventory) if inventory else None,
    )
    console = Console(stderr=True, quiet=quiet)
    # The bar starts with the first sampling round, so errors found before it (bad job, no metrics) stay one line.
    bar = Progress(
        TextColumn("[bold]collecting"),
        BarColumn(),
        TextColumn("{task.fields[rows]} samples, {task.fields[nulls]} null values"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    task = None

    def on_progress(p) -> None:
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task("collect", total=duration, rows=0, nulls=0)
        bar.update(task, completed=min(p.elapsed_s, duration), rows=p.rows, nulls=p.nulls)

    try:
        manifest = run_collect(options, on_progress)
    finally:
        if task is not None:
            bar.stop()
    how = {"completed": "done", "interrupted": "stopped by Ctrl-C", "job-ended": "the job ended", "running": "?"}[
        manifest.stopped
    ]
    _closing_line(as_json)(
        f"{how}: {manifest.samples} samples of job {manifest.job_name!r} ({manifest.job_id}) run {manifest.run_id} "
        f"in {_run_dir(Path(out_dir), manifest)}"
    )
    if as_json:
        echo_json(metrics_summary("rest", rest_url, Path(out_dir), [manifest]))


def _closing_line(as_json: bool):
    """Where the closing line goes: stdout, or stderr when stdout is the --json summary."""
    return functools.partial(click.echo, err=as_json)


def _run_dir(out_dir: Path, m: RunManifest) -> Path:
    from placement.collect.layout import run_dir

    return run_dir(out_dir, m.job_id, m.run_id)


def metrics_summary(source: str, url: str, out_dir: Path, manifests: list[RunManifest]) -> dict:
    """``metrics collect --json``: where each run went, its files, samples and window, and what it was read from."""
    return {
        "format": METRICS_SUMMARY_FORMAT,
        "source": source,
        "url": url,
        "out": str(out_dir),
        "runs": [
            {
                "job_id": m.job_id,
                "job_name": m.job_name,
                "run_id": m.run_id,
                "dir": str(_run_dir(out_dir, m)),
                "files": [str(_run_dir(out_dir, m) / f) for f in _written(m)],
                "samples": m.samples,
                "interval_s": m.interval_s,
                "window": {"started_ms": m.started_ms, "ended_ms": m.ended_ms},
                "stopped": m.stopped,
            }
            for m in manifests
        ],
    }


def _written(m: RunManifest) -> list[str]:
    """Every file of the run, by its name in the run's directory: the manifest, samples, TaskManagers, latency,
    threads."""
    from placement.collect.layout import MANIFEST_NAME

    return [MANIFEST_NAME, *m.files, *m.taskmanager_files, *m.latency_files, *m.thread_files]


def _from_prometheus(ctx: click.Context, url: str, quiet: bool, say) -> list[RunManifest]:
    """``collect --prometheus``: the history of --since..--until from Prometheus (placement.collect.prometheus)."""
    import time

    from placement.collect.prometheus import (
        PromOptions,
        collect_prometheus,
        parse_duration,
        parse_time,
    )
    from placement.errors import BadInput

    p = ctx.params
    for option in ("duration", "interval", "flush", "metrics_timeout", "run_id", "inventory"):
        if ctx.get_parameter_source(option) is click.core.ParameterSource.COMMANDLINE:
            name = "--" + option.replace("_", "-")
            raise BadInput(
                "applies to REST polling, not --prometheus" + (" (use --step)" if option == "interval" else ""),
                field=name,
            )
    if not p["since"]:
        raise BadInput("give the start of the history to read (e.g. now-2h)", field="--since")
    now = time.time()
    options = PromOptions(
        url=url,
        out_dir=Path(p["out_dir"]),
        job_id=p["job_id"],
        job_name=p["job_name"],
        since_s=parse_time(p["since"], now=now, field="--since"),
        until_s=parse_time(p["until"], now=now, field="--until"),
        step_s=parse_duration(p["step"], field="--step") if p["step"] else None,
        graph=Path(p["graph"]) if p["graph"] else None,
        rest_url=p["rest_url"],
        lookback_s=parse_duration(p["lookback"], field="--lookback"),
        prefix=p["metric_prefix"],
    )
    console = Console(stderr=True, quiet=quiet)
    bar = Progress(
        TextColumn("[bold]reading Prometheus"),
        BarColumn(),
        TextColumn("{task.fields[rows]} samples"),
        console=console,
        transient=True,
    )
    tasks: dict[str, TaskID] = {}

    def on_progress(pr) -> None:
        if not tasks:
            bar.start()
        if pr.job_id not in tasks:
            tasks[pr.job_id] = bar.add_task(pr.job_id, total=pr.chunks, rows=0)
        bar.update(tasks[pr.job_id], completed=pr.chunks_done, rows=pr.rows)

    try:
        manifests = collect_prometheus(options, on_progress)
    finally:
        if tasks:
            bar.stop()
    for m in manifests:
        say(
            f"read: {m.samples} samples of job {m.job_name!r} ({m.job_id}) run {m.run_id} every {m.interval_s:g} s "
            f"in {_run_dir(Path(p['out_dir']), m)}"
        )
    return manifests
