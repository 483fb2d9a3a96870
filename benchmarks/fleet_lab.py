"""Two jobs on the same Pis and uplinks in the real lab: all on the server, each planned alone, planned together
(issue 24).

    .venv/bin/python benchmarks/fleet_lab.py [--scale 1.5] [--enrich-work 200000] [--filter-work 52000]
                                             [--inventory inventory/lab.yaml] [--uplink MBIT] [--workdir DIR]
                                             [--profiles DIR] [--keep]

Steps: ``lab up`` (custom mode) -> the IoT and Nexmark lab jobs, both sources on both Pis, run together on the server
(a schedulercfg per job puts every subtask there, as a job runs before it is planned for the edge) at their profile
rates (IoT 500 readings/s, Nexmark 580 bids/s per source subtask) -> 60 s for Flink's meters -> both collected for
60 s at once -> ``profile`` each -> plans at ``--scale`` × those rates: ``placement plan`` with each profile alone
(what a user does today: each plan takes the Pis for itself), and with both profiles together (one model, shared
capacities), and the baseline all-on-server (sources on the Pis, the rest on the server; priced, not solved) -> for
each strategy: both jobs submitted unmodified at the target rates, then ``placement apply`` — each alone or
all-on-server plan applied to its own job, the joint plan as one change (``apply --plan FLEET``) — 60 s to settle, ``lab
measure`` over ``--window`` s -> one table per strategy and job (throughput vs target, sources back-pressured) and
per uplink (job data vs the strategy's prediction, the Pi's CPU predicted vs measured) -> ``lab down``.

The lab is the shipped one (``inventory/lab.yaml``: two Pis of one core each, 0.3 of a server core as a CPU quota,
2 Mbit/s uplinks; ``--uplink`` shapes every uplink to another rate). Each job does real work per record after its
data-cutting filter: IoT's Enrich mixes a hash ``--enrich-work`` rounds per reading (~0.6 ms of CPU) and Nexmark's
Filter Auctions ``--filter-work`` rounds per bid (~0.16 ms). Without that work no plan can relieve a Pi: the pinned
sources are most of a Pi's CPU and every operator after them is cheap and cuts the data, so moving one to the server
ships more data for no CPU back (measured at 10× with ``--uplink 20``: the joint plan shipped raw bids, 9.2 Mbit/s
per uplink, and its Pis used 0.84/0.80 cores where the alone plans' used 0.75/0.77).

Sized (``--scale 1.5``) so that each job alone fits a Pi (its plan puts the job's work there: least WAN) but not both:
the alone plans together put ~1.3-1.4 predicted cores on each Pi of 1; the joint plan moves both Pis' Enrich and one
Pi's Filter Auctions to the server, where their input still fits the uplink. Targets: every subtask of both jobs
placed as planned; the joint plan holds both jobs' targets (>= 95 %, sources back-pressured < 10 % of the time); job
data per uplink within ±15 % of the joint prediction; the alone plans fall short on at least one job. Prints PASS or
FAIL lines; exit 1 on any FAIL.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from lab_placements import DATA_FLOOR_MBIT, DATA_TOLERANCE, JOBS, cli, holds_rate, job_args, plan_to

from placement.flink.rest import FlinkRest
from placement.lab import chain
from placement.lab.measure import measure
from placement.scheduler.naming import schedulercfg_filename

PLACEMENT = str(Path(sys.executable).with_name("placement"))
PROFILE_RATES = {"iot": {"Source: Sensors": 500.0}, "nexmark": {"Source: Bids": 580.0}}
KEYS = ("iot", "nexmark")
WORK_ARGS = {"iot": "--enrich-work", "nexmark": "--filter-work"}  # hash rounds per record, set from the options
WORK: dict[str, int] = {}


def fleet_args(key: str, rates: dict[str, float], parallelism: dict[str, int]) -> list[str]:
    """The job's arguments: its rates and parallelism (``lab_placements.job_args``) and its operator's work."""
    return [*job_args(JOBS[key], rates, parallelism), *([WORK_ARGS[key], str(WORK[key])] if WORK.get(key) else [])]


def lab_inventory(inventory: str, uplink_mbit: float | None, out: Path) -> str:
    """The inventory ``lab up`` brings up: ``inventory`` itself, or a copy whose every uplink has ``uplink_mbit``
    (the lab shapes the links to it, and every plan reads the same figure from the running inventory)."""
    if uplink_mbit is None:
        return inventory
    doc = yaml.safe_load(Path(inventory).read_text())
    for link in doc.get("links") or []:
        link["bandwidth"] = f"{uplink_mbit:g}mbit"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"# written by benchmarks/fleet_lab.py: {inventory} with {uplink_mbit:g} Mbit/s uplinks\n"
        + yaml.safe_dump(doc, sort_keys=False)
    )
    return str(out)


def fleet_inventory(running_inv: str, out: Path, rates: dict[str, dict[str, float]]) -> tuple[str, dict[str, dict]]:
    """The running lab inventory with both jobs' source pins (every Pi) and a ``jobs:`` entry per job: what apply
    resubmits at the target rates. Returns its path and each job's source parallelism."""
    doc = yaml.safe_load(Path(running_inv).read_text())
    edges = [h["name"] for h in doc["hosts"] if h.get("role") == "edge"]
    pins, parallelism, jobs = {}, {}, []
    for key in KEYS:
        spec = JOBS[key]
        parallelism[key] = {s.vertex: len(edges) for s in spec.sources}
        pins.update({s.vertex: list(edges) for s in spec.sources})
        jobs.append(
            {
                "name": spec.job_name,
                "entry_class": spec.entry_class,
                "program_args": fleet_args(key, rates[key], parallelism[key]),
            }
        )
    doc["pins"] = {**(doc.get("pins") or {}), "sources": pins}
    doc["job"] = {**(doc.get("job") or {}), **jobs[0]}
    doc["jobs"] = jobs
    out.write_text(
        "# written by benchmarks/fleet_lab.py: the lab with the IoT and Nexmark jobs on both Pis\n"
        + yaml.safe_dump(doc, sort_keys=False)
    )
    return str(out), parallelism


def on_server(state: dict, inventory: str, parallelism: dict) -> list[Path]:
    """Write a schedulercfg per job that puts every subtask on the server (the job's vertices as a first submission
    names them), so that the profile run is where a job runs before it is planned for the edge; returns the files.

    Unpinned, Flink's scheduler puts the subtasks wherever: some runs all on the server, others all twenty on one Pi
    (2 of 3 runs on 2026-11-27). A profile from a Pi carries that TaskManager's fixed per-subtask CPU (timers, flushers,
    metrics of all twenty) as CPU per record, which the plan then multiplies by the rate scale: at 9.5x it put one
    source thread at 0.96 of a Pi core, where at 10x the Pis measured 0.75 host cores for all their eight subtasks."""
    rest = FlinkRest(state["rest_url"])
    doc = yaml.safe_load(Path(inventory).read_text())
    sched = Path(doc["flink"]["scheduler_dir"])
    server = next(h["address"] for h in doc["hosts"] if h.get("role") == "server")
    files = []
    for key in KEYS:
        chain.cancel_all(rest)
        job = chain.submit(
            rest, state["jar"], JOBS[key].entry_class, fleet_args(key, PROFILE_RATES[key], parallelism[key])
        )
        lines = [
            f"{v.name} ({i + 1}/{v.parallelism}); {server}"
            for v in rest.job(job).vertices
            for i in range(v.parallelism)
        ]
        chain.cancel_all(rest)
        files.append(sched / schedulercfg_filename(JOBS[key].job_name))
        files[-1].write_text("\n".join(lines) + "\n")
    return files


def profile_together(state: dict, inventory: str, parallelism: dict, work: Path) -> dict[str, str]:
    """Both jobs on the server at their profile rates, collected at once for 60 s, profiled one by one."""
    rest = FlinkRest(state["rest_url"])
    pinned = on_server(state, inventory, parallelism)
    chain.cancel_all(rest)
    ids = {
        key: chain.submit(
            rest, state["jar"], JOBS[key].entry_class, fleet_args(key, PROFILE_RATES[key], parallelism[key])
        )
        for key in KEYS
    }
    for f in pinned:
        f.unlink()  # the strategies' jobs are submitted unpinned, then applied
    where = {
        (v, s.taskmanager_id) for k in KEYS for v in [*rest.job(ids[k]).vertices] for s in rest.subtasks(ids[k], v.id)
    }
    if {tm for _v, tm in where} != {"server"}:
        print(f"warning: the profile run is not all on the server: {sorted({tm for _v, tm in where})}", file=sys.stderr)
    time.sleep(chain.METER_SETTLE_S)
    collectors = {
        key: subprocess.Popen(
            [
                PLACEMENT,
                "metrics",
                "collect",
                "--rest",
                state["rest_url"],
                "--job",
                ids[key],
                "--duration",
                "60",
                "--interval",
                "2",
                "--out",
                str(work / f"fleet-metrics-{key}"),
                "--quiet",
            ],
            cwd=ROOT,
        )
        for key in KEYS
    }
    for key, proc in collectors.items():
        if proc.wait(timeout=300) != 0:
            sys.exit(f"metrics collect of {key} failed")
    profiles = {}
    for key in KEYS:
        profiles[key] = str(work / f"fleet-profile-{key}.json")
        cli(
            "profile",
            str(work / f"fleet-metrics-{key}"),
            "--out",
            profiles[key],
            "--inventory",
            inventory,
            "--engine",
            "pandas",
            "--quiet",
        )
    chain.cancel_all(rest)
    return profiles


def all_on_server_dirs(inventory: str, profiles: dict[str, str], scale: float, work: Path) -> dict[str, Path]:
    """Per job, the all-on-server placement (sources on the Pis where their data is born, the rest on the server)
    written as a plan directory at ``scale``: the baseline, priced by the cost model as `plan --compare` prices it
    (no solver: it does not fit the uplinks, which is the point)."""
    from placement.costmodel.model import PlanOptions, build_problem
    from placement.inventory import load_inventory
    from placement.lab.plans import write_lab_plan
    from placement.profile.format import load_profile
    from placement.solver.baselines import all_on_server

    inv = load_inventory(inventory)
    out = {}
    for key in KEYS:
        profile = load_profile(profiles[key])
        problem = build_problem(
            inv, profile, PlanOptions(rate_scale=scale, placement_mode="custom"), inventory_source=inventory
        )
        out[key] = write_lab_plan(
            work / f"plan-all-on-server-{key}",
            problem,
            all_on_server(problem),
            job=JOBS[key].job_name,
            inventory=inv,
            inventory_path=inventory,
            profile=profile,
            profile_path=profiles[key],
        )
    return out


def predicted_links(plan_dirs: list[Path]) -> dict[str, float]:
    """Edge host -> Mbit/s the plans predict together (each plan.json's links, summed)."""
    out: dict[str, float] = {}
    for d in plan_dirs:
        for link in json.loads((d / "plan.json").read_text())["links"]:
            out[link["from"]] = out.get(link["from"], 0.0) + link["mbit"]
    return out


def predicted_cpu(plan_dirs: list[Path]) -> dict[str, float]:
    """Host -> cores the plans predict together: every plan's subtask cores there plus the TaskManager's baseline once
    (each plan.json's ``predicted_cores`` counts the baseline)."""
    subtasks: dict[str, float] = {}
    baseline: dict[str, float] = {}
    for d in plan_dirs:
        for h in json.loads((d / "plan.json").read_text())["hosts"]:
            subtasks[h["host"]] = subtasks.get(h["host"], 0.0) + float(h.get("subtask_cores", h["cores_used"]) or 0.0)
            baseline[h["host"]] = max(baseline.get(h["host"], 0.0), float(h.get("baseline_cores") or 0.0))
    return {h: subtasks[h] + baseline[h] for h in subtasks}


def run_strategy(
    name: str,
    state: dict,
    inventory: str,
    targets: dict[str, dict[str, float]],
    parallelism: dict[str, dict[str, int]],
    apply_cmds,
    plan_dirs: list[Path],
    args,
    work: Path,
    console: Console,
) -> dict:
    predicted, predicted_cores = predicted_links(plan_dirs), predicted_cpu(plan_dirs)
    target_args = {k: fleet_args(k, targets[k], parallelism[k]) for k in KEYS}
    rest = FlinkRest(state["rest_url"])
    chain.cancel_all(rest)
    ids = {key: chain.submit(rest, state["jar"], JOBS[key].entry_class, target_args[key]) for key in KEYS}
    placed = True
    for cmd in apply_cmds(ids):
        proc = subprocess.run(
            [PLACEMENT, *cmd, "--inventory", inventory, "--settle", "5"],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=900,
        )
        if proc.returncode != 0 or "WRONG" in proc.stdout:
            placed = False
            console.print(f"[red]{name}: apply failed[/] ({proc.returncode}): {proc.stderr.strip()[-800:]}")
    time.sleep(args.settle)
    m = measure(work, args.window)
    jobs = {}
    for j in m.jobs:
        key = next(k for k in KEYS if JOBS[k].job_name == j.name)
        spec = JOBS[key]
        by_name = {v.name: v for v in j.vertices}
        target = sum(targets[key][s.vertex] * parallelism[key][s.vertex] for s in spec.sources)
        throughput = sum(
            max(by_name[s.vertex].records_out_per_s, by_name[s.next_vertex].records_in_per_s)
            for s in spec.sources
            if s.vertex in by_name and s.next_vertex in by_name
        )
        sources = [by_name[s.vertex] for s in spec.sources if s.vertex in by_name]
        jobs[key] = {
            "throughput": throughput,
            "target": target,
            "source_bp": sum(v.backpressured_ms_per_s for v in sources) / max(len(sources), 1) / 1000,
        }
    chain.cancel_all(rest)
    return {
        "strategy": name,
        "placed": placed,
        "jobs": jobs,
        "links": {lk.host: (predicted.get(lk.host, 0.0), lk.data_mbit, lk.mbit) for lk in m.links},
        "cpu": {c.host: (predicted_cores.get(c.host), c.host_cores) for c in m.cpu},
    }


def print_tables(console: Console, rows: list[dict], scale: float) -> None:
    table = Table(
        title=f"IoT + Nexmark on the same Pis at {scale:g}x the profile rates: all on the server, each planned "
        "alone, planned together"
    )
    for c in ("strategy", "placed as planned", "job", "throughput / target", "sources back-pressured", "holds"):
        table.add_column(c, justify="left" if c in ("strategy", "job") else "right")
    for r in rows:
        for key, j in r["jobs"].items():
            table.add_row(
                r["strategy"],
                "yes" if r["placed"] else "NO",
                JOBS[key].title,
                f"{j['throughput']:,.0f} / {j['target']:,.0f}",
                f"{j['source_bp']:.0%}",
                "yes" if holds_rate(j) else "no",
            )
    console.print(table)
    links = Table(
        title="Per uplink: job data of both jobs (Mbit/s) vs the strategy's plans, and the Pi's CPU "
        "(host cores: the plans' prediction, baseline included, vs measured; the quota is 1)"
    )
    for c in (
        "strategy",
        "link",
        "predicted",
        "measured data",
        "wire",
        "data / predicted",
        "Pi CPU predicted",
        "Pi CPU measured",
    ):
        links.add_column(c, justify="left" if c in ("strategy", "link") else "right")
    for r in rows:
        for host, (pred, data, wire) in sorted(r["links"].items()):
            cpu_pred, cpu = r["cpu"].get(host, (None, None))
            links.add_row(
                r["strategy"],
                f"{host}→server",
                f"{pred:.3f}",
                f"{data:.3f}",
                f"{wire:.3f}",
                f"{data / pred:.2f}" if pred else "-",
                f"{cpu_pred:.2f}" if cpu_pred is not None else "-",
                f"{cpu:.2f}" if cpu is not None else "-",
            )
    console.print(links)


def failures_of(rows: list[dict]) -> list[str]:
    by = {r["strategy"]: r for r in rows}
    joint, alone = by.get("joint"), by.get("each alone")
    out = [f"{r['strategy']}: not every subtask placed as planned" for r in rows if not r["placed"]]
    if joint is None or alone is None:
        return [*out, "a strategy did not run"]
    out += [
        f"joint: {JOBS[k].title} does not hold its target ({j['throughput']:,.0f} of {j['target']:,.0f}, "
        f"sources back-pressured {j['source_bp']:.0%})"
        for k, j in joint["jobs"].items()
        if not holds_rate(j)
    ]
    for host, (pred, data, _wire) in sorted(joint["links"].items()):
        if abs(data - pred) > max(DATA_TOLERANCE * pred, DATA_FLOOR_MBIT):
            out.append(f"joint: {host}'s job data {data:.3f} vs predicted {pred:.3f} Mbit/s")
    if all(holds_rate(j) for j in alone["jobs"].values()):
        out.append("each alone held both targets: nothing to compare (raise --scale)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.5, help="target rates = this × the profile rates")
    ap.add_argument("--inventory", default=str(ROOT / "inventory" / "lab.yaml"))
    ap.add_argument(
        "--uplink",
        type=float,
        default=0.0,
        help="Mbit/s of every uplink the lab shapes and the plans read (0: the inventory's own)",
    )
    ap.add_argument("--workdir", default="/tmp/placement-fleet-lab/lab")
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=60.0)
    ap.add_argument("--enrich-work", type=int, default=200000, help="IoT: hash rounds Enrich spends per reading")
    ap.add_argument(
        "--filter-work", type=int, default=52000, help="Nexmark: hash rounds Filter Auctions spends per bid"
    )
    ap.add_argument("--keep", action="store_true", help="leave the lab up")
    ap.add_argument(
        "--profiles",
        type=Path,
        help="reuse fleet-profile-{iot,nexmark}.json from this directory (a "
        "previous run's work dir, made with the same --enrich-work and --filter-work) instead of "
        "profiling again",
    )
    args = ap.parse_args()
    work = Path(args.workdir)
    args.uplink = args.uplink or None
    WORK.update(iot=args.enrich_work, nexmark=args.filter_work)
    console = Console(width=200)
    rows: list[dict] = []
    try:
        lab_inv = lab_inventory(args.inventory, args.uplink, work.parent / "fleet-lab.yaml")
        console.print(cli("lab", "up", "--inventory", lab_inv, "--workdir", str(work), "--mode", "custom").strip())
        state = json.loads((work / "lab.json").read_text())
        targets = {k: {v: r * args.scale for v, r in PROFILE_RATES[k].items()} for k in KEYS}
        inventory, parallelism = fleet_inventory(state["lab_inventory"], work / "fleet-inventory.yaml", targets)
        profiles = (
            {k: str(args.profiles / f"fleet-profile-{k}.json") for k in KEYS}
            if args.profiles
            else profile_together(state, inventory, parallelism, work)
        )
        joint_dir = work / "plan-joint"
        plan_to(joint_dir, inventory, *[profiles[k] for k in KEYS], rate_scale=float(f"{args.scale:g}"))
        alone_dirs = {k: work / f"plan-alone-{k}" for k in KEYS}
        for k in KEYS:
            plan_to(alone_dirs[k], inventory, profiles[k], rate_scale=float(f"{args.scale:g}"))
        joint_jobs = [joint_dir / JOBS[k].job_name for k in KEYS]
        server_dirs = all_on_server_dirs(inventory, profiles, args.scale, work)
        rows.append(
            run_strategy(
                "all-on-server",
                state,
                inventory,
                targets,
                parallelism,
                lambda ids: [["apply", str(server_dirs[k]), "--job", ids[k]] for k in KEYS],
                list(server_dirs.values()),
                args,
                work,
                console,
            )
        )
        rows.append(
            run_strategy(
                "each alone",
                state,
                inventory,
                targets,
                parallelism,
                lambda ids: [["apply", str(alone_dirs[k]), "--job", ids[k]] for k in KEYS],
                list(alone_dirs.values()),
                args,
                work,
                console,
            )
        )
        rows.append(
            run_strategy(
                "joint",
                state,
                inventory,
                targets,
                parallelism,
                lambda ids: [["apply", "--plan", str(joint_dir)]],
                joint_jobs,
                args,
                work,
                console,
            )
        )
    finally:
        if not args.keep:
            subprocess.run(
                [PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
            )
    print_tables(console, rows, args.scale)
    (work.parent / "fleet_lab.json").write_text(json.dumps(rows, indent=2, default=str))
    failures = failures_of(rows)
    for f in failures:
        console.print(f"[red]FAIL[/] {f}")
    if not failures:
        console.print(
            "[green]PASS[/]: both plans placed as planned; the joint plan holds both jobs' targets with job data "
            "per uplink within ±15 % of its prediction, where the plans made alone fall short"
        )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
