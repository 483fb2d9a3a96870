"""Predicted vs measured CPU per host, on every lab job and the test jobs with unusual shapes (issue 23).

    .venv/bin/python benchmarks/cpu_accuracy.py [--job iot,nexmark,branching,zoo,shapes,sql|all] [--window 30]
                                                [--inventory inventory/lab.yaml] [--keep] [--flink-version X]
                                                [--hold SECONDS] [--reprice]

What a user does, per job, on one custom-mode lab (``lab up``): the job submitted unmodified (Flink's own placement)
-> 60 s for Flink's rate meters -> ``metrics collect`` ``--window`` s (per-subtask busy time and each TaskManager's
JVM CPU, and its CPU per thread over the lab's SSH: ``--inventory``) -> ``profile`` with the lab inventory -> ``plan``
(the ILP at the profiled rates: WAN first, so operators move onto the Pis as far as their CPU allows) -> ``apply`` ->
until the moved subtasks' JIT has settled (every edge TaskManager's compiler threads under 0.02 host cores over 15 s; 60
s at least, 360 s at most) -> ``lab measure`` over ``--window`` s — again, up to ``MEASURE_TRIES`` windows, until one in
which every edge TaskManager's compiler stayed under 0.02 host cores too — while ``metrics collect`` polls the job as it
did for the profile: each host's TaskManager JVM CPU, in the host's own cores, beside plan.json's ``predicted_cores``
for that host (its TaskManager's baseline + its subtasks' calibrated cores). The model predicts the steady state, so
what is judged is the JVM's CPU without its JIT compiler threads (``lab measure``'s ``steady_host_cores``); the table
shows it with them too.

"before" is the same profile priced as the planner did before issue 23 (busy time only: no TaskManager baseline, no
calibration — the profile's ``taskmanagers`` and ``cpu_calibration`` dropped) for the same placement.

Target (issue 23): every edge host within ±15 % of the measured, or within 0.03 host cores where the host is nearly
idle (measured below 0.2 host cores). Prints a PASS/FAIL line per edge host and a table; exit 1 on any FAIL. Writes
``<workdir>/../cpu_accuracy.json``.

``--reprice`` runs no lab: it profiles the recorded histories of an earlier run (in ``--workdir``) again with this
checkout's profile and cost model and prices the placements that were measured, against the CPU measured then — the
model's before and after on the same measurements.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lab_placements import PLACEMENT, cli, plan_to, thread_cores

from placement.collect.threads import is_compiler_thread
from placement.costmodel import build_problem, evaluate
from placement.flink.rest import FlinkRest
from placement.inventory import load_inventory
from placement.lab import chain
from placement.lab.jobs import BRANCHING_JOB, IOT_SENSOR_JOB, NEXMARK_BIDS_JOB
from placement.lab.measure import compiler_cpu_seconds, measure_window, taskmanager_pids
from placement.profile.format import JobProfile, load_profile
from placement.writers.planjson import load_plan

TOLERANCE = 0.15
IDLE_ABS = 0.03  # host cores: a nearly idle host is held to this absolute error instead
NEARLY_IDLE = 0.2  # host cores measured: below a fifth of its cores a host counts as nearly idle
# after apply: the moved subtasks start on cold JIT, which on a 0.3-core Pi compiles for minutes: the model predicts
# the steady state, so the measurement waits until every edge TaskManager's compiler threads (C1, C2) use under
# JIT_SETTLED of its host's cores over JIT_WINDOW_S (at most JIT_MAX_S after SETTLE_S). Measured before this wait: the
# placed Pi's C2 thread used 0.04-0.09 host cores 60 s after the apply, 22-23 % of the host's CPU
SETTLE_S = 60
JIT_SETTLED = 0.02
JIT_WINDOW_S = 15
JIT_MAX_S = 300
# ... and the window measured is one in which the compiler stayed under JIT_SETTLED too, else the next (MEASURE_TRIES at
# most): a quiet 15 s can fall between two bursts — Branching's rpi1 passed the wait 75 s after the apply, then its
# compiler used 0.059 host cores over the window, and its Cameras source's thread 1.7x the CPU per frame it was
# profiled at (a source at 100 frames/s reaches C2's thresholds in minutes)
MEASURE_TRIES = 6


@dataclass(frozen=True)
class LabJob:
    key: str
    entry_class: str
    name: str
    args: tuple[str, ...]
    births: dict[str, str | list[str]] = field(default_factory=dict)  # source vertex name prefix -> where born


JOBS = {
    j.key: j
    for j in (
        LabJob(
            "iot",
            IOT_SENSOR_JOB,
            "iot-sensors",
            ("--rate", "500", "--parallelism", "2"),
            {"Source: Sensors": ["rpi1", "rpi2"]},
        ),
        LabJob(
            "nexmark",
            NEXMARK_BIDS_JOB,
            "nexmark-bids",
            ("--rate", "500", "--parallelism", "2"),
            {"Source: Bids": ["rpi1", "rpi2"]},
        ),
        LabJob(
            "branching",
            BRANCHING_JOB,
            "cameras-meters",
            ("--camera-rate", "100", "--meter-rate", "800"),
            {"Source: Cameras": "rpi1", "Source: Meters": "rpi2"},
        ),
        LabJob(
            "zoo",
            "placement.lab.ZooJob",
            "zoo",
            ("--rate", "200", "--parallelism", "2", "--devices", "16"),
            {"Source: Events": ["rpi1", "rpi1"], "Source: Commands": "rpi1", "Source: Rules": "rpi2"},
        ),
        LabJob(
            "shapes",
            "placement.lab.ShapesJob",
            "shapes",
            (
                "--rate",
                "300",
            ),
            {
                "Source: Clicks": "rpi1",
                "Source: Orders": "rpi1",
                "Source: Rules": "rpi2",
                "Source: Ticks": ["rpi2", "rpi2"],
            },
        ),
        # a Table/SQL job: its source's name changes with every submission, so it is pinned by vertex id
        LabJob(
            "sql",
            "placement.lab.SqlJob",
            "sql-readings",
            ("--rate", "400", "--parallelism", "2"),
            {"Source:": ["rpi1", "rpi2"]},
        ),
    )
}


def job_inventory(running_inv: str, jar: str, job: LabJob, vertices: dict[str, str], out: Path) -> str:
    """The running lab inventory with ``job`` as the one apply resubmits and its sources born where it says
    (``vertices``: name -> id of the running job; a birth names a vertex by its name's prefix, pinned by id)."""
    doc = yaml.safe_load(Path(running_inv).read_text())
    pins = {}
    for prefix, hosts in job.births.items():
        matches = [vid for name, vid in vertices.items() if name.startswith(prefix)]
        if len(matches) != 1:
            sys.exit(f"{job.key}: {len(matches)} vertices start with {prefix!r}: {sorted(vertices)}")
        pins[matches[0]] = hosts
    doc["pins"] = {"sources": pins}
    doc["job"] = {"name": job.name, "entry_class": job.entry_class, "program_args": list(job.args), "jar": jar}
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(out)


def busy_time_only(profile: JobProfile) -> JobProfile:
    """The profile as the planner read it before issue 23: no TaskManager CPU, no calibration."""
    data = profile.model_dump(mode="json")
    data.pop("taskmanagers", None)
    for v in data["vertices"]:
        v.pop("cpu_calibration", None)
    return JobProfile.model_validate(data)


def compiler_cpu_s(state: dict) -> dict[str, float]:
    """Edge host -> CPU seconds its TaskManager JVM's JIT compiler threads have used (from /proc: the lab is here)."""
    return {
        h["name"]: compiler_cpu_seconds(taskmanager_pids(Path(h["cgroup"])))
        for h in state["hosts"]
        if h.get("cgroup") and h.get("role") != "server"
    }


def wait_for_jit(state: dict) -> float:
    """Seconds until every edge TaskManager's JIT compiler threads used under JIT_SETTLED host cores over a window."""
    speeds = {h["name"]: float(h.get("speed") or 1.0) for h in state["hosts"]}
    t0 = time.monotonic()
    while time.monotonic() - t0 < JIT_MAX_S:
        before = compiler_cpu_s(state)
        time.sleep(JIT_WINDOW_S)
        after = compiler_cpu_s(state)
        if all((after[h] - before.get(h, 0.0)) / JIT_WINDOW_S / speeds[h] < JIT_SETTLED for h in after):
            break
    return time.monotonic() - t0


def run_job(job: LabJob, state: dict, work: Path, window: float, console: Console, hold: float = 0.0) -> list[dict]:
    rest = FlinkRest(state["rest_url"])
    chain.cancel_all(rest)
    args = [*job.args, "--job-name", job.name]
    job = LabJob(job.key, job.entry_class, job.name, tuple(args), job.births)
    running = chain.submit(rest, state["jar"], job.entry_class, args)
    vertices = {v.name: v.id for v in rest.job(running).vertices}
    inventory = job_inventory(
        state["lab_inventory"], state["jar"], job, vertices, work / f"cpu-{job.key}-inventory.yaml"
    )
    time.sleep(chain.METER_SETTLE_S)
    # the profile's idle TaskManagers give the baselines: as settled as the placed ones are when measured. The first
    # job after `lab up` ran on JVMs minutes old — idle Pis at 0.085 of their cores (their compilers at 0.03), where
    # the same TaskManagers used 0.04-0.05 idle for every later job — and its plan was 22 % high for it
    wait_for_jit(state)
    metrics, profile_path, plan_dir = (
        work / f"cpu-{job.key}-metrics",
        work / f"cpu-{job.key}.json",
        work / f"cpu-{job.key}-plan",
    )
    cli(
        "metrics",
        "collect",
        "--rest",
        state["rest_url"],
        "--job",
        running,
        "--duration",
        f"{window:g}",
        "--interval",
        "2",
        "--out",
        str(metrics),
        "--inventory",
        inventory,
        "--quiet",
    )
    cli("profile", str(metrics), "--out", str(profile_path), "--inventory", inventory, "--warmup", "60", "--quiet")
    plan_to(plan_dir, inventory, profile_path)
    proc = subprocess.run(
        [PLACEMENT, "apply", str(plan_dir), "--inventory", inventory, "--job", running, "--settle", "5"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    plan = load_plan(plan_dir / "plan.json")
    as_planned = proc.returncode == 0 and "WRONG" not in proc.stdout
    if not as_planned:
        console.print(f"[red]{job.key}: apply failed[/] ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    time.sleep(SETTLE_S)
    jit_s = wait_for_jit(state)
    edges = {h.host for h in plan.hosts if h.role != "server"}
    for tries in range(1, MEASURE_TRIES + 1):  # noqa: B007 - read after the loop: the window it settled in
        # observed as it was profiled (and as `placement watch` observes it): the collector polls the TaskManagers'
        # metrics over the measured window too, and that polling is part of the baseline the profile measured
        collector = subprocess.Popen(
            [
                PLACEMENT,
                "metrics",
                "collect",
                "--rest",
                state["rest_url"],
                "--job-name",
                job.name,
                "--duration",
                f"{window:g}",
                "--interval",
                "2",
                "--out",
                str(metrics) + "-placed",
                "--inventory",
                inventory,
                "--quiet",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        measured = json.loads(cli("lab", "measure", "--workdir", str(work), "--duration", f"{window:g}", "--json"))
        collector.wait(timeout=120)
        if all(c["compiler_server_cores"] / c["speed"] < JIT_SETTLED for c in measured["cpu"] if c["host"] in edges):
            break  # a window whose JIT compiler was quiet: the compiled steady state the model predicts
    applied_s = SETTLE_S + jit_s + tries * window
    held = hold_and_measure(state, hold, window, applied_s, console) if hold > 0 else []
    chain.cancel_all(rest)

    profile = load_profile(profile_path)
    inv = load_inventory(inventory)
    assignment = {(a.vertex_id, a.subtask): a.host for a in plan.assignment}
    before = {h.host: h.cores_used for h in evaluate(build_problem(inv, busy_time_only(profile)), assignment).hosts}
    console.print(
        f"{job.key}: {'placed as planned' if as_planned else 'NOT placed as planned'}; JIT settled "
        f"{SETTLE_S + jit_s:.0f} s after the apply, measured in window {tries}; TaskManager "
        "baselines " + ", ".join(f"{t.id} {t.baseline_cores:.3f} ({t.basis})" for t in profile.taskmanagers)
    )
    rows = []
    for c in measured["cpu"]:
        host = next(h for h in plan.hosts if h.host == c["host"])
        rows.append(
            {
                "job": job.key,
                "host": c["host"],
                "role": host.role,
                "placed": as_planned,
                "subtasks": host.subtasks,
                "predicted": host.predicted_cores,
                "baseline": host.baseline_cores or 0.0,
                "basis": host.baseline_basis,
                "before": before.get(c["host"], 0.0),
                "measured": c["steady_host_cores"],
                "measured_with_jit": c["host_cores"],
                "jit_settle_s": round(SETTLE_S + jit_s + (tries - 1) * window),
                "windows": tries,
                "held": [{"after_apply_s": h["after_apply_s"], **h["hosts"][c["host"]]} for h in held],
            }
        )
    return rows


def hold_and_measure(state: dict, hold: float, window: float, since_apply_s: float, console: Console) -> list[dict]:
    """``--hold``: the placed job measured again every ``window`` s for ``hold`` s — each host's CPU with and without
    its JIT compiler's threads, to see the warm-up end and the whole come down to the steady state."""
    out = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < hold:
        _, cpu = measure_window(state, window)
        after = round(since_apply_s + time.monotonic() - t0)
        out.append(
            {
                "after_apply_s": after,
                "hosts": {
                    c.host: {
                        "with_jit": c.host_cores,
                        "steady": c.steady_host_cores,
                        "jit": c.compiler_server_cores / c.speed if c.speed else None,
                    }
                    for c in cpu
                },
            }
        )
        console.print(
            f"  {after:4d} s after the apply: "
            + ", ".join(
                f"{c.host} {c.host_cores:.3f} (JIT {c.compiler_server_cores / c.speed:.3f}, without "
                f"{c.steady_host_cores:.3f})"
                for c in cpu
                if c.speed
            )
        )
    return out


def reprice(work: Path, rows: list[dict]) -> list[dict]:
    """``rows`` of an earlier run with ``predicted`` recomputed: each job's recorded history profiled again, and the
    placement that was measured (its plan's assignment) priced by the cost model of this checkout."""
    from placement.profile.pipeline import build_profile

    out = []
    for key in dict.fromkeys(r["job"] for r in rows):
        inventory = str(work / f"cpu-{key}-inventory.yaml")
        profile = build_profile(work / f"cpu-{key}-metrics", engine="pandas", warmup_s=60, inventory=inventory)
        plan = load_plan(work / f"cpu-{key}-plan" / "plan.json")
        cost = evaluate(
            build_problem(load_inventory(inventory), profile),
            {(a.vertex_id, a.subtask): a.host for a in plan.assignment},
        )
        jit = compiler_share(work / f"cpu-{key}-metrics-placed")
        for r in (r for r in rows if r["job"] == key):
            h = cost.host(r["host"])
            if "measured_with_jit" not in r:  # recorded before lab measure kept the compiler apart: its share then
                r = {**r, "measured_with_jit": r["measured"], "measured": r["measured"] * (1 - jit.get(r["host"], 0.0))}
            out.append({**r, "predicted": h.predicted_cores, "baseline": h.baseline_cores, "basis": h.baseline_basis})
    return out


def compiler_share(history: Path) -> dict[str, float]:
    """TaskManager -> the share of its threads' CPU its JIT compiler threads used over a recorded collection."""
    return {
        tm: float(used[[is_compiler_thread(n) for n in used.index]].sum() / used.sum())
        for tm, used in thread_cores(history).items()
        if used.sum() > 0
    }


def judged(row: dict) -> tuple[bool, float]:
    err = row["predicted"] / row["measured"] - 1 if row["measured"] > 0 else float("inf")
    ok = abs(err) <= TOLERANCE or (
        row["measured"] < NEARLY_IDLE and abs(row["predicted"] - row["measured"]) <= IDLE_ABS
    )
    return ok, err


def print_table(console: Console, rows: list[dict]) -> None:
    table = Table(
        title="CPU per host in its own cores: plan.json's predicted_cores vs the TaskManager JVM without its "
        "JIT compiler threads (lab measure)"
    )
    for col in (
        "job",
        "host",
        "subtasks",
        "measured",
        "with the JIT",
        "predicted",
        "of it baseline",
        "error",
        "before (busy time only)",
        "error before",
        "within",
    ):
        table.add_column(col, justify="left" if col in ("job", "host") else "right")
    for r in rows:
        ok, err = judged(r)
        err_before = r["before"] / r["measured"] - 1 if r["measured"] > 0 else float("inf")
        table.add_row(
            r["job"],
            r["host"],
            str(r["subtasks"]),
            f"{r['measured']:.3f}",
            f"{r.get('measured_with_jit', r['measured']):.3f}",
            f"{r['predicted']:.3f}",
            f"{r['baseline']:.3f} ({r['basis']})",
            f"{err:+.0%}",
            f"{r['before']:.3f}",
            f"{err_before:+.0%}",
            "-" if r["role"] != "edge" else ("yes" if ok else "NO"),
        )
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job", default="all", help="comma-separated keys of " + ", ".join(JOBS) + ", or all")
    ap.add_argument("--inventory", default=str(ROOT / "inventory" / "lab.yaml"))
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--workdir", default="/tmp/placement-cpu-accuracy/lab")
    ap.add_argument("--flink-version", default=None)
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    ap.add_argument(
        "--hold",
        type=float,
        default=0.0,
        help="seconds to keep measuring each placed job after its measurement (the JIT warm-up's end)",
    )
    ap.add_argument("--reprice", action="store_true", help="no lab: price the runs recorded in --workdir again")
    args = ap.parse_args()
    keys = list(JOBS) if args.job == "all" else args.job.split(",")
    unknown = [k for k in keys if k not in JOBS]
    if unknown:
        sys.exit(f"--job: unknown {unknown} (known: {', '.join(JOBS)})")
    console = Console(width=200)
    work = Path(args.workdir)
    if args.reprice:
        rows = reprice(
            work, [r for r in json.loads((work.parent / "cpu_accuracy.json").read_text()) if r["job"] in keys]
        )
        print_table(console, rows)
        sys.exit(report(console, rows))
    up = ["lab", "up", "--inventory", args.inventory, "--workdir", str(work)]
    if args.flink_version:
        up += ["--flink-version", args.flink_version]
    console.print(cli(*up).strip())
    rows: list[dict] = []
    try:
        state = json.loads((work / "lab.json").read_text())
        for key in keys:
            rows += run_job(JOBS[key], state, work, args.window, console, args.hold)
    finally:
        if not args.keep:
            subprocess.run(
                [PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
            )
    print_table(console, rows)
    (work.parent / "cpu_accuracy.json").write_text(json.dumps(rows, indent=1))
    sys.exit(report(console, rows))


def report(console: Console, rows: list[dict]) -> int:
    """A PASS/FAIL line per edge host; 1 when any failed."""
    failed = 0
    for r in rows:
        if r["role"] != "edge":
            continue
        ok, err = judged(r)
        failed += not ok
        console.print(
            f"{'PASS' if ok else 'FAIL'} {r['job']} {r['host']}: predicted {r['predicted']:.3f} host cores, "
            f"measured {r['measured']:.3f} ({err:+.0%})"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    main()
