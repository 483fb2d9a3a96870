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
import signal
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
    plan_dir: Path  # one job: its plan directory; several: the fleet directory
    plans: dict[str, PlanDocument]  # job name -> its plan

    @property
    def several(self) -> bool:
        return len(self.plans) > 1


@dataclass
class FaultRun:
    kind: str  # power | uplink
    host: str
    fault_at: float  # wall clock, s
    recovery_s: float | None = None  # None: not recovered in time (several jobs: the last one's)
    states: list[tuple[float, str, str]] = field(default_factory=list)  # (s after the fault, job, state) on change
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
        return all(s != "FAILED" for _, _, s in self.states)


def job_args(name: str) -> list[str]:
    return [*ARGS[:-1], name]


def fault_inventory(lab_inventory: str | Path, out: Path, jar: str, jobs: tuple[str, ...]) -> Path:
    """The running lab inventory with the ledger jobs as what apply resubmits (``job:`` for one, ``jobs:`` for
    several), their sources born on the Pis, whose data reaches the server while they are lost (the lab's sources
    make their readings wherever they run)."""
    doc = yaml.safe_load(Path(lab_inventory).read_text())
    edges = [h["name"] for h in doc["hosts"] if h["role"] == "edge"]
    for h in doc["hosts"]:
        if h["role"] == "edge":
            h["data_reroutes_on_loss"] = True
    entries = [{"name": j, "entry_class": LEDGER_JOB, "program_args": job_args(j), "jar": jar} for j in jobs]
    doc["job"] = entries[0]
    if len(jobs) > 1:
        doc["jobs"] = entries
    doc["pins"] = {"sources": {SOURCE: edges[:2]}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def apply_plan(placed_dir: Path, inventory: Path, jobs: tuple[str, ...]) -> bool:
    """``placement apply`` of a plan (several jobs: of the fleet directory, as one change); True when applied."""
    from placement.apply import execute, prepare
    from placement.apply.fleet import execute_fleet, load_fleet, prepare_fleet
    from placement.apply.request import load_request

    audit = placed_dir / "apply-audit.jsonl"
    if len(jobs) > 1:
        fleet = prepare_fleet(load_fleet(placed_dir, inventory, settle_s=5))
        try:
            return execute_fleet(fleet, audit_path=audit, echo=lambda s: None).status == "applied"
        finally:
            fleet.close()
    prepared = prepare(load_request(placed_dir, inventory, job_name=jobs[0], settle_s=5))
    try:
        return execute(prepared, audit_path=audit, echo=lambda s: None).status == "applied"
    finally:
        prepared.close()


def place(state: dict, work: Path, *, jobs: tuple[str, ...] = (JOB_NAME,), contingency: bool = True) -> Placed:
    """Submit the ledger jobs, profile each, plan them together with their contingencies (``contingency=False``:
    without, as a placed job was before issue 43), apply the plan. Raises on any failure."""
    rest = FlinkRest(state["rest_url"])
    chain.cancel_all(rest)
    for name in jobs:
        chain.submit(rest, state["jar"], LEDGER_JOB, job_args(name))
    for name in jobs:
        _wait(f"{name} running", lambda n=name: (j := running_job(rest, n)) is not None and rest.job(j).all_running, 120)
    time.sleep(METER_S)
    work.mkdir(parents=True, exist_ok=True)
    profiles = []
    for name in jobs:
        metrics = work / f"metrics-{name}"
        Collector(CollectOptions(rest_url=state["rest_url"], out_dir=metrics, job_name=name, duration_s=12,
                                 interval_s=2)).run()
        profiles.append(write_profile(build_profile(metrics, engine="pandas", warmup_s=0), work / f"{name}.json"))
    inventory = fault_inventory(state["lab_inventory"], work / "fault-inventory.yaml", state["jar"], jobs)
    plan_dir = work / "plan"
    done = subprocess.run([PLACEMENT, "plan", "--inventory", str(inventory),
                           *[a for p in profiles for a in ("--profile", str(p))], "--out", str(plan_dir),
                           "--require-contingency" if contingency else "--no-contingency", "--quiet"],
                          capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise PlacementError(f"placement plan: {done.stderr.strip() or done.stdout.strip()}")
    if not apply_plan(plan_dir, inventory, jobs):
        raise PlacementError(f"placement apply of {plan_dir} did not apply")
    if len(jobs) == 1:
        return Placed(inventory, plan_dir, {jobs[0]: load_plan(plan_dir)})
    fleet = json.loads((plan_dir / "fleet.json").read_text())
    return Placed(inventory, plan_dir, {j["job"]: load_plan(plan_dir / j["dir"]) for j in fleet["jobs"]})


def running_job(rest: FlinkRest, name: str = JOB_NAME) -> str | None:
    return next((j.id for j in rest.jobs() if j.name == name and j.state not in ("FAILED", "CANCELED", "FINISHED")),
                None)


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


def recover(state: dict, kind: str, host: str, lanes: dict[str, list[int]], *, timeout: float = 180.0) -> FaultRun:
    """Make the fault and wait for the recovery: each job of ``lanes`` restarted and RUNNING, its ledger taking
    readings of each of its lanes again (``recovery_s``: when the last one did; None when not within ``timeout``)."""
    rest = FlinkRest(state["rest_url"], timeout=5)
    before = {name: running_job(rest, name) for name in lanes}
    run = FaultRun(kind, host, time.time())
    if kind == "power":
        faults.power_loss(state, host)
    else:
        faults.cut_uplink(state, host)
    last: dict[str, str] = {}
    restarted: set[str] = set()
    recovered: set[str] = set()
    while time.time() - run.fault_at < timeout and recovered != set(lanes):
        now = time.time() - run.fault_at
        for name in sorted(set(lanes) - recovered):
            job = running_job(rest, name)
            try:
                details = rest.job(job) if job else None
            except PlacementError:
                details = None
            st = details.state if details else "NONE"
            if st != last.get(name):
                run.states.append((round(now, 1), name, st))
                last[name] = st
            if st != "RUNNING" or job != before[name]:
                restarted.add(name)
            if name in restarted and details is not None and details.all_running:
                try:
                    books = ledger(rest, details.id)
                except PlacementError:
                    books = {}
                if books and all(books.get(lane, {}).get("lastMs", 0) / 1000 > run.fault_at + now - 3
                                 for lane in lanes[name]):
                    recovered.add(name)
        if recovered == set(lanes):
            run.recovery_s = round(time.time() - run.fault_at, 1)
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


def _all_once(rest: FlinkRest, jobs) -> tuple[int, int]:
    counts = [exactly_once(rest, running_job(rest, name) or "") for name in jobs]
    return sum(g for g, _ in counts), sum(r for _, r in counts)


class Watching:
    """``placement watch --apply auto --plan PLAN`` over the placed job, in the background: the way back without an
    apply by hand. Short windows and a 20 s cooldown, so that the lab's way back fits a test."""

    COOLDOWN_S = 20

    def __init__(self, placed: Placed, work: Path):
        self.work = work
        self.log = work / "decisions.jsonl"
        names = [a for name in placed.plans for a in ("--job-name", name)]
        self.out = open(work / "watch.out", "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [PLACEMENT, "watch", "--inventory", str(placed.inventory), *names, "--apply", "auto", "--plan",
             str(placed.plan_dir), "--interval", "8", "--window", "20", "--warmup", "30", "--cooldown",
             str(self.COOLDOWN_S), "--engine", "pandas", "--work-dir", str(work / "watch"), "--log", str(self.log),
             "--duration", "900"], stdout=self.out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def records(self) -> list[dict]:
        from placement.watch.record import read_log

        return [r for r in read_log(self.log) if r.get("record") == "decision"] if self.log.exists() else []

    def wait_steady(self, timeout: float = 180) -> None:
        """Until the watch has decided on a warm window of the placed job."""
        _wait("the watch's first steady decision", lambda: any((r.get("decision") or {}).get("action") == "steady"
                                                                for r in self.records()), timeout, interval=2)

    def restored(self) -> bool:
        return any((r.get("decision") or {}).get("kind") == "restore" and (r.get("apply") or {}).get("status")
                   == "applied" for r in self.records())

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.out.close()


def run_fault(state: dict, placed: Placed, kind: str, host: str, *, timeout: float = 180.0,
              wan_window_s: float = 15.0, watch: Watching | None = None) -> FaultRun:
    """One fault of ``kind`` (``power`` or ``uplink``) on ``host``, the recovery of every job placed, the way back:
    ``placement apply`` of the plan, or (``watch``) the watch's own restore."""
    rest = FlinkRest(state["rest_url"], timeout=5)
    first = next(iter(placed.plans.values()))
    surviving = sorted({a.host for a in first.assignment if a.host != host} - {"server"})
    lanes = {name: [a.subtask for a in plan.assignment if a.vertex == SOURCE and a.host in surviving]
             for name, plan in placed.plans.items()}
    run = recover(state, kind, host, lanes, timeout=timeout)
    try:
        if run.recovery_s is None:
            return run
        time.sleep(5)
        run.placed_as_contingency = all(rest.placement(running_job(rest, name) or "") == expected_placement(plan, host)
                                        for name, plan in placed.plans.items())
        links, _cpu = measure_window(state, wan_window_s)
        contingency = next(c for c in first.contingencies or () if c.lost == host)  # several jobs: the fleet's links
        predicted = {link.source: link.mbit for link in contingency.links}
        run.wan = {m.host: (m.data_mbit, predicted.get(m.host, 0.0)) for m in links if m.host in surviving}
        run.gaps, run.repeats = _all_once(rest, placed.plans)
    finally:
        back_at = undo(state, run)
    _wait(f"TaskManager {host} registered again", lambda: host in {tm.id for tm in rest.taskmanagers()}, 120)
    if watch is None:
        applied = apply_plan(placed.plan_dir, placed.inventory, tuple(placed.plans))
    else:
        applied = _wait("the watch's restore", watch.restored, 240, interval=2) is not None
    run.back_s = round(time.monotonic() - back_at, 1)
    run.restored = applied and all(rest.placement(running_job(rest, name) or "") == expected_placement(plan, None)
                                   for name, plan in placed.plans.items())
    for name in placed.plans:
        _wait(f"the ledger of {name} after the restore", lambda n=name: bool(ledger(rest, running_job(rest, n) or "")),
              60)
    time.sleep(5)
    run.gaps_after_restore, run.repeats_after_restore = _all_once(rest, placed.plans)
    return run


def as_json(run: FaultRun) -> str:
    return json.dumps({**run.__dict__, "never_failed": run.never_failed})
