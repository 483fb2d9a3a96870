"""A lost Pi on the lab (issue 43), shared by ``tests/lab/test_lab_faults.py`` and ``benchmarks/edge_faults.py``.

The ledger job (``deploy/jobs/src/common/placement/lab/LedgerJob.java``: a source per Pi numbering its readings, a
keyed ledger on the server counting per lane what arrives out of turn) is placed from outside through the real
stages: submitted unmodified, collected, profiled (pandas), planned by ``placement plan`` (with its contingencies)
and applied by ``placement apply``. Then a fault (:mod:`placement.lab.faults`) and, sampled every half second:

* the job's state — it must never be FAILED;
* recovery — seconds from the fault until the ledger takes readings of the surviving Pi again after the job's
  restart (the ledger's ``lane<i>.lastMs`` gauge, read as Flink's metric fetcher serves it: up to its update
  interval late);
* then where every subtask runs (the plan's contingency for the lost host), the ledger's gaps and repeats (zero:
  exactly once), and the surviving uplinks' job data against the contingency's prediction;
* the way back: the Pi powered up (or its link restored), its TaskManager registered again, ``placement apply`` of
  the same plan, every subtask where the plan says, no gap or repeat.

The lab's sources make their readings wherever they run, so the fault inventory says the Pis' data reaches the
server when they are lost (``data_reroutes_on_loss``): the contingency charges the server with it, as the lab does.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from placement.collect.collector import CollectOptions, Collector
from placement.errors import PlacementError
from placement.flink.rest import FlinkRest
from placement.lab import chain, faults
from placement.lab.measure import measure_window
from placement.profile.pipeline import build_profile, write_profile
from placement.writers.planjson import PlanDocument, load_plan

JOB_NAME = "ledger"
LEDGER_JOB = "placement.lab.LedgerJob"
RATE = 300  # readings/s per source: ~0.5 Mbit/s of readings per uplink, light for a lab Pi
METER_S = 65  # Flink's rate meters average the last 60 s: a profile of a younger job reads its rates low
ARGS = ("--parallelism", "2", "--rate", str(RATE), "--job-name", JOB_NAME)
SOURCE = "Source: Readings"
LANE_METRIC = re.compile(r"lane(\d+)\.(count|gaps|repeats|lastMs)$")
PLACEMENT = str(Path(sys.executable).with_name("placement"))


@dataclass(frozen=True)
class Placed:
    inventory: Path
    plan_dir: Path
    plan: PlanDocument


@dataclass
class FaultRun:
    kind: str  # power | uplink
    host: str
    fault_at: float  # wall clock, s
    recovery_s: float | None = None  # None: not recovered in time
    states: list[tuple[float, str]] = field(default_factory=list)  # (s after the fault, job state) at each change
    placed_as_contingency: bool = False
    gaps: int | None = None
    repeats: int | None = None
    wan: dict[str, tuple[float, float]] = field(default_factory=dict)  # surviving host -> (measured, predicted) Mbit/s
    back_s: float | None = None  # the way back: from power/link back to the plan verified
    restored: bool = False
    gaps_after_restore: int | None = None
    repeats_after_restore: int | None = None

    @property
    def never_failed(self) -> bool:
        return all(s != "FAILED" for _, s in self.states)


def fault_inventory(lab_inventory: str | Path, out: Path, jar: str) -> Path:
    """The running lab inventory with the ledger as the job apply resubmits, its sources born on the Pis, whose data
    reaches the server while they are lost (the lab's sources make their readings wherever they run)."""
    doc = yaml.safe_load(Path(lab_inventory).read_text())
    edges = [h["name"] for h in doc["hosts"] if h["role"] == "edge"]
    for h in doc["hosts"]:
        if h["role"] == "edge":
            h["data_reroutes_on_loss"] = True
    doc["job"] = {"name": JOB_NAME, "entry_class": LEDGER_JOB, "program_args": list(ARGS), "jar": jar}
    doc["pins"] = {"sources": {SOURCE: edges[:2]}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def place(state: dict, work: Path, *, contingency: bool = True) -> Placed:
    """Submit the ledger, profile it, plan it with its contingencies (``contingency=False``: without, as a placed job
    was before issue 43), apply the plan. Raises on any failure."""
    from placement.apply import execute, prepare
    from placement.apply.request import load_request

    rest = FlinkRest(state["rest_url"])
    chain.cancel_all(rest)
    chain.submit(rest, state["jar"], LEDGER_JOB, list(ARGS))
    _wait("the ledger running", lambda: (job := running_job(rest)) is not None and rest.job(job).all_running, 120)
    time.sleep(METER_S)
    work.mkdir(parents=True, exist_ok=True)
    metrics = work / "metrics"
    Collector(CollectOptions(rest_url=state["rest_url"], out_dir=metrics, job_name=JOB_NAME, duration_s=12,
                             interval_s=2)).run()
    profile = write_profile(build_profile(metrics, engine="pandas", warmup_s=0), work / "profile.json")
    inventory = fault_inventory(state["lab_inventory"], work / "fault-inventory.yaml", state["jar"])
    plan_dir = work / "plan"
    done = subprocess.run([PLACEMENT, "plan", "--inventory", str(inventory), "--profile", str(profile), "--out",
                           str(plan_dir), "--require-contingency" if contingency else "--no-contingency", "--quiet"], capture_output=True, text=True,
                          timeout=300, check=False)
    if done.returncode != 0:
        raise PlacementError(f"placement plan: {done.stderr.strip() or done.stdout.strip()}")
    prepared = prepare(load_request(plan_dir, inventory, job_name=JOB_NAME, settle_s=5))
    try:
        execute(prepared, audit_path=plan_dir / "apply-audit.jsonl", echo=lambda s: None)
    finally:
        prepared.close()
    return Placed(inventory, plan_dir, load_plan(plan_dir))


def running_job(rest: FlinkRest) -> str | None:
    return next((j.id for j in rest.jobs() if j.name == JOB_NAME and j.state not in ("FAILED", "CANCELED",
                                                                                      "FINISHED")), None)


def ledger(rest: FlinkRest, job_id: str) -> dict[int, dict[str, float]]:
    """The ledger's gauges per lane (summed over its subtasks): lane -> {count, gaps, repeats, lastMs (max)}."""
    vid = rest.job(job_id).vertex_named("Ledger").id
    names = [m["id"] for m in rest.get(f"/jobs/{job_id}/vertices/{vid}/subtasks/metrics")
             if LANE_METRIC.search(m["id"])]
    if not names:
        return {}
    out: dict[int, dict[str, float]] = {}
    for m in rest.get(f"/jobs/{job_id}/vertices/{vid}/subtasks/metrics?get={','.join(names)}&agg=sum,max"):
        lane, what = LANE_METRIC.search(m["id"]).groups()  # type: ignore[union-attr]
        out.setdefault(int(lane), {})[what] = float(m["max"] if what == "lastMs" else m["sum"])
    return out


def expected_placement(plan: PlanDocument, lost: str | None) -> dict[str, list[str]]:
    """Vertex name -> host of each subtask: the plan's, or its contingency's for ``lost``."""
    hosts = {(a.vertex_id, a.subtask): a.host for a in plan.assignment}
    if lost is not None:
        c = next(c for c in plan.contingencies or () if c.lost == lost)
        hosts.update({(m.vertex_id, m.subtask): m.to for m in c.moves})
    out: dict[str, list[str]] = {}
    for a in sorted(plan.assignment, key=lambda a: a.subtask):
        out.setdefault(a.vertex, []).append(hosts[(a.vertex_id, a.subtask)])
    return out


def _wait(what: str, predicate: Callable[[], bool], timeout: float, interval: float = 0.5) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if predicate():
                return time.monotonic() - start
        except PlacementError:
            pass
        time.sleep(interval)
    raise PlacementError(f"{what}: not within {timeout:.0f} s")


def recover(state: dict, kind: str, host: str, lanes: list[int], *, timeout: float = 180.0) -> FaultRun:
    """Make the fault and wait for the recovery: the job restarted and RUNNING, the ledger taking readings of every
    lane in ``lanes`` again (``recovery_s`` stays None when that does not happen within ``timeout``)."""
    rest = FlinkRest(state["rest_url"], timeout=5)
    job_before = running_job(rest)
    run = FaultRun(kind, host, time.time())
    if kind == "power":
        faults.power_loss(state, host)
    else:
        faults.cut_uplink(state, host)
    restarted, last = False, None
    while time.time() - run.fault_at < timeout:
        now = time.time() - run.fault_at
        job = running_job(rest)
        try:
            details = rest.job(job) if job else None
        except PlacementError:
            details = None
        st = details.state if details else "NONE"
        if st != last:
            run.states.append((round(now, 1), st))
            last = st
        restarted = restarted or st != "RUNNING" or job != job_before
        if restarted and details is not None and details.all_running:
            try:
                books = ledger(rest, details.id)
            except PlacementError:
                books = {}
            if books and all(books.get(lane, {}).get("lastMs", 0) / 1000 > run.fault_at + now - 3 for lane in lanes):
                run.recovery_s = round(now, 1)
                break
        time.sleep(0.5)
    return run


def undo(state: dict, run: FaultRun) -> float:
    """Power back or the link back; returns when (monotonic) it was undone."""
    if run.kind == "power":
        faults.power_back(state, run.host)
    else:
        faults.restore_uplink(state, run.host)
    return time.monotonic()


def exactly_once(rest: FlinkRest, job: str) -> tuple[int, int]:
    """The ledger's gaps and repeats, every lane together."""
    books = ledger(rest, job)
    return (int(sum(b.get("gaps", 0) for b in books.values())), int(sum(b.get("repeats", 0) for b in books.values())))


def run_fault(state: dict, placed: Placed, kind: str, host: str, *, timeout: float = 180.0,
              wan_window_s: float = 15.0) -> FaultRun:
    """One fault of ``kind`` (``power`` or ``uplink``) on ``host``, its recovery and the way back."""
    from placement.apply import execute, prepare
    from placement.apply.request import load_request

    rest = FlinkRest(state["rest_url"], timeout=5)
    surviving = sorted({a.host for a in placed.plan.assignment if a.host != host} - {"server"})
    lanes = {a.host: a.subtask for a in placed.plan.assignment if a.vertex == SOURCE}
    run = recover(state, kind, host, [lanes[h] for h in surviving if h in lanes], timeout=timeout)
    try:
        if run.recovery_s is None:
            return run
        job = running_job(rest)
        assert job is not None
        time.sleep(5)
        run.placed_as_contingency = rest.placement(job) == expected_placement(placed.plan, host)
        links, _cpu = measure_window(state, wan_window_s)
        contingency = next(c for c in placed.plan.contingencies or () if c.lost == host)
        predicted = {link.source: link.mbit for link in contingency.links}
        run.wan = {m.host: (m.data_mbit, predicted.get(m.host, 0.0)) for m in links if m.host in surviving}
        run.gaps, run.repeats = exactly_once(rest, job)
    finally:
        back_at = undo(state, run)
    _wait(f"TaskManager {host} registered again", lambda: host in {tm.id for tm in rest.taskmanagers()}, 120)
    prepared = prepare(load_request(placed.plan_dir, placed.inventory, job_name=JOB_NAME, settle_s=5))
    try:
        outcome = execute(prepared, audit_path=placed.plan_dir / "apply-audit.jsonl", echo=lambda s: None)
    finally:
        prepared.close()
    run.back_s = round(time.monotonic() - back_at, 1)
    job = running_job(rest)
    run.restored = outcome.status == "applied" and job is not None and \
        rest.placement(job) == expected_placement(placed.plan, None)
    if job is not None:
        _wait("the ledger after the restore", lambda: bool(ledger(rest, job)), 60)
        time.sleep(5)
        run.gaps_after_restore, run.repeats_after_restore = exactly_once(rest, job)
    return run


def as_json(run: FaultRun) -> str:
    return json.dumps({**run.__dict__, "never_failed": run.never_failed})
