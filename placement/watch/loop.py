"""The world-touching loop of ``placement watch``: it composes the stages and owns none of them.

* collect — :class:`placement.collect.collector.Collector` in a thread, writing a rolling history (``keep_s`` /
  ``keep_bytes``); when the job ends (a redeploy stops it with a savepoint) it starts again on the job of the same
  name that runs next;
* profile — each tick cuts the window (:func:`placement.collect.rolling.snapshot_window`) and profiles it with
  ``placement profile``'s own function and one Spark session kept for the whole watch (:mod:`.profiling`);
* plan — a callable the CLI gives (``placement plan`` itself, run as a function), called only on drift;
* apply — ``placement apply``'s public request / prepare / execute: the same preflight, lock, savepoint, verify,
  roll back and audit log.

Between them the pure parts decide: :mod:`.signals` (drift) and :mod:`.policy` (act or not); :mod:`.record` logs each
tick. Stopping (:meth:`Watch.stop`, from a signal handler) is honoured between steps: an apply that has begun runs
to its end (applied or rolled back) before the loop exits, so nothing is left half-applied.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from placement.collect import shaping
from placement.collect.collector import CollectOptions, Collector
from placement.collect.layout import RunManifest, find_manifests
from placement.collect.rolling import snapshot_window
from placement.costmodel.evaluate import PlanCost, evaluate, latency_sentence
from placement.costmodel.model import Assignment, PlanOptions, build_problem
from placement.errors import BadInput, PlacementError
from placement.flink.rest import TERMINAL_STATES, FlinkRest, JobDetails
from placement.inventory import Inventory, load_inventory
from placement.profile.format import JobProfile
from placement.profile.pipeline import write_profile
from placement.profile.rules import host_speed_for
from placement.watch.policy import (
    Decision,
    PolicyConfig,
    PolicyState,
    Proposal,
    after_change,
    decide,
)
from placement.watch.profiling import WindowProfiler
from placement.watch.record import DecisionLog, decision_record, effect_record
from placement.watch.signals import (
    Baseline,
    Drift,
    DriftThresholds,
    Window,
    demand_scale,
    detect,
    still_moving,
    taskmanager_drifts,
    window_from_profile,
)

ApplyMode = Literal["never", "ask", "auto"]


@dataclass(frozen=True)
class PlanOutcome:
    """What the planner made of a window's profile (written to ``plan_dir`` when something fits)."""

    plan_dir: Path
    fits: bool
    wan_mbit: float | None
    violations: tuple[str, ...] = ()  # why nothing fits
    links: Mapping[str, float] = field(default_factory=dict)  # edge host -> predicted Mbit/s
    assignment: Mapping[tuple[str, int], str] = field(default_factory=dict)
    peak: float | None = None  # the busiest uplink or host as a share of its capacity (see peak_use)


PlanFn = Callable[[Path, Path, float], PlanOutcome]  # (profile.json, out dir, rate scale) -> outcome
AskFn = Callable[[Decision, Proposal], bool]


@dataclass
class WatchOptions:
    inventory_path: Path
    job_name: str
    work_dir: Path
    apply: ApplyMode = "never"
    interval_s: float = 30.0  # one decision per interval
    window_s: float = 90.0  # the span each decision profiles
    sample_s: float = 2.0  # collector sampling interval
    flush_s: float = 10.0  # a part file per flush: the window's granularity
    keep_s: float = 900.0  # the rolling history keeps this much (age) ...
    keep_bytes: int = 256 << 20  # ... and at most this much (size)
    warmup_s: float = 60.0  # as `placement profile --warmup`
    settle_s: float = 10.0  # as `placement apply --settle`
    engine: Literal["spark", "pandas"] = "spark"
    spark_master: str | None = None
    max_demand_scale: float = 4.0  # plan for up to this multiple of the window's profiled source rates
    checkpoint_grace_s: float = 30.0  # before a change: wait this long at most for a checkpoint in progress to end
    thresholds: DriftThresholds = field(default_factory=DriftThresholds)
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    log_path: Path | None = None
    duration_s: float | None = None  # stop after this long (None: until stopped)

    def check(self) -> None:
        for name in ("interval_s", "window_s", "sample_s", "flush_s"):
            if getattr(self, name) <= 0:
                raise BadInput("must be > 0", field="--" + name.removesuffix("_s").replace("_", "-"))
        if self.window_s > self.keep_s:
            raise BadInput(f"the window ({self.window_s:g} s) must fit in the kept history ({self.keep_s:g} s)",
                           field="--window")
        if self.flush_s > self.window_s / 2:
            raise BadInput(f"a part is flushed every {self.flush_s:g} s: the window ({self.window_s:g} s) needs at "
                           "least two", field="--flush")


@dataclass
class Status:
    """What the live display shows; updated by the loop after each step."""

    phase: str = "starting"
    job_id: str | None = None
    collector: str = "starting"
    ticks: int = 0
    applies: int = 0
    rolled_back: int = 0
    window: Window | None = None
    drifts: list[Drift] = field(default_factory=list)
    proposal: Proposal | None = None
    decision: Decision | None = None
    next_tick_at: float = 0.0
    notes: list[str] = field(default_factory=list)


def peak_use(links: Iterable[tuple[float, float]], hosts: Iterable[tuple[float, float]],
             paths: Iterable[tuple[float | None, float | None]] = ()) -> float | None:
    """The busiest resource as a share of its capacity: (Mbit/s, bandwidth) per uplink, (cores used, cores) per
    host, and (predicted latency, bound) per bounded source → sink path — a latency bound is a capacity too, so a
    plan that comes closer to it (or breaks it) is not "roomier". A latency of None is one without a bound (an uplink
    past 99 %, plan.json's null). The cost model's figures for the running placement and the plan's predictions are
    read the same way."""
    shares = [used / cap for used, cap in [*links, *hosts] if cap > 0]
    shares += [math.inf if ms is None else ms / bound for ms, bound in paths if bound]
    return max(shares) if shares else None


def cost_peak(cost: PlanCost) -> float | None:
    return peak_use(((link.mbit, link.bandwidth_mbit) for link in cost.links),
                    ((h.cores_used, h.cores) for h in cost.hosts),
                    ((p.latency_ms, p.bound_ms) for p in cost.paths))


def measured_breaches(drifts: Iterable[Drift]) -> tuple[str, ...]:
    """Latency bounds the running placement breaks as measured (Flink's latency markers, sustained): a breach like
    the cost model's, so the re-plan is a relief as for a broken link. (A predicted breach is in the cost model's
    violations already.)"""
    return tuple(d.message for d in drifts if d.kind == "latency" and d.basis == "measured")


class CollectorThread:
    """A collector that keeps collecting the job called ``job_name`` into one rolling history, across redeploys."""

    def __init__(self, rest_url: str, options: WatchOptions, history: Path, stop: threading.Event, status: Status):
        self.rest_url, self.o, self.history, self.stop_event, self.status = rest_url, options, history, stop, status
        self.thread = threading.Thread(target=self._run, name="watch-collector", daemon=True)
        self.error: str | None = None

    def start(self) -> None:
        self.thread.start()

    def _sleep(self, seconds: float) -> None:
        if self.stop_event.wait(seconds):
            raise KeyboardInterrupt  # the collector's own way to stop: it flushes what it has and returns

    def _run(self) -> None:
        o = self.o
        while not self.stop_event.is_set():
            collector = Collector(CollectOptions(
                rest_url=self.rest_url, out_dir=self.history, job_name=o.job_name, duration_s=1e9,
                interval_s=o.sample_s, flush_s=o.flush_s, keep_s=o.keep_s, keep_bytes=o.keep_bytes,
            ), sleep=self._sleep)
            try:
                self.status.collector = "waiting for the job"
                manifest = collector.run(on_progress=lambda p: setattr(self.status, "collector",
                                                                       f"collecting ({p.rows:,} samples)"))
                self.status.collector = f"run {manifest.run_id} ended: {manifest.stopped}"
            except KeyboardInterrupt:
                return
            except PlacementError as exc:  # no running job (a redeploy in progress), REST down: try again
                self.error = str(exc)
                self.status.collector = f"retrying: {exc}"
            if self.stop_event.wait(2.0):
                return

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)


def current_assignment(manifest: RunManifest, inv: Inventory) -> dict[tuple[str, int], str] | None:
    """Where each subtask ran (inventory host names), from the run's locations; None when one cannot be matched."""
    out: dict[tuple[str, int], str] = {}
    for loc in manifest.locations:
        host = host_speed_for(loc, inv)[1]
        if host is None:
            return None
        out[(loc.vertex_id, loc.subtask)] = host
    return out or None


def moves(planned: Mapping[tuple[str, int], str], running: Mapping[tuple[str, int], str] | None) -> int:
    """Subtasks the plan puts elsewhere than they run (or that exist on one side only)."""
    if running is None:
        return len(planned)
    return sum(1 for k in set(planned) | set(running) if planned.get(k) != running.get(k))


class Watch:
    def __init__(self, options: WatchOptions, *, plan_fn: PlanFn, ask_fn: AskFn | None = None,
                 on_update: Callable[[Status], None] | None = None, rest: FlinkRest | None = None,
                 clock: Callable[[], float] = time.time):
        options.check()
        if options.apply == "ask" and ask_fn is None:
            raise BadInput("--apply ask needs a terminal to ask on", field="--apply")
        self.o = options
        self.inventory = load_inventory(options.inventory_path)
        self.rest = rest or FlinkRest(self.inventory.flink.rest_url)
        self.plan_fn, self.ask_fn = plan_fn, ask_fn
        self.on_update = on_update or (lambda s: None)
        self.clock = clock
        self.history = options.work_dir / "history"
        self.windows_dir = options.work_dir / "windows"
        self.plans_dir = options.work_dir / "plans"
        self.log = DecisionLog(options.log_path)
        self.profiler = WindowProfiler(engine=options.engine, spark_master=options.spark_master,
                                       inventory=options.inventory_path, warmup_s=options.warmup_s)
        self.status = Status()
        self.stop_event = threading.Event()
        self.state = PolicyState()
        self.baseline: Baseline | None = None
        self.windows: list[Window] = []
        self.last_change_ms: int | None = None
        self.pending_effect: tuple[int, str | None, dict[str, float]] | None = None  # (tick, job before, predicted)
        self._planned_links: dict[str, float] = {}  # the last re-plan's predicted Mbit/s per uplink
        self._planned_rates: dict[str, float] = {}  # ... and the source rates it was made for
        self._made_for: Baseline | None = None  # after an apply: what its plan was made for, until a warm window
        self._sources: dict[str, Any] = {}  # the job whose source vertices are known, and their ids -> names
        self._counts: tuple[float, dict[str, float | None]] | None = None  # the last tick's source counters
        self._fetch_wait_s: float | None = None  # how long a fresh counter reading may wait for a metric fetch

    # ---- control ---------------------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Ask the loop to end after the step in progress (an apply in progress finishes or rolls back first)."""
        self.stop_event.set()

    def run(self) -> Status:
        for d in (self.history, self.windows_dir, self.plans_dir):
            d.mkdir(parents=True, exist_ok=True)
        collector = CollectorThread(self.inventory.flink.rest_url, self.o, self.history, self.stop_event, self.status)
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
            collector.join(timeout=30)
            self.profiler.close()
            self._update("stopped")
        return self.status

    def plan_in_effect(self) -> str | None:
        """The plan directory whose prediction the running placement is held to (None: the placement that ran when
        the watch started): the last plan applied, or the last re-plan that kept the placement."""
        held = self._made_for or self.baseline
        return held.plan_dir if held is not None else None

    def _update(self, phase: str) -> None:
        self.status.phase = phase
        self.on_update(self.status)

    # ---- one decision ----------------------------------------------------------------------------------------------

    def tick(self) -> dict[str, Any]:
        """Observe one window, detect, re-plan on drift, decide, act; returns the decision record (also logged)."""
        self.status.ticks += 1
        tick, now_ms = self.status.ticks, int(self.clock() * 1000)
        blockers, job, notes = self._blockers(now_ms)
        window = snapshot = profile = running = None
        if job is not None:  # observed (and logged) even while a checkpoint blocks a change
            self._update("profiling the window")
            try:
                window, snapshot, profile, running = self._observe(tick, now_ms, job)
            except PlacementError as exc:
                blockers.append(f"no usable window: {exc}")
        drifts: list[Drift] = []
        proposal = None
        if window is not None:
            self.windows = [w for w in self.windows if w.job_id == window.job_id][-9:] + [window]
            if self.baseline is None and self._made_for is not None:  # the first warm window after an apply
                self.baseline, self._made_for = replace(self._made_for, taskmanagers=window.taskmanagers), None
                notes.append(f"baseline: the rates the applied plan was made for (re-planned if this window's differ "
                             f"by more than {self.baseline.rate_change:.0%})")
            elif self.baseline is None:  # the placement running at start is taken as fit for this load
                self.baseline = Baseline(dict(window.source_rates), window.taskmanagers)
                notes.append("baseline: this window's source rates and TaskManagers")
            drifts = detect(self.baseline, self.windows, self.o.thresholds)
            if self.baseline.rate_change is not None:  # the tighter tolerance is for the first warm window only
                self.baseline = replace(self.baseline, rate_change=None)
            self._effect(window, snapshot)
            moving = still_moving(self.windows) if any(d.kind == "rate" for d in drifts) else None
            if moving:
                blockers.append(moving)
            elif drifts and profile is not None:
                self._update("re-planning")
                try:
                    proposal, scale = self._replan(tick, profile, window, running, drifts)
                except PlacementError as exc:
                    notes.append(f"re-plan failed: {exc}")
                else:
                    if scale > 1.005:
                        notes.append(f"planned for {scale:.2f}x the window's profiled rates (the sources' demand now)")
        elif self.baseline is not None:  # no window: TaskManagers are still worth a look (and a line in the log)
            try:
                drifts = taskmanager_drifts(self.baseline, frozenset(tm.id for tm in self.rest.taskmanagers()))
            except PlacementError:
                pass
        decision = decide(self.state, now_ms, drifts, proposal, blockers, self.o.policy)
        if decision.action == "apply" and job is not None and self.o.apply != "never":
            waited = self._checkpoint_settled(job.id)
            if waited is not None:
                decision = decide(self.state, now_ms, drifts, proposal, [waited], self.o.policy)
        self.state = decision.state
        if (window is not None and proposal is not None and decision.action == "hold" and proposal.planned_fits
                and proposal.moves == 0):
            # the re-plan keeps the placement running: it is the plan for this load, so drift is measured from here
            # (else every tick re-plans the same placement until the load returns)
            self.baseline = Baseline(dict(window.rates_now()), window.taskmanagers, plan_dir=proposal.plan_dir)
            notes.append("baseline: the placement running is the plan for this window's load")
        outcome = None
        if decision.action == "apply" and proposal is not None:
            outcome = self._act(decision, proposal, window, now_ms)
        record = decision_record(tick, now_ms, window, str(snapshot) if snapshot else None, drifts, proposal, decision,
                                 apply=outcome, notes=notes, plan_in_effect=self.plan_in_effect())
        self.log.write(record)
        self.status.window, self.status.drifts, self.status.proposal, self.status.decision = window, drifts, proposal, decision
        self.status.notes = notes
        self._update("decided")
        return record

    def _blockers(self, now_ms: int) -> tuple[list[str], JobDetails | None, list[str]]:
        """Why no change may start now; the running job's REST body when its window can be read (None while there
        is no running job, it is not wholly RUNNING or still warming up); notes."""
        try:
            running = [j for j in self.rest.jobs() if j.name == self.o.job_name and j.state not in TERMINAL_STATES]
        except PlacementError as exc:
            return [f"Flink REST: {exc}"], None, []
        if len(running) != 1:
            return ([f"no running job named {self.o.job_name!r} (a redeploy in progress?)"] if not running else
                    [f"{len(running)} jobs named {self.o.job_name!r} run"]), None, []
        job = self.rest.job(running[0].id)
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

    def _observe(self, tick: int, now_ms: int, job: JobDetails) -> tuple[Window, Path, JobProfile, Assignment | None]:
        since = now_ms - int(self.o.window_s * 1000)
        if self.last_change_ms is not None:
            since = max(since, self.last_change_ms)
        snapshot = self.windows_dir / f"tick-{tick:05d}"
        if snapshot_window(self.history, snapshot, job_name=self.o.job_name, since_ms=since) == 0:
            raise PlacementError("the collector has written no part in the window yet")
        self._drop_old_windows()
        profile = self.profiler.profile(snapshot)
        manifest = find_manifests(snapshot)[-1][1]
        running = current_assignment(manifest, self.inventory)
        problem = self._problem(profile, 1.0)
        keys = {s.key for s in problem.subtasks}
        cost = evaluate(problem, running) if running is not None and keys <= set(running) else None
        tms = frozenset(tm.id for tm in self.rest.taskmanagers())
        window = window_from_profile(profile, cost, start_ms=since, end_ms=now_ms, job_id=manifest.job_id,
                                     taskmanagers=tms, fresh_source_rates=self._fresh_rates(job.id),
                                     latency_bounds=problem.latency_bounds)
        write_profile(profile, snapshot / "profile.json")
        return window, snapshot, profile, running

    def _fresh_rates(self, job_id: str) -> dict[str, float]:
        """Records/s of each source vertex since the previous tick, from its ``numRecordsOut`` counter (summed over
        its subtasks); empty on a job's first tick. Each reading is dated when a metric fetch lands
        (:meth:`FlinkRest.fetched_counters`): dated when asked, readings lag by anything up to a fetch interval, and
        rates over a 10 s tick were off by ±20–40 % on a loaded lab — enough to look like a step still moving."""
        if self._sources.get("job") != job_id:
            vertices, edges = shaping.job_graph(self.rest.job_raw(job_id), self.rest.plan(job_id))
            fed = {e.target for e in edges}
            self._sources = {"job": job_id, "ids": {v.id: v.name for v in vertices if v.id not in fed}}
            self._counts = None
        ids = self._sources["ids"]
        if self._fetch_wait_s is None:
            self._fetch_wait_s = self.rest.metric_fetch_interval_s() + 2.0
        now, by_id = self.rest.fetched_counters(job_id, list(ids), "numRecordsOut", wait_s=self._fetch_wait_s)
        counts = {ids[vid]: value for vid, value in by_id.items()}
        before, self._counts = self._counts, (now, counts)
        if before is None or now - before[0] < 1.0:
            return {}
        return {name: (c - before[1][name]) / (now - before[0]) for name, c in counts.items()
                if c is not None and before[1].get(name) is not None and c >= before[1][name]}

    def _problem(self, profile: JobProfile, rate_scale: float):
        return build_problem(self.inventory, profile, PlanOptions(rate_scale=rate_scale,
                                                                  placement_mode=self.inventory.flink.placement_mode),
                             inventory_source=str(self.o.inventory_path))

    def _drop_old_windows(self, keep: int = 20) -> None:
        import shutil

        for old in sorted(self.windows_dir.glob("tick-*"))[:-keep]:
            shutil.rmtree(old, ignore_errors=True)

    def _replan(self, tick: int, profile: JobProfile, window: Window, running: Assignment | None,
                drifts: Iterable[Drift] = ()) -> tuple[Proposal, float]:
        """Plan for the demand (measured rates, scaled up where sources are back-pressured; the measured rates where
        nothing fits the scaled ones) and price the running placement under the same load. ``placement plan`` reads
        the same inventory, so the plan honours ``policy.max_latency_ms`` (the ILP's bound) as the pricing does; a
        measured latency breach counts against the running placement like a capacity it breaks."""
        profile_path = self.windows_dir / f"tick-{tick:05d}" / "profile.json"
        scale = demand_scale(window, self.o.max_demand_scale)
        outcome = self.plan_fn(profile_path, self.plans_dir / f"tick-{tick:05d}", scale)
        if not outcome.fits and scale > 1.0:
            scale = 1.0
            outcome = self.plan_fn(profile_path, self.plans_dir / f"tick-{tick:05d}-measured", scale)
        current_wan, current_violations, current_peak = sum(link.mbit for link in window.links), window.violations, None
        paths = window.paths
        if running is not None:
            cost = evaluate(self._problem(profile, scale), running)
            current_wan, current_violations, current_peak = cost.wan_mbit, tuple(cost.violations), cost_peak(cost)
            paths = cost.paths
        latency_breaches = (*(latency_sentence(p) for p in paths if p.over_bound), *measured_breaches(drifts))
        current_violations = (*current_violations, *measured_breaches(drifts))
        proposal = Proposal(
            current_wan_mbit=current_wan, current_violations=current_violations, planned_wan_mbit=outcome.wan_mbit,
            planned_violations=() if outcome.fits else (outcome.violations or ("no placement fits",)),
            moves=moves(outcome.assignment, running) if outcome.fits else 0, plan_dir=str(outcome.plan_dir),
            current_peak=current_peak, planned_peak=outcome.peak, current_latency_breaches=latency_breaches,
        )
        self._planned_links = dict(outcome.links)
        self._planned_rates = {name: rate * scale for name, rate in window.source_rates.items()}
        return proposal, scale

    def _act(self, decision: Decision, proposal: Proposal, window: Window | None, now_ms: int) -> dict[str, Any]:
        if self.o.apply == "never":
            return {"status": "not-applied", "message": "--apply never: recorded only"}
        if self.o.apply == "ask" and not (self.ask_fn and self.ask_fn(decision, proposal)):
            return {"status": "declined", "message": "declined at the prompt"}
        self._update(f"applying {proposal.plan_dir}")
        before = self.status.job_id
        outcome = apply_plan(Path(proposal.plan_dir or ""), self.o, self.rest)
        end_ms = int(self.clock() * 1000)
        if outcome.get("changed"):
            self.state = after_change(self.state, end_ms)
            self.last_change_ms = end_ms
            self.windows = []
        if outcome["status"] == "applied":
            self.status.applies += 1
            # the plan was made for these rates: the first warm window is held to them (and re-planned if it is
            # off), the ones after it to the rates then
            self.baseline = None
            self._made_for = Baseline(dict(self._planned_rates), plan_dir=proposal.plan_dir,
                                      rate_change=self.o.thresholds.reprice_change)
            self.pending_effect = (self.status.ticks, before, self._planned_links)
        elif outcome["status"] in ("rolled-back", "rollback-failed"):
            self.status.rolled_back += 1
        outcome["took_s"] = round((end_ms - now_ms) / 1000, 1)
        return outcome

    def _effect(self, window: Window, snapshot: Path | None) -> None:
        """The first usable window of the job an apply started: predicted vs measured, logged once."""
        if self.pending_effect is None:
            return
        tick, before, predicted = self.pending_effect
        if window.job_id == before or not window.links:
            return
        self.log.write(effect_record(tick, window.end_ms, predicted, window, str(snapshot) if snapshot else None))
        self.pending_effect = None


def apply_plan(plan_dir: Path, options: WatchOptions, rest: FlinkRest) -> dict[str, Any]:
    """``placement apply PLAN_DIR --inventory INV --job-name NAME`` through its public request, prepare and execute
    (same preflight, lock, savepoint, verify, roll back, audit log in PLAN_DIR/apply-audit.jsonl). Never raises for
    an apply that did not take effect: the outcome says what happened, ``changed`` whether the job was redeployed."""
    from placement.apply import ApplyFailed, PreflightFailed, execute, prepare
    from placement.apply.request import load_request

    audit = plan_dir / "apply-audit.jsonl"
    try:
        req = load_request(plan_dir, options.inventory_path, job_name=options.job_name, settle_s=options.settle_s)
        prepared = prepare(req, rest=rest)
    except PreflightFailed as exc:
        return {"status": "refused", "message": str(exc), "changed": False, "audit": str(audit)}
    except PlacementError as exc:
        return {"status": "error", "message": str(exc), "changed": False, "audit": str(audit)}
    try:
        result = execute(prepared, audit_path=audit, echo=lambda s: None)
    except ApplyFailed as exc:
        result = exc.outcome
    except PlacementError as exc:
        return {"status": "error", "message": str(exc), "changed": True, "audit": str(audit)}
    finally:
        prepared.close()
    return {"status": result.status, "message": result.message, "job_id": result.job_id, "savepoint": result.savepoint,
            "downtime_s": result.downtime_s, "changed": result.status not in ("noop", "failed-before-stop"),
            "audit": str(audit)}
