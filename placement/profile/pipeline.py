"""``placement profile`` end to end: select runs -> aggregate (Spark or pandas) -> assemble -> validated profile."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from placement.collect.layout import read_samples, read_taskmanager_cpu, read_thread_cpu
from placement.errors import BadInput, PlacementError
from placement.inventory import load_inventory
from placement.profile.format import JobProfile
from placement.profile.history import select_runs
from placement.profile.lanes import fold_lane_copies
from placement.profile.latency import measured_latency
from placement.profile.rules import Options, assemble, subtask_details
from placement.profile.tm_cpu import SOURCE_RATE_COLUMNS, calibrate

if TYPE_CHECKING:  # the Spark engine is imported only when it runs
    from pyspark.sql import SparkSession

Engine = Literal["spark", "pandas"]


def build_profile(
    metrics_dir: str | Path,
    *,
    job: str | None = None,
    runs: Iterable[str] = (),
    warmup_s: float = 60.0,
    engine: Engine = "spark",
    spark_master: str | None = None,
    spark: SparkSession | None = None,
    inventory: str | Path | None = None,
    stateful: Iterable[str] = (),
    stateless: Iterable[str] = (),
    details: str | Path | None = None,
) -> JobProfile:
    """Everything is checked (directory, manifests, Parquet footers, inventory, overrides) before the engine starts.

    With ``details``, every per-subtask figure is also written there as CSV (see :func:`rules.subtask_details`).
    """
    if warmup_s < 0:
        raise BadInput("must be >= 0", field="--warmup")
    inv = load_inventory(inventory) if inventory is not None else None
    selection = select_runs(metrics_dir, job, list(runs) or None)
    options = Options(
        warmup_s=warmup_s,
        stateful=frozenset(stateful),
        stateless=frozenset(stateless),
        inventory=inv,
        inventory_source=str(inventory) if inventory is not None else None,
    )
    if engine == "pandas":
        from placement.profile.pandas_job import aggregate_pandas

        aggregates = aggregate_pandas(selection, warmup_s)
    else:
        from placement.profile.spark_job import aggregate_spark, spark_session

        aggregates = aggregate_spark(spark or spark_session(spark_master), selection, warmup_s)
    # a vanilla-placed job's lane copies: the job's vertices again (placement.profile.lanes)
    manifests, aggregates, copies = fold_lane_copies([m for _, m in selection.runs], aggregates)
    folded = [(d, m) for (d, _), m in zip(selection.runs, manifests, strict=True)]
    profile = assemble(manifests, aggregates, options, source=str(metrics_dir))
    cpu = [(m, read_taskmanager_cpu(d, m)) for d, m in folded]  # TaskManager CPU rows: read here, at the edge
    threads = [read_thread_cpu(d, m) for d, m in folded]
    # each run's source rate, for the CPU's line over runs at different rates (a lane copy's source is another vertex)
    fit_rates = len(folded) > 1 and not copies and any(m.taskmanager_files for _, m in folded)
    source_ids = [v.id for v in profile.sources()]
    sources = [read_samples(d, source_ids, SOURCE_RATE_COLUMNS) for d, _ in folded] if fit_rates else []
    profile = calibrate(profile, cpu, warmup_s=warmup_s, inventory=inv, threads=threads, source_samples=sources)
    latency = measured_latency(profile, folded, warmup_s=warmup_s, lane_copies=copies)
    if latency:
        profile = profile.model_copy(update={"latency": latency})
    if details is not None:
        _write_atomically(Path(details), subtask_details(profile, aggregates).to_csv(index=False), "--details")
    return profile


def write_profile(profile: JobProfile, out: str | Path) -> Path:
    """Write atomically: a failed run never leaves a half-written profile behind."""
    p = Path(out)
    _write_atomically(p, json.dumps(profile.dump(), indent=2, ensure_ascii=False) + "\n", "--out")
    return p


def _write_atomically(p: Path, text: str, option: str) -> None:
    if p.is_dir():
        raise BadInput("is a directory, expected a file name", source=str(p), field=option)
    tmp = p.with_name("." + p.name + ".tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)  # the whole new file, or the old one: never a half-written one
    except OSError as exc:
        if tmp.is_file():
            tmp.unlink()
        raise PlacementError(f"{p}: {option}: cannot write: {exc.strerror or exc}") from None
