"""The world-touching loop of ``placement watch``: it composes the stages and owns none of them.

* collect — :class:`placement.collect.collector.Collector` in a thread per job (:mod:`.collecting`), writing a rolling
  history (``keep_s`` / ``keep_bytes``); when the job ends (a redeploy stops it with a savepoint) it starts again on
  the job of the same name that runs next;
* observe — :mod:`.observing`: each tick, per job, why no change may start and its window, cut from the history and
  profiled with ``placement profile``'s own function and one Spark session kept for the whole watch;
* assess — :mod:`.assessing`: the running placements priced, drifts (:mod:`.signals`), contingencies
  (:mod:`.recovery`); then :mod:`.policy` decides (act or not) and :mod:`.record` logs the tick;
* re-plan — :mod:`.replanning`: the planner callable the CLI gives (``placement plan`` itself, run as a function),
  called only on drift;
* act — :mod:`.acting`: ``placement apply``'s public request / prepare / execute: the same preflight, lock, savepoint,
  verify, roll back and audit log.

Stopping (:meth:`Watch.stop`, from a signal handler) is honoured between steps: an apply that has begun runs to its
end (applied or rolled back) before the loop exits, so nothing is left half-applied. Time is read from an injected
:class:`~placement.clock.Clock` (the system's by default), so a decision test runs in simulated time.

One job is a fleet of one. Several jobs (``WatchOptions.job_names``) are a :class:`JobTrack` each (its collector,
rolling history, windows, baseline and counters): each tick a window and a drift check per job, the running placements
priced together (:func:`placement.costmodel.jobs.build_joint`, as ``placement plan`` prices several profiles), one
joint re-plan on any job's drift (``plan_jobs_fn``: ``placement plan --profile A --profile B``), one decision, and one
change (``placement apply --plan FLEET_DIR``'s load, prepare and execute). A job that cannot be observed makes the tick
wait: the others are never planned as if it were gone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement.clock import SYSTEM_CLOCK, Clock
from placement.costmodel.evaluate import PlanCost
from placement.errors import BadInput, PlacementError
from placement.flink.port import FlinkPort
from placement.flink.rest import FlinkRest
from placement.inventory import load_inventory
from placement.polling import poll
from placement.watch.acting import Actor, ApplyFn
from placement.watch.assessing import Assessor
from placement.watch.collecting import CollectorThread
from placement.watch.observing import (
    JobTrack,
    Observed,
    Observer,
    Seen,
    SnapshotWindows,
    WindowSource,
    last_tick,
    tracks_for,
)
from placement.watch.options import AskFn, JobsPlanFn, PlanFn, Status, WatchOptions
from placement.watch.policy import Decision, PolicyState, Proposal, after_change, decide
from placement.watch.record import DecisionLog, tick_record
from placement.watch.replanning import replanner_for
from placement.watch.signals import Baseline, Drift

if TYPE_CHECKING:
    from placement.watch.foreseeing import Foreseen, Foreseer
    from placement.watch.foresight import AheadDecision

__all__ = ["JobTrack", "Observed", "Seen", "Watch"]


class Watch:
    def __init__(
        self,
        options: WatchOptions,
        *,
        plan_fn: PlanFn | None = None,
        plan_jobs_fn: JobsPlanFn | None = None,
        ask_fn: AskFn | None = None,
        on_update: Callable[[Status], None] | None = None,
        rest: FlinkPort | None = None,
        clock: Clock = SYSTEM_CLOCK,
        windows: WindowSource | None = None,
        apply: ApplyFn | None = None,
    ):
        options.check()
        if options.apply == "ask" and ask_fn is None:
            raise BadInput("--apply ask needs a terminal to ask on", field="--apply")
        self.o, self.clock = options, clock
        self.inventory = load_inventory(options.inventory_path)
        self.rest = rest or FlinkRest(self.inventory.flink.rest_url)
        self.on_update = on_update or (lambda s: None)
        self.tracks = tracks_for(options)
        self.foreseer: Foreseer | None = None
        if options.forecast_history is not None:  # before anything is written: a missing extra starts nothing
            from placement.watch.foreseeing import Foreseer  # the forecaster and statsmodels: --forecast's alone

            self.foreseer = Foreseer(options, self.inventory, self.tracks)
        self.plans_dir = options.work_dir / "plans"
        self.ticks_before = last_tick(self.plans_dir, *(t.windows_dir for t in self.tracks))
        self.replanner = replanner_for(options, self.inventory, self.tracks, self.plans_dir, plan_fn, plan_jobs_fn)
        self.log = DecisionLog(options.log_path)
        self.status = Status()
        self.stop_event = threading.Event()
        self.state = PolicyState()
        self.last_change_ms: int | None = None
        self.windows = windows or SnapshotWindows(options, self.inventory)
        self.observer = Observer(
            options, self.rest, self.windows, clock, self.status, self._update, self.stop_event.is_set
        )
        self.assessor = Assessor(options, self.inventory, self.tracks, self.observer.registered)
        self.actor = Actor(options, [t.name for t in self.tracks], self.rest, ask_fn, apply)

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
            collectors.append(
                CollectorThread(
                    self.inventory.flink.rest_url,
                    self.o,
                    track.history,
                    self.stop_event,
                    self.status,
                    job_name=track.name,
                    inventory=self.inventory,
                )
            )
        for collector in collectors:
            collector.start()
        started = self.clock.now()
        try:
            while not self.stop_event.is_set():
                wait_s = self.o.interval_s
                if self.o.duration_s is not None:  # --duration 10 with a 30 s interval: decide at 10 s, then stop
                    wait_s = max(0.0, min(wait_s, started + self.o.duration_s - self.clock.now()))
                self.status.next_tick_at = self.clock.now() + wait_s
                self._update("waiting for the next window")
                if self._stopped_within(wait_s):
                    break
                self.tick()
                if self.o.duration_s is not None and self.clock.now() - started >= self.o.duration_s:
                    break
        finally:
            self.stop_event.set()
            self._update("stopping")
            for collector in collectors:
                collector.join(timeout=30)
            self.windows.close()
            self._update("stopped")
        return self.status

    def _stopped_within(self, seconds: float) -> bool:
        """Wait ``seconds`` on the clock; True when a stop was asked meanwhile."""
        return poll(self.stop_event.is_set, bool, timeout=seconds, every=0.2, clock=self.clock)[1]

    def plan_in_effect(self) -> str | None:
        """The plan directory whose prediction the running placement is held to (None: the placement that ran when
        the watch started): the last plan applied, or the last re-plan that kept the placement (several jobs: the
        fleet's directory, the same for every job)."""
        return self.tracks[0].plan_in_effect()

    def _tick_number(self) -> int:
        """This tick's number in WORK_DIR's names and the decision log: on from the last watch that ran there."""
        return self.ticks_before + self.status.ticks

    def _update(self, phase: str) -> None:
        self.status.phase = phase
        self.on_update(self.status)

    # ---- one decision ----------------------------------------------------------------------------------------------

    def tick(self) -> dict[str, Any]:
        """Observe every job's window, detect, re-plan (all jobs together) on drift, decide once, act; returns the
        decision record (also logged)."""
        self.status.ticks += 1
        tick, now_ms = self._tick_number(), int(self.clock.now() * 1000)
        seen, observed = self.observer.look(self.tracks, tick, now_ms, self.last_change_ms)
        return self._conclude(tick, now_ms, seen, self._assess(seen, observed, now_ms))

    def _assess(self, seen: list[Seen], observed: Mapping[str, Observed], now_ms: int) -> PlanCost | None:
        """Each job's window priced and held to its baseline (:class:`Assessor`); the effects of the last apply
        logged; the joint cost returned (None: one job, or not priced)."""
        total, effects = self.assessor.assess(seen, observed, now_ms)
        for record in effects:
            self.log.write(record)
        return total

    def _conclude(self, tick: int, now_ms: int, seen: list[Seen], total: PlanCost | None) -> dict[str, Any]:
        """The tick once every job was looked at: the set's drifts, one re-plan (of every job together) on any, one
        decision, the change, the record. Touches the cluster only to apply (and before it, to wait out a
        checkpoint)."""
        blockers = [b for s in seen for b in s.blockers]
        notes = [n for s in seen for n in s.notes]
        drifts = [d for s in seen for d in s.drifts] + self.assessor.shared_drifts(seen, total)
        proposal = None
        foresight = None
        restore = None if blockers else self.assessor.contingency(seen, self.state, now_ms)
        if restore is not None:  # a planned host lost or just back: the plan is still right, nothing to re-plan
            decision, drift, proposal = restore
            drifts = [drift]
        else:
            foreseen = self._foresee(seen, now_ms, blockers, notes)
            ahead = (
                foreseen.decide(now_ms, self._lead_s, [d.kind for d in drifts], tick_s=self.o.interval_s)
                if foreseen
                else None
            )
            if foreseen is not None and ahead is not None and ahead.action != "reactive":
                decision, proposal, drifts, ahead = self._ahead(tick, now_ms, seen, drifts, notes, foreseen, ahead)
            else:  # the reactive watch: no forecast, the load left it, or a break was measured
                if drifts and not blockers and all(s.profile is not None and s.window is not None for s in seen):
                    proposal = self._replan(tick, seen, drifts, notes)
                decision = decide(self.state, now_ms, drifts, proposal, blockers, self.o.policy)
            if foreseen is not None and ahead is not None:
                foresight = foreseen.fields(ahead, self._lead_s)
        if decision.action == "apply" and all(s.job is not None for s in seen) and self.o.apply != "never":
            waited = next(filter(None, (self.observer.checkpoint_settled(s.job.id) for s in seen if s.job)), None)
            if waited is not None:
                decision = decide(self.state, now_ms, drifts, proposal, [waited], self.o.policy)
        self.state = decision.state
        if (
            all(s.window is not None for s in seen)
            and proposal is not None
            and decision.action == "hold"
            and proposal.planned_fits
            and proposal.moves == 0
        ):
            # the re-plan keeps the placement running: it is the plan for this load, so drift is measured from here
            # (else every tick re-plans the same placement until the load returns)
            for s in seen:
                w = s.window
                assert w is not None, "every job has its window (checked above)"
                s.track.baseline = Baseline(dict(w.rates_now()), w.taskmanagers, plan_dir=proposal.plan_dir)
            notes.append("baseline: the placement running is the plan for this window's load")
        outcome = None
        if decision.action == "apply" and proposal is not None:
            outcome = self._act(decision, proposal, now_ms)
        record = tick_record(
            tick,
            now_ms,
            seen,
            drifts,
            proposal,
            decision,
            apply=outcome,
            notes=notes,
            plan_in_effect=self.plan_in_effect(),
            foresight=foresight,
        )
        self.log.write(record)
        self.status.window = seen[0].window
        self.status.windows = {s.track.name: s.window for s in seen if s.window is not None}
        self.status.drifts, self.status.proposal, self.status.decision = drifts, proposal, decision
        self.status.notes = notes
        self.status.foresight = foresight
        self._update("decided")
        return record

    def _replan(
        self,
        tick: int,
        seen: list[Seen],
        drifts: list[Drift],
        notes: list[str],
        scales: Mapping[str, float] | None = None,
    ) -> Proposal | None:
        """One re-plan of every job (at ``scales``, else the sources' demand now); a failure is a note."""
        self._update("re-planning")
        try:
            proposal, planned_for = self.replanner.replan(tick, seen, drifts, scales)
        except PlacementError as exc:
            notes.append(f"re-plan failed: {exc}")
            return None
        notes += planned_for
        return proposal

    # ---- watch --forecast ------------------------------------------------------------------------------------------

    @property
    def _lead_s(self) -> float:
        return self.foreseer.lead_s if self.foreseer is not None else 0.0

    def _foresee(self, seen: list[Seen], now_ms: int, blockers: list[str], notes: list[str]) -> Foreseen | None:
        """The tick's forecast (None: no --forecast, or a tick that cannot change anything: a blocker, a job
        without its window)."""
        if self.foreseer is None or blockers or not all(s.profile is not None and s.window is not None for s in seen):
            return None
        self._update("forecasting")
        looked = self.foreseer.look(seen, now_ms)
        notes += looked.notes
        return looked

    def _ahead(
        self,
        tick: int,
        now_ms: int,
        seen: list[Seen],
        drifts: list[Drift],
        notes: list[str],
        foreseen: Foreseen,
        ahead: AheadDecision,
    ) -> tuple[Decision, Proposal | None, list[Drift], AheadDecision]:
        """A tick the forecast decides (:mod:`.foresight`). A relief is a re-plan at the forecast's peak, weighed
        and applied as a reactive one (cooldown, apply, verify, roll back) with a ``forecast`` drift for the reason;
        a plan in effect that holds the horizon is left alone unless the rates moved, and then a cheaper plan for
        the horizon's peak is moved to only if it holds that horizon too (still through the policy: cooldown,
        stabilization)."""
        assert self.foreseer is not None, "a tick ahead has a forecast"
        calm = replace(self.state, cheaper_since_ms=None)
        if ahead.action == "relieve":
            plan = foreseen.breaks.plan if foreseen.breaks is not None else "the placement running"
            drifts = [*drifts, Drift("forecast", plan, message=ahead.reason)]
            proposal = self._replan(tick, seen, drifts, notes, foreseen.scales)
            return decide(self.state, now_ms, drifts, proposal, (), self.o.policy), proposal, drifts, ahead
        if foreseen.breaks_at_ms is not None or not drifts:  # a break beyond the lead time, or nothing moved
            return Decision("hold", ahead.reason, calm), None, drifts, ahead
        proposal = self._replan(tick, seen, drifts, notes, foreseen.scales)
        cheaper = (
            proposal is not None
            and proposal.planned_fits
            and proposal.moves > 0
            and not proposal.demand_unmet
            and (proposal.gain or 0.0) >= self.o.policy.min_gain
        )
        holds = self.foreseer.holds(seen, proposal.plan_dir) if cheaper and proposal is not None else None
        ahead = foreseen.decide(now_ms, self._lead_s, [d.kind for d in drifts], holds, self.o.interval_s)
        if ahead.action == "move_back":
            return decide(self.state, now_ms, drifts, proposal, (), self.o.policy), proposal, drifts, ahead
        return Decision("hold", ahead.reason, calm), proposal, drifts, ahead

    def _act(self, decision: Decision, proposal: Proposal, now_ms: int) -> dict[str, Any]:
        refused = self.actor.refusal(decision, proposal)
        if refused is not None:
            return refused
        self._update(f"applying {proposal.plan_dir}")
        before = {t.name: t.job_id for t in self.tracks}
        outcome = self.actor.apply(Path(proposal.plan_dir or ""))
        end_ms = int(self.clock.now() * 1000)
        if outcome.get("changed"):
            self.state = after_change(self.state, end_ms)
            self.last_change_ms = end_ms
            for track in self.tracks:
                track.windows = []
        if outcome["status"] == "applied":
            self.status.applies += 1
            if self.foreseer is not None:  # the next relief starts this much earlier
                self.foreseer.apply_s = (end_ms - now_ms) / 1000
            redeployed = self.actor.redeployed(outcome)
            for track in self.tracks:
                # the plan was made for these rates: the first warm window is held to them (and re-planned if it is
                # off), the ones after it to the rates then
                track.baseline = None
                track.made_for = Baseline(
                    dict(track.planned_rates), plan_dir=proposal.plan_dir, rate_change=self.o.thresholds.reprice_change
                )
                if track.name in redeployed:  # a job whose plan was in effect already keeps its job: no effect
                    track.pending_effect = (self._tick_number(), before[track.name], track.planned_links)
        elif outcome["status"] in ("rolled-back", "rollback-failed"):
            self.status.rolled_back += 1
        outcome["took_s"] = round((end_ms - now_ms) / 1000, 1)
        return outcome
