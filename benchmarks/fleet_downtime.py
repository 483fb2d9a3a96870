"""A fleet's change applied one job at a time vs stop all, start all: each job's downtime and the change's length.

`placement apply --plan FLEET` moves the jobs of a fleet sequentially when an order exists that never overloads a
link or host in a mixed state, else it stops every job first and then starts them all (issue 24). This measures what
each costs on a real Flink 2.3 cluster started from the apache-flink-libraries wheel (custom mode: the scheduler
extension places each job from its schedulercfg, and the job graph is the same whatever the placement, so each
change can read what the running placements use — in vanilla mode the lab job chains by its ``--placement``, the
running graph differs from the next plan's and apply rightly falls back to stop-all; a JobManager and TaskManagers
``server`` 127.0.0.1 and ``rpi1`` 127.0.0.2, so apply runs its host commands here instead of over SSH): two IoT jobs,
and fleets that move both of them between two placements, applied alternately

* sequential — each job's plan names its profile, so the order's mixed states can be checked (a 50 Mbit/s link,
  far from full): stop A → redeploy A → verify A, then B;
* stop-all — the same fleet with ``--fleet-order stop-all``: stop A, stop B, then redeploy and verify A, then B.

Per strategy: each job's downtime (its stop requested → its new job and every vertex RUNNING, as apply reports it),
the longest of a change's jobs, the fleet's summed downtime and the whole change (lock to last verify), medians over
``--runs`` changes. Exit 1 when a change did not verify green.

    python benchmarks/fleet_downtime.py [--runs 4] [--settle 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "apply"), str(ROOT / "benchmarks")]

import yaml
from apply_support import JOB_ARGS, JOB_NAME, MOVED, PLACED, fleet_profile
from redeploy_downtime import cluster_spec, write_local_inventory

from placement.apply.fleet import FleetFailed, execute_fleet, load_fleet, prepare_fleet
from placement.errors import PlacementError
from placement.flink.rest import FlinkRest
from placement.lab.flink import start_cluster
from placement.lab.jobs import IOT_SENSOR_JOB, build_jobs_jar
from support.plan_dirs import write_fleet_dir

JOB_B = "pp-apply-iot-b"
ARGS_B = [*JOB_ARGS[:-1], JOB_B]  # the same job under another name (JOB_ARGS ends with --job-name NAME)
STRATEGIES = ("sequential", "stop-all")


def write_fleets(work: Path, inventory: Path, ids: dict[str, str]) -> dict[int, Path]:
    """target -> a fleet directory: target 0 puts A placed and B moved, target 1 the other way round; each job's plan
    names its profile, so what the running placements put on the link is known and an order can be checked."""
    profiles = {n: fleet_profile(work / f"{n}.profile.json", n, ids) for n in (JOB_NAME, JOB_B)}
    targets = ({JOB_NAME: PLACED, JOB_B: MOVED}, {JOB_NAME: MOVED, JOB_B: PLACED})
    return {
        t: write_fleet_dir(
            work / f"fleet-{t}",
            inventory,
            mappings,
            profiles=profiles,
            vertex_ids=ids,
            link_mbit={"rpi1→server": {JOB_NAME: 0.4, JOB_B: 0.4}},
        )
        for t, mappings in enumerate(targets)
    }


def apply_fleet_once(fleet: Path, inventory: Path, strategy: str) -> tuple[str, str, dict[str, float], float]:
    """(strategy apply chose, status, job -> downtime s, the change's s)."""
    fp = prepare_fleet(
        load_fleet(fleet, inventory, settle_s=2.0), fleet_order="stop-all" if strategy == "stop-all" else "auto"
    )
    try:
        outcome = execute_fleet(fp, audit_path=fleet / "apply-audit.jsonl", echo=lambda s: None)
    except FleetFailed as exc:
        outcome = exc.outcome
        print(f"     failed: {exc}")
    finally:
        fp.close()
    downtimes = {j: o.downtime_s for j, o in outcome.outcomes.items() if o.downtime_s is not None}
    if fp.order.strategy != strategy:
        print(f"     apply chose {fp.order.strategy}: {fp.order.reason} {fp.load_notes}")
    return fp.order.strategy, outcome.status, downtimes, outcome.seconds


def report(rows: list[dict]) -> bool:
    print()
    print(
        f"{'strategy':<11} {'changes':>7} {'job A s':>8} {'job B s':>8} {'longest s':>9} {'sum s':>7} {'change s':>8}"
    )
    for s in STRATEGIES:
        ok = [r for r in rows if r["strategy"] == s and r["status"] == "applied"]
        if not ok:
            print(f"{s:<11} {0:>7}")
            continue
        med = {
            k: statistics.median(v(r) for r in ok)
            for k, v in (
                ("a", lambda r: r["downtime"][JOB_NAME]),
                ("b", lambda r: r["downtime"][JOB_B]),
                ("longest", lambda r: max(r["downtime"].values())),
                ("sum", lambda r: sum(r["downtime"].values())),
                ("change", lambda r: r["seconds"]),
            )
        }
        print(
            f"{s:<11} {len(ok):>7} {med['a']:>8.2f} {med['b']:>8.2f} {med['longest']:>9.2f} {med['sum']:>7.2f} "
            f"{med['change']:>8.2f}"
        )
    print("(medians; a job's downtime: its stop requested -> its new job RUNNING; job A is moved or stopped first)")
    bad = [r for r in rows if r["status"] != "applied" or r["chosen"] != r["strategy"]]
    for r in bad:
        print(f"FAIL: run {r['run']} ({r['strategy']}): {r['status']}, apply chose {r['chosen']}")
    print("PASS" if not bad else "FAIL")
    return not bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4, help="changes per strategy")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds the jobs run between changes")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-fleet-downtime-"))
    jar = build_jobs_jar(work / "jar").path
    spec = cluster_spec(work, "custom")
    cluster = start_cluster(spec, die_with_parent=True)
    rows: list[dict] = []
    try:
        rest = FlinkRest(cluster.rest_url)
        inventory = write_local_inventory(work / "inventory.yaml", cluster.rest_url, spec.flink_home, jar, "custom")
        doc = yaml.safe_load(inventory.read_text())
        doc["jobs"] = [{"name": JOB_B, "program_args": ARGS_B}]
        inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
        jar_id = rest.upload_jar(jar)
        jobs = [rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=a) for a in (JOB_ARGS, ARGS_B)]
        for job in jobs:
            rest.wait_until_running(job)
        ids = {v.name: v.id for v in rest.job(jobs[0]).vertices}  # custom mode finds vertices by id (B's are the same)
        fleets = write_fleets(work, inventory, ids)
        print(f"{'run':>4} {'strategy':<11} {'job A s':>8} {'job B s':>8} {'change s':>8} status")
        run = 0
        for _ in range(args.runs):
            for s in STRATEGIES:
                time.sleep(args.settle)
                chosen, status, downtime, seconds = apply_fleet_once(fleets[run % 2], inventory, s)
                run += 1
                rows.append(
                    {
                        "run": run,
                        "strategy": s,
                        "chosen": chosen,
                        "status": status,
                        "downtime": downtime,
                        "seconds": seconds,
                    }
                )
                print(
                    f"{run:>4} {s:<11} {downtime.get(JOB_NAME, float('nan')):>8.2f} "
                    f"{downtime.get(JOB_B, float('nan')):>8.2f} {seconds:>8.2f} {status}",
                    flush=True,
                )
    except PlacementError as exc:
        print(f"error: {exc}")
        return 1
    finally:
        cluster.stop()
    return 0 if report(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
