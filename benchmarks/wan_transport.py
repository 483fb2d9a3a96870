"""The plan's transport figures against the real lab: old model, new model and the uplink measured (issue 45).

    .venv/bin/python benchmarks/wan_transport.py [--wan-profile satellite,lte] [--job iot] [--profile P]
                                                 [--steps 0.7,0.85,0.95,1.05,1.15,1.3] [--step-s 60]
                                                 [--profile-rate R] [--fast-edge SPEED] [--keep]

Per WAN profile: ``lab up --wan-profile P`` (real Flink, the kernel's TCP through the user-space delay line) -> a
copy of the running lab inventory (whose links carry the profile's bandwidth, delay and loss) with the job's source
pins and every other vertex pinned to the server -> the job profiled unpinned at a low rate (once: the later WAN
profiles reuse it) -> ``plan --max-rate`` with the new model, and with the old one (the same inventory with the links'
loss at 0: an uplink's usable figure is then its bandwidth x headroom) -> the new plan at the first step's rate put
into effect (custom mode: the job submitted unmodified, ``placement apply``) -> the job driven by its rate schedule
(``--rate-schedule``; one clock across apply's resubmission): ``WARM_UP_S`` at the first step's rate, then steps of
the new model's capacity, the last step the old model's capacity (at most ``--old-cap`` x the new one) ->
per step ``lab measure`` over ``--window`` s: job data per uplink, the records/s that crossed (the server's first
operator's ``numRecordsIn`` counter) and the sources' back-pressure -> one table per profile -> ``lab down``.

Why the operators sit on the server: the lab's Pi is 0.3 of a core. With the filter on the Pi its CPU, not the
uplink, runs out first; with only the sources there every record crosses, so the uplink is what the steps find.
On LTE one flow carries ~9.3 Mbit/s, ~6,000 raw readings/s per Pi, about twice what the plan lets a 0.3-core Pi's
source send: ``--fast-edge 1.0`` runs the lab with one edge host of a whole core instead (as
``benchmarks/capacity_proof.py``'s uplink case does).

The steps are multiples of the new model's *break*: its capacity with the policy's margins off (``wan_headroom`` and
``cpu_utilisation_target`` 1), the rate at which the model says the placement stops holding; the plan's capacity
(with the margins) is printed beside it. Baseline in the same run: the old model's capacity, and its rate as the last
step. Targets per profile: the highest rate the uplinks carried in any step (records/s that crossed, per source
subtask: the schedule drives the placement past its break, and a step above it carries what the link takes) is
within ±15 % of the new model's break — the highest step that held (>= 95 % of its records carried; the sources'
back-pressure beside it) is shown too; the old model's rate does not hold where it promises more
than the new model; at the first step each uplink's job data is within ±15 % of the plan's prediction and the path
latency p50 (Flink's latency markers) within ±25 % of the plan's expected figure. Prints PASS or FAIL lines; exit 1
on FAIL.
"""

from __future__ import annotations

import argparse
import json
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
sys.path.insert(0, str(ROOT / "benchmarks"))

import itertools

from capacity_proof import profiled_rate
from lab_placements import (
    JOBS,
    PLACEMENT,
    JobSpec,
    apply_plan,
    cli,
    data_misses,
    job_inventory,
    latency_misses,
    latency_rows,
    mapping_of,
    plan_to,
    predicted_latency,
    profile_unpinned,
)

from placement.flink.rest import FlinkRest
from placement.lab import chain
from placement.lab.measure import measure

CAPACITY_TOLERANCE = 0.15  # the highest rate carried vs the new model's break (its capacity without headroom)
HOLDS_RATE = 0.95  # of the offered records carried over the window: Flink's few MB of buffers fill within seconds of
# an overload at these rates, so a step that does not hold falls short; the sources' back-pressure is reported beside
# it, not judged (a rate-limited source blocked for moments and catching up carries its whole rate)
PROFILE_RATE = 100.0  # records/s per source subtask while profiling (default): below every profile's one-flow goodput
WARM_UP_S = 60.0  # after apply, at the first step's rate and not measured: the restored job's backlog drains, the
# moved code compiles, and the new connections' windows open (slow start at a 600 ms round trip takes tens of seconds)
APPLY_BUDGET_S = 120.0  # the schedule's first step starts this long after the first submission: apply is done by then


@dataclass(frozen=True)
class Model:
    """One model's answer for a job on a WAN profile: its highest rate and each uplink's usable Mbit/s."""

    scale: float  # of the profiled rates
    rate: float  # records/s per source subtask
    binding: str  # what runs out first
    usable: dict[str, float]  # uplink host -> usable Mbit/s


def one_fast_edge(inventory: str, speed: float, out: Path) -> str:
    """``inventory`` with its first edge host alone, one core of ``speed`` server cores, carrying every source: at
    LTE's one-flow goodput the raw readings of one source subtask need more than a lab Pi's 0.3 of a core."""
    doc = yaml.safe_load(Path(inventory).read_text())
    edge = next(h for h in doc["hosts"] if h.get("role") == "edge")
    doc["hosts"] = [h for h in doc["hosts"] if h.get("role") != "edge" or h is edge]
    edge.update(cores=1, speed=speed, memory="2GiB")
    edge.pop("model", None)  # the speed is ours, not a Pi 4B's
    doc["links"] = [lk for lk in doc.get("links") or [] if lk["from"] == edge["name"]]
    doc["pins"]["sources"] = {v: [edge["name"]] for v in doc["pins"]["sources"]}
    out.write_text(f"# written by benchmarks/wan_transport.py: {inventory} with one edge host\n" + yaml.safe_dump(doc))
    return str(out)


def with_congestion_control(inventory: str, algorithm: str, buffers_per_channel: int | None = None) -> str:
    """``inventory`` (rewritten in place) with every edge host's ``congestion_control`` and, if given, the cluster's
    ``flink.network.buffers_per_channel`` (``lab up`` writes it into every TaskManager's config)."""
    doc = yaml.safe_load(Path(inventory).read_text())
    for h in doc["hosts"]:
        if h.get("role") == "edge":
            h["congestion_control"] = algorithm
    if buffers_per_channel is not None:
        doc.setdefault("flink", {}).setdefault("network", {})["buffers_per_channel"] = buffers_per_channel
    Path(inventory).write_text(yaml.safe_dump(doc, sort_keys=False))
    return inventory


def server_pinned(inventory: str, operators: list[str], out: Path) -> str:
    """A copy of ``inventory`` with every vertex in ``operators`` pinned to the server."""
    doc = yaml.safe_load(Path(inventory).read_text())
    server = next(h["name"] for h in doc["hosts"] if h.get("role") == "server")
    doc.setdefault("pins", {})["operators"] = {v: server for v in operators}
    out.write_text(
        f"# written by benchmarks/wan_transport.py: {inventory}, operators on the server\n" + yaml.safe_dump(doc)
    )
    return str(out)


def without_headroom(inventory: str, out: Path) -> str:
    """A copy of ``inventory`` whose policy uses a whole link and a whole host (``wan_headroom`` and
    ``cpu_utilisation_target`` 1): its capacity is the rate at which the model predicts the placement breaks, which is
    what a rate schedule finds; the plan's own capacity keeps the policy's margins below it."""
    doc = yaml.safe_load(Path(inventory).read_text())
    doc.setdefault("policy", {}).update(wan_headroom=1.0, cpu_utilisation_target=1.0)
    out.write_text(f"# written by benchmarks/wan_transport.py: {inventory} without headroom\n" + yaml.safe_dump(doc))
    return str(out)


def lossless(inventory: str, out: Path) -> str:
    """A copy of ``inventory`` with no loss on its links: the old model's view of them."""
    doc = yaml.safe_load(Path(inventory).read_text())
    for link in doc.get("links") or []:  # an explicit 0: a link's named profile would give it the profile's loss
        link["loss"] = 0.0
        link.pop("correlation", None)
    out.write_text(f"# written by benchmarks/wan_transport.py: {inventory} without loss\n" + yaml.safe_dump(doc))
    return str(out)


def model_of(outcome, profile_rate: float) -> Model:
    """The answer of ``plan --max-rate`` (its outcome) in records/s per source subtask, of a profile measured at
    ``profile_rate``."""
    capped = outcome.capped
    binding = capped.capacity.binding
    return Model(
        scale=capped.capacity.scale,
        rate=capped.capacity.scale * profile_rate,
        binding="; ".join(f"{b.kind} {b.resource}" for b in binding) or "-",
        usable={link.host: link.usable_mbit for link in outcome.result.cost.links},
    )


def schedule(rates: list[float], step_s: float, offset: float = 0.0) -> str:
    return ",".join(f"{offset + i * step_s:g}:{r:.0f}" for i, r in enumerate(rates))


def scheduled_args(spec: JobSpec, first: float, parallelism: dict[str, int], steps: str, start_ms: int) -> list[str]:
    source = spec.sources[0]
    return [
        "--job-name",
        spec.job_name,
        source.rate_arg,
        f"{first:g}",
        source.parallelism_arg,
        str(parallelism[source.vertex]),
        f"{source.rate_arg}-schedule",
        steps,
        "--rate-schedule-start-ms",
        str(start_ms),
    ]


def carried_records(rest: FlinkRest, job_id: str, spec: JobSpec) -> tuple[float, float]:
    """(monotonic time, records into the source's next vertex) as of a metric fetch landing: with that vertex on the
    server, what crossed the uplink (a saturated uplink can starve the edge TaskManager's own metric dump)."""
    vid = next(v.id for v in rest.job(job_id).vertices if v.name == spec.sources[0].next_vertex)
    at, values = rest.fetched_counters(job_id, [vid], "numRecordsIn", wait_s=3.0)
    return at, values[vid] or 0.0


def running_job(rest: FlinkRest, spec: JobSpec) -> str:
    return next(j.id for j in rest.running_jobs() if j.name == spec.job_name)


def measure_step(
    work: Path, rest: FlinkRest, spec: JobSpec, window: float, predicted: dict[str, float], latency: dict | None
) -> dict:
    """One step: job data per uplink over ``window`` s, the sources' records/s over the same span, and their
    back-pressure; with ``latency`` (the plan's predictions per source → sink) the markers' measured latency too."""
    job = running_job(rest, spec)
    before = carried_records(rest, job, spec)
    m = measure(work, window)
    after = carried_records(rest, job, spec)
    j = next(j for j in m.jobs if j.name == spec.job_name) if m.jobs else None
    sources = [v for v in j.vertices if v.name.startswith("Source: ")] if j else []
    return {
        "links": {lk.host: (predicted.get(lk.host, 0.0), lk.data_mbit, lk.mbit) for lk in m.links},
        "throughput": (after[1] - before[1]) / (after[0] - before[0]) if after[0] > before[0] else 0.0,
        "source_bp": sum(v.backpressured_ms_per_s for v in sources) / len(sources) / 1000 if sources else 1.0,
        "latency": latency_rows(latency, j) if latency is not None and j is not None else [],
    }


def holds(step: dict) -> bool:
    return step["throughput"] >= HOLDS_RATE * step["target"]


def run_profile(wan: str, spec: JobSpec, args, profile_path: str | None, console: Console) -> tuple[dict, str]:
    """One WAN profile on a lab that is up: the models' answers and the measured steps."""
    work = Path(args.workdir)
    state = json.loads((work / "lab.json").read_text())
    rest, jar = FlinkRest(state["rest_url"]), state["jar"]
    chain.cancel_all(rest)

    def profile_args(p):
        return [
            "--job-name",
            spec.job_name,
            "--rate",
            f"{args.profile_rate:g}",
            "--parallelism",
            str(p[spec.sources[0].vertex]),
        ]

    base_inv, parallelism = job_inventory(
        state["lab_inventory"], spec, work / f"{spec.key}-inventory.yaml", profile_args
    )
    if profile_path is None:
        console.print(f"profiling: unpinned at {args.profile_rate:g} {spec.sources[0].unit}")
        profile_path = profile_unpinned(spec, profile_args(parallelism), base_inv, work, state, args.profile_engine)
        kept = work.parent / f"wan_transport-profile-{spec.key}-p{parallelism[spec.sources[0].vertex]}.json"
        kept.write_text(Path(profile_path).read_text())
        profile_path = str(kept)
    vertices = [v["name"] for v in json.loads(Path(profile_path).read_text())["vertices"]]
    operators = [v for v in vertices if v not in {s.vertex for s in spec.sources}]
    new_inv = with_congestion_control(
        server_pinned(base_inv, operators, work / f"{spec.key}-pinned.yaml"),
        args.congestion_control,
        args.buffers_per_channel,
    )
    old_inv = lossless(new_inv, work / f"{spec.key}-lossless.yaml")
    measured_rate = profiled_rate(profile_path, spec.sources[0].vertex)
    new = model_of(plan_to(work / "plan-new-max", new_inv, profile_path, max_rate=True), measured_rate)
    old = model_of(plan_to(work / "plan-old-max", old_inv, profile_path, max_rate=True), measured_rate)
    brk = model_of(
        plan_to(
            work / "plan-break-max",
            without_headroom(new_inv, work / f"{spec.key}-break.yaml"),
            profile_path,
            max_rate=True,
        ),
        measured_rate,
    )
    console.print(
        f"{wan}: new model {new.rate:.0f}/s ({new.binding}), breaks at {brk.rate:.0f}/s ({brk.binding}); "
        f"old model {old.rate:.0f}/s ({old.binding})"
    )

    rates = list(args.rates) if args.rates else [f * brk.rate for f in args.steps]
    if not args.rates and old.rate > rates[-1] * 1.05:
        rates.append(min(old.rate, args.old_cap * new.rate))
    start_ms = int(time.time() * 1000 + APPLY_BUDGET_S * 1000)
    steps_spec = f"0:{rates[0]:.0f}," + schedule(rates, args.step_s, offset=WARM_UP_S)
    run_args = scheduled_args(spec, rates[0], parallelism, steps_spec, start_ms)
    # what apply resubmits is the planned inventory's job: the schedule and its clock in its arguments
    applied_inv, _ = job_inventory(new_inv, spec, work / f"{spec.key}-applied.yaml", lambda _p: run_args)
    if rates[0] > new.rate:  # a first step above the plan's margins: placed as the break's model places it
        applied_inv = without_headroom(applied_inv, work / f"{spec.key}-applied-break.yaml")
    # the first step's plan: the one applied, and its prediction per uplink is what the first step is held to
    check = plan_to(work / "plan-new", applied_inv, profile_path, rate_scale=rates[0] / measured_rate)
    predicted = {link.host: link.data_mbit for link in check.result.cost.links}
    problem, result = check.joint.jobs[0].problem, check.parts[check.names[0]]
    mapping = mapping_of(problem, result)
    latency = predicted_latency(problem, result)
    console.print(
        f"schedule {steps_spec} (per source subtask) from {APPLY_BUDGET_S:g} s after submission; "
        f"its first {WARM_UP_S:g} s a warm-up"
    )
    placed_job, placed, apply_s = apply_plan(
        rest, jar, spec, run_args, work / "plan-new", applied_inv, mapping, console
    )
    steps: list[dict] = []
    for i, rate in enumerate(rates if placed else []):  # a placement not in effect measures nothing
        begin = start_ms / 1000 + WARM_UP_S + i * args.step_s + args.settle
        if time.time() > begin:
            console.print(f"[red]step {i} ({rate:.0f}/s) began before apply was done[/]")
        time.sleep(max(0.0, begin - time.time()))
        step = measure_step(work, rest, spec, args.window, *((predicted, latency) if i == 0 else ({}, None)))
        step["rate"] = rate
        step["target"] = rate * parallelism[spec.sources[0].vertex]
        steps.append(step)
        console.print(
            f"  step {i}: {rate:.0f}/s per subtask: {step['throughput']:.0f} of {step['target']:.0f}/s, "
            f"back-pressure {step['source_bp']:.0%}, data "
            + ", ".join(f"{h} {d:.3f}" for h, (_p, d, _w) in sorted(step["links"].items()))
        )
    chain.cancel_all(rest)
    return {
        "wan": wan,
        "congestion_control": args.congestion_control,
        "job": spec.key,
        "new": new.__dict__,
        "break": brk.__dict__,
        "old": old.__dict__,
        "placed": placed,
        "apply_s": apply_s,
        "placed_job": placed_job,
        "mapping": mapping,
        "steps": steps,
        "old_step": not args.rates and len(rates) > len(args.steps),  # the last step is the old model's rate
        "buffers_per_channel": args.buffers_per_channel,
        "fixed_rates": bool(args.rates),
        "parallelism": parallelism,
    }, profile_path


def measured_capacity(result: dict) -> float | None:
    """The highest step whose rate was carried (>= HOLDS_RATE of it), per source subtask."""
    held = [s["rate"] for s in result["steps"] if holds(s)]
    return max(held) if held else None


def highest_carried(result: dict) -> float | None:
    """The most records/s that crossed the uplinks in any step, per source subtask: what the link carries at the
    plan's placement, driven past it by the schedule (issue 45's figure). At or above the highest held step; below
    the step that did not hold, since a step above capacity carries what the link takes."""
    carried = [s["throughput"] / (s["target"] / s["rate"]) for s in result["steps"] if s["target"]]
    return max(carried) if carried else None


def failures_of(r: dict) -> list[str]:
    out = []
    if not r["placed"]:
        out.append("the new plan did not run as planned (apply's verify not green / subtasks elsewhere)")
    if r["fixed_rates"]:  # a comparison of settings at given rates: the steps' figures are the result
        return out
    got, brk = highest_carried(r), r["break"]["rate"]
    if got is None:
        out.append("no step carried a record")
    elif abs(got / brk - 1) > CAPACITY_TOLERANCE:
        out.append(f"highest rate carried {got:.0f}/s vs the new model's break {brk:.0f}/s ({got / brk - 1:+.0%})")
    old_step = r["steps"][-1] if r["old_step"] and r["steps"] else None
    if old_step and holds(old_step):
        out.append(f"the old model's rate {old_step['rate']:.0f}/s held: the new model is too cautious")
    first = r["steps"][0] if r["steps"] else None
    if first is None or not holds(first):
        out.append("the first step (below capacity) did not hold: no data check")
    else:
        if data_misses(first):
            out.append(f"job data off the prediction at {first['rate']:.0f}/s: {'; '.join(data_misses(first))}")
        out.extend(f"latency at {first['rate']:.0f}/s: {m}" for m in latency_misses(first))
    return out


def print_table(console: Console, r: dict) -> None:
    first = r["steps"][0] if r["steps"] else {"links": {}}
    table = Table(
        title=f"{r['job']} job on the lab's {r['wan']} uplinks, {r['congestion_control']} "
        "(records/s per source subtask)"
    )
    for c in ("uplink", "old model usable", "old capacity", "new model usable", "new capacity", "new break",
              "highest held", "held / break", "carried", "carried / break", "step for data", "pred Mbit/s",
              "data Mbit/s", "data/pred"):  # fmt: skip
        table.add_column(c, justify="left" if c == "uplink" else "right")
    got, carried = measured_capacity(r), highest_carried(r)
    for host in sorted(r["new"]["usable"]):
        pred, data, _wire = first["links"].get(host, (0.0, 0.0, 0.0))
        table.add_row(
            host,
            f"{r['old']['usable'][host]:.2f}",
            f"{r['old']['rate']:.0f}",
            f"{r['new']['usable'][host]:.2f}",
            f"{r['new']['rate']:.0f}",
            f"{r['break']['rate']:.0f}",
            "-" if got is None else f"{got:.0f}",
            "-" if got is None else f"{got / r['break']['rate'] - 1:+.0%}",
            "-" if carried is None else f"{carried:.0f}",
            "-" if carried is None else f"{carried / r['break']['rate'] - 1:+.0%}",
            f"{first.get('rate', 0):.0f}",
            f"{pred:.3f}",
            f"{data:.3f}",
            f"{data / pred:.2f}" if pred else "-",
        )
    console.print(table)
    steps = Table(title=f"{r['job']} job on {r['wan']}: the rate schedule's steps")
    for c in ("rate per subtask", "x new break", "carried / offered", "source back-pressure", "held", "data Mbit/s"):
        steps.add_column(c, justify="right")
    for s in r["steps"]:
        steps.add_row(
            f"{s['rate']:.0f}",
            f"{s['rate'] / r['break']['rate']:.2f}",
            f"{s['throughput']:,.0f} / {s['target']:,.0f}",
            f"{s['source_bp']:.0%}",
            "yes" if holds(s) else "no",
            ", ".join(f"{h} {d:.3f}" for h, (_p, d, _w) in sorted(s["links"].items())),
        )
    console.print(steps)
    lat = Table(title=f"{r['job']} job on {r['wan']}: latency per source → sink at the first step, ms")
    for c in ("source → sink", "predicted (expected)", "upper bound", "markers p50", "markers p99", "p50 / predicted"):
        lat.add_column(c, justify="left" if c == "source → sink" else "right")
    for row in first.get("latency", []):
        p50 = row["markers_p50"]
        lat.add_row(
            f"{row['source']} → {row['sink']}",
            f"{row['expected_ms']:.0f}",
            f"{row['upper_ms']:.0f}",
            "-" if p50 is None else f"{p50:.0f}",
            "-" if row["markers_p99"] is None else f"{row['markers_p99']:.0f}",
            "-" if not p50 else f"{p50 / row['expected_ms']:.2f}",
        )
    console.print(lat)


def parse_steps(text: str) -> list[float]:
    steps = [float(x) for x in text.split(",") if x.strip()]
    if not steps or any(b <= a for a, b in itertools.pairwise(steps)) or steps[0] <= 0:
        raise argparse.ArgumentTypeError("ascending positive multiples of the new model's capacity, e.g. 0.7,0.95,1.05")
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wan-profile", default="satellite,lte", help="comma-separated shipped WAN profiles")
    ap.add_argument("--job", default="iot", choices=sorted(JOBS))
    ap.add_argument("--inventory", default=str(ROOT / "inventory" / "lab.yaml"))
    ap.add_argument("--workdir", default="/tmp/placement-lab-wan")
    ap.add_argument("--profile", help="reuse this lab profile of the job instead of profiling")
    ap.add_argument(
        "--profile-rate",
        type=float,
        default=PROFILE_RATE,
        help="records/s per source subtask while profiling: nearer the answer, less of the CPU is extrapolated",
    )
    ap.add_argument("--profile-engine", choices=("spark", "pandas"), default="pandas")
    ap.add_argument("--steps", type=parse_steps, default=parse_steps("0.7,0.85,0.95,1.05,1.15,1.3"))
    ap.add_argument(
        "--rates",
        type=parse_steps,
        help="fixed rates per source subtask instead of --steps' multiples of the new capacity (no capacity verdict: "
        "each step's carried/offered and back-pressure are the result, e.g. a credit cap with and without "
        "--buffers-per-channel)",
    )
    ap.add_argument(
        "--buffers-per-channel",
        type=int,
        help="flink.network.buffers_per_channel in the lab's and the plan's inventory (default: Flink's 2)",
    )
    ap.add_argument("--old-cap", type=float, default=4.0, help="the old model's step at most this x the new capacity")
    ap.add_argument("--step-s", type=float, default=60.0, help="seconds of each step")
    ap.add_argument("--settle", type=float, default=20.0, help="seconds into a step before measuring")
    ap.add_argument("--window", type=float, default=25.0, help="seconds of each step's measurement")
    ap.add_argument(
        "--fast-edge",
        type=float,
        metavar="SPEED",
        help="one edge host of this speed (server cores) instead of the lab's Pis: for LTE, where one flow's goodput "
        "needs more readings/s than a 0.3-core Pi sends",
    )
    ap.add_argument(
        "--congestion-control",
        choices=("cubic", "reno", "bbr"),
        default="cubic",
        help="the edge hosts' TCP congestion control, in their namespaces and in the planned inventory (default "
        "cubic: Raspberry Pi OS's)",
    )
    ap.add_argument("--keep", action="store_true", help="leave the last lab up")
    args = ap.parse_args()
    if args.settle + args.window + 6 > args.step_s:
        ap.error("--settle + --window (+ 6 s of metric reads) must fit in --step-s")
    wans = [w.strip() for w in args.wan_profile.split(",") if w.strip()]
    spec, work = JOBS[args.job], Path(args.workdir)
    console = Console(width=200)
    results, profile_path = [], args.profile
    inventory = args.inventory
    work.parent.mkdir(parents=True, exist_ok=True)
    if args.fast_edge:
        inventory = one_fast_edge(inventory, args.fast_edge, work.parent / "wan_transport-fast-edge.yaml")
    # the lab sets each host's hosts[].congestion_control on its routes (placement.lab.congestion) at lab up
    edges_cc = work.parent / "wan_transport-congestion.yaml"
    edges_cc.write_text(Path(inventory).read_text())
    inventory = with_congestion_control(str(edges_cc), args.congestion_control, args.buffers_per_channel)
    try:
        for wan in wans:
            console.print(f"[bold]{spec.title} on {wan}[/]")
            console.print(
                cli("lab", "up", "--inventory", inventory, "--workdir", str(work), "--wan-profile", wan).strip()
            )
            try:
                r, profile_path = run_profile(wan, spec, args, profile_path, console)
            except SystemExit as exc:  # a stage that ends the benchmark (plan_to) ends this profile only
                console.print(f"[red]{wan} did not run to its end[/]: {exc}")
                continue
            results.append(r)
            print_table(console, r)  # now: a later profile's failure does not take this one's figures with it
    finally:
        if not args.keep:
            subprocess.run(
                [PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
            )
    failures = []
    for r in results:
        for f in failures_of(r):
            failures.append(f)
            console.print(f"[red]FAIL[/] {r['wan']}: {f}")
    (work.parent / f"wan_transport-{spec.key}-{'-'.join(wans)}.json").write_text(
        json.dumps(results, indent=2, default=str)
    )
    if len(results) < len(wans):
        console.print(f"[red]FAIL[/] only {len(results)} of {len(wans)} WAN profiles ran")
    if args.rates and not failures and len(results) == len(wans):
        console.print("fixed rates (--rates): the steps' figures above are the result, no capacity verdict")
    elif not failures and len(results) == len(wans):
        console.print(
            "[green]PASS[/]: on every profile the highest rate carried is within ±15 % of the new model's break, the "
            "old model's rate does not hold, job data per uplink is within ±15 % and latency p50 within ±25 % of the "
            "prediction"
        )
    sys.exit(1 if failures or len(results) < len(wans) else 0)


if __name__ == "__main__":
    main()
