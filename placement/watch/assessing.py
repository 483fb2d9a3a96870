"""The watch's assessment: what the observed windows mean against the plan in effect — each job's running placement
priced under the cost model, its drifts against its baseline (:mod:`.signals`), what several jobs share detected once,
and a job running in its plan's contingency (:mod:`.recovery`). Reads nothing from the cluster but what the observer
hands it (``registered``: the TaskManagers now, asked only for a job without a window) and the plan files.

Pricing is where one job and several differ: one job's problem alone, or the joint problem of every job's profile
(shared uplinks, CPU and queues, as ``placement plan`` prices several profiles) and each job's part of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.jobs import JointProblem, build_joint, job_costs, job_policies
from placement.costmodel.model import (
    Assignment,
    PlacementProblem,
    PlanOptions,
    build_problem,
)
from placement.costmodel.running import running_cost
from placement.errors import PlacementError
from placement.inventory import Inventory
from placement.profile.format import JobProfile
from placement.profile.pipeline import write_profile
from placement.watch.observing import JobTrack, Observed, Seen
from placement.watch.options import WatchOptions
from placement.watch.policy import Decision, PolicyState, Proposal
from placement.watch.pricing import joint_running
from placement.watch.record import effect_record
from placement.watch.recovery import back_since, contingency_decision, differs
from placement.watch.signals import (
    Baseline,
    Drift,
    Window,
    detect,
    link_drifts,
    still_moving,
    taskmanager_drifts,
    window_from_profile,
)
from placement.writers.planjson import load_plan

SHARED_KINDS = ("link", "taskmanager-lost", "taskmanager-added")  # several jobs: one capacity, detected once

Priced = dict[str, tuple[PlanCost | None, Any]]  # job -> its running placement's cost (None: unpriced), its bounds


def job_problem(
    inventory: Inventory, options: WatchOptions, profile: JobProfile, rate_scale: float
) -> PlacementProblem:
    return build_problem(
        inventory,
        profile,
        PlanOptions(rate_scale=rate_scale, placement_mode=inventory.flink.placement_mode),
        inventory_source=str(options.inventory_path),
    )


def joint_problem(
    inventory: Inventory,
    options: WatchOptions,
    profiles: Mapping[str, JobProfile],
    rate_scale: float,
    job_scales: Mapping[str, float] | None = None,
) -> JointProblem:
    """The watched jobs' joint problem as ``placement plan --profile … --profile …`` builds it (each job's
    priority and budget from the inventory's ``jobs:``; ``job_scales``: job -> its own rate scale)."""
    policies = job_policies(inventory, [(name, p.job.name) for name, p in profiles.items()])
    return build_joint(
        inventory,
        list(profiles.items()),
        rate_scale,
        placement_mode=inventory.flink.placement_mode,
        inventory_source=str(options.inventory_path),
        policies=policies,
        job_scales=job_scales,
    )


class Assessor:
    def __init__(
        self,
        options: WatchOptions,
        inventory: Inventory,
        tracks: Sequence[JobTrack],
        registered: Callable[[], frozenset[str]],
    ):
        self.o, self.inventory, self.tracks, self.registered = options, inventory, tracks, registered
        self.together = len(tracks) > 1  # several jobs share the hosts and uplinks: priced and assessed together
        self.back_since: dict[str, int] = {}  # planned hosts registered now -> since when (recovery.back_since)

    def assess(
        self, seen: list[Seen], observed: Mapping[str, Observed], now_ms: int
    ) -> tuple[PlanCost | None, list[dict[str, Any]]]:
        """Each observed job's window (its running placement priced), its drifts against its baseline, each
        blocker, note and drift naming its job when there are several; the joint cost (None: one job, or not
        priced) and the effect records of the first windows after an apply."""
        priced, total = self.price(observed)
        effects = []
        for s in seen:
            o = observed.get(s.track.name)
            if o is not None:
                cost, bounds = priced[s.track.name]
                s.snapshot, s.profile, s.running = o.snapshot, o.profile, o.running
                s.window = window_from_profile(
                    o.profile,
                    cost,
                    start_ms=o.since_ms,
                    end_ms=now_ms,
                    job_id=o.job_id,
                    taskmanagers=o.taskmanagers,
                    fresh_source_rates=o.fresh_rates,
                    latency_bounds=bounds,
                )
                write_profile(o.profile, o.snapshot / "profile.json")
            effects += self.drifts(s)
            s.blockers, s.notes = s.track.labelled(s.blockers), s.track.labelled(s.notes)
            s.drifts = s.track.own_drifts([d for d in s.drifts if not (self.together and d.kind in SHARED_KINDS)])
        return total, effects

    # ---- pricing ---------------------------------------------------------------------------------------------------

    def price(self, observed: Mapping[str, Observed]) -> tuple[Priced, PlanCost | None]:
        """Each window's running placement under the cost model (None where it cannot be priced) with its problem's
        latency bounds, and the joint cost (None: not priced). Several jobs: all of them unpriced unless every job was
        observed and every placement is known (a job's load alone says nothing of a shared uplink)."""
        return self._price_together(observed) if self.together else (self._price_alone(observed), None)

    def _price_alone(self, observed: Mapping[str, Observed]) -> Priced:
        out: Priced = {}
        for name, o in observed.items():
            problem = job_problem(self.inventory, self.o, o.profile, 1.0)
            out[name] = (running_cost(problem, o.running), problem.latency_bounds)
        return out

    def _price_together(self, observed: Mapping[str, Observed]) -> tuple[Priced, PlanCost | None]:
        profiles = {name: o.profile for name, o in observed.items()}
        joint = joint_problem(self.inventory, self.o, profiles, 1.0) if observed else None
        bounds = {job.name: job.problem.latency_bounds for job in joint.jobs} if joint else {}
        unpriced: Priced = {name: (None, bounds.get(name)) for name in observed}
        if joint is None or len(observed) < len(self.tracks):
            return unpriced, None
        running = joint_running(joint, {name: o.running for name, o in observed.items()})
        if running is None:
            return unpriced, None
        total = evaluate(joint.problem, running)
        costs = job_costs(joint, running, total)
        return {name: (costs[name], bounds[name]) for name in observed}, total

    # ---- drifts ----------------------------------------------------------------------------------------------------

    def drifts(self, s: Seen) -> list[dict[str, Any]]:
        """One job's window against its baseline: drifts, the notes on where the baseline came from, the effect of
        the last apply (returned, to be logged), and a rate step still under way (a blocker)."""
        track, window = s.track, s.window
        if window is None:
            if track.baseline is not None:  # TaskManagers are still worth a look (and a line in the log)
                with contextlib.suppress(PlacementError):
                    s.drifts = taskmanager_drifts(track.baseline, self.registered())
            return []
        same_job = [w for w in track.windows if w.job_id == window.job_id]
        track.windows = [*same_job[-9:], window]
        if track.baseline is None and track.made_for is not None:  # the first warm window after an apply
            track.baseline, track.made_for = replace(track.made_for, taskmanagers=window.taskmanagers), None
            s.notes.append(
                f"baseline: the rates the applied plan was made for (re-planned if this window's differ "
                f"by more than {track.baseline.rate_change:.0%})"
            )
        elif track.baseline is None:  # the placement running at start is taken as fit for this load
            plan_dir = str(self.o.plan_dir) if self.o.plan_dir is not None else None
            track.baseline = Baseline(dict(window.source_rates), window.taskmanagers, plan_dir=plan_dir)
            track.started_on = dict(s.running) if s.running else None
            s.notes.append("baseline: this window's source rates and TaskManagers")
        s.drifts = detect(track.baseline, track.windows, self.o.thresholds)
        if track.baseline.rate_change is not None:  # the tighter tolerance is for the first warm window only
            track.baseline = replace(track.baseline, rate_change=None)
        effects = self._effect(track, window, s)
        moving = still_moving(track.windows) if any(d.kind == "rate" for d in s.drifts) else None
        if moving:
            s.blockers.append(moving)
        return effects

    def _effect(self, track: JobTrack, window: Window, s: Seen) -> list[dict[str, Any]]:
        """The first usable window of the job an apply started: predicted vs measured, logged once."""
        if track.pending_effect is None:
            return []
        tick, before, predicted = track.pending_effect
        if window.job_id == before or not window.links:
            return []
        track.pending_effect = None
        snapshot = str(s.snapshot) if s.snapshot else None
        return [track.tagged(effect_record(tick, window.end_ms, predicted, window, snapshot))]

    def shared_drifts(self, seen: list[Seen], total: PlanCost | None) -> list[Drift]:
        """Several jobs: what they share, detected once — an uplink the running placements together overfill
        (``total``: their joint cost; the message names each job's part) and TaskManagers lost or added. One job: none
        (its window has them)."""
        if not self.together:
            return []
        out: list[Drift] = []
        if total is not None:
            out += link_drifts(
                total.links,
                {s.track.name: {link.host: link.mbit for link in s.window.links} for s in seen if s.window is not None},
            )
        first = self.tracks[0]
        if first.baseline is not None:
            registered = next((s.window.taskmanagers for s in seen if s.window is not None), None)
            with contextlib.suppress(PlacementError):
                out += taskmanager_drifts(first.baseline, registered if registered is not None else self.registered())
        return out

    # ---- contingencies ---------------------------------------------------------------------------------------------

    def held_placement(self, track: JobTrack) -> Assignment | None:
        """Where the plan in effect puts the job's subtasks (no plan in effect: where they ran at the start)."""
        plan_dir = track.plan_in_effect()
        if plan_dir is None:  # only the scheduler extension (custom mode) runs a contingency
            return track.started_on if self.inventory.flink.placement_mode == "custom" else None
        try:
            doc = load_plan(track.plan_json(plan_dir))
        except PlacementError:
            return None
        return {(a.vertex_id, a.subtask): a.host for a in doc.assignment} if doc.placement_mode == "custom" else None

    def contingency(self, seen: list[Seen], state: PolicyState, now_ms: int) -> tuple[Decision, Drift, Proposal] | None:
        """The hold or the restore of a job running in its plan's contingency (:mod:`.recovery`); several jobs: the
        first job's that is in one decides for the set (they share the hosts), and a restore applies the fleet's
        plan."""
        found = []
        for s in seen:
            planned = self.held_placement(s.track)
            if planned is None or s.running is None or s.window is None:
                continue
            registered = s.window.taskmanagers
            self.back_since = {
                **self.back_since,
                **back_since(self.back_since, frozenset(planned.values()), registered, now_ms),
            }
            for host in set(self.back_since) - registered:
                del self.back_since[host]
            verdict = contingency_decision(
                planned, s.running, registered, self.back_since, state, now_ms, self.o.policy
            )
            if verdict is not None:
                found.append((s, planned, verdict))
        if not found:
            return None
        s, planned, (decision, drift) = next((f for f in found if f[2][0].action == "hold"), found[0])
        if s.track.named:
            drift = replace(drift, job=s.track.name)
        plan_dir = s.track.plan_in_effect()
        if decision.action == "apply" and plan_dir is None:
            decision = replace(
                decision,
                action="hold",
                reason=decision.reason + ": no plan directory to restore "
                "(start the watch with --plan, or run `placement apply` of the plan)",
            )
        window = s.window
        assert window is not None, "found holds only jobs with a window"
        current = sum(link.mbit for link in window.links)
        proposal = Proposal(
            current_wan_mbit=current,
            current_violations=window.violations,
            planned_wan_mbit=None if plan_dir is None else current,
            moves=differs(planned, s.running or {}),
            plan_dir=plan_dir,
        )
        return decision, drift, proposal
