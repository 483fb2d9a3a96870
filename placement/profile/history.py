"""Choosing which runs of a metric history to profile, and checking their files before any engine reads them.

A metric directory can hold many jobs and many runs (every resubmission of a Flink job gets a new job id, every
``metrics collect`` a new run). A profile is about one job *name*: all its runs are pooled, and the job graph, state
sizes and subtask locations come from the newest run. Checking Parquet footers up front turns a corrupt or foreign
file into a one-line error naming that file instead of a Java stack trace from deep inside Spark.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from placement.collect.layout import (
    METRIC_COLUMNS,
    OPTIONAL_COLUMNS,
    SAMPLE_SCHEMA,
    RunManifest,
    find_manifests,
)
from placement.errors import BadInput


@dataclass(frozen=True)
class Selection:
    root: Path
    job_name: str
    runs: tuple[tuple[Path, RunManifest], ...]  # oldest first
    parts: tuple[Path, ...]
    rows: int  # rows in the selected Parquet parts (from their footers)

    @property
    def latest(self) -> RunManifest:
        return self.runs[-1][1]

    @property
    def run_dirs(self) -> list[Path]:
        return [d for d, _ in self.runs]

    @property
    def vertex_ids(self) -> list[str]:
        return [v.id for v in self.latest.vertices]

    @property
    def subtask_count(self) -> int:
        return sum(v.parallelism for v in self.latest.vertices)


def select_runs(root: str | Path, job: str | None = None, runs: list[str] | None = None) -> Selection:
    """The runs of one job under ``root``: by job name or id, else the only job there is."""
    found = find_manifests(root)
    src = str(root)
    if job is not None:
        # A job id selects that one submission; a name pools every submission of the job.
        chosen = [(d, m) for d, m in found if m.job_id == job] or [(d, m) for d, m in found if m.job_name == job]
        if not chosen:
            names = sorted({m.job_name for _, m in found})
            raise BadInput(f"no runs of job {job!r} (jobs here: {', '.join(names)})", source=src, field="--job")
        job_name = chosen[-1][1].job_name
    else:
        names = sorted({m.job_name for _, m in found})
        if len(names) > 1:
            raise BadInput(f"holds several jobs ({', '.join(names)}); choose one with --job", source=src, field="--job")
        job_name, chosen = names[0], found
    if runs:
        wanted = set(runs)
        chosen = [(d, m) for d, m in chosen if m.run_id in wanted]
        missing = wanted - {m.run_id for _, m in chosen}
        if missing:
            raise BadInput(f"no run {min(missing)!r} of job {job_name!r}", source=src, field="--run")
    parts, rows = check_parts([d for d, _ in chosen])
    if rows == 0:
        raise BadInput(f"job {job_name!r} has no samples (the runs' Parquet parts are missing or empty)", source=src)
    return Selection(root=Path(root), job_name=job_name, runs=tuple(chosen), parts=tuple(parts), rows=rows)


def check_parts(run_dirs: list[Path]) -> tuple[list[Path], int]:
    """Every part file must be readable Parquet with the sample columns (an optional metric may be missing: older
    parts lack it); returns the parts and their row count."""
    parts: list[Path] = []
    rows = 0
    needed = {f.name: f.type for f in SAMPLE_SCHEMA}
    for d in run_dirs:
        for p in sorted(d.glob("*.parquet")):
            if p.name.startswith((".", "_")):
                continue
            try:
                meta = pq.read_metadata(p)
                schema = meta.schema.to_arrow_schema()
            except (pa.ArrowException, OSError) as exc:  # long multi-line messages; keep one line
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                raise BadInput(f"not a readable Parquet file ({first})", source=str(p)) from None
            for name, typ in needed.items():
                if name not in schema.names and name in OPTIONAL_COLUMNS:
                    continue  # written before the column existed: read as null
                if name not in schema.names:
                    kind = "metric column" if name in METRIC_COLUMNS else "column"
                    raise BadInput(f"{kind} missing from the samples", source=str(p), field=name)
                if schema.field(name).type != typ:
                    raise BadInput(f"has type {schema.field(name).type}, expected {typ}", source=str(p), field=name)
            parts.append(p)
            rows += meta.num_rows
    return parts, rows
