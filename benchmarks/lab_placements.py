"""All-on-server vs greedy vs ILP on the real lab: measured WAN, throughput and backpressure per placement.

    .venv/bin/python benchmarks/lab_placements.py [--job iot|nexmark|branching|all] [--inventory inventory/lab.yaml]
                                                  [--mode custom|vanilla] [--rate R] [--profile-rate R] [--keep]
                                                  [--flink-version 1.20.5] [--repeats N]

Steps: ``lab up --mode M`` -> per job: a copy of the running lab inventory with that job's source pins and its
target-rate arguments -> the job unpinned at the profile rates -> 60 s for Flink's rate meters -> ``metrics collect``
60 s -> ``profile`` -> plans at the target rates (rate scale = target / profile rate) by the ILP, the greedy heuristic
and all-on-server (sources stay pinned on the Pis where their data is born) -> for each: the job at the target rates
with that placement, 60 s to settle, then ``lab measure`` over ``--window`` s -> one table per job -> ``lab down``.

How a placement is put into effect: ``custom`` (the default) submits the job unmodified, writes the plan directory
as ``placement plan`` does and runs ``placement apply`` with the lab inventory (savepoint, schedulercfg, the unchanged
jar resubmitted, verify every subtask index); ``vanilla`` submits the job with the plan's ``--placement`` mapping.

Jobs (``deploy/jobs/README.md``) and their default targets, chosen so that all-on-server offers ~2.4 Mbit/s of
source records to a 2 Mbit/s uplink (1.2x its bandwidth), from each generator's serialized record size:

* ``iot``: 1500 readings/s per sensor subtask (~185 bytes serialized JSON; kept from before); one subtask per pinned Pi.
* ``nexmark``: 1750 bids/s per bid subtask (the CSV line is ~170 bytes + Flink framing); one subtask per pinned Pi.
  Filter Auctions keeps ~20 % and Currency Convert drops the padding, so filtering on the Pi cuts the uplink ~10x.
* ``branching``: 350 frames/s from the camera (~850 bytes each) and 3000 readings/s from the meter (~95-byte JSON),
  one subtask each, on different Pis; Detect Objects / Parse Meters shrink both to ~20-byte records.

Profile rates are the targets / 3 unless ``--profile-rate`` is given. ``--rate`` / ``--profile-rate`` set the job's
first source rate (readings, bids, frames); a second source (meters) keeps its ratio to the first.

Baseline in the same run: all-on-server. Targets per job: every placement runs as planned (custom mode: apply's
verify table all green); the ILP sends >= 50 % less WAN traffic than all-on-server and holds the target rate (>= 95 %
of it, sources backpressured < 10 % of the time) where all-on-server backpressures; every placement that holds its
rate carries, per uplink, job data within ±15 % of its plan's prediction. Prints PASS or FAIL lines; exit 1 on any
FAIL.

Latency (issue 25): the lab runs with Flink's latency tracking on and its jobs' sinks record event-time latency (one
machine, one clock), so each placement's table row gets, per source → sink, the plan's predicted latency of its
slowest path (``costmodel.latency``: flush waits + the slowest crossing's delay, send and queue) — the *expected*
figure (the queue as the M/G/1 mean of the link's own messages) and the *upper* one (the full-buffer queue bound the
ILP and ``policy.max_latency_ms`` use) — beside the measured p50/p99 of Flink's latency markers and of the sinks' event
time. ``--repeats N`` (default 1) runs each placement N times, each a fresh job (submitted, and in custom mode applied,
again): every exchange's flush wait depends on the phase between two tasks' output flushers, drawn anew each start, so
one run of a 5-exchange path scatters by σ ≈ τ·√(5/12) ≈ 65 ms; the measured figures are the mean over the runs ± their
sample standard deviation (every run in the JSON under ``runs``), Mbit/s and CPU the means, and a placement holds its
rate only if every run does. Targets: on every placement that holds its rate the expected figure is within ±25 % of
the markers' p50 (the prediction is a mean; the median is the robust figure closest to it) — over the runs of every
strategy that chose that placement (greedy and the ILP often do: one placement, one prediction); where all-on-server
saturates an uplink, the ILP's p99 is below all-on-server's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from placement.collect.layout import find_manifests, read_thread_cpu
from placement.collect.threads import PROCESS_ROW
from placement.costmodel.model import PlanOptions, build_problem
from placement.flink.rest import FlinkRest
from placement.inventory import load_inventory
from placement.lab import chain
from placement.lab.jobs import BRANCHING_JOB, IOT_SENSOR_JOB, NEXMARK_BIDS_JOB
from placement.lab.measure import measure
from placement.lab.plans import write_lab_plan
from placement.profile.format import load_profile
from placement.solver import SolverOptions, solve
from placement.solver.baselines import all_on_server, greedy

PLACEMENT = str(Path(sys.executable).with_name("placement"))
LINK_MBIT = 2.0  # the lab inventories' uplinks
OVERLOAD = 1.2  # all-on-server offers this multiple of the uplink
PROFILE_DIVISOR = 3.0  # profile at target / 3 (the IoT job's 500 vs 1500)
DATA_TOLERANCE = 0.15  # measured job data per uplink vs the plan's prediction
DATA_FLOOR_MBIT = 0.02  # below this a link's prediction is checked to this absolute tolerance instead
LATENCY_TOLERANCE = (
    0.25  # expected path latency vs the markers' measured p50 (mean over the runs), where the rate holds
)


def saturating_rate(record_bytes: float, subtasks_per_link: int = 1) -> float:
    """Records/s per source subtask at which shipping the raw records offers OVERLOAD x the uplink."""
    return OVERLOAD * LINK_MBIT * 1e6 / 8 / record_bytes / subtasks_per_link


@dataclass(frozen=True)
class Source:
    vertex: str  # the source vertex as Flink names it
    next_vertex: str  # the vertex it feeds (FORWARD): its records in stand in for a source whose metrics queue
    rate_arg: str  # the job argument of records/s per subtask
    parallelism_arg: str  # the job argument of its parallelism
    record_bytes: float  # serialized record (string + Flink's length prefix and framing), for the default target
    unit: str
    default_rate: float | None = None  # a fixed default target instead of the saturating rate


@dataclass(frozen=True)
class JobSpec:
    key: str
    title: str
    entry_class: str
    job_name: str
    sources: tuple[Source, ...]
    spread: bool  # True: one source parallel over every pinned Pi; False: one Pi per source (1 subtask each)

    def default_rates(self) -> dict[str, float]:
        return {s.vertex: s.default_rate or round(saturating_rate(s.record_bytes), -1) for s in self.sources}


JOBS = {
    "iot": JobSpec(
        "iot",
        "IoT job",
        IOT_SENSOR_JOB,
        "iot-sensors",
        # the IoT job's historical target (1500/s per subtask: ~185 B serialized JSON -> 2.2 Mbit/s per link)
        (Source("Source: Sensors", "Parse", "--rate", "--parallelism", 185, "readings/s", 1500.0),),
        spread=True,
    ),
    "nexmark": JobSpec(
        "nexmark",
        "Nexmark bids job",
        NEXMARK_BIDS_JOB,
        "nexmark-bids",
        (Source("Source: Bids", "Parse Bids", "--rate", "--parallelism", 172, "bids/s"),),
        spread=True,
    ),
    "branching": JobSpec(
        "branching",
        "Branching job",
        BRANCHING_JOB,
        "cameras-meters",
        (
            Source("Source: Cameras", "Detect Objects", "--camera-rate", "--camera-parallelism", 850, "frames/s"),
            Source("Source: Meters", "Parse Meters", "--meter-rate", "--meter-parallelism", 100, "meter readings/s"),
        ),
        spread=False,
    ),
}


def cli(*args: str) -> str:
    proc = subprocess.run([PLACEMENT, *args], check=False, capture_output=True, text=True, cwd=ROOT, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"placement {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


def plan_to(out: str | Path, inventory: str | Path, *profiles: str | Path, **options):
    """``placement plan --inventory INV --profile P… --out OUT`` with ``options`` (the fields of
    :class:`placement.planning.PlanRequest`) through :func:`placement.planning.plan`, its plan directory written: the
    outcome. Bad input or nothing fitting ends the benchmark, as a failed ``placement plan`` did; its input warnings are
    not said (``--quiet``)."""
    from placement.errors import PlacementError
    from placement.planning import PlanRequest, plan, write_outcome

    what = f"placement plan --profile {' --profile '.join(map(str, profiles))}"
    try:
        outcome = plan(
            PlanRequest(
                inventory=str(inventory),
                profiles=tuple(map(str, profiles)),
                out_dir=str(out),
                say_warning=lambda _warning: None,
                **options,
            )
        )
    except PlacementError as exc:
        sys.exit(f"{what} failed: {exc}")
    if outcome.result.status == "infeasible" or outcome.result.assignment is None:
        sys.exit(f"{what} failed: nothing fits: {outcome.result.reason}")
    write_outcome(outcome, out)
    return outcome


def mapping_of(problem, result) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for s in sorted(problem.subtasks, key=lambda s: (s.vertex_name, s.index)):
        out.setdefault(s.vertex_name, []).append(result.assignment[s.key])
    return out


def job_inventory(running_inv: str, spec: JobSpec, out: Path, target_args=None) -> tuple[str, dict[str, int]]:
    """Write a copy of the running lab inventory whose ``pins.sources`` name ``spec``'s sources and whose job is
    ``spec``'s at the target rates (what ``placement apply`` resubmits); returns its path and each source's parallelism
    (a list pin gives one subtask per listed host). ``target_args(parallelism)`` gives the job's arguments.

    Pins the shipped inventory already has for a source are kept; a missing one becomes every edge host (a spread
    source) or the i-th edge host (the i-th source of a job with one Pi per source).
    """
    doc = yaml.safe_load(Path(running_inv).read_text())
    edges = [h["name"] for h in doc["hosts"] if h.get("role") == "edge"]
    if not edges:
        sys.exit(f"{running_inv}: no edge host to pin the sources on")
    existing = (doc.get("pins") or {}).get("sources") or {}
    pins: dict[str, str | list[str]] = {}
    parallelism: dict[str, int] = {}
    for i, s in enumerate(spec.sources):
        hosts = existing.get(s.vertex)
        if hosts is None:
            hosts = list(edges) if spec.spread else edges[i % len(edges)]
        pins[s.vertex] = hosts
        parallelism[s.vertex] = len(hosts) if isinstance(hosts, list) else 1
    doc.setdefault("pins", {})
    doc["pins"] = {**(doc["pins"] or {}), "sources": pins}  # only this job's sources: no "pins name no vertex" warnings
    doc["job"] = {
        **(doc.get("job") or {}),
        "name": spec.job_name,
        "entry_class": spec.entry_class,
        "program_args": list(target_args(parallelism)) if target_args else [],
    }
    out.write_text(
        f"# written by benchmarks/lab_placements.py: {running_inv} with the {spec.key} job's source pins\n"
        + yaml.safe_dump(doc, sort_keys=False)
    )
    return str(out), parallelism


def job_args(spec: JobSpec, rates: dict[str, float], parallelism: dict[str, int]) -> list[str]:
    args = ["--job-name", spec.job_name]
    for s in spec.sources:
        args += [s.rate_arg, f"{rates[s.vertex]:g}", s.parallelism_arg, str(parallelism[s.vertex])]
    return args


def target_rates(spec: JobSpec, rate: float | None) -> dict[str, float]:
    rates = spec.default_rates()
    if rate is not None:
        first = spec.sources[0].vertex
        rates = {v: r * rate / rates[first] for v, r in rates.items()}
    return rates


ENDED = "(ended threads)"  # thread_cores' name for the CPU of threads too short-lived to be listed


def thread_cores(history: Path, since_ms: int | None = None, until_ms: int | None = None):
    """TaskManager -> thread name -> CPU-time cores (of this machine) its threads used over a recorded collection
    (``metrics collect --inventory``'s ``_threads/`` parts of the newest run), between ``since_ms`` and ``until_ms``
    when given, with the CPU of threads that ended inside the window as :data:`ENDED` where the whole process was
    recorded; a TaskManager with fewer than two rounds there is left out."""
    runs = find_manifests(history)
    if not runs:
        return {}
    run, m = runs[-1]
    df = read_thread_cpu(run, m).to_pandas()
    if since_ms is not None:
        df = df[(df["ts_ms"] >= since_ms) & (df["ts_ms"] <= until_ms)]
    out = {}
    for tm, g in df.groupby("taskmanager_id"):
        if g["ts_ms"].nunique() < 2:
            continue
        seconds = (g["ts_ms"].max() - g["ts_ms"].min()) / 1000
        used = g.groupby(["tid", "thread"])["cpu_time_ns"].agg(lambda c: c.iloc[-1] - c.iloc[0]).groupby("thread").sum()
        if PROCESS_ROW in used.index:  # the whole process: what it used beyond the threads listed, they ended
            process = used.pop(PROCESS_ROW)
            used[ENDED] = max(process - used.sum(), 0)
        out[str(tm)] = (used / 1e9 / seconds).sort_values(ascending=False)
    return out


def by_index(rest: FlinkRest, job_id: str) -> dict[str, list[str]]:
    return {
        v.name: [s.taskmanager_id for s in sorted(rest.subtasks(job_id, v.id), key=lambda s: s.index)]
        for v in rest.job(job_id).vertices
    }


def apply_plan(
    rest: FlinkRest,
    jar: str,
    spec: JobSpec,
    args: list[str],
    plan_dir: Path,
    inventory: str,
    mapping: dict[str, list[str]],
    console: Console,
) -> tuple[str, bool, float | None]:
    """Custom mode: the job submitted unmodified, then ``placement apply`` of the plan directory; returns the placed
    job, whether apply's verify was green AND every subtask index runs where the plan says (read from REST again),
    and apply's wall time."""
    job = chain.submit(rest, jar, spec.entry_class, args)
    started = time.monotonic()
    proc = subprocess.run(
        [PLACEMENT, "apply", str(plan_dir), "--inventory", inventory, "--job", job, "--settle", "5"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    seconds = time.monotonic() - started
    placed = next((j.id for j in rest.running_jobs() if j.name == spec.job_name), job)
    green = proc.returncode == 0 and "WRONG" not in proc.stdout
    if not green:
        console.print(f"[red]apply failed[/] ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return placed, green and by_index(rest, placed) == mapping, seconds


def profile_unpinned(spec: JobSpec, args: list[str], inventory: str, work: Path, state: dict, engine: str) -> str:
    """The job unpinned with ``args``, 60 s for Flink's rate meters, ``metrics collect`` 60 s (with the TaskManagers'
    threads, over the lab's SSH), ``profile``; the job
    is cancelled after. Returns the profile's path."""
    rest = FlinkRest(state["rest_url"])
    job = chain.submit(rest, state["jar"], spec.entry_class, args)
    time.sleep(chain.METER_SETTLE_S)
    metrics_dir = work / f"bench-metrics-{spec.key}"
    shutil.rmtree(metrics_dir, ignore_errors=True)
    cli(
        "metrics",
        "collect",
        "--rest",
        state["rest_url"],
        "--job",
        job,
        "--duration",
        "60",
        "--interval",
        "2",
        "--out",
        str(metrics_dir),
        "--inventory",
        inventory,
        "--quiet",
    )  # with each TaskManager's threads
    profile_path = str(work / f"bench-profile-{spec.key}.json")
    cli("profile", str(metrics_dir), "--out", profile_path, "--inventory", inventory, "--engine", engine, "--quiet")
    chain.cancel_all(rest)
    return profile_path


def predicted_latency(problem, result) -> dict[tuple[str, str], dict[str, float]]:
    """(source name, sink name) -> the plan's predicted latency of the slowest path between them, ms: ``expected_ms``
    (the queue as the M/G/1 mean of the link's messages: what the measured p50 is held to) and ``upper_ms`` (the
    full-buffer queue bound: plan.json's ``latency_ms``, the ILP's figure)."""
    names = problem.vertex_names
    out: dict[tuple[str, str], dict[str, float]] = {}
    for path in result.cost.paths:
        pair = out.setdefault(
            (names[path.vertices[0]], names[path.vertices[-1]]), {"expected_ms": 0.0, "upper_ms": 0.0}
        )
        pair["expected_ms"] = max(pair["expected_ms"], path.expected_ms)
        pair["upper_ms"] = max(pair["upper_ms"], path.latency_ms)
    return out


def latency_rows(predicted: dict[tuple[str, str], dict[str, float]], job) -> list[dict]:
    """Per source → sink: the predicted ms beside the measured markers (per source) and the sink's event time (over
    every source it reads) p50/p99 from ``lab measure``."""
    markers = {(m.source, m.sink): m for m in job.latency if m.kind == "markers"}
    event = {m.sink: m for m in job.latency if m.kind == "event-time"}
    rows = []
    for (source, sink), ms in sorted(predicted.items()):
        mk, ev = markers.get((source, sink)), event.get(sink)
        rows.append(
            {
                "source": source,
                "sink": sink,
                **ms,
                "markers_p50": mk.p50_ms if mk else None,
                "markers_p99": mk.p99_ms if mk else None,
                "event_p50": ev.p50_ms if ev else None,
                "event_p99": ev.p99_ms if ev else None,
            }
        )
    return rows


def run_job(spec: JobSpec, args, work: Path, state: dict, console: Console) -> tuple[list[dict], dict]:
    """Profile, plan and measure one job on the lab that is up; returns the table rows and the run's parameters."""
    rest, jar = FlinkRest(state["rest_url"]), state["jar"]
    chain.cancel_all(rest)
    rates = target_rates(spec, args.rate)
    lab_inv, parallelism = job_inventory(
        state["lab_inventory"], spec, work / f"{spec.key}-inventory.yaml", lambda p: job_args(spec, rates, p)
    )
    first = spec.sources[0].vertex
    profile_first = args.profile_rate if args.profile_rate is not None else rates[first] / PROFILE_DIVISOR
    scale = rates[first] / profile_first
    profile_rates = {v: r / scale for v, r in rates.items()}
    console.print(
        f"[bold]{spec.title}[/]: sources {parallelism}, target "
        + ", ".join(f"{rates[s.vertex]:g} {s.unit}" for s in spec.sources)
        + f" per subtask (rate scale {scale:g}); inventory {lab_inv}"
    )

    profile_path = args.profile
    if profile_path is None:
        console.print(
            "profiling: unpinned at " + ", ".join(f"{profile_rates[s.vertex]:g} {s.unit}" for s in spec.sources)
        )
        profile_path = profile_unpinned(
            spec, job_args(spec, profile_rates, parallelism), lab_inv, work, state, args.profile_engine
        )

    profile = load_profile(profile_path)
    for s in spec.sources:
        v = next((v for v in profile.vertices if v.name == s.vertex), None)
        if v is not None:
            console.print(
                f"  profile: {s.vertex} {v.bytes_per_record_out:.0f} B/record out (target assumed {s.record_bytes:g} B)"
            )
    inv = load_inventory(lab_inv)
    problem = build_problem(
        inv, profile, PlanOptions(rate_scale=scale, placement_mode=args.mode), inventory_source=lab_inv
    )
    results = {
        "all-on-server": all_on_server(problem),
        "greedy": greedy(problem),
        "ilp": solve(problem, SolverOptions()),
    }
    rows = []
    for name, result in results.items():
        if result.assignment is None:
            rows.append({"strategy": name, "status": result.status})
            continue
        mapping = mapping_of(problem, result)
        predicted = {link.host: link.mbit for link in result.cost.links}
        predicted_cores = {h.host: h.predicted_cores for h in result.cost.hosts}
        console.print(f"{name}: {json.dumps({k: sorted(set(v)) for k, v in mapping.items()})}")
        if args.mode == "custom":
            plan_dir = work / f"plan-{spec.key}-{name}"
            write_lab_plan(
                plan_dir,
                problem,
                result,
                job=spec.job_name,
                inventory=inv,
                inventory_path=lab_inv,
                profile=profile,
                profile_path=profile_path,
            )
        latency = predicted_latency(problem, result)
        runs = []
        for k in range(args.repeats):  # a fresh job each time: its output flushers start at new phases
            if args.repeats > 1:
                console.print(f"{name}: run {k + 1}/{args.repeats}")
            if args.mode == "custom":
                job, placed_ok, applied_s = apply_plan(
                    rest, jar, spec, job_args(spec, rates, parallelism), plan_dir, lab_inv, mapping, console
                )
            else:
                job = chain.submit(
                    rest, jar, spec.entry_class, [*job_args(spec, rates, parallelism), *chain.mapping_args(mapping)]
                )
                placed_ok, applied_s = rest.placement_counts(job) == chain.planned_counts(mapping), None
            time.sleep(args.settle)
            m = measure(work, args.window)
            runs.append(
                run_figures(
                    spec,
                    rates,
                    parallelism,
                    m,
                    predicted,
                    predicted_cores,
                    latency,
                    placed=placed_ok,
                    apply_s=applied_s,
                )
            )
            chain.cancel_all(rest)
        rows.append({"strategy": name, "status": result.status, "mapping": mapping, **merge_runs(runs)})
    return rows, {
        "rates": rates,
        "profile_rates": profile_rates,
        "parallelism": parallelism,
        "scale": scale,
        "repeats": args.repeats,
    }


def run_figures(
    spec: JobSpec,
    rates: dict[str, float],
    parallelism: dict[str, int],
    m,
    predicted: dict[str, float],
    predicted_cores: dict[str, float],
    latency: dict[tuple[str, str], dict[str, float]],
    *,
    placed: bool,
    apply_s: float | None,
) -> dict:
    """One run of a placement: what ``lab measure`` (``m``) read beside the plan's predictions."""
    j = m.jobs[0]
    sources = [v for v in j.vertices if v.name.startswith("Source: ")]
    target = sum(rates[s.vertex] * parallelism[s.vertex] for s in spec.sources)
    # A saturated uplink can starve an edge TaskManager's metric dump (it queues behind the data), so its
    # source reads 0: per source, take the larger of what it reports and what the next stage received.
    by_name = {v.name: v for v in j.vertices}
    throughput = sum(
        max(by_name[s.vertex].records_out_per_s, by_name[s.next_vertex].records_in_per_s)
        for s in spec.sources
        if s.vertex in by_name and s.next_vertex in by_name
    )
    return {
        "placed": placed,
        "apply_s": apply_s,
        "links": {lk.host: (predicted.get(lk.host, 0.0), lk.data_mbit, lk.mbit) for lk in m.links},
        # host cores: the plan's predicted_cores (baseline + subtasks) vs the host's TaskManager JVM over the same
        # window (issue 23)
        "cpu": {c.host: (predicted_cores.get(c.host, 0.0), c.host_cores) for c in m.cpu if c.host_cores is not None},
        "wan_wire": sum(lk.mbit for lk in m.links),
        "wan_data": sum(lk.data_mbit for lk in m.links),
        "wan_predicted": sum(predicted.values()),
        "throughput": throughput,
        "target": target,
        "source_bp": sum(v.backpressured_ms_per_s for v in sources) / len(sources) / 1000,
        "sources_reporting": f"{sum(v.reporting for v in sources)}/{sum(v.parallelism for v in sources)}",
        "latency": latency_rows(latency, j),
    }


def spread(values: list[float | None]) -> dict:
    """The runs' figures of one quantity (None: not measured in that run): mean, sample standard deviation (0 for one
    figure), min, max, and how many runs measured it."""
    xs = [v for v in values if v is not None]
    if not xs:
        return {"mean": None, "sd": None, "min": None, "max": None, "n": 0}
    return {
        "mean": statistics.fmean(xs),
        "sd": statistics.stdev(xs) if len(xs) > 1 else 0.0,
        "min": min(xs),
        "max": max(xs),
        "n": len(xs),
    }


def _mean_tuples(dicts: list[dict[str, tuple[float, ...]]]) -> dict[str, tuple[float, ...]]:
    """Per key, the element-wise mean of its tuples over the dicts that have it."""
    keys = sorted({k for d in dicts for k in d})
    return {k: tuple(statistics.fmean(col) for col in zip(*(d[k] for d in dicts if k in d))) for k in keys}


MEASURED = ("markers_p50", "markers_p99", "event_p50", "event_p99")


def merge_latency(runs: list[list[dict]]) -> list[dict]:
    """Per source → sink over the runs (each a :func:`latency_rows` list): the predictions (the same every run), each
    measured figure's mean under its own key — what the check and the table read — and its spread beside it
    (``<figure>_spread``: :func:`spread`), with the number of runs."""
    pairs: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        for lat in run:
            pairs.setdefault((lat["source"], lat["sink"]), []).append(lat)
    out = []
    for (source, sink), lats in sorted(pairs.items()):
        row = {
            "source": source,
            "sink": sink,
            "expected_ms": lats[0]["expected_ms"],
            "upper_ms": lats[0]["upper_ms"],
            "runs": len(runs),
        }
        for key in MEASURED:
            figures = spread([lat[key] for lat in lats])
            row[key] = figures["mean"]
            row[f"{key}_spread"] = figures
        out.append(row)
    return out


def merge_runs(runs: list[dict]) -> dict:
    """One row from the runs of one placement (each a :func:`run_figures` dict, kept under ``runs``): placed as
    planned only if every run was; the rate held only if every run held it (the lowest throughput, the highest source
    backpressure, with that run's sources reporting); Mbit/s and CPU the means; latency :func:`merge_latency`."""
    worst = min(runs, key=lambda r: (r["throughput"] / r["target"] if r["target"] else 0.0, -r["source_bp"]))
    applied = [r["apply_s"] for r in runs if r["apply_s"] is not None]
    return {
        "placed": all(r["placed"] for r in runs),
        "apply_s": statistics.fmean(applied) if applied else None,
        "links": _mean_tuples([r["links"] for r in runs]),
        "cpu": _mean_tuples([r["cpu"] for r in runs]),
        **{k: statistics.fmean(r[k] for r in runs) for k in ("wan_wire", "wan_data", "wan_predicted")},
        "throughput": min(r["throughput"] for r in runs),
        "target": runs[0]["target"],
        "source_bp": max(r["source_bp"] for r in runs),
        "sources_reporting": worst["sources_reporting"],
        "latency": merge_latency([r["latency"] for r in runs]),
        "runs": runs,
    }


def print_table(console: Console, spec: JobSpec, inventory: str, params: dict, rows: list[dict]) -> None:
    hosts = sorted({h for r in rows for h in r.get("links", {})})
    console.width = max(console.width, 160 + 36 * len(hosts))  # three uplinks no longer wrap the cells
    target = ", ".join(f"{params['rates'][s.vertex]:g} {s.unit}" for s in spec.sources)
    per = "per source subtask" if len(spec.sources) == 1 else "per subtask"
    repeats = params.get("repeats", 1)
    runs = f" (Mbit/s and CPU: mean of {repeats} runs; throughput and backpressure: the worst)" if repeats > 1 else ""
    table = Table(title=f"{spec.title} on {Path(inventory).name}: target {target} {per}{runs}")
    cols = ["strategy", "placed as planned", "apply s"]
    for h in hosts:
        cols += [f"{h} pred", f"{h} data", f"{h} wire"]
    cols += [
        "WAN wire total",
        "vs all-on-server",
        "data/pred",
        "throughput / target",
        "source backpressure",
        "sources reporting",
    ]
    for c in cols:
        table.add_column(c, justify="left" if c == "strategy" else "right")
    base = next((r for r in rows if r["strategy"] == "all-on-server" and "wan_wire" in r), None)
    for r in rows:
        if "wan_wire" not in r:
            table.add_row(r["strategy"], r["status"])
            continue
        cells = [r["strategy"], "yes" if r["placed"] else "NO", f"{r['apply_s']:.0f}" if r.get("apply_s") else "-"]
        for h in hosts:
            p, d, w = r["links"].get(h, (0, 0, 0))
            cells += [f"{p:.3f}", f"{d:.3f}", f"{w:.3f}"]
        rel = f"{r['wan_wire'] / base['wan_wire'] - 1:+.0%}" if base else "-"
        ratio = f"{r['wan_data'] / r['wan_predicted']:.2f}" if r["wan_predicted"] else "-"
        cells += [
            f"{r['wan_wire']:.3f}",
            rel,
            ratio,
            f"{r['throughput']:,.0f} / {r['target']:,.0f}",
            f"{r['source_bp']:.0%}",
            r["sources_reporting"],
        ]
        table.add_row(*cells)
    console.print(table)
    print_cpu_table(console, spec, rows)
    print_latency_table(console, spec, rows)


def print_cpu_table(console: Console, spec: JobSpec, rows: list[dict]) -> None:
    """Predicted vs measured CPU per host (in the host's own cores), as the links are above."""
    hosts = sorted({h for r in rows for h in r.get("cpu", {})})
    if not hosts:
        return
    table = Table(title=f"{spec.title}: CPU per host in its own cores, predicted (plan) / measured (TaskManager JVM)")
    table.add_column("strategy")
    for h in hosts:
        table.add_column(f"{h} pred / meas", justify="right")
        table.add_column(f"{h} error", justify="right")
    for r in rows:
        if "cpu" not in r:
            continue
        cells = [r["strategy"]]
        for h in hosts:
            pred, meas = r["cpu"].get(h, (0.0, 0.0))
            cells += [f"{pred:.3f} / {meas:.3f}", f"{pred / meas - 1:+.0%}" if meas > 0 else "-"]
        table.add_row(*cells)
    console.print(table)


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def _measured(lat: dict, key: str) -> str:
    """A measured figure: its mean over the runs, ± their sample standard deviation when there were several."""
    figures = lat.get(f"{key}_spread")
    if not figures or figures["n"] < 2:
        return _ms(lat[key])
    return f"{figures['mean']:.0f} ± {figures['sd']:.0f}"


def print_latency_table(console: Console, spec: JobSpec, rows: list[dict]) -> None:
    """Predicted vs measured latency per source → sink: markers (Flink's latency tracking) and the sink's event time,
    each the mean over the runs ± their spread."""
    if not any(r.get("latency") for r in rows):
        return
    runs = max((lat["runs"] for r in rows for lat in r.get("latency", [])), default=1)
    over = f", mean ± sd of {runs} runs" if runs > 1 else ""
    table = Table(
        title=f"{spec.title}: latency per source → sink, ms — predicted (plan: expected, upper bound) / "
        f"measured p50, p99{over}"
    )
    for c in (
        "strategy",
        "source → sink",
        "expected",
        "upper",
        "markers p50",
        "markers p99",
        "event-time p50",
        "event-time p99",
        "expected / markers p50",
    ):
        table.add_column(c, justify="left" if c in ("strategy", "source → sink") else "right")
    for r in rows:
        for lat in r.get("latency", []):
            ratio = f"{lat['expected_ms'] / lat['markers_p50'] - 1:+.0%}" if lat["markers_p50"] else "-"
            table.add_row(
                r["strategy"] + ("" if holds_rate(r) else " (saturated)"),
                f"{lat['source']} → {lat['sink']}",
                _ms(lat["expected_ms"]),
                _ms(lat["upper_ms"]),
                *(_measured(lat, k) for k in MEASURED),
                ratio,
            )
    console.print(table)


def latency_misses(row: dict) -> list[str]:
    """Paths of a placement that holds its rate whose expected latency is off the markers' p50 (the mean over the
    runs) by more than the tolerance, or that miss a measured figure in a run (latency tracking is on in the lab: a
    missing figure is a failure)."""
    out = []
    for lat in row.get("latency", []):
        measured, runs = lat["markers_p50"], lat.get("runs", 1)
        got = lat.get("markers_p50_spread", {}).get("n", 1 if measured else 0)
        if not measured or got < runs:
            out.append(
                f"{lat['source']} → {lat['sink']}: no latency markers measured"
                + (f" in {runs - got} of {runs} runs" if runs > 1 else "")
            )
        elif abs(lat["expected_ms"] / measured - 1) > LATENCY_TOLERANCE:
            over = f" (mean of {runs} runs, sd {lat['markers_p50_spread']['sd']:.0f})" if runs > 1 else ""
            out.append(
                f"{lat['source']} → {lat['sink']} expected {lat['expected_ms']:.0f} ms vs markers p50 "
                f"{measured:.0f}{over} ({lat['expected_ms'] / measured - 1:+.0%})"
            )
    return out


def placement_latency(rows: list[dict], row: dict) -> dict:
    """``row``'s latency merged over the runs of every row that ran the same placement and held its rate (``row``
    among them): one placement, one prediction — greedy and the ILP often choose the same one, and every start draws
    its flushers' phases anew, so their runs together average more of them."""
    same = [r for r in rows if "runs" in r and r.get("mapping") == row.get("mapping") and holds_rate(r)]
    return {"latency": merge_latency([run["latency"] for r in same for run in r["runs"]])}


def worst_p99(row: dict) -> float | None:
    values = [lat["markers_p99"] for lat in row.get("latency", []) if lat["markers_p99"] is not None]
    return max(values, default=None)


def holds_rate(row: dict) -> bool:
    return row["throughput"] >= 0.95 * row["target"] and row["source_bp"] <= 0.10


def data_misses(row: dict) -> list[str]:
    """Uplinks whose measured job data is off the plan's prediction by more than DATA_TOLERANCE."""
    out = []
    for host, (pred, data, _wire) in sorted(row["links"].items()):
        allowed = max(DATA_TOLERANCE * pred, DATA_FLOOR_MBIT)
        if abs(data - pred) > allowed:
            out.append(
                f"{host} {data:.3f} vs predicted {pred:.3f} Mbit/s ({data / pred - 1:+.0%})"
                if pred
                else f"{host} {data:.3f} vs predicted 0"
            )
    return out


def failures_of(rows: list[dict]) -> list[str]:
    base = next((r for r in rows if r["strategy"] == "all-on-server" and "wan_wire" in r), None)
    ilp = next((r for r in rows if r["strategy"] == "ilp" and "wan_wire" in r), None)
    failures = []
    for r in rows:
        if "wan_wire" in r and not r["placed"]:
            failures.append(f"{r['strategy']} did not run as planned (verify not green / subtasks elsewhere)")
        if "wan_wire" in r and holds_rate(r) and data_misses(r):
            failures.append(f"{r['strategy']}: job data off the prediction: {'; '.join(data_misses(r))}")
        latency_off = latency_misses(placement_latency(rows, r)) if "wan_wire" in r and holds_rate(r) else []
        if latency_off:
            failures.append(f"{r['strategy']}: latency off the prediction: {'; '.join(latency_off)}")
    if not (ilp and base):
        failures.append("ILP or all-on-server did not run")
    else:
        if ilp["wan_wire"] > 0.5 * base["wan_wire"]:
            failures.append(f"ILP WAN {ilp['wan_wire']:.3f} is not <= 50 % of all-on-server's {base['wan_wire']:.3f}")
        if not holds_rate(ilp):
            failures.append(
                f"ILP does not hold the target rate ({ilp['throughput']:.0f} of {ilp['target']:.0f}, "
                f"sources backpressured {ilp['source_bp']:.0%})"
            )
        if holds_rate(base):
            failures.append("all-on-server did not backpressure: raise --rate")
        if not holds_rate(base) and holds_rate(ilp):  # all-on-server saturates an uplink: its queue is the difference
            ilp_p99, base_p99 = worst_p99(ilp), worst_p99(base)
            if ilp_p99 is None or base_p99 is None or ilp_p99 >= base_p99:
                failures.append(f"ILP's worst p99 {ilp_p99} ms is not below saturated all-on-server's {base_p99} ms")
        greedy_row = next((r for r in rows if r["strategy"] == "greedy" and "mapping" in r), None)
        if greedy_row and base.get("mapping") == ilp.get("mapping") == greedy_row.get("mapping"):
            failures.append("all three strategies chose the same placement: nothing to compare")
    return failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--job", default="iot", help="iot, nexmark, branching, all, or a comma-separated list")
    ap.add_argument("--inventory", default=str(ROOT / "inventory" / "lab.yaml"))
    ap.add_argument("--workdir", default="/tmp/placement-lab-bench")
    ap.add_argument(
        "--rate",
        type=float,
        help="target records/s per subtask of the job's first source "
        "(default per job: iot 1500, nexmark 1740, branching 350 frames/s with meters at 3000/s)",
    )
    ap.add_argument(
        "--profile-rate", type=float, help="that source's rate in the unpinned profiling run (default target / 3)"
    )
    ap.add_argument("--profile", help="reuse this profile instead of profiling (one job only)")
    ap.add_argument(
        "--profile-engine", choices=("spark", "pandas"), default="spark", help="`placement profile --engine`"
    )
    ap.add_argument("--window", type=float, default=30.0, help="seconds of each WAN window")
    ap.add_argument("--settle", type=float, default=60.0, help="seconds after each start before measuring")
    ap.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="runs of each placement, each a fresh job (new flusher "
        "phases: one run's latency scatters by tens of ms); latency is the mean over them ± their spread",
    )
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    ap.add_argument(
        "--mode",
        choices=("custom", "vanilla"),
        default="custom",
        help="custom: `placement apply` places the unmodified job (default); vanilla: --placement mapping",
    )
    ap.add_argument("--flink-version", help="run the lab on this Flink release (`lab up --flink-version`, e.g. 1.20.5)")
    args = ap.parse_args()
    keys = list(JOBS) if args.job == "all" else [k.strip() for k in args.job.split(",") if k.strip()]
    unknown = [k for k in keys if k not in JOBS]
    if unknown or not keys:
        ap.error(f"--job: unknown {unknown or args.job!r} (iot, nexmark, branching, all)")
    if args.profile and len(keys) > 1:
        ap.error("--profile needs a single --job")
    if args.repeats < 1:
        ap.error("--repeats: at least 1")
    work = Path(args.workdir)
    console = Console(width=220)
    done: list[tuple[JobSpec, dict, list[dict]]] = []
    try:
        version = ["--flink-version", args.flink_version] if args.flink_version else []
        console.print(
            cli(
                "lab", "up", "--inventory", args.inventory, "--workdir", str(work), "--mode", args.mode, *version
            ).strip()
        )
        state = json.loads((work / "lab.json").read_text())
        for key in keys:
            rows, params = run_job(JOBS[key], args, work, state, console)
            done.append((JOBS[key], params, rows))
    finally:
        if not args.keep:
            subprocess.run(
                [PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
            )

    all_failures = []
    inv_stem = Path(args.inventory).stem
    for spec, params, rows in done:
        print_table(console, spec, args.inventory, params, rows)
        suffix = (
            ("" if spec.key == "iot" else f"-{spec.key}")
            + ("" if inv_stem == "lab" else f"-{inv_stem}")
            + (f"-flink-{args.flink_version}" if args.flink_version else "")
        )
        (work.parent / f"lab_placements{suffix}.json").write_text(
            json.dumps(
                {"job": spec.key, "inventory": args.inventory, **params, "rows": rows} if suffix else rows,
                indent=2,
                default=str,
            )
        )
        for f in failures_of(rows):
            all_failures.append(f)
            console.print(f"[red]FAIL[/] {spec.key}: {f}")
    console.print(
        "Mbit/s per uplink: pred = plan's prediction, data = TCP payload of the edge TaskManager's data "
        "connections, wire = all bytes the edge namespace sent (headers, RPC)"
    )
    if len(done) < len(keys):
        console.print(f"[red]FAIL[/] only {len(done)} of {len(keys)} jobs ran")
    if done and not all_failures and len(done) == len(keys):
        console.print(
            f"[green]PASS[/] ({args.mode} mode): every placement as planned, ILP WAN <= 50 % of all-on-server, "
            "ILP holds the rate where all-on-server backpressures, job data per uplink within ±15 % of the "
            "prediction and expected path latency within ±25 % of the markers' p50 wherever the rate is held, "
            "the ILP's p99 below a saturated all-on-server's"
        )
    sys.exit(1 if all_failures or len(done) < len(keys) else 0)


if __name__ == "__main__":
    main()
