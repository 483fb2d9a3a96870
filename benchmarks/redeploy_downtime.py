"""Redeploy downtime of `placement apply` on a real Flink 2.3 cluster, against a plain cancel + submit baseline.

Starts its own cluster from the apache-flink-libraries wheel: a JobManager and TaskManagers ``server`` (127.0.0.1) and
``rpi1`` (127.0.0.2), each declaring the external resource of its name. ``--mode custom`` (the default): the
JobManager runs the scheduler extension (installed into a Flink home of the benchmark's own, launched in bin/config.sh's
classpath order) and the IoT job is submitted unmodified; ``--mode vanilla``: stock Flink, the job places itself from
its ``--placement`` argument. Then it alternates two plans with `placement apply` (preflight, lock, stop with
savepoint, schedulercfg or mapping, resubmit from the savepoint, wait RUNNING, verify every subtask, record) and, in
the same run, the baseline: cancel the job and submit it again from scratch (no savepoint, state lost).

Downtime = the stop (or cancel) request -> the new job and every vertex RUNNING, polled every 0.5 s. The hosts are
this machine (loopback addresses, so apply runs its host commands locally instead of over SSH). Target: median
<= 15 s. Prints a PASS/FAIL verdict; exit 1 on FAIL, which includes any apply that did not verify green.

    python benchmarks/redeploy_downtime.py [--runs 5] [--mode custom|vanilla]
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
from placement.errors import PlacementError
from placement.flink.home import find_flink_home
from placement.flink.rest import FlinkRest
from placement.lab.flink import ClusterSpec, TaskManagerSpec, start_cluster
from placement.lab.home import make_lab_home, scheduler_dir
from placement.lab.jobs import IOT_SENSOR_JOB, build_jobs_jar
from placement.scheduler import jobmanager_config

TARGET_S = 15.0
ADDRESSES = {"server": "127.0.0.1", "rpi1": "127.0.0.2"}  # distinct: a schedulercfg names TaskManagers by address


def write_local_inventory(path: Path, rest_url: str, home: Path, jar: Path, mode: str) -> Path:
    doc = {
        "version": 1,
        "name": "bench-redeploy",
        "hosts": [
            {
                "name": "server",
                "address": ADDRESSES["server"],
                "role": "server",
                "cores": 4,
                "memory": "4GiB",
                "task_slots": 4,
            },
            {"name": "rpi1", "address": ADDRESSES["rpi1"], "role": "edge", "model": "rpi4b"},
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {
            "rest_url": rest_url,
            "home": str(home),
            "jobmanager": "server",
            "placement_mode": mode,
            "savepoint_dir": (home / "savepoints").as_uri(),
        },
        "job": {"name": JOB_NAME, "jar": str(jar), "entry_class": IOT_SENSOR_JOB, "program_args": JOB_ARGS},
    }
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def running(rest: FlinkRest) -> str:
    return next(j.id for j in rest.running_jobs() if j.name == JOB_NAME)


def apply_once(plan_dir: Path, inventory: Path, audit: Path) -> tuple[float | None, float, str]:
    t0 = time.monotonic()
    try:
        req = load_request(plan_dir, inventory, settle_s=5.0)
        prepared = prepare(req)
    except PlacementError as exc:
        print(f"     refused: {exc}")
        return None, time.monotonic() - t0, "refused"
    try:
        outcome = execute(prepared, audit_path=audit, echo=lambda s: None)
        return outcome.downtime_s, time.monotonic() - t0, outcome.status
    except ApplyFailed as exc:
        print(f"     failed: {exc}")
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


def cluster_spec(work: Path, mode: str) -> ClusterSpec:
    home = make_lab_home(work, find_flink_home(), with_extension=mode == "custom")
    tms = tuple(
        TaskManagerSpec(
            name,
            slots=4,
            address=address,
            external_resource=name,
            external_resource_amount=4 if mode == "custom" else 16,
        )
        for name, address in ADDRESSES.items()
    )
    return ClusterSpec(
        work_dir=work / "cluster",
        taskmanagers=tms,
        flink_home=home.path,
        jobmanager_conf_dir=home.path / "conf",
        jobmanager_extra_config=jobmanager_config(str(scheduler_dir(home.path))) if mode == "custom" else {},
    )


def verdict(rows: list[tuple[str, int, float | None, float | None, str]], runs: int) -> bool:
    print()
    print(f"{'kind':<22} {'runs':>4} {'median s':>9} {'max s':>7} {'target':>8}")
    medians: dict[str, float] = {}
    for kind in ("placement apply", "cancel+submit (base)"):
        values = [
            r[2] for r in rows if r[0] == kind and r[2] is not None and (kind != "placement apply" or r[4] == "applied")
        ]
        if not values:
            print(f"{kind:<22} {0:>4} {'-':>9} {'-':>7}")
            continue
        medians[kind] = statistics.median(values)
        mark = ("PASS" if medians[kind] <= TARGET_S else "FAIL") if kind == "placement apply" else "-"
        print(f"{kind:<22} {len(values):>4} {medians[kind]:>9.2f} {max(values):>7.2f} {mark:>8}")
    applied = sum(1 for r in rows if r[0] == "placement apply" and r[4] == "applied")
    ok = applied == runs and medians.get("placement apply", float("inf")) <= TARGET_S
    base = medians.get("cancel+submit (base)")
    if "placement apply" in medians and base:
        print(
            f"\napply vs cancel+submit: {medians['placement apply'] / base:.2f}x the baseline's median downtime "
            "(the baseline loses all state; apply restores it from the savepoint)"
        )
    print(
        f"applies that verified green: {applied}/{runs}; target: median stop requested -> RUNNING again <= "
        f"{TARGET_S:.0f} s"
    )
    print(("PASS" if ok else "FAIL") + (f": {runs - applied} apply(s) did not verify green" if applied < runs else ""))
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="applies and baseline redeploys each")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds the job runs between redeploys")
    ap.add_argument("--mode", choices=("custom", "vanilla"), default="custom")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-redeploy-"))
    jar = build_jobs_jar(work / "jar").path
    spec = cluster_spec(work, args.mode)
    cluster = start_cluster(spec, die_with_parent=True)
    rows: list[tuple[str, int, float | None, float | None, str]] = []
    try:
        rest = FlinkRest(cluster.rest_url)
        inventory = write_local_inventory(work / "inventory.yaml", cluster.rest_url, spec.flink_home, jar, args.mode)
        jar_id = rest.upload_jar(jar)
        first = rest.run_jar(jar_id, entry_class=IOT_SENSOR_JOB, program_args=JOB_ARGS)
        rest.wait_until_running(first)
        ids = {v.name: v.id for v in rest.job(first).vertices}  # custom mode finds vertices by id
        plans = [
            write_plan_dir(work / "plan-placed", inventory, PLACED, vertex_ids=ids),
            write_plan_dir(work / "plan-moved", inventory, MOVED, vertex_ids=ids),
        ]
        print(f"{args.mode} mode, Flink home {spec.flink_home}")
        print(f"{'run':>4} {'kind':<22} {'downtime s':>10} {'total s':>8} {'status':<12}")
        for i in range(args.runs):
            time.sleep(args.settle)
            downtime, total, status = apply_once(plans[i % 2], inventory, work / "audit.jsonl")
            rows.append(("placement apply", i + 1, downtime, total, status))
            print(
                f"{i + 1:>4} {'placement apply':<22} {downtime if downtime is not None else float('nan'):>10.2f} "
                f"{total:>8.2f} {status:<12}",
                flush=True,
            )
        for i in range(args.runs):
            time.sleep(args.settle)
            downtime = cancel_and_submit(rest, jar_id)
            rows.append(("cancel+submit (base)", i + 1, downtime, downtime, "ok"))
            print(f"{i + 1:>4} {'cancel+submit (base)':<22} {downtime:>10.2f} {downtime:>8.2f} {'ok':<12}", flush=True)
    finally:
        cluster.stop()
    return 0 if verdict(rows, args.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
