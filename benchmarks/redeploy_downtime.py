"""Redeploy downtime of `placement apply` on a real Flink 2.3 cluster, against a plain cancel + submit baseline.

Starts its own cluster (JobManager + TaskManagers ``server`` and ``rpi1`` with their external resources, from the
apache-flink-libraries wheel), runs the lab IoT job, then alternates two vanilla plans with `placement apply`
(preflight, lock, stop with savepoint, resubmit from it, wait RUNNING, verify, record) and, in the same run, the
baseline: cancel the job and submit it again from scratch (no savepoint, state lost).

Downtime = the stop (or cancel) request -> the new job and every vertex RUNNING, polled every 0.5 s. The hosts are
this machine (127.0.0.1, so apply runs its host commands locally instead of over SSH; none of them falls inside the
downtime window in vanilla mode). Target: median and max <= 15 s.

    python benchmarks/redeploy_downtime.py [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "apply")]

import yaml
from apply_support import JOB_ARGS, JOB_NAME, MOVED, PLACED, write_plan_dir

from placement.apply import ApplyFailed, execute, prepare
from placement.apply.request import load_request
from placement.flink_rest import FlinkRest
from placement.lab.flink import ClusterSpec, TaskManagerSpec, start_cluster
from placement.lab.jobs import IOT_SENSOR_JOB, build_jobs_jar

TARGET_S = 15.0


def write_local_inventory(path: Path, rest_url: str, home: Path, jar: Path) -> Path:
    doc = {
        "version": 1, "name": "bench-redeploy",
        "hosts": [
            {"name": "server", "address": "127.0.0.1", "role": "server", "cores": 4, "memory": "4GiB", "task_slots": 4},
            {"name": "rpi1", "address": "127.0.0.1", "role": "edge", "model": "rpi4b"},
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {"rest_url": rest_url, "home": str(home), "jobmanager": "server", "placement_mode": "vanilla",
                  "savepoint_dir": (home / "savepoints").as_uri()},
        "job": {"name": JOB_NAME, "jar": str(jar), "entry_class": IOT_SENSOR_JOB, "program_args": JOB_ARGS},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def running(rest: FlinkRest) -> str:
    return next(j.id for j in rest.running_jobs() if j.name == JOB_NAME)


def apply_once(plan_dir: Path, inventory: Path, audit: Path) -> tuple[float | None, float, str]:
    t0 = time.monotonic()
    req = load_request(plan_dir, inventory)
    prepared = prepare(req)
    try:
        outcome = execute(prepared, audit_path=audit, echo=lambda s: None)
        return outcome.downtime_s, time.monotonic() - t0, outcome.status
    except ApplyFailed as exc:
        return exc.outcome.downtime_s, time.monotonic() - t0, exc.outcome.status
    finally:
        prepared.close()


def cancel_and_submit(rest: FlinkRest, jar_id: str) -> float:
    job = running(rest)
    t0 = time.monotonic()
    rest.cancel(job)
    rest.wait_for_state(job, ("CANCELED",), timeout=60)
    new = rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=JOB_ARGS)
    rest.wait_until_running(new, timeout=120)
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="applies and baseline redeploys each")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds the job runs between redeploys")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-redeploy-"))
    tms = (TaskManagerSpec("server", slots=4, external_resource="server", external_resource_amount=16),
           TaskManagerSpec("rpi1", slots=4, external_resource="rpi1", external_resource_amount=16))
    jar = build_jobs_jar(work / "jar").path
    cluster = start_cluster(ClusterSpec(work_dir=work / "cluster", taskmanagers=tms), die_with_parent=True)
    rows: list[tuple[str, int, float | None, float | None, str]] = []
    try:
        rest = FlinkRest(cluster.rest_url)
        home = work / "flink-home"
        home.mkdir()
        inventory = write_local_inventory(work / "inventory.yaml", cluster.rest_url, home, jar)
        plans = [write_plan_dir(work / "plan-placed", inventory, PLACED), write_plan_dir(work / "plan-moved", inventory, MOVED)]
        jar_id = rest.upload_jar(jar)
        rest.wait_until_running(rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=JOB_ARGS))
        print(f"{'run':>4} {'kind':<22} {'downtime s':>10} {'total s':>8} {'status':<12}")
        for i in range(args.runs):
            time.sleep(args.settle)
            downtime, total, status = apply_once(plans[i % 2], inventory, work / "audit.jsonl")
            rows.append(("placement apply", i + 1, downtime, total, status))
            print(f"{i + 1:>4} {'placement apply':<22} {downtime if downtime is not None else float('nan'):>10.2f} {total:>8.2f} {status:<12}", flush=True)
        for i in range(args.runs):
            time.sleep(args.settle)
            downtime = cancel_and_submit(rest, jar_id)
            rows.append(("cancel+submit (base)", i + 1, downtime, downtime, "ok"))
            print(f"{i + 1:>4} {'cancel+submit (base)':<22} {downtime:>10.2f} {downtime:>8.2f} {'ok':<12}", flush=True)
    finally:
        cluster.stop()
    print()
    print(f"{'kind':<22} {'runs':>4} {'median s':>9} {'max s':>7} {'target':>8}")
    ok = True
    for kind in ("placement apply", "cancel+submit (base)"):
        values = [r[2] for r in rows if r[0] == kind and r[2] is not None]
        if not values:
            continue
        med, mx = statistics.median(values), max(values)
        verdict = ("PASS" if mx <= TARGET_S else "FAIL") if kind == "placement apply" else "-"
        ok &= verdict != "FAIL"
        print(f"{kind:<22} {len(values):>4} {med:>9.2f} {mx:>7.2f} {verdict:>8}")
    applied = sum(1 for r in rows if r[0] == "placement apply" and r[4] == "applied")
    print(f"\napplies that verified green: {applied}/{args.runs}; target: stop requested -> RUNNING again <= {TARGET_S:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
