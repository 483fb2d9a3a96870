"""The world-touching loop of ``placement watch``: it composes the stages and owns none of them.

* collect — :class:`placement.collect.collector.Collector` in a thread, writing a rolling history (``keep_s`` /
  ``keep_bytes``); when the job ends (a redeploy stops it with a savepoint) it starts again on the job of the same
  name that runs next;
* profile — each tick cuts the window (:func:`placement.collect.rolling.snapshot_window`) and profiles it with
  ``placement profile``'s own function and one Spark session kept for the whole watch (:mod:`.profiling`);
* plan — a callable the CLI gives (``placement plan`` itself, run as a function), called only on drift;
* apply — ``placement apply``'s public request / prepare / execute: the same preflight, lock, savepoint, verify,
  roll back and audit log.

Between them the pure parts decide: :mod:`.signals` (drift), :mod:`.pricing` (the figures the policy weighs) and
:mod:`.policy` (act or not); :mod:`.record` logs each tick. The collector thread is :mod:`.collecting`, the apply
:mod:`.acting`, the options and live status :mod:`.options`. Stopping (:meth:`Watch.stop`, from a signal handler) is
honoured between steps: an apply that has begun runs to its end (applied or rolled back) before the loop exits, so
nothing is left half-applied.

Several jobs (``WatchOptions.job_names``) are the same loop over a set: a :class:`JobTrack` per job (its collector,
rolling history, windows, baseline and counters), each tick a window and a drift check per job, the running placements
priced together (:func:`placement.costmodel.jobs.build_joint`, as ``placement plan`` prices several profiles), one
joint re-plan on any job's drift (``plan_jobs_fn``: ``placement plan --profile A --profile B``), one decision, and one
change (``placement apply --plan FLEET_DIR``'s load, prepare and execute). A job that cannot be observed makes the tick
wait: the others are never planned as if it were gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from placement.collect import shaping
from placement.collect.layout import find_manifests
from placement.collect.rolling import snapshot_window
from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.jobs import JointProblem, build_joint, dir_names, job_costs, job_policies
from placement.costmodel.model import Assignment, PlanOptions, build_problem
from placement.costmodel.running import running_cost
from placement.errors import BadInput, PlacementError
from placement.flink.rest import TERMINAL_STATES, FlinkRest, JobDetails
from placement.inventory import load_inventory
from placement.profile.format import JobProfile
from placement.profile.pipeline import write_profile
from placement.profile.rules import current_assignment
from placement.watch.acting import apply_fleet_plan, apply_plan
from placement.watch.collecting import CollectorThread
from placement.watch.options import AskFn, JobsPlanFn, PlanFn, Status, WatchOptions
from placement.watch.policy import Decision, PolicyState, Proposal, after_change, decide
from placement.writers.planjson import load_plan
from placement.watch.pricing import cost_peak, joint_running, moves, proposal_from
from placement.watch.profiling import WindowProfiler
from placement.watch.recovery import back_since, contingency_decision, differs
from placement.watch.record import DecisionLog, decision_record, effect_record, job_entry
from placement.watch.signals import (
    Baseline,
    Drift,
    Window,
    demand_scale,
    detect,
    link_drifts,
    of_job,
    still_moving,
    taskmanager_drifts,
    window_from_profile,
)


@dataclass
class JobTrack:
    """One watched job's own state: its rolling history and window snapshots, what its running placement is held to
    (baseline), its recent windows and its source counters. Watching one job its files are in WORK_DIR itself (as
    ever); watching several, each job's in WORK_DIR/<job>/."""

    name: str
    root: Path
    baseline: Baseline | None = None
    windows: list[Window] = field(default_factory=list)
    made_for: Baseline | None = None  # after an apply: what its plan was made for, until a warm window
    pending_effect: tuple[int, str | None, dict[str, float]] | None = None  # (tick, job before, predicted)
    planned_links: dict[str, float] = field(default_factory=dict)  # the last re-plan's predicted Mbit/s per uplink
    planned_rates: dict[str, float] = field(default_factory=dict)  # ... and the source rates it was made for
    job_id: str | None = None  # the running job last seen
    sources: dict[str, Any] = field(default_factory=dict)  # the job whose source vertices are known, ids -> names
    counts: tuple[float, dict[str, float | None]] | None = None  # the last tick's source counters
    started_on: Assignment | None = None  # the placement running when the watch started (no plan in effect)

    @property
    def history(self) -> Path:
        return self.root / "history"

    @property
    def windows_dir(self) -> Path:
        return self.root / "windows"

    def plan_in_effect(self) -> str | None:
        held = self.made_for or self.baseline
        return held.plan_dir if held is not None else None


@dataclass
class Seen:
    """One job's part of a tick: why no change may start, what its window showed, and its drifts."""

    track: JobTrack
    blockers: list[str]
    notes: list[str]
    job: JobDetails | None = None
    window: Window | None = None
    snapshot: Path | None = None
    profile: JobProfile | None = None
    running: Assignment | None = None
    drifts: list[Drift] = field(default_factory=list)


@dataclass(frozen=True)
class Observed:
    """A job's window before it is priced: its profile, where its subtasks ran, and what REST said besides."""

    snapshot: Path
    profile: JobProfile
    running: Assignment | None
    since_ms: int
    job_id: str
    taskmanagers: frozenset[str]
    fresh_rates: dict[str, float]


S = TypeVar("S", float, dict[str, float])  # one job's rate scale, or each job's

SHARED_KINDS = ("link", "taskmanager-lost", "taskmanager-added")  # several jobs: one capacity, detected once


class Watch:
    def __init__(self, options: WatchOptions, *, plan_fn: PlanFn | None = None, plan_jobs_fn: JobsPlanFn | None = None,
                 ask_fn: AskFn | None = None, on_update: Callable[[Status], None] | None = None,
                 rest: FlinkRest | None = None, clock: Callable[[], float] = time.time):
        options.check()
        if options.apply == "ask" and ask_fn is None:
            raise BadInput("--apply ask needs a terminal to ask on", field="--apply")
        names = options.names
        if (plan_fn if len(names) == 1 else plan_jobs_fn) is None:
            raise ValueError("one job is planned by plan_fn, several by plan_jobs_fn")
        self.o = options
        self.inventory = load_inventory(options.inventory_path)
        self.rest = rest or FlinkRest(self.inventory.flink.rest_url)
        self.plan_fn, self.plan_jobs_fn, self.ask_fn = plan_fn, plan_jobs_fn, ask_fn
        self.on_update = on_update or (lambda s: None)
        self.clock = clock
        self.tracks = ([JobTrack(names[0], options.work_dir)] if len(names) == 1 else
                       [JobTrack(name, options.work_dir / d) for name, d in zip(names, dir_names(names))])
        self.plans_dir = options.work_dir / "plans"
        self.log = DecisionLog(options.log_path)
        self.profiler = WindowProfiler(engine=options.engine, spark_master=options.spark_master,
                                       inventory=options.inventory_path, warmup_s=options.warmup_s)
        self.status = Status()
        self.stop_event = threading.Event()
        self.state = PolicyState()
        self.last_change_ms: int | None = None
        self._fetch_wait_s: float | None = None  # how long a fresh counter reading may wait for a metric fetch
        self.back_since: dict[str, int] = {}  # planned hosts registered now -> since when (recovery.back_since)

    @property
    def several(self) -> bool:
        return len(self.tracks) > 1

    @property
    def windows_dir(self) -> Path:
        """The (first) job's window snapshots: WORK_DIR/windows watching one job."""
        return self.tracks[0].windows_dir

    # ---- control ---------------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the loop to end after the step in progress (an apply in progress finishes or rolls back first)."""
        self.stop_event.set()

    def run(self) -> Status:
        self.plans_dir.mkdir(parents=True, exist_ok=True)
        collectors = []
        for track in self.tracks:  # one collector, one rolling history per job
            for d in (track.history, track.windows_dir):
                d.mkdir(parents=True, exist_ok=True)
            collectors.append(CollectorThread(self.inventory.flink.rest_url, self.o, track.history, self.stop_event,
                                              self.status, job_name=track.name, inventory=self.inventory))
        for collector in collectors:
            collector.start()
        started = self.clock()
        try:
            while not self.stop_event.is_set():
                wait_s = self.o.interval_s
                if self.o.duration_s is not None:  # --duration 10 with a 30 s interval: decide at 10 s, then stop
                    wait_s = max(0.0, min(wait_s, started + self.o.duration_s - self.clock()))
                self.status.next_tick_at = self.clock() + wait_s
                self._update("waiting for the next window")
                if self.stop_event.wait(wait_s):
                    break
                self.tick()
                if self.o.duration_s is not None and self.clock() - started >= self.o.duration_s:
                    break
        finally:
            self.stop_event.set()
            self._update("stopping")
            for collector in collectors:
                collector.join(timeout=30)
            self.profiler.close()
            self._update("stopped")
        return self.status

    def plan_in_effect(self) -> str | None:
        """The plan directory whose prediction the running placement is held to (None: the placement that ran when
        the watch started): the last plan applied, or the last re-plan that kept the placement (several jobs: the
        fleet's directory, the same for every job)."""
        return self.tracks[0].plan_in_effect()

    def _update(self, phase: str) -> None:
        self.status.phase = phase
        self.on_update(self.status)

    # ---- one decision ----------------------------------------------------------------------------------------------

    def tick(self) -> dict[str, Any]:
        """Observe every job's window, detect, re-plan (all jobs together) on drift, decide once, act; returns the
        decision record (also logged)."""
        self.status.ticks += 1
        tick, now_ms = self.status.ticks, int(self.clock() * 1000)
        seen, total = self._look(tick, now_ms)
        return self._conclude(tick, now_ms, seen, total)

    def _conclude(self, tick: int, now_ms: int, seen: list[Seen], total: PlanCost | None) -> dict[str, Any]:
        """The tick once every job was looked at: the set's drifts, one re-plan (of every job together) on any, one
        decision, the change, the record. Touches the cluster only to apply (and before it, to wait out a
        checkpoint)."""
        blockers = [b for s in seen for b in s.blockers]
        notes = [n for s in seen for n in s.notes]
        drifts = [d for s in seen for d in s.drifts] + self._shared_drifts(seen, total)
        proposal = None
        restore = None if blockers else self._contingency(seen, now_ms)
        if restore is not None:  # a planned host lost or just back: the plan is still right, nothing to re-plan
            decision, drift, proposal = restore
            drifts = [drift]
        elif drifts and not blockers and all(s.profile is not None and s.window is not None for s in seen):
            self._update("re-planning")
            try:
                if self.several:
                    proposal, scales = self._replan_jobs(tick, seen, drifts)
                    notes += [f"planned job {name} for {scale:.2f}x its window's profiled rates (its sources' demand "
                              "now)" for name, scale in scales.items() if scale > 1.005]
                else:
                    s = seen[0]
                    proposal, scale = self._replan(tick, s.profile, s.window, s.running,  # type: ignore[arg-type]
                                                   drifts)
                    if scale > 1.005:
                        notes.append(f"planned for {scale:.2f}x the window's profiled rates (the sources' demand now)")
            except PlacementError as exc:
                notes.append(f"re-plan failed: {exc}")
        if restore is None:
            decision = decide(self.state, now_ms, drifts, proposal, blockers, self.o.policy)
        if decision.action == "apply" and all(s.job is not None for s in seen) and self.o.apply != "never":
            waited = next(filter(None, (self._checkpoint_settled(s.job.id) for s in seen if s.job)), None)
            if waited is not None:
                decision = decide(self.state, now_ms, drifts, proposal, [waited], self.o.policy)
        self.state = decision.state
        if (all(s.window is not None for s in seen) and proposal is not None and decision.action == "hold"
                and proposal.planned_fits and proposal.moves == 0):
            # the re-plan keeps the placement running: it is the plan for this load, so drift is measured from here
            # (else every tick re-plans the same placement until the load returns)
            for s in seen:
                w = s.window
                s.track.baseline = Baseline(dict(w.rates_now()), w.taskmanagers,  # type: ignore[union-attr]
                                            plan_dir=proposal.plan_dir)
            notes.append("baseline: the placement running is the plan for this window's load")
        outcome = None
        if decision.action == "apply" and proposal is not None:
            outcome = self._act(decision, proposal, now_ms)
        record = self._record(tick, now_ms, seen, drifts, proposal, decision, outcome, notes)
        self.log.write(record)
        self.status.window = seen[0].window
        self.status.windows = {s.track.name: s.window for s in seen if s.window is not None}
        self.status.drifts, self.status.proposal, self.status.decision = drifts, proposal, decision
        self.status.notes = notes
        self._update("decided")
        return record

    def _record(self, tick: int, now_ms: int, seen: list[Seen], drifts: list[Drift], proposal: Proposal | None,
                decision: Decision, outcome: dict[str, Any] | None, notes: list[str]) -> dict[str, Any]:
        """One job: the record as ever. Several: the set's drifts (each naming its job) and decision, and each job's
        window and drifts under ``jobs``."""
        if not self.several:
            s = seen[0]
            return decision_record(tick, now_ms, s.window, str(s.snapshot) if s.snapshot else None, drifts, proposal,
                                   decision, apply=outcome, notes=notes, plan_in_effect=self.plan_in_effect())
        jobs = [job_entry(s.track.name, s.track.job_id, s.window, str(s.snapshot) if s.snapshot else None, s.drifts)
                for s in seen]
        return decision_record(tick, now_ms, None, None, drifts, proposal, decision, apply=outcome, notes=notes,
                               plan_in_effect=self.plan_in_effect(), jobs=jobs)

    def _look(self, tick: int, now_ms: int) -> tuple[list[Seen], PlanCost | None]:
        """Every job's blockers, window and own drifts (several jobs: each named, and the running placements priced
        together, since they share the uplinks and hosts: their joint cost is returned too)."""
        seen = []
        observed: dict[str, Observed] = {}
        for track in self.tracks:
            blockers, job, notes = self._blockers(track, now_ms)
            s = Seen(track, blockers, notes, job)
            if job is not None:  # observed (and logged) even while a checkpoint blocks a change
                self._update("profiling the window" + (f" of {track.name}" if self.several else ""))
                try:
                    observed[track.name] = self._observe(track, tick, now_ms, job)
                except PlacementError as exc:
                    s.blockers.append(f"no usable window: {exc}")
            seen.append(s)
        return seen, self._assess(seen, observed, now_ms)

    def _assess(self, seen: list[Seen], observed: Mapping[str, Observed], now_ms: int) -> PlanCost | None:
        """Each observed job's window (its running placement priced — several jobs: together), its drifts against its
        baseline, each blocker, note and drift naming its job when there are several; the joint cost (None: one job,
        or not priced). Touches the cluster only for a job without a window (its TaskManagers)."""
        priced, total = self._price(observed)
        for s in seen:
            o = observed.get(s.track.name)
            if o is not None:
                cost, bounds = priced[s.track.name]
                s.snapshot, s.profile, s.running = o.snapshot, o.profile, o.running
                s.window = window_from_profile(o.profile, cost, start_ms=o.since_ms, end_ms=now_ms, job_id=o.job_id,
                                               taskmanagers=o.taskmanagers, fresh_source_rates=o.fresh_rates,
                                               latency_bounds=bounds)
                write_profile(o.profile, o.snapshot / "profile.json")
            self._drifts(s)
            if self.several:  # each blocker, note and drift names its job
                s.blockers = [f"job {s.track.name}: {b}" for b in s.blockers]
                s.notes = [f"job {s.track.name}: {n}" for n in s.notes]
                s.drifts = of_job([d for d in s.drifts if d.kind not in SHARED_KINDS], s.track.name)
        return total

    def _drifts(self, s: Seen) -> None:
        """One job's window against its baseline: drifts, the notes on where the baseline came from, the effect of
        the last apply, and a rate step still under way (a blocker)."""
        track, window = s.track, s.window
        if window is None:
            if track.baseline is not None:  # TaskManagers are still worth a look (and a line in the log)
                try:
                    s.drifts = taskmanager_drifts(track.baseline, frozenset(tm.id for tm in self.rest.taskmanagers()))
                except PlacementError:
                    pass
            return
        track.windows = [w for w in track.windows if w.job_id == window.job_id][-9:] + [window]
        if track.baseline is None and track.made_for is not None:  # the first warm window after an apply
            track.baseline, track.made_for = replace(track.made_for, taskmanagers=window.taskmanagers), None
            s.notes.append(f"baseline: the rates the applied plan was made for (re-planned if this window's differ "
                           f"by more than {track.baseline.rate_change:.0%})")
        elif track.baseline is None:  # the placement running at start is taken as fit for this load
            plan_dir = str(self.o.plan_dir) if self.o.plan_dir is not None else None
            track.baseline = Baseline(dict(window.source_rates), window.taskmanagers, plan_dir=plan_dir)
            track.started_on = dict(s.running) if s.running else None
            s.notes.append("baseline: this window's source rates and TaskManagers")
        s.drifts = detect(track.baseline, track.windows, self.o.thresholds)
        if track.baseline.rate_change is not None:  # the tighter tolerance is for the first warm window only
            track.baseline = replace(track.baseline, rate_change=None)
        self._effect(track, window, s.snapshot)
        moving = still_moving(track.windows) if any(d.kind == "rate" for d in s.drifts) else None
        if moving:
            s.blockers.append(moving)

    def _held_placement(self, track: JobTrack) -> Assignment | None:
        """Where the plan in effect puts the job's subtasks (no plan in effect: where they ran at the start)."""
        plan_dir = track.plan_in_effect()
        if plan_dir is None:  # only the scheduler extension (custom mode) runs a contingency
            return track.started_on if self.inventory.flink.placement_mode == "custom" else None
        path = Path(plan_dir) / (track.root.name if self.several else "") / "plan.json"
        try:
            doc = load_plan(path)
        except PlacementError:
            return None
        return {(a.vertex_id, a.subtask): a.host for a in doc.assignment} if doc.placement_mode == "custom" else None

    def _contingency(self, seen: list[Seen], now_ms: int) -> tuple[Decision, Drift, Proposal] | None:
        """The hold or the restore of a job running in its plan's contingency (:mod:`.recovery`); several jobs: the
        first job's that is in one decides for the set (they share the hosts), and a restore applies the fleet's
        plan."""
        found = []
        for s in seen:
            planned = self._held_placement(s.track)
            if planned is None or s.running is None or s.window is None:
                continue
            registered = s.window.taskmanagers
            self.back_since = {**self.back_since, **back_since(self.back_since, frozenset(planned.values()),
                                                               registered, now_ms)}
            for host in set(self.back_since) - registered:
                del self.back_since[host]
            verdict = contingency_decision(planned, s.running, registered, self.back_since, self.state, now_ms,
                                           self.o.policy)
            if verdict is not None:
                found.append((s, planned, verdict))
        if not found:
            return None
        s, planned, (decision, drift) = next((f for f in found if f[2][0].action == "hold"), found[0])
        if self.several:
            drift = replace(drift, job=s.track.name)
        plan_dir = s.track.plan_in_effect()
        if decision.action == "apply" and plan_dir is None:
            decision = replace(decision, action="hold", reason=decision.reason + ": no plan directory to restore "
                               "(start the watch with --plan, or run `placement apply` of the plan)")
        current = sum(link.mbit for link in s.window.links)  # type: ignore[union-attr]
        proposal = Proposal(current_wan_mbit=current, current_violations=s.window.violations,  # type: ignore[union-attr]
                            planned_wan_mbit=None if plan_dir is None else current,
                            moves=differs(planned, s.running or {}), plan_dir=plan_dir)
        return decision, drift, proposal

    def _shared_drifts(self, seen: list[Seen], total: PlanCost | None) -> list[Drift]:
        """Several jobs: what they share, detected once — an uplink the running placements together overfill
        (``total``: their joint cost; the message names each job's part) and TaskManagers lost or added. One job: none
        (its window has them)."""
        if not self.several:
            return []
        out: list[Drift] = []
        if total is not None:
            out += link_drifts(total.links, {s.track.name: {link.host: link.mbit for link in s.window.links}
                                             for s in seen if s.window is not None})
        first = self.tracks[0]
        if first.baseline is not None:
            registered = next((s.window.taskmanagers for s in seen if s.window is not None), None)
            try:
                if registered is None:
                    registered = frozenset(tm.id for tm in self.rest.taskmanagers())
                out += taskmanager_drifts(first.baseline, registered)
            except PlacementError:
                pass
        return out

    def _blockers(self, track: JobTrack, now_ms: int) -> tuple[list[str], JobDetails | None, list[str]]:
        """Why no change may start now; the running job's REST body when its window can be read (None while there
        is no running job, it is not wholly RUNNING or still warming up); notes."""
        try:
            running = [j for j in self.rest.jobs() if j.name == track.name and j.state not in TERMINAL_STATES]
        except PlacementError as exc:
            return [f"Flink REST: {exc}"], None, []
        if len(running) != 1:
            return ([f"no running job named {track.name!r} (a redeploy in progress?)"] if not running else
                    [f"{len(running)} jobs named {track.name!r} run"]), None, []
        job = self.rest.job(running[0].id)
        track.job_id = job.id
        self.status.job_ids[track.name] = job.id
        if track is self.tracks[0]:
            self.status.job_id = job.id
        if not job.all_running:
            return [f"job {job.id} is not wholly RUNNING (a redeploy or restart in progress)"], None, []
        # a whole window past --warmup: Flink's 60 s rate meters still carry the start in the first samples after it
        warm = job.start_ms / 1000 + self.o.warmup_s + self.o.window_s - now_ms / 1000
        if warm > 0:
            return [f"warming up: {warm:.0f} s until a whole window past --warmup"], None, []
        return [], job, []

    def _checkpoint_settled(self, job_id: str) -> str | None:
        """Wait (up to ``checkpoint_grace_s``) until no checkpoint or savepoint of the job is in progress; the
        blocker when one still is. Checkpoints come every few seconds: a decision waits out the one under way
        rather than skipping its tick (ticks in step with the checkpoint interval would never find a gap)."""
        deadline = self.clock() + self.o.checkpoint_grace_s
        while True:
            running_s = self._checkpoint_running_s(job_id, int(self.clock() * 1000))
            if running_s is None:
                return None
            if self.clock() >= deadline or self.stop_event.is_set():
                return f"a checkpoint or savepoint has been in progress for {running_s:.0f} s"
            time.sleep(0.5)

    def _checkpoint_running_s(self, job_id: str, now_ms: int) -> float | None:
        """How long the oldest checkpoint or savepoint in progress has been running; None when none is."""
        try:
            body = self.rest.get(f"/jobs/{job_id}/checkpoints")
        except PlacementError:
            return None  # checkpointing off
        if not body.get("counts", {}).get("in_progress", 0):
            return None
        started = [c.get("trigger_timestamp") for c in body.get("history", []) if c.get("status") == "IN_PROGRESS"]
        started = [t for t in started if isinstance(t, (int, float))]
        return (now_ms - min(started)) / 1000 if started else 0.0

    def _observe(self, track: JobTrack, tick: int, now_ms: int, job: JobDetails) -> Observed:
        since = now_ms - int(self.o.window_s * 1000)
        if self.last_change_ms is not None:
            since = max(since, self.last_change_ms)
        snapshot = track.windows_dir / f"tick-{tick:05d}"
        if snapshot_window(track.history, snapshot, job_name=track.name, since_ms=since) == 0:
            raise PlacementError("the collector has written no part in the window yet")
        self._drop_old_windows(track)
        profile = self.profiler.profile(snapshot)
        manifest = find_manifests(snapshot)[-1][1]
        running = current_assignment(manifest, self.inventory)
        tms = frozenset(tm.id for tm in self.rest.taskmanagers())
        return Observed(snapshot, profile, running, since, manifest.job_id, tms, self._fresh_rates(track, job.id))

    def _price(self, observed: Mapping[str, Observed]) -> tuple[dict[str, tuple[PlanCost | None, Any]],
                                                               PlanCost | None]:
        """Each window's running placement under the cost model (None where it cannot be priced) with its problem's
        latency bounds. One job: its problem alone. Several: the joint problem of every job's profile — shared
        uplinks, CPU and queues — and each job's part of it; all of them unpriced unless every job was observed and
        every placement is known (a job's load alone says nothing of a shared uplink). The joint cost is returned
        too (None: not priced)."""
        if not self.several:
            out: dict[str, tuple[PlanCost | None, Any]] = {}
            for name, o in observed.items():
                problem = self._problem(o.profile, 1.0)
                out[name] = (running_cost(problem, o.running), problem.latency_bounds)
            return out, None
        joint = self._joint({name: o.profile for name, o in observed.items()}, 1.0) if observed else None
        bounds = {job.name: job.problem.latency_bounds for job in joint.jobs} if joint else {}
        unpriced = {name: (None, bounds.get(name)) for name in observed}
        if joint is None or len(observed) < len(self.tracks):
            return unpriced, None
        running = joint_running(joint, {name: o.running for name, o in observed.items()})
        if running is None:
            return unpriced, None
        total = evaluate(joint.problem, running)
        costs = job_costs(joint, running, total)
        return {name: (costs[name], bounds[name]) for name in observed}, total

    def _fresh_rates(self, track: JobTrack, job_id: str) -> dict[str, float]:
        """Records/s of each source vertex since the previous tick, from its ``numRecordsOut`` counter (summed over
        its subtasks, and over a vanilla-placed source's lane copies); empty on a job's first tick. Each reading is
        dated when a metric fetch lands (:meth:`FlinkRest.fetched_counters`): dated when asked, readings lag by
        anything up to a fetch interval, and rates over a 10 s tick were off by ±20–40 % on a loaded lab — enough to
        look like a step still moving."""
        if track.sources.get("job") != job_id:
            vertices, edges = shaping.job_graph(self.rest.job_raw(job_id), self.rest.plan(job_id))
            fed = {e.target for e in edges}
            track.sources = {"job": job_id, "ids": {v.id: v.name for v in vertices if v.id not in fed}}
            track.counts = None
        ids = track.sources["ids"]
        if self._fetch_wait_s is None:
            self._fetch_wait_s = self.rest.metric_fetch_interval_s() + 2.0
        now, by_id = self.rest.fetched_counters(job_id, list(ids), "numRecordsOut", wait_s=self._fetch_wait_s)
        counts: dict[str, float | None] = {}
        for vid, value in by_id.items():  # by name: a vanilla-placed source is one vertex per lane, all one name
            name = ids[vid]
            counts[name] = None if value is None or (name in counts and counts[name] is None) else (
                counts.get(name) or 0.0) + value
        before, track.counts = track.counts, (now, counts)
        if before is None or now - before[0] < 1.0:
            return {}
        return {name: (c - before[1][name]) / (now - before[0]) for name, c in counts.items()
                if c is not None and before[1].get(name) is not None and c >= before[1][name]}

    def _problem(self, profile: JobProfile, rate_scale: float):
        return build_problem(self.inventory, profile, PlanOptions(rate_scale=rate_scale,
                                                                  placement_mode=self.inventory.flink.placement_mode),
                             inventory_source=str(self.o.inventory_path))

    def _joint(self, profiles: Mapping[str, JobProfile], rate_scale: float,
               job_scales: Mapping[str, float] | None = None) -> JointProblem:
        """The watched jobs' joint problem as ``placement plan --profile … --profile …`` builds it (each job's
        priority and budget from the inventory's ``jobs:``; ``job_scales``: job -> its own rate scale)."""
        policies = job_policies(self.inventory, [(name, p.job.name) for name, p in profiles.items()])
        return build_joint(self.inventory, list(profiles.items()), rate_scale,
                           placement_mode=self.inventory.flink.placement_mode,
                           inventory_source=str(self.o.inventory_path), policies=policies, job_scales=job_scales)

    def _drop_old_windows(self, track: JobTrack, keep: int = 20) -> None:
        import shutil

        for old in sorted(track.windows_dir.glob("tick-*"))[:-keep]:
            shutil.rmtree(old, ignore_errors=True)

    def _replan(self, tick: int, profile: JobProfile, window: Window, running: Assignment | None,
                drifts: Iterable[Drift] = ()) -> tuple[Proposal, float]:
        """Plan for the demand (measured rates, scaled up where sources are back-pressured; the measured rates where
        nothing fits the scaled ones) and price the running placement under the same load. ``placement plan`` reads
        the same inventory, so the plan honours ``policy.max_latency_ms`` (the ILP's bound) as the pricing does; a
        measured latency breach counts against the running placement like a capacity it breaks."""
        track = self.tracks[0]
        profile_path = track.windows_dir / f"tick-{tick:05d}" / "profile.json"
        scale = demand_scale(window, self.o.max_demand_scale)
        outcome, scale, demand_unmet = self._plan_for_demand(
            lambda out, x: self.plan_fn(profile_path, out, x), tick, scale, 1.0, scale > 1.0)  # type: ignore[misc]
        current_wan, current_violations, current_peak = sum(link.mbit for link in window.links), window.violations, None
        paths = window.paths
        if running is not None:
            cost = evaluate(self._problem(profile, scale), running)
            current_wan, current_violations, current_peak = cost.wan_mbit, tuple(cost.violations), cost_peak(cost)
            paths = cost.paths
        proposal = proposal_from(outcome, current_wan, current_violations, current_peak, paths, drifts,
                             moves(outcome.assignment, running) if outcome.fits else 0, demand_unmet=demand_unmet)
        track.planned_links = dict(outcome.links)
        track.planned_rates = {name: rate * scale for name, rate in window.source_rates.items()}
        return proposal, scale

    def _plan_for_demand(self, plan: Callable[[Path, S], Any], tick: int, demand: S, measured: S,
                         above: bool) -> tuple[Any, S, bool]:
        """``plan(out_dir, scales)`` at the sources' demand; where nothing fits it and the demand is ``above`` the
        measured rates, again at the measured rates (``…-measured``). Returns the outcome, the scales it was made
        for, and whether the demand went unmet (a plan that may relieve, never one applied as cheaper)."""
        outcome = plan(self.plans_dir / f"tick-{tick:05d}", demand)
        if outcome.fits or not above:
            return outcome, demand, False
        return plan(self.plans_dir / f"tick-{tick:05d}-measured", measured), measured, True

    def _replan_jobs(self, tick: int, seen: Sequence[Seen],
                     drifts: Iterable[Drift] = ()) -> tuple[Proposal, dict[str, float]]:
        """:meth:`_replan` of several jobs: one joint plan of every watched job with its fresh profile
        (``placement plan --profile … --profile …``), the running placements priced together under the same load.
        Each job at its own rate scale (``--rate-scale JOB=X``): what its own sources want now, so a job whose
        demand grew does not over-plan the others — the measured rates of every job where nothing fits them."""
        profiles = {s.track.name: s.track.windows_dir / f"tick-{tick:05d}" / "profile.json" for s in seen}
        scales = {s.track.name: demand_scale(s.window, self.o.max_demand_scale) for s in seen}  # type: ignore[arg-type]
        outcome, scales, demand_unmet = self._plan_for_demand(
            lambda out, x: self.plan_jobs_fn(profiles, out, x), tick, scales,  # type: ignore[misc]
            dict.fromkeys(scales, 1.0), max(scales.values()) > 1.0)
        joint = self._joint({s.track.name: s.profile for s in seen}, 1.0, scales)  # type: ignore[misc]
        running = joint_running(joint, {s.track.name: s.running for s in seen})
        if running is not None:
            cost = evaluate(joint.problem, running)
            paths = tuple(p for c in job_costs(joint, running, cost).values() for p in c.paths)
            current = (cost.wan_mbit, tuple(cost.violations), cost_peak(cost), paths)
        else:  # a placement not known: the windows' own figures, as for one job
            current = (sum(link.mbit for s in seen for link in s.window.links),  # type: ignore[union-attr]
                       tuple(v for s in seen for v in s.window.violations), None,  # type: ignore[union-attr]
                       tuple(p for s in seen for p in s.window.paths))  # type: ignore[union-attr]
        moved = sum(moves(outcome.jobs[s.track.name].assignment, s.running) for s in seen) if outcome.fits else 0
        proposal = proposal_from(outcome, *current, drifts, moved, demand_unmet=demand_unmet)
        for s in seen:
            part = outcome.jobs.get(s.track.name)
            s.track.planned_links = dict(part.links) if part is not None else {}
            rates = s.window.source_rates  # type: ignore[union-attr]
            s.track.planned_rates = {name: rate * scales[s.track.name] for name, rate in rates.items()}
        return proposal, scales

    def _act(self, decision: Decision, proposal: Proposal, now_ms: int) -> dict[str, Any]:
        if self.o.apply == "never":
            return {"status": "not-applied", "message": "--apply never: recorded only"}
        if self.o.apply == "ask" and not (self.ask_fn and self.ask_fn(decision, proposal)):
            return {"status": "declined", "message": "declined at the prompt"}
        self._update(f"applying {proposal.plan_dir}")
        before = {t.name: t.job_id for t in self.tracks}
        if self.several:  # one change: every job's preflight first, any failure rolls every job back
            outcome = apply_fleet_plan(Path(proposal.plan_dir or ""), self.o)
        else:
            outcome = apply_plan(Path(proposal.plan_dir or ""), self.o, self.rest)
        end_ms = int(self.clock() * 1000)
        if outcome.get("changed"):
            self.state = after_change(self.state, end_ms)
            self.last_change_ms = end_ms
            for track in self.tracks:
                track.windows = []
        if outcome["status"] == "applied":
            self.status.applies += 1
            redeployed = set(outcome["jobs"]) if self.several else {self.tracks[0].name}
            for track in self.tracks:
                # the plan was made for these rates: the first warm window is held to them (and re-planned if it is
                # off), the ones after it to the rates then
                track.baseline = None
                track.made_for = Baseline(dict(track.planned_rates), plan_dir=proposal.plan_dir,
                                          rate_change=self.o.thresholds.reprice_change)
                if track.name in redeployed:  # a job whose plan was in effect already keeps its job: no effect
                    track.pending_effect = (self.status.ticks, before[track.name], track.planned_links)
        elif outcome["status"] in ("rolled-back", "rollback-failed"):
            self.status.rolled_back += 1
        outcome["took_s"] = round((end_ms - now_ms) / 1000, 1)
        return outcome

    def _effect(self, track: JobTrack, window: Window, snapshot: Path | None) -> None:
        """The first usable window of the job an apply started: predicted vs measured, logged once."""
        if track.pending_effect is None:
            return
        tick, before, predicted = track.pending_effect
        if window.job_id == before or not window.links:
            return
        record = effect_record(tick, window.end_ms, predicted, window, str(snapshot) if snapshot else None)
        self.log.write({**record, "job": track.name} if self.several else record)
        track.pending_effect = None
