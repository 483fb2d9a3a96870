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
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from placement.collect.collector import CollectOptions, Collector
from placement.errors import PlacementError
from placement.flink.rest import FlinkRest
from placement.lab import chain, faults
from placement.lab.measure import measure_window
from placement.planning import PlanRequest, plan, write_outcome
from placement.polling import poll
from placement.profile.pipeline import build_profile, write_profile
from placement.writers.planjson import PlanDocument, load_plan

JOB_NAME = "ledger"
LEDGER_JOB = "placement.lab.LedgerJob"
RATE = 300  # readings/s per source: ~0.5 Mbit/s of readings per uplink, light for a lab Pi
METER_S = 65  # Flink's rate meters average the last 60 s: a profile of a younger job reads its rates low
ARGS = ("--parallelism", "2", "--rate", str(RATE), "--job-name", JOB_NAME)
SOURCE = "Source: Readings"
PLACEMENT = str(Path(sys.executable).with_name("placement"))


@dataclass(frozen=True)
class Placed:
    inventory: Path
    plan_dir: Path  # one job: its plan directory; several: the fleet directory
    plans: dict[str, PlanDocument]  # job name -> its plan
    ledgers: Path  # where each job's ledger file is (ledger_file)

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
    load_scale: float | None = None  # the surviving sources' rate now over the profile's (the prediction is scaled)

    @property
    def never_failed(self) -> bool:
        return all(s != "FAILED" for _, _, s in self.states)


def job_args(name: str, ledgers: Path) -> list[str]:
    return [*ARGS[:-1], name, "--ledger-file", str(ledger_file(ledgers, name))]


def ledger_file(ledgers: Path, name: str) -> Path:
    return ledgers / f"{name}.ledger"


@dataclass(frozen=True)
class Book:
    """One line of a ledger file: a lane's figures at ``ms`` (wall clock)."""

    ms: int
    lane: int
    count: int
    gaps: int
    repeats: int


def read_ledger(path: Path) -> tuple[list[int], list[Book]]:
    """The attempts' open times and the lanes' lines of a ledger file (LedgerJob's ``--ledger-file``)."""
    opens: list[int] = []
    books: list[Book] = []
    text = path.read_text() if path.exists() else ""
    for line in text.splitlines():
        parts = line.split(",")
        if parts[0] == "open" and len(parts) == 2:
            opens.append(int(parts[1]))
        elif len(parts) == 5:  # a line cut short by a kill has fewer fields
            books.append(Book(*map(int, parts)))
    return opens, books


def flowing_since(path: Path, after_ms: int, lanes: list[int]) -> int | None:
    """When every lane of ``lanes`` was taken again by an attempt opened after ``after_ms`` (its first line each),
    the last of them; None while one is not."""
    opens, books = read_ledger(path)
    later = [t for t in opens if t > after_ms]
    if not later:
        return None
    first = {}
    for b in books:
        if b.ms > later[-1] and b.lane not in first:
            first[b.lane] = b.ms
    return max(first[lane] for lane in lanes) if all(lane in first for lane in lanes) else None


def exactly_once(path: Path) -> tuple[int, int]:
    """Gaps and repeats the ledger counted, every lane together (its newest line of each)."""
    _opens, books = read_ledger(path)
    newest = {b.lane: b for b in books}
    return sum(b.gaps for b in newest.values()), sum(b.repeats for b in newest.values())


def fault_inventory(lab_inventory: str | Path, out: Path, jar: str, jobs: tuple[str, ...], ledgers: Path) -> Path:
    """The running lab inventory with the ledger jobs as what apply resubmits (``job:`` for one, ``jobs:`` for
    several), their sources born on the Pis, whose data reaches the server while they are lost (the lab's sources
    make their readings wherever they run)."""
    doc = yaml.safe_load(Path(lab_inventory).read_text())
    edges = [h["name"] for h in doc["hosts"] if h["role"] == "edge"]
    for h in doc["hosts"]:
        if h["role"] == "edge":
            h["data_reroutes_on_loss"] = True
    entries = [{"name": j, "entry_class": LEDGER_JOB, "program_args": job_args(j, ledgers), "jar": jar} for j in jobs]
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
    work.mkdir(parents=True, exist_ok=True)
    for name in jobs:
        chain.submit(rest, state["jar"], LEDGER_JOB, job_args(name, work))
    for name in jobs:

        def started(n: str = name) -> bool:
            return (j := running_job(rest, n)) is not None and rest.job(j).all_running

        _wait(f"{name} running", started, 120)
    time.sleep(METER_S)
    collectors = [
        Collector(
            CollectOptions(
                rest_url=state["rest_url"], out_dir=work / f"metrics-{name}", job_name=name, duration_s=12, interval_s=2
            )
        )
        for name in jobs
    ]
    with ThreadPoolExecutor(len(jobs)) as pool:  # the jobs' windows side by side: one window's wait, not one each
        list(pool.map(lambda c: c.run(), collectors))
    profiles = [
        write_profile(build_profile(work / f"metrics-{name}", engine="pandas", warmup_s=0), work / f"{name}.json")
        for name in jobs
    ]
    inventory = fault_inventory(state["lab_inventory"], work / "fault-inventory.yaml", state["jar"], jobs, work)
    plan_dir = work / "plan"
    planned = plan(
        PlanRequest(
            inventory=str(inventory),
            profiles=tuple(str(p) for p in profiles),
            out_dir=str(plan_dir),
            contingency="required" if contingency else "off",
        )
    )
    if planned.result.status == "infeasible" or planned.result.assignment is None:
        raise PlacementError(f"placement plan: no placement fits: {planned.result.reason}")
    write_outcome(planned, plan_dir)
    if not apply_plan(plan_dir, inventory, jobs):
        raise PlacementError(f"placement apply of {plan_dir} did not apply")
    if len(jobs) == 1:
        return Placed(inventory, plan_dir, {jobs[0]: load_plan(plan_dir)}, work)
    fleet = json.loads((plan_dir / "fleet.json").read_text())
    return Placed(inventory, plan_dir, {j["job"]: load_plan(plan_dir / j["dir"]) for j in fleet["jobs"]}, work)


def running_job(rest: FlinkRest, name: str = JOB_NAME) -> str | None:
    return next(
        (j.id for j in rest.jobs() if j.name == name and j.state not in ("FAILED", "CANCELED", "FINISHED")), None
    )


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
    """Seconds until ``predicate()`` held (a REST error counts as not yet)."""
    start = time.monotonic()

    def holds() -> bool:
        try:
            return predicate()
        except PlacementError:
            return False

    if poll(holds, bool, timeout=timeout, every=interval)[1]:
        return time.monotonic() - start
    raise PlacementError(f"{what}: not within {timeout:.0f} s")


def recover(
    state: dict, kind: str, host: str, lanes: dict[str, list[int]], ledgers: Path, *, timeout: float = 180.0
) -> FaultRun:
    """Make the fault and wait for the recovery: each job of ``lanes`` restarted, its ledger (a new attempt, opened
    after the fault) taking readings of each of its lanes again. ``recovery_s``: from the fault to the last job's
    first reading of its last lane, read from the ledger files (None when not within ``timeout``); the job states are
    sampled every half second meanwhile."""
    rest = FlinkRest(state["rest_url"], timeout=5)
    run = FaultRun(kind, host, time.time())
    fault_ms = int(run.fault_at * 1000)
    if kind == "power":
        faults.power_loss(state, host)
    else:
        faults.cut_uplink(state, host)
    last: dict[str, str] = {}
    flowing: dict[str, int] = {}
    while time.time() - run.fault_at < timeout and len(flowing) < len(lanes):
        now = time.time() - run.fault_at
        for name in lanes:
            job = running_job(rest, name)
            try:
                st = rest.job(job).state if job else "NONE"
            except PlacementError:
                st = "UNKNOWN"
            if st != last.get(name):
                run.states.append((round(now, 1), name, st))
                last[name] = st
            if name not in flowing:
                since = flowing_since(ledger_file(ledgers, name), fault_ms, lanes[name])
                if since is not None:
                    flowing[name] = since
        time.sleep(0.5)
    if len(flowing) == len(lanes):
        run.recovery_s = round((max(flowing.values()) - fault_ms) / 1000, 1)
    return run


def undo(state: dict, run: FaultRun) -> float:
    """Power back or the link back; returns when (monotonic) it was undone."""
    if run.kind == "power":
        faults.power_back(state, run.host)
    else:
        faults.restore_uplink(state, run.host)
    return time.monotonic()


def _all_once(placed: Placed) -> tuple[int, int]:
    counts = [exactly_once(ledger_file(placed.ledgers, name)) for name in placed.plans]
    return sum(g for g, _ in counts), sum(r for _, r in counts)


class Watching:
    """``placement watch --apply auto --plan PLAN`` over the placed job, in the background: the way back without an
    apply by hand. Short windows and a 10 s cooldown, so that the lab's way back fits a test."""

    COOLDOWN_S = 10

    def __init__(self, placed: Placed, work: Path):
        self.work = work
        self.log = work / "decisions.jsonl"
        names = [a for name in placed.plans for a in ("--job-name", name)]
        self.out = open(work / "watch.out", "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [
                PLACEMENT,
                "watch",
                "--inventory",
                str(placed.inventory),
                *names,
                "--apply",
                "auto",
                "--plan",
                str(placed.plan_dir),
                "--interval",
                "5",
                "--window",
                "12",
                "--flush",
                "4",
                "--warmup",
                "20",
                "--cooldown",
                str(self.COOLDOWN_S),
                "--engine",
                "pandas",
                "--work-dir",
                str(work / "watch"),
                "--log",
                str(self.log),
                "--duration",
                "900",
            ],
            stdout=self.out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def records(self) -> list[dict]:
        from placement.watch.record import read_log

        return [r for r in read_log(self.log) if r.get("record") == "decision"] if self.log.exists() else []

    def wait_steady(self, timeout: float = 180) -> None:
        """Until the watch has decided on a warm window of the placed job."""
        _wait(
            "the watch's first steady decision",
            lambda: any((r.get("decision") or {}).get("action") == "steady" for r in self.records()),
            timeout,
            interval=2,
        )

    def restored(self) -> bool:
        return any(
            (r.get("decision") or {}).get("kind") == "restore" and (r.get("apply") or {}).get("status") == "applied"
            for r in self.records()
        )

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.out.close()


def _lane_counts(placed: Placed, lanes: dict[str, list[int]]) -> float:
    """Readings the ledgers have taken so far of ``lanes`` (each job's), together."""
    total = 0.0
    for name, mine in lanes.items():
        _opens, books = read_ledger(ledger_file(placed.ledgers, name))
        newest = {b.lane: b.count for b in books}
        total += sum(newest.get(lane, 0) for lane in mine)
    return total


def _profiled_rate(placed: Placed, lanes: dict[str, list[int]]) -> float:
    """Records/s the profiles measured those lanes' source subtasks send."""
    from placement.profile.format import load_profile

    total = 0.0
    for name, mine in lanes.items():
        profile = load_profile(placed.ledgers / f"{name}.json")
        source = next(v for v in profile.vertices if v.name == SOURCE)
        total += sum(s.records_out_per_s for s in source.subtasks if s.index in mine)
    return total


def run_fault(
    state: dict,
    placed: Placed,
    kind: str,
    host: str,
    *,
    timeout: float = 180.0,
    wan_window_s: float = 10.0,
    watch: Watching | None = None,
) -> FaultRun:
    """One fault of ``kind`` (``power`` or ``uplink``) on ``host``, the recovery of every job placed, the way back:
    ``placement apply`` of the plan, or (``watch``) the watch's own restore."""
    rest = FlinkRest(state["rest_url"], timeout=5)
    first = next(iter(placed.plans.values()))
    surviving = sorted({a.host for a in first.assignment if a.host != host} - {"server"})
    lanes = {
        name: [a.subtask for a in plan.assignment if a.vertex == SOURCE and a.host in surviving]
        for name, plan in placed.plans.items()
    }
    run = recover(state, kind, host, lanes, placed.ledgers, timeout=timeout)
    try:
        if run.recovery_s is None:
            return run
        time.sleep(2)
        run.placed_as_contingency = all(
            rest.placement(running_job(rest, name) or "") == expected_placement(plan, host)
            for name, plan in placed.plans.items()
        )
        counts_before = _lane_counts(placed, lanes)
        started = time.monotonic()
        links, _cpu = measure_window(state, wan_window_s)
        rate_now = (_lane_counts(placed, lanes) - counts_before) / (time.monotonic() - started)
        contingency = next(c for c in first.contingencies or () if c.lost == host)  # several jobs: the fleet's links
        # the prediction at the load the surviving sources send now: a profile made on a loaded machine may have
        # caught them below their rate (its Pis short of CPU), and the check is of the model, not of that load
        scale = rate_now / profiled if (profiled := _profiled_rate(placed, lanes)) > 0 and rate_now > 0 else 1.0
        run.load_scale = round(scale, 3)
        predicted = {link.source: link.mbit * scale for link in contingency.links}
        run.wan = {m.host: (m.data_mbit, predicted.get(m.host, 0.0)) for m in links if m.host in surviving}
        run.gaps, run.repeats = _all_once(placed)
    finally:
        back_at = undo(state, run)
    _wait(f"TaskManager {host} registered again", lambda: host in {tm.id for tm in rest.taskmanagers()}, 120)
    if watch is None:
        applied = apply_plan(placed.plan_dir, placed.inventory, tuple(placed.plans))
    else:
        applied = _wait("the watch's restore", watch.restored, 240, interval=2) is not None
    run.back_s = round(time.monotonic() - back_at, 1)
    run.restored = applied and all(
        rest.placement(running_job(rest, name) or "") == expected_placement(plan, None)
        for name, plan in placed.plans.items()
    )
    restored_ms = int(time.time() * 1000)
    for name, mine in lanes.items():

        def flowing(n: str = name, m: list[int] = mine) -> bool:
            return flowing_since(ledger_file(placed.ledgers, n), restored_ms - 60_000, m) is not None

        _wait(f"the ledger of {name} after the restore", flowing, 60)
    time.sleep(2)
    run.gaps_after_restore, run.repeats_after_restore = _all_once(placed)
    return run


def as_json(run: FaultRun) -> str:
    return json.dumps({**run.__dict__, "never_failed": run.never_failed})
