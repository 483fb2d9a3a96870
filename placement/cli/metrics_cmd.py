"""``placement metrics collect``: sample a running Flink job's per-subtask metrics into a Parquet history."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn


@click.group()
def metrics() -> None:
    """Collect metrics from a running Flink job (layout: placement/collect/layout.py)."""


@metrics.command("collect")
@click.option("--rest", "rest_url", required=True, help="JobManager REST URL, e.g. http://127.0.0.1:8081")
@click.option("--job", "job_id", help="job id")
@click.option("--job-name", help="name of a running job (instead of --job)")
@click.option("--duration", type=float, required=True, help="seconds to sample")
@click.option("--interval", type=float, default=1.0, show_default=True, help="seconds between samples")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="metrics directory (created)")
@click.option("--flush", type=float, default=30.0, show_default=True, help="seconds between Parquet parts")
@click.option("--metrics-timeout", type=float, default=30.0, show_default=True,
              help="how long to wait for a freshly started job's metrics to appear")
@click.option("--run-id", help="run id (default: UTC start time + random suffix)")
@click.option("--quiet", is_flag=True, help="no progress bar")
def collect(rest_url, job_id, job_name, duration, interval, out_dir, flush, metrics_timeout, run_id, quiet) -> None:
    """Sample busy/idle/backpressured time and record/byte rates of every subtask every INTERVAL seconds for
    DURATION seconds, plus the job graph, where each subtask runs, checkpointed state and TaskManagers.
    Ctrl-C stops early and keeps what was collected."""
    from placement.collect.collector import CollectOptions
    from placement.collect.collector import collect as run_collect
    from placement.errors import BadInput

    if bool(job_id) == bool(job_name):
        raise BadInput("give exactly one of --job ID or --job-name NAME", field="--job")
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise BadInput("exists and is not a directory", source=out_dir, field="--out")
    options = CollectOptions(
        rest_url=rest_url, out_dir=Path(out_dir), job_id=job_id, job_name=job_name, duration_s=duration,
        interval_s=interval, flush_s=flush, metrics_timeout_s=metrics_timeout, run_id=run_id,
    )
    console = Console(stderr=True, quiet=quiet)
    # The bar starts with the first sampling round, so errors found before it (bad job, no metrics) stay one line.
    bar = Progress(TextColumn("[bold]collecting"), BarColumn(), TextColumn("{task.fields[rows]} samples, "
                   "{task.fields[nulls]} null values"), TimeRemainingColumn(), console=console, transient=True)
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
    how = {"completed": "done", "interrupted": "stopped by Ctrl-C", "job-ended": "the job ended", "running": "?"}[manifest.stopped]
    click.echo(
        f"{how}: {manifest.samples} samples of job {manifest.job_name!r} ({manifest.job_id}) run {manifest.run_id} "
        f"in {Path(out_dir) / f'job_id={manifest.job_id}' / f'run_id={manifest.run_id}'}"
    )
