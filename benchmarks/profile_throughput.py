"""Throughput of ``placement profile``: the PySpark job vs a single-threaded pandas version of the same computation.

    .venv/bin/python benchmarks/profile_throughput.py                 # 10M and 50M samples
    .venv/bin/python benchmarks/profile_throughput.py --sizes 100M --engines spark

A sample is one subtask at one sampling instant with all seven metrics. For each size a synthetic history (the lab
IoT job with every parallelism x8 = 120 subtasks, 2 submissions x 2 runs, restarts and backpressure episodes) is
written once in the collector's Parquet layout and cached under --work-dir. Each engine then runs end to end in a
fresh process (interpreter start, JVM start for Spark, reading, aggregating, assembling, writing the profile), while
this script samples the resident memory of that process and all its children (the JVM) every 0.1 s.

The Spark driver starts with its class-data-sharing archive, as every `placement profile` run after a machine's first
does (placement.profile.class_archive); if there is none yet, one untimed run makes it first and the table's footer
says so. --no-class-archive measures a JVM without it, as on that first run.

Targets (printed as PASS/FAIL next to the figures measured in the same run): Spark >= 2M samples/s on 2 cores,
100M samples in < 2 min (measured with --sizes 100M, else extrapolated from the largest size), Spark >= 2x pandas.
The machine's load average is printed too: on a shared 2-core box other work slows both engines.

Both engines do the same work: they read the same validated part files (``Selection.parts``) and the same columns,
apply the same rules, and compute the same statistics per subtask — counts, sums, the 7 metric means over every usable
sample, and exact (linearly interpolated) medians and p95s of a random ~2,000-sample subset drawn by the same rule;
all in float64. After the table the two profiles of each size are compared: means and true rates must agree to
float rounding, percentiles to the subset's sampling error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATE = 2_000_000
TARGET_100M_S = 120.0
TARGET_SPEEDUP = 2.0


def parse_size(text: str) -> int:
    text = text.strip().upper()
    mult = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}.get(text[-1], 1)
    return int(float(text[:-1] if text[-1] in "KMG" else text) * mult)


def ensure_history(work: Path, samples: int) -> Path:
    """A cached synthetic history of about ``samples`` samples (regenerated if missing or of another size)."""
    from placement.collect.layout import find_manifests
    from placement.errors import BadInput
    from placement.profile.synthetic import IOT_JOB, Shape, scaled_job, write_history

    job = scaled_job(IOT_JOB, 8)
    subtasks = sum(v.parallelism for v in job.vertices)
    runs = 4
    seconds = round(samples / subtasks / runs)  # whole seconds: the count is within 480 of the size asked for
    actual = seconds * subtasks * runs
    root = work / f"history-{actual}"
    try:
        if sum(m.samples for _, m in find_manifests(root)) == actual:
            return root
    except BadInput:
        pass
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    write_history(job, Shape(duration_s=seconds, restarts=3, backpressure_episodes=6, seed=42), root, runs=2, jobs=2)
    print(f"generated {actual:,} samples in {time.perf_counter() - t:.1f} s under {root}", file=sys.stderr)
    return root


def run_one(engine: str, history: Path, out: Path) -> None:
    """Child process: profile ``history`` with ``engine``; print timings as JSON on the last line."""
    t0 = time.perf_counter()
    from placement.profile.history import select_runs
    from placement.profile.pipeline import write_profile
    from placement.profile.rules import Options, assemble

    sel = select_runs(history)
    t1 = time.perf_counter()
    if engine == "spark":
        from placement.profile.spark_job import aggregate_spark, spark_session

        spark = spark_session()
        t1 = time.perf_counter()  # after JVM start
        agg = aggregate_spark(spark, sel, 60.0)
    else:
        from placement.profile.pandas_job import aggregate_pandas

        agg = aggregate_pandas(sel, 60.0)
    t2 = time.perf_counter()
    write_profile(assemble([m for _, m in sel.runs], agg, Options()), out)
    done = time.perf_counter()
    archived = False
    if engine == "spark":
        from placement.profile.spark_job import finish_spark

        archived = finish_spark()  # the CLI does this too; only the first run on a machine dumps an archive
    print(json.dumps({"rows": sel.rows, "aggregate_s": t2 - t1, "in_process_s": done - t0, "archived": archived}))


def measure(engine: str, history: Path, out: Path) -> dict:
    """Run one engine in a fresh process; wall time end to end and peak RSS of the process tree."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--one", engine, str(history), str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    root = psutil.Process(proc.pid)
    peak = 0
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in procs if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.1)
    wall = time.perf_counter() - start
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{stderr[-3000:]}")
    info = json.loads(stdout.strip().splitlines()[-1])
    return {"engine": engine, "wall_s": wall, "peak_mib": peak / 2**20, **info}


def prime_class_archive(history: Path, work: Path, console: Console) -> str:
    """Make sure the Spark driver's class archive exists before anything is timed (it is made once per Java and
    PySpark, by the first run on a machine: see placement.profile.class_archive). Returns what the table says."""
    from placement.profile.class_archive import class_archive, enabled

    if not enabled():
        return "off"

    archive = class_archive()
    if archive is None:
        return "unavailable"
    if archive.path.is_file():
        return "present"
    console.print("[dim]no JVM class archive yet: one untimed Spark run makes it…[/dim]")
    r = measure("spark", history, work / "profile-prime.json")
    return f"made by an untimed first run ({r['wall_s']:.0f} s, of which the archive {r['wall_s'] - r['in_process_s']:.0f} s)"


def compare_profiles(a: Path, b: Path) -> tuple[float, float]:
    """Largest relative difference between two profiles: of means and true rates, and of percentile figures."""
    pa_, pb = (json.loads(p.read_text()) for p in (a, b))
    exact, pct = 0.0, 0.0
    for va, vb in zip(pa_["vertices"], pb["vertices"], strict=True):
        for k, x in va["stats"].items():
            y = vb["stats"].get(k)
            nums = all(isinstance(z, (int, float)) and not isinstance(z, bool) for z in (x, y))
            if not nums or max(abs(x), abs(y)) < 1e-9:
                continue
            d = abs(x - y) / max(abs(x), abs(y))
            if "_p50_" in k or "_p95_" in k:
                pct = max(pct, d)
            else:
                exact = max(exact, d)
    return exact, pct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10M,50M", help="comma-separated sample counts (multiples of 480)")
    ap.add_argument("--engines", default="spark,pandas")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/placement-bench-profile"))
    ap.add_argument("--no-class-archive", action="store_true",
                    help="start the Spark driver without its class-data-sharing archive (as on a machine's first run)")
    ap.add_argument("--one", nargs=3, metavar=("ENGINE", "HISTORY", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        run_one(a.one[0], Path(a.one[1]), Path(a.one[2]))
        return
    a.work_dir.mkdir(parents=True, exist_ok=True)
    engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    console = Console()
    load = os.getloadavg()
    if a.no_class_archive:
        from placement.profile.class_archive import ENV_SWITCH

        os.environ[ENV_SWITCH] = "0"  # inherited by every engine process
    results = []
    archive = None
    for size in (parse_size(s) for s in a.sizes.split(",")):
        history = ensure_history(a.work_dir, size)
        if archive is None and "spark" in engines:
            archive = prime_class_archive(history, a.work_dir, console)
        disk = sum(p.stat().st_size for p in history.rglob("*.parquet")) / 2**20
        for engine in engines:
            console.print(f"[dim]{size:,} samples: {engine}…[/dim]")
            out = a.work_dir / f"profile-{engine}-{size}.json"
            r = measure(engine, history, out)
            results.append({**r, "size": r["rows"], "disk_mib": disk, "out": out})

    table = Table(title=f"placement profile throughput ({os.cpu_count()} cores; load average at start {load[0]:.1f})")
    for col in ("samples", "engine", "Parquet MiB", "end to end s", "samples/s", "aggregate s", "agg samples/s",
                "peak RSS MiB", "vs pandas"):
        table.add_column(col, justify="right")
    checks = []
    for r in results:
        rate = r["size"] / r["wall_s"]
        pandas = next((x for x in results if x["size"] == r["size"] and x["engine"] == "pandas"), None)
        speedup = (pandas["wall_s"] / r["wall_s"]) if pandas and r["engine"] == "spark" else None
        table.add_row(f"{r['size']:,}", r["engine"], f"{r['disk_mib']:.0f}", f"{r['wall_s']:.1f}", f"{rate / 1e6:.2f}M",
                      f"{r['aggregate_s']:.1f}", f"{r['size'] / r['aggregate_s'] / 1e6:.2f}M", f"{r['peak_mib']:.0f}",
                      f"{speedup:.1f}x" if speedup else "")
        if r["engine"] == "spark":
            checks.append((f"spark >= 2M samples/s at {r['size']:,}", rate >= TARGET_RATE, f"{rate / 1e6:.2f}M/s"))
            if speedup:
                checks.append((f"spark >= 2x pandas at {r['size']:,}", speedup >= TARGET_SPEEDUP, f"{speedup:.1f}x"))
    spark = [r for r in results if r["engine"] == "spark"]
    if spark:
        big = max(spark, key=lambda r: r["size"])
        measured = abs(big["size"] - 100_000_000) < 1_000
        secs = big["wall_s"] if measured else big["wall_s"] * 100_000_000 / big["size"]
        how = "measured" if measured else f"extrapolated from {big['size']:,}"
        checks.append(("spark: 100M samples < 2 min", secs < TARGET_100M_S, f"{secs:.0f} s ({how})"))
    console.print(table)
    if archive:
        console.print(f"Spark driver JVM class archive: {archive}")
    for size in sorted({r["size"] for r in results}):
        files = {r["engine"]: r["out"] for r in results if r["size"] == size}
        if {"spark", "pandas"} <= files.keys():
            exact, pct = compare_profiles(files["spark"], files["pandas"])
            console.print(f"{size:,}: spark vs pandas profiles: means/true rates differ by <= {exact:.1e} (relative), "
                          f"p50/p95 by <= {pct:.1%}")
    for name, ok, figure in checks:
        console.print(f"{'[green]PASS' if ok else '[red]FAIL'}[/] {name}: {figure}")
    console.print(f"load average now {os.getloadavg()[0]:.1f} (other work on this machine shares its {os.cpu_count()} cores)")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
