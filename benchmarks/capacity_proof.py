"""`plan --max-rate` proven on a running job: the predicted highest sustainable rate against the measured one.

    .venv/bin/python benchmarks/capacity_proof.py [--case cpu|uplink|all] [--step-s 80] [--keep] [--flink-version X]

Two lab cases, one edge host each, so that one resource binds and the other has room:

* ``cpu`` — a slow Pi (one core of ``speed`` 0.15: a cgroup quota of 0.15 of a core here) behind a wide uplink
  (200 Mbit/s), planned at ``cpu_utilisation_target`` 1.0: what runs out first at the highest rate is the Pi's CPU
  (behind 50 Mbit/s, on a machine whose cores run the job at a third of the CPU per reading of the one this case was
  first run on, the link bound first: 31,535 readings/s predicted and held, the Pi at 0.71 of its core);
* ``uplink`` — a fast edge host (one whole core) behind a 2 Mbit/s uplink, every operator but the source forbidden
  on it (``pins.forbid``), so the raw readings cross: what runs out first is the link.

Per case: ``lab up`` with that inventory (custom mode) -> the IoT job unpinned at a low rate, profiled as
``benchmarks/lab_placements.py`` does -> ``placement plan --max-rate`` -> the job profiled again as a user would
refine it, on that plan at 0.4 and then 0.8 of that answer (``PROFILE_FRACTIONS``: a run each, so that the profile
fits each TaskManager's CPU as a fixed part plus a per-record part; warmed up ``WARM_UP_S``; the edge host's
TaskManager baseline from the first run, where a TaskManager was idle) -> ``placement plan --max-rate`` from that
profile, and again on a profile nearer its answer while ``--max-rate`` cautions that the answer extrapolates the CPU,
``MAX_ROUNDS`` at most (the highest scale ``X*``
of the profiled rate that fits, the plan that fits there, and what is short just above) -> that plan applied with
``placement apply`` to the job whose source follows a rate schedule (``--rate-schedule``: no resubmission between steps)
of a warm-up (``WARM_UP_S`` at half the predicted rate: the JIT compiles the moved code) and then ``STEPS`` × the
predicted rate ``X* × profile rate``, ``--step-s`` seconds each -> per step, after ``SKIP_S``, in ``PARTS`` windows: the
source's records/s from the ``numRecordsOut`` counter (not Flink's 60 s meter, which lags a step), the uplink's wire
Mbit/s, the edge TaskManager's CPU and its JIT compiler's, and how often its cgroup was throttled.

A window *holds* when the source emits at least 97 % of its target. A step is judged on its first window, unless that
missed while the edge host's JIT compiler used ``JIT_BUSY`` of its cores or more: then on the next (the model answers
for compiled code; the pacer does not make up what a starved source missed). The measured highest sustainable rate is
the last step that holds with every step below it holding. Verdicts (PASS/FAIL lines, exit 1 on any FAIL):

* the plan at 0.9 × the predicted rate holds;
* the measured highest sustainable rate is within ±15 % of the predicted;
* above capacity (the last step) the rate does not hold, and the resource `--max-rate` named is the one that
  saturates: the link carries at least 85 % of its shaped rate, or the Pi's cgroup is throttled in at least half
  of its periods.

Writes ``<workdir>/../capacity_proof.json`` with every step.
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
sys.path.insert(0, str(ROOT / "benchmarks"))

from lab_placements import (
    JOBS,
    PLACEMENT,
    cli,
    job_args,
    job_inventory,
    plan_to,
    profile_unpinned,
    thread_cores,
)

from placement.flink.rest import FlinkRest
from placement.lab import chain
from placement.lab.measure import measure_window
from placement.profile.format import load_profile

STEPS = (0.8, 0.9, 1.0, 1.1, 1.2, 1.4)  # × the predicted highest rate
HOLDS = 0.97  # a step holds when the source emits this share of its target
TOLERANCE = 0.15
LINK_SATURATED = 0.85  # of the shaped rate, on the wire
THROTTLED_SATURATED = 0.5  # of the cgroup's periods
SKIP_S = 20.0  # of each step: the rate change reaching every operator and queues settling
PARTS = 2  # measured windows per step: one that missed while the JIT compiler was busy is read again (judged_part)
JIT_BUSY = 0.05  # of the edge host's cores: its JIT compiler busy in a window
# before the first step the placed job runs at WARM_UP_FRACTION × the predicted rate for WARM_UP_S: the JVMs compile
# what they have just been given (on a lab Pi the JIT compiler's threads use 20-35 % of it for the first minutes after
# a move), and --max-rate answers for the compiled steady state
WARM_UP_S = 150.0
WARM_UP_FRACTION = 0.5
# the placed profiles: on an answer's plan at these fractions of it, one run each — a Pi's CPU per record falls as its
# rate rises, and two rates give the profile the line (fixed part + per-record part) that --max-rate scales; the line
# bends on (the lab Pi: 114 µs per reading between 392 and 783/s, 34 µs between 4,400 and 7,800/s), so a user asks
# again on a profile nearer the answer while --max-rate cautions that it extrapolates, and so does this benchmark
PROFILE_FRACTIONS = (0.4, 0.8)  # below the answer they refine: a run at the answer itself would saturate
MAX_ROUNDS = 4  # placed profiles at most, each nearer the answer of the one before (the lab Pi took 3 under the
# caution at 1.5x beyond the rates measured: 1,291/s unpinned -> 9,409 -> 15,893 -> 18,952)
PROFILE_S = 60.0  # each run's collection
SWITCH_S = 75.0  # after the rate switch: Flink's 60 s meters (the profile's rates) all at the new rate


@dataclass(frozen=True)
class Case:
    key: str
    speed: float  # of the edge host's one core, in server cores
    bandwidth: str
    profile_rate: float  # readings/s of the profiling run
    binds: str  # the Shortage kind `--max-rate` should name ("cpu" or "link")
    server_only: tuple[str, ...] = ()  # vertices forbidden on the edge host
    # policy.cpu_utilisation_target of the case's inventory: the CPU case asks where the Pi's core itself runs out
    # (under the default 0.8 the answer is by design a fifth short of it, and the ladder would find it "low")
    cpu_target: float | None = None


CASES = {
    # profiled below what the Pi sustains with all six subtasks (at 300/s it emitted 217): a saturated run's figures
    "cpu": Case("cpu", speed=0.15, bandwidth="200mbit", profile_rate=150.0, binds="cpu", cpu_target=1.0),
    "uplink": Case(
        "uplink",
        speed=1.0,
        bandwidth="2mbit",
        profile_rate=200.0,
        binds="link",
        server_only=("Parse", "Filter", "Enrich", "Window Aggregate", "Sink: Readings"),
    ),
}


def case_inventory(case: Case, out: Path) -> Path:
    """inventory/lab.yaml with one edge host of the case's speed behind the case's uplink."""
    doc = yaml.safe_load((ROOT / "inventory" / "lab.yaml").read_text())
    doc["name"] = f"capacity-{case.key}"
    doc["hosts"] = [h for h in doc["hosts"] if h["name"] in ("server", "rpi1")]
    rpi = next(h for h in doc["hosts"] if h["name"] == "rpi1")
    rpi.update(cores=1, speed=case.speed, memory="2GiB")
    rpi.pop("model", None)  # the speed is the case's, not a Pi 4B's
    doc["links"] = [{"from": "rpi1", "to": "server", "bandwidth": case.bandwidth}]
    doc["pins"] = {"sources": {"Source: Sensors": ["rpi1"]}, "forbid": dict.fromkeys(case.server_only, "rpi1")}
    if case.cpu_target is not None:
        doc.setdefault("policy", {})["cpu_utilisation_target"] = case.cpu_target
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def cgroup_periods(cgroup: str | None) -> tuple[int, int]:
    """(periods, throttled periods) of a cgroup v1 cpu controller so far."""
    if not cgroup:
        return 0, 0
    stat = dict(line.split() for line in (Path(cgroup) / "cpu.stat").read_text().splitlines())
    return int(stat.get("nr_periods", 0)), int(stat.get("nr_throttled", 0))


def source_count(rest: FlinkRest, job: str, vertex: str) -> tuple[float, float]:
    """(records the source has emitted, when) — the counter dated when a metric fetch was seen landing (as the watch
    reads it): a plain reading is as old as the JobManager's last fetch, and the steps read 96 % of their target at
    every rate where the profile's collection and Flink's own meter found the pacer exact."""
    vid = next(v.id for v in rest.job(job).vertices if v.name == vertex)
    at, values = rest.fetched_counters(job, [vid], "numRecordsOut", wait_s=12.0)
    return values[vid] or 0.0, at


def profiled_rate(profile: str, source: str) -> float:
    """Records/s per subtask the profile measured out of the source vertex named ``source``."""
    v = next(v for v in load_profile(profile).vertices if v.name == source)
    return sum(s.records_out_per_s for s in v.subtasks) / v.parallelism


def pi_line(profile: str) -> dict | None:
    """The edge host's CPU line (fixed + per-record part, profile.tm_cpu) in the profile, where one was fitted."""
    fit = next((t.rate_fit for t in load_profile(profile).taskmanagers if t.inventory_host == "rpi1"), None)
    return fit.model_dump() if fit is not None else None


def idle_baseline(profile: str, speed: float) -> float:
    """The edge host's TaskManager baseline in its own cores from a profile where some TaskManager ran nothing: the
    edge host's own where it was the idle one, else the idle TaskManagers' in server cores over the edge's speed."""
    idle = [t for t in load_profile(profile).taskmanagers if t.basis == "idle" and t.baseline_server_cores is not None]
    if not idle:
        sys.exit(f"{profile}: no idle TaskManager to take a baseline from")
    own = next((t.baseline_cores for t in idle if t.inventory_host == "rpi1"), None)
    return own if own is not None else statistics.median(t.baseline_server_cores for t in idle) / speed


def with_baseline(inventory: str, cores: float) -> str:
    """``inventory`` (rewritten in place) with ``taskmanager_baseline_cores`` for the edge host rpi1."""
    doc = yaml.safe_load(Path(inventory).read_text())
    next(h for h in doc["hosts"] if h["name"] == "rpi1")["taskmanager_baseline_cores"] = round(cores, 4)
    Path(inventory).write_text(yaml.safe_dump(doc, sort_keys=False))
    return inventory


def run_placed(rest: FlinkRest, state: dict, spec, program: list[str], plan_dir: Path, inventory: str) -> str:
    """The job submitted with ``program`` and placed by ``placement apply`` of ``plan_dir`` (which resubmits it with
    ``inventory``'s arguments: the same); the placed job's id."""
    job = chain.submit(rest, state["jar"], spec.entry_class, program)
    applied = subprocess.run(
        [PLACEMENT, "apply", str(plan_dir), "--inventory", inventory, "--job", job, "--settle", "5"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    if applied.returncode != 0:
        raise Failed(f"apply failed: {applied.stderr.strip()[-300:]}")
    return next(j.id for j in rest.running_jobs() if j.name == spec.job_name)


def profile_placed(
    spec,
    state: dict,
    work: Path,
    n: int,
    previous: str,
    rates: tuple[float, float],
    parallelism: dict[str, int],
    baseline: float,
) -> str:
    """Round ``n``: the job placed by ``--max-rate``'s plan from the ``previous`` profile at each of ``rates`` in turn
    (a two-step schedule: the steps' pacer, no resubmission: one placement), warmed up ``WARM_UP_S`` at the first
    and ``SWITCH_S`` after the switch, collected ``PROFILE_S`` at each (a run each, in one history, with its threads)
    and profiled: the profile's CPU is the line through the two runs; returns the profile's path."""
    source = spec.sources[0].vertex
    switch = WARM_UP_S + PROFILE_S + 5
    program = [
        *job_args(spec, {source: rates[0]}, parallelism),
        "--rate-schedule",
        f"0:{rates[0]:.0f},{switch:.0f}:{rates[1]:.0f}",
    ]
    inventory, _ = job_inventory(
        state["lab_inventory"], spec, work / f"placed-profile-inventory-{n}.yaml", lambda p: program
    )
    inventory = with_baseline(inventory, baseline)
    plan_dir = work / f"plan-round-{n}"
    max_rate(inventory, previous, plan_dir)  # the plan again with the inventory apply resubmits the job from
    rest = FlinkRest(state["rest_url"])
    job = run_placed(rest, state, spec, program, plan_dir, inventory)
    started = rest.job_raw(job)["start-time"] / 1000  # the schedule's clock starts with the job's main()
    history = work / f"placed-profile-metrics-{n}"
    shutil.rmtree(history, ignore_errors=True)
    for begin in (WARM_UP_S, switch + SWITCH_S):
        time.sleep(max(0.0, started + begin - time.time()))
        cli(
            "metrics",
            "collect",
            "--rest",
            state["rest_url"],
            "--job",
            job,
            "--duration",
            f"{PROFILE_S:.0f}",
            "--interval",
            "2",
            "--out",
            str(history),
            "--inventory",
            inventory,
            "--quiet",
        )
    profile = str(work / f"placed-profile-{spec.key}-{n}.json")
    cli("profile", str(history), "--out", profile, "--inventory", inventory, "--engine", "pandas", "--quiet")
    chain.cancel_all(rest)
    return profile


class Failed(Exception):
    """A case that could not be run to its steps (the message says why)."""


def max_rate(inventory: str, profile: str, out: Path) -> dict:
    """``placement plan --max-rate``'s answer (and its plan, written to ``out``)."""
    return plan_to(out, inventory, profile, max_rate=True).capped.json()


def run_case(case: Case, args, console: Console) -> dict:
    work = Path(args.workdir) / case.key
    spec = JOBS["iot"]
    source = spec.sources[0].vertex
    inventory = case_inventory(case, Path(args.workdir) / f"capacity-{case.key}.yaml")
    version = ["--flink-version", args.flink_version] if args.flink_version else []
    console.print(cli("lab", "up", "--inventory", str(inventory), "--workdir", str(work), *version).strip())
    try:
        state = json.loads((work / "lab.json").read_text())
        rest = FlinkRest(state["rest_url"])
        lab_inv, parallelism = job_inventory(state["lab_inventory"], spec, work / "profile-inventory.yaml")
        # profiled with the pacer the steps run under (a one-step --rate-schedule), not Flink's GuavaRateLimiter: the
        # lab jobs' pacer waits on CompletableFuture's delay scheduler, a thread that used 0.26 of the 0.15-core Pi's
        # cores at 400 readings/s where GuavaRateLimiter's threads use ~35 µs of CPU per record
        program = [
            *job_args(spec, {source: case.profile_rate}, parallelism),
            "--rate-schedule",
            f"0:{case.profile_rate:g}",
        ]
        first = profile_unpinned(spec, program, lab_inv, work, state, "pandas")
        capacity = max_rate(lab_inv, first, work / "plan-first")
        if capacity["status"] != "bounded":
            return {"case": case.key, "failures": [f"--max-rate is {capacity['status']}, not bounded"], "steps": []}
        # the scale multiplies the rates the profile measured, which fall short of the target where the profiling run
        # could not keep up (a 0.15-core Pi running all six subtasks at 300/s emitted 217/s)
        rough = capacity["scale"] * profiled_rate(first, source)
        console.print(
            f"[bold]{case.key}[/]: profiled unpinned at {case.profile_rate:g}/s: --max-rate "
            f"{rough:,.0f} readings/s ({capacity['binding'][0]['message']})"
        )
        # A Pi's CPU per record falls as its rate rises (a wake-up, a network buffer and a flush serve more records),
        # so an answer 8.7× beyond the profiled rate was 2.7× high on the Pi's CPU (0.68 predicted, 0.25 used): the
        # job profiled again as a user would, on that plan at two fractions of its answer, and --max-rate asked from
        # that profile — and again while its answer is far beyond the rates the CPU was measured at (its caution).
        # No TaskManager is idle then, so the Pi's own baseline comes from the first run (an inventory prior).
        baseline = idle_baseline(first, case.speed)
        profile, lines = first, []
        for n in range(1, MAX_ROUNDS + 1):  # until --max-rate no longer cautions that it extrapolates the CPU
            profile = profile_placed(
                spec, state, work, n, profile, tuple(f * rough for f in PROFILE_FRACTIONS), parallelism, baseline
            )
            capacity = max_rate(with_baseline(lab_inv, baseline), profile, work / "plan-max-rate")
            if capacity["status"] != "bounded":
                return {"case": case.key, "failures": [f"--max-rate is {capacity['status']}, not bounded"], "steps": []}
            lines.append(pi_line(profile))
            rough = capacity["scale"] * profiled_rate(profile, source)
            console.print(
                f"[bold]{case.key}[/]: round {n}, the Pi's CPU over its two runs: "
                + (
                    f"{lines[-1]['fixed_cores']:.3f} + {lines[-1]['per_record_us']:.1f} µs × readings/s "
                    f"({lines[-1]['rate_low']:,.0f}-{lines[-1]['rate_high']:,.0f}/s), {lines[-1]['fixed_share']:.0%} "
                    "of its use fixed"
                    if lines[-1]
                    else "no line (the runs' rates too near, or the line did not rise)"
                )
                + f"; --max-rate {rough:,.0f} readings/s"
                + (f" — caution: {capacity['caution']}" if capacity.get("caution") else "")
            )
            if not capacity.get("caution"):
                break
        scale, binding = capacity["scale"], capacity["binding"][0]
        profiled = profiled_rate(profile, source)
        predicted = scale * profiled
        console.print(
            f"[bold]{case.key}[/]: --max-rate {scale:.3f}× of {profiled:,.0f}/s = {predicted:,.0f} "
            f"readings/s; runs out first: {binding['message']}"
        )
        rates = [round(f * predicted) for f in STEPS]
        warm_up = round(WARM_UP_FRACTION * predicted)
        schedule = ",".join(
            [f"0:{warm_up}", *(f"{round(WARM_UP_S + i * args.step_s)}:{r}" for i, r in enumerate(rates))]
        )
        program = [
            "--job-name",
            spec.job_name,
            "--rate",
            str(warm_up),
            "--rate-schedule",
            schedule,
            "--parallelism",
            str(parallelism[source]),
        ]
        # the plan again from the inventory apply resubmits the job with (its arguments are part of its digest):
        # the same model, so the same scale and placement
        lab_inv, _ = job_inventory(state["lab_inventory"], spec, work / "run-inventory.yaml", lambda p: program)
        lab_inv = with_baseline(lab_inv, baseline)
        plan_dir = work / "plan-max-rate"
        again = max_rate(lab_inv, profile, plan_dir)
        assert abs(again["scale"] / scale - 1) < 1e-6, (again, capacity)
        placed = run_placed(rest, state, spec, program, plan_dir, lab_inv)
        started = rest.job_raw(placed)["start-time"] / 1000  # the schedule's clock starts with the job's main()
        # every TaskManager's threads over the steps (as the profile read them): what the Pi's CPU went to at each
        span = WARM_UP_S + len(rates) * args.step_s - (time.time() - started)
        threads_dir = work / "placed-metrics"
        collector = subprocess.Popen(
            [
                PLACEMENT,
                "metrics",
                "collect",
                "--rest",
                state["rest_url"],
                "--job",
                placed,
                "--duration",
                f"{span:.0f}",
                "--interval",
                "2",
                "--out",
                str(threads_dir),
                "--inventory",
                lab_inv,
                "--quiet",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        steps = []
        for i, rate in enumerate(rates):
            begin = started + WARM_UP_S + i * args.step_s
            time.sleep(max(0.0, begin + SKIP_S - time.time()))
            parts = measure_parts(rest, state, placed, source, parallelism[source], rate, begin + args.step_s - 3)
            judged = judged_part(parts)
            steps.append({"fraction": STEPS[i], "target": rate, **judged, "parts": parts})
            for k, p in enumerate(parts):
                console.print(
                    f"  step {STEPS[i]:.2f}× part {k + 1}{'*' if p is judged else ' '}: target "
                    f"{rate:,}/s, emitted {p['emitted']:,.0f}/s, link {p['link_mbit']:.3f} Mbit/s, Pi "
                    f"{p['pi_host_cores']:.3f} cores (JIT compiler {p['pi_jit_cores']:.3f}), throttled "
                    f"{p['throttled']:.0%}"
                )
        collector.wait(timeout=120)
        print_threads(console, threads_dir, steps, case.speed)
        chain.cancel_all(rest)
    except Failed as exc:
        return {"case": case.key, "failures": [str(exc)], "steps": []}
    finally:
        if not args.keep:
            subprocess.run(
                [PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
            )
    return {**verdict(case, predicted, binding, steps), "pi_lines": lines}


def measure_parts(
    rest: FlinkRest, state: dict, job: str, source: str, parallelism: int, target: int, end: float
) -> list[dict]:
    """A step from now to ``end`` in ``PARTS`` consecutive windows, each: the source's records/s per subtask (its
    ``numRecordsOut`` counter), whether that holds ``target``, the uplink's wire Mbit/s, the edge host's CPU and its
    JIT compiler's (in its cores) and the share of its cgroup's periods that were throttled."""
    edge = next(h for h in state["hosts"] if h["name"] == "rpi1")
    count = source_count(rest, job, source)
    start, parts = time.time(), []
    for k in range(1, PARTS + 1):
        p0 = cgroup_periods(edge.get("cgroup"))
        window = max(5.0, start + k * (end - start) / PARTS - time.time())
        [link], cpu = measure_window(state, window)
        p1 = cgroup_periods(edge.get("cgroup"))
        after = source_count(rest, job, source)
        emitted = (after[0] - count[0]) / (after[1] - count[1]) / parallelism
        count = after
        rpi = next(c for c in cpu if c.host == "rpi1")
        parts.append(
            {
                "emitted": emitted,
                "holds": emitted >= HOLDS * target,
                "window_ms": (int((time.time() - window) * 1000), int(time.time() * 1000)),
                "link_mbit": link.mbit,
                "link_share": link.mbit / link.rate_mbit if link.rate_mbit else None,
                "pi_host_cores": rpi.host_cores,
                "pi_jit_cores": rpi.compiler_server_cores / rpi.speed,
                "throttled": (p1[1] - p0[1]) / max(p1[0] - p0[0], 1),
            }
        )
    return parts


def judged_part(parts: list[dict]) -> dict:
    """The part of a step its verdict reads: the first, unless it missed while the edge host's JIT compiler used
    ``JIT_BUSY`` of its cores or more — then the next, under the same rule. The model answers for compiled code, and
    the pacer does not make up records a starved source missed: on a Pi at 0.97 of its core, 10 s of the C2 compiler
    at 0.22 of it cost a step 8 % of its records (session 22, run d, 0.9×), which a step without one never lost."""
    for part in parts[:-1]:
        if part["holds"] or part["pi_jit_cores"] < JIT_BUSY:
            return part
    return parts[-1]


def print_threads(console: Console, history: Path, steps: list[dict], speed: float) -> None:
    """Per step, the edge TaskManager's busiest threads in its host's cores (from the collection over the steps)."""
    for s in steps:
        used = thread_cores(history, *s["window_ms"]).get("rpi1")
        if used is None:
            continue
        used = used / speed
        s["pi_threads"] = {str(k): float(v) for k, v in used.items() if v >= 0.005}
        console.print(
            f"  step {s['fraction']:.2f}× on rpi1: " + ", ".join(f"{k} {v:.3f}" for k, v in used.head(8).items())
        )


def verdict(case: Case, predicted: float, binding: dict, steps: list[dict]) -> dict:
    measured = None
    for s in steps:
        if not s["holds"]:
            break
        measured = s["target"]
    failures = []
    at_09 = next(s for s in steps if s["fraction"] == 0.9)
    if not at_09["holds"]:
        failures.append(f"the plan at 0.9× does not hold: {at_09['emitted']:,.0f} of {at_09['target']:,}/s")
    if measured is None or abs(measured / predicted - 1) > TOLERANCE:
        failures.append(
            f"measured highest sustainable rate {measured or 0:,}/s is not within ±15 % of the predicted "
            f"{predicted:,.0f}/s"
        )
    top = steps[-1]
    if top["holds"]:
        failures.append(f"{top['fraction']}× still holds: the predicted capacity is low")
    kinds = {"cpu": ("cpu", "thread"), "link": ("link",)}[case.binds]  # one core: its thread binds with its host
    if binding["kind"] not in kinds:
        failures.append(f"--max-rate named {binding['kind']} ({binding['message']}), the case binds {case.binds}")
    elif case.binds == "link" and (top["link_share"] or 0) < LINK_SATURATED:
        failures.append(f"above capacity the link carries {top['link_share']:.0%} of its rate: not saturated")
    elif case.binds == "cpu" and top["throttled"] < THROTTLED_SATURATED:
        failures.append(f"above capacity the Pi was throttled in {top['throttled']:.0%} of its periods: not saturated")
    return {
        "case": case.key,
        "predicted": predicted,
        "measured": measured,
        "binding": binding,
        "steps": steps,
        "failures": failures,
    }


def print_table(console: Console, results: list[dict]) -> None:
    table = Table(
        title="plan --max-rate: predicted vs measured highest sustainable rate (IoT job, readings/s per source)"
    )
    for col in (
        "case",
        "runs out first (predicted)",
        "predicted",
        "measured",
        "error",
        "0.9× holds",
        "above capacity: link / Pi throttled",
    ):
        table.add_column(col, justify="left" if col.startswith(("case", "runs")) else "right")
    for r in results:
        if not r["steps"]:
            table.add_row(r["case"], "; ".join(r["failures"]))
            continue
        top = r["steps"][-1]
        error = f"{r['predicted'] / r['measured'] - 1:+.0%}" if r["measured"] else "-"
        at_09 = next(s for s in r["steps"] if s["fraction"] == 0.9)
        table.add_row(
            r["case"],
            r["binding"]["message"],
            f"{r['predicted']:,.0f}",
            f"{r['measured'] or 0:,}",
            error,
            "yes" if at_09["holds"] else "NO",
            f"{top['link_share'] or 0:.0%} / {top['throttled']:.0%}",
        )
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="all", help="cpu, uplink or all")
    ap.add_argument("--workdir", default="/tmp/placement-capacity")
    ap.add_argument("--step-s", type=float, default=80.0, help="seconds of each rate step")
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    ap.add_argument("--flink-version", help="run the lab on this Flink release (`lab up --flink-version`)")
    args = ap.parse_args()
    keys = list(CASES) if args.case == "all" else [args.case]
    if any(k not in CASES for k in keys):
        ap.error(f"--case: {args.case!r} is not cpu, uplink or all")
    console = Console(width=200)
    Path(args.workdir).mkdir(parents=True, exist_ok=True)
    results = [run_case(CASES[k], args, console) for k in keys]
    print_table(console, results)
    (Path(args.workdir).parent / "capacity_proof.json").write_text(json.dumps(results, indent=2, default=str))
    failures = [f"{r['case']}: {f}" for r in results for f in r["failures"]]
    for f in failures:
        console.print(f"[red]FAIL[/] {f}")
    if failures:
        sys.exit(1)
    console.print(
        "[green]PASS[/]: the plan holds at 0.9× the predicted rate, the measured highest sustainable rate is "
        "within ±15 % of the predicted, and above it the named resource saturates"
    )


if __name__ == "__main__":
    main()
