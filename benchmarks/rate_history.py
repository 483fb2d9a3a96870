"""Source-rate histories with a known daily (and weekly) cycle, trend and noise: the forecaster's test series and the
shipped example ``examples/metrics/iot-sensors-week`` (``plan --forecast``).

Run as a script it writes that example (deterministic): the IoT job's source, three subtasks sharing the rate as the
shipped profile's do, every 5 min for ``--days`` ending at 12:00 UTC, a daily cycle peaking at 14:00 UTC.

    python benchmarks/rate_history.py --out examples/metrics/iot-sensors-week
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
from pathlib import Path

import numpy as np

sys.path[:0] = [str(Path(__file__).resolve().parents[1])]

DAY_MS = 86_400_000
START_MS = 1_767_225_600_000  # 2026-01-01 00:00 UTC, a Thursday


def rate(
    t_ms: float,
    *,
    base: float = 1000.0,
    amplitude: float = 400.0,
    slope_per_day: float = 0.0,
    weekend: float = 0.0,
    start_ms: int = START_MS,
) -> float:
    """The true rate at ``t_ms``: a daily cycle peaking at 14:00 UTC, a linear trend from ``start_ms``, weekends
    ``weekend`` lower."""
    days = (t_ms - start_ms) / DAY_MS
    hour = (t_ms % DAY_MS) / 3_600_000
    weekday = (int(t_ms // DAY_MS) + 3) % 7  # 0 = Monday (1970-01-01 was a Thursday)
    cycle = amplitude * math.cos(2 * math.pi * (hour - 14) / 24)
    return base + slope_per_day * days + cycle - (weekend if weekday >= 5 else 0.0)


def history(
    days: float,
    *,
    step_s: int = 300,
    noise: float = 30.0,
    seed: int = 0,
    gap_days: tuple[float, float] | None = None,
    start_ms: int = START_MS,
    **shape: float,
) -> list[tuple[int, float]]:
    """(epoch ms, rate) every ``step_s`` for ``days`` from ``start_ms``, Gaussian noise of sd ``noise``; no sample
    within ``gap_days`` (from, to: days after the start)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(int(days * 86_400 / step_s)):
        t = start_ms + i * step_s * 1000
        if gap_days and gap_days[0] * DAY_MS <= t - start_ms < gap_days[1] * DAY_MS:
            continue
        out.append((t, rate(t, start_ms=start_ms, **shape) + float(rng.normal(0, noise))))
    return out


def write_example(out: Path, days: float = 7.5, seed: int = 7, base: float = 78_000.0) -> None:
    """The IoT job's source rates as a metrics directory (one run, the source's samples only)."""
    from placement.collect.layout import PartWriter, RunManifest, RunVertex, rows_to_table, write_manifest
    from placement.profile.format import load_profile

    repo = Path(__file__).resolve().parents[1]
    profile = load_profile(repo / "examples" / "profiles" / "iot-sensors.json")
    source = profile.sources()[0]
    shares = [s.records_out_per_s / source.records_out_per_s for s in source.subtasks]
    start = START_MS - int((days - 0.5) * DAY_MS)  # ends at 12:00 UTC, two hours before the daily peak
    points = history(
        days,
        noise=1500.0,
        seed=seed,
        start_ms=start,
        base=base,
        amplitude=12_000.0,
        slope_per_day=400.0,
        gap_days=(3.0, 4.0) if days > 4 else None,  # a day the collector missed
    )
    if out.exists():
        shutil.rmtree(out)
    job_id, run_id = "a1b2c3d4e5f60718293a4b5c6d7e8f90", "prom-forecast-example"
    writer = PartWriter(out, job_id, run_id)
    rows = [
        {
            "ts_ms": t,
            "vertex_id": source.id,
            "subtask": i,
            "attempt": 0,
            "attempt_start_ms": start - DAY_MS,  # the job ran before the history: no sample is a meter's first minute
            "running": True,
            "records_out_per_s": total * share,
        }
        for t, total in points
        for i, share in enumerate(shares)
    ]
    writer.write(rows_to_table(rows))
    write_manifest(
        out,
        RunManifest(
            job_id=job_id,
            job_name=profile.job.name,
            run_id=run_id,
            origin="synthetic",
            started_ms=start,
            ended_ms=points[-1][0],
            interval_s=300.0,
            stopped="completed",
            samples=len(rows),
            files=writer.files,
            metrics=["numRecordsOutPerSecond"],
            vertices=[RunVertex(id=v.id, name=v.name, parallelism=v.parallelism) for v in profile.vertices],
            edges=[{"source": e.source, "target": e.target, "ship_strategy": e.ship_strategy} for e in profile.edges],
            notes=["synthetic: the source's rates only (benchmarks/rate_history.py), for plan --forecast"],
        ),
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--days", type=float, default=7.5)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    write_example(args.out, args.days, args.seed)
