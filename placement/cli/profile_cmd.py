"""``placement profile``: turn a collected metric history into the job profile ``placement plan`` reads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table

from placement.cli.fit import print_table, report_console
from placement.cli.params import echo_json, json_option, nonempty_path, quiet_option
from placement.profile.rules import MIN_CONFIDENT_BUSY_MS

if TYPE_CHECKING:
    from placement.profile.format import JobProfile, VertexProfile


PROFILE_SUMMARY_FORMAT = "placement.profile-summary/v1"  # what a reader of --json checks first


def _fmt(x: object, spec: str = ",.0f") -> str:
    return "—" if x is None else format(x, spec)


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def vertex_figures(v: VertexProfile) -> dict:
    """The figures the table prints for one vertex, as --json gives them (busy/bp: ms per second, mean over
    subtasks; true rate: records per busy second of one subtask)."""
    return {
        "id": v.id,
        "vertex": v.name,
        "parallelism": v.parallelism,
        "records_in_per_s": v.records_in_per_s,
        "records_out_per_s": v.records_out_per_s,
        "busy_ms_per_s": _mean([s.busy_ms_per_s for s in v.subtasks if s.busy_ms_per_s is not None]),
        "backpressured_ms_per_s": _mean(
            [s.backpressured_ms_per_s for s in v.subtasks if s.backpressured_ms_per_s is not None]
        ),
        "true_rate": v.stats.get("true_processing_rate") or v.stats.get("true_output_processing_rate"),
        "selectivity": v.stats.get("selectivity"),
        "bytes_per_record_out": v.bytes_per_record_out,
        "stateful": v.stateful,
        "confident": bool(v.stats.get("confident")),
    }


def profile_summary(prof: JobProfile, out: str) -> dict:
    """``profile --json``: the file written, the job, each vertex's figures and each edge's rates."""
    names = {v.id: v.name for v in prof.vertices}
    return {
        "format": PROFILE_SUMMARY_FORMAT,
        "out": str(out),
        "profile_format": prof.format,
        "job": {"name": prof.job.name, "id": prof.job.id, "note": prof.job.note},
        "operators": [vertex_figures(v) for v in prof.vertices],
        "edges": [
            {
                "source": names.get(e.source, e.source),
                "target": names.get(e.target, e.target),
                "ship_strategy": e.ship_strategy.value,
                "records_per_s": sum(e.records_per_s) if e.records_per_s is not None else None,
                "bytes_per_s": sum(e.bytes_per_s) if e.bytes_per_s is not None else None,
            }
            for e in prof.edges
        ],
        "latency": [
            {"source": names[m.source], "sink": names[m.sink], "p50_ms": m.p50_ms, "p99_ms": m.p99_ms}
            for m in prof.latency or ()
        ],
    }


@click.command()
@click.argument("metrics_dir", metavar="DIR", type=click.Path(file_okay=True, dir_okay=True))
@click.option("--out", "out", required=True, type=click.Path(), callback=nonempty_path, help="profile JSON to write")
@click.option(
    "--job",
    "job_id",
    metavar="ID",
    help="job id: that one submission, as in `metrics collect` and `apply` (needed when DIR holds several jobs)",
)
@click.option("--job-name", metavar="NAME", help="job name: every submission of it, pooled (instead of --job)")
@click.option("--run", "runs", multiple=True, help="use only this run id (repeatable); default: every run of the job")
@click.option(
    "--warmup",
    type=float,
    default=60.0,
    show_default=True,
    help="seconds after each (re)start of a subtask whose samples are dropped",
)
@click.option("--inventory", type=click.Path(dir_okay=False), help="inventory whose host speeds apply to the subtasks")
@click.option("--stateful", multiple=True, metavar="NAME", help="treat this vertex as stateful (repeatable)")
@click.option("--stateless", multiple=True, metavar="NAME", help="treat this vertex as stateless (repeatable)")
@click.option("--spark-master", help="Spark master URL (default local[*]; ignored under spark-submit unless given)")
@click.option(
    "--engine",
    type=click.Choice(["spark", "pandas"]),
    default="spark",
    show_default=True,
    help="pandas: single-threaded, no JVM; for small histories",
)
@click.option(
    "--details",
    type=click.Path(dir_okay=False),
    help="also write every per-subtask figure (means, medians, p95s, counts, true rates) as CSV",
)
@json_option("the profile's summary (file, job, each operator's and edge's figures) as JSON on stdout")
@quiet_option("print nothing but errors (and the --json summary)")
def profile(
    metrics_dir,
    out,
    job_id,
    job_name,
    runs,
    warmup,
    inventory,
    stateful,
    stateless,
    spark_master,
    engine,
    details,
    as_json,
    quiet,
) -> None:
    """Compute per-subtask and per-vertex rates, true processing rates, selectivities and statefulness from the
    samples in DIR (written by `placement metrics collect`) and write them as a profile (placement.profile/v1)."""
    from placement.errors import BadInput
    from placement.profile.pipeline import build_profile, write_profile

    if job_id and job_name:
        raise BadInput("give --job ID or --job-name NAME, not both", field="--job")
    job = job_id or job_name  # the history selects by id, else by name (--job NAME, as before, still works)

    console = Console(stderr=True, quiet=quiet)
    with console.status(f"profiling {metrics_dir} with {engine}…"):
        try:
            prof = build_profile(
                metrics_dir,
                job=job,
                runs=runs,
                warmup_s=warmup,
                engine=engine,
                spark_master=spark_master,
                inventory=inventory,
                stateful=stateful,
                stateless=stateless,
                details=details,
            )
        except KeyboardInterrupt:
            if engine == "spark":  # the JVM and its Python workers go with us, without a word
                from placement.profile.spark_job import stop_driver

                stop_driver()
            raise
    write_profile(prof, out)
    if engine == "spark":
        from placement.profile.spark_job import archive_pending, finish_spark

        if archive_pending():
            with console.status("saving a JVM class archive for faster Spark starts (once per Java and PySpark)…"):
                finish_spark()
    if as_json:
        echo_json(profile_summary(prof, out))
        return
    if quiet:
        return
    table = Table(title=f"{prof.job.name}: {out}")
    for col in ("vertex", "p", "in/s", "out/s", "busy", "bp", "true rate", "sel.", "B/rec", "state", "ok"):
        table.add_column(col, justify="left" if col in ("vertex", "state") else "right")
    for f in map(vertex_figures, prof.vertices):
        table.add_row(
            f["vertex"],
            str(f["parallelism"]),
            _fmt(f["records_in_per_s"]),
            _fmt(f["records_out_per_s"]),
            _fmt(f["busy_ms_per_s"], ".0f"),
            _fmt(f["backpressured_ms_per_s"], ".0f"),
            _fmt(f["true_rate"]),
            _fmt(f["selectivity"], ".3g"),
            _fmt(f["bytes_per_record_out"], ".0f"),
            "stateful" if f["stateful"] else "-",
            "yes" if f["confident"] else "low",
        )
    screen = report_console()
    print_table(screen, table)
    # through rich, not click.echo: wrapped between words at the terminal's width
    screen.print(
        "busy/bp: ms per second, mean over subtasks; true rate: records per busy second of one subtask; "
        f"ok=low: busy < {MIN_CONFIDENT_BUSY_MS:g} ms/s or too few samples",
        markup=False,
        highlight=False,
    )
    if prof.latency:  # Flink's latency tracking was on: measured latency per source → sink (issue 25)
        names = {v.id: v.name for v in prof.vertices}
        lat = Table(title="Latency per source → sink (measured, ms; Flink's latency markers)")
        for col in ("source → sink", "p50", "p95", "p99", "max", "samples"):
            lat.add_column(col, justify="left" if col == "source → sink" else "right")
        for m in prof.latency:
            lat.add_row(
                f"{names[m.source]} → {names[m.sink]}",
                _fmt(m.p50_ms, ".1f"),
                _fmt(m.p95_ms, ".1f"),
                _fmt(m.p99_ms, ".1f"),
                _fmt(m.max_ms, ".1f"),
                str(m.samples),
            )
        print_table(screen, lat)
    screen.print(prof.job.note or "", markup=False, highlight=False)
