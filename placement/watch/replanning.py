"""The watch's re-planner: on drift, a plan for the sources' demand now through the planner callable the CLI gives
(``placement plan`` itself, run as a function), and the running placement priced under the same load — the
:class:`~placement.watch.policy.Proposal` the policy weighs.

One job is planned by ``plan_fn`` (one rate scale), several together by ``plan_jobs_fn`` (each job at its own scale,
the running placements priced jointly): :func:`replanner_for` picks once, the loop calls :meth:`replan` either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from placement.costmodel.evaluate import evaluate
from placement.costmodel.jobs import job_costs
from placement.costmodel.model import Assignment
from placement.inventory import Inventory
from placement.profile.format import JobProfile
from placement.watch.assessing import job_problem, joint_problem
from placement.watch.observing import JobTrack, Seen
from placement.watch.options import JobsPlanFn, PlanFn, WatchOptions
from placement.watch.policy import Proposal
from placement.watch.pricing import cost_peak, joint_running, moves, proposal_from
from placement.watch.signals import Drift, Window, demand_scale

S = TypeVar("S", float, dict[str, float])  # one job's rate scale, or each job's


FORECAST_PEAK = "the forecast's peak within the horizon"


class RePlanner(Protocol):
    def replan(
        self,
        tick: int,
        seen: Sequence[Seen],
        drifts: Sequence[Drift],
        scales: Mapping[str, float] | None = None,
    ) -> tuple[Proposal, list[str]]:
        """The proposal for the tick's windows and the notes on the demand it was planned for. ``scales`` (job ->
        its rate scale; ``watch --forecast``: the forecast's peak) replaces the sources' demand now."""
        ...


def plan_for_demand(
    plan: Callable[[Path, S], Any], plans_dir: Path, tick: int, demand: S, measured: S, above: bool
) -> tuple[Any, S, bool]:
    """``plan(out_dir, scales)`` at the sources' demand; where nothing fits it and the demand is ``above`` the
    measured rates, again at the measured rates (``…-measured``). Returns the outcome, the scales it was made
    for, and whether the demand went unmet (a plan that may relieve, never one applied as cheaper)."""
    outcome = plan(plans_dir / f"tick-{tick:05d}", demand)
    if outcome.fits or not above:
        return outcome, demand, False
    return plan(plans_dir / f"tick-{tick:05d}-measured", measured), measured, True


def _window(s: Seen) -> Window:
    """A re-planned job's window: the loop re-plans only when every job has its window and profile."""
    assert s.window is not None, f"job {s.track.name} re-planned without a window"
    return s.window


def _profile(s: Seen) -> JobProfile:
    assert s.profile is not None, f"job {s.track.name} re-planned without a profile"
    return s.profile


class OneJobPlanner:
    def __init__(self, options: WatchOptions, inventory: Inventory, track: JobTrack, plans_dir: Path, plan_fn: PlanFn):
        self.o, self.inventory, self.track, self.plans_dir, self.plan_fn = options, inventory, track, plans_dir, plan_fn

    def replan(
        self,
        tick: int,
        seen: Sequence[Seen],
        drifts: Sequence[Drift],
        scales: Mapping[str, float] | None = None,
    ) -> tuple[Proposal, list[str]]:
        s = seen[0]
        given = scales[s.track.name] if scales is not None else None
        proposal, scale = self.replan_job(tick, _profile(s), _window(s), s.running, drifts, given)
        why = FORECAST_PEAK if given is not None else "the sources' demand now"
        notes = [f"planned for {scale:.2f}x the window's profiled rates ({why})"] if scale > 1.005 else []
        return proposal, notes

    def replan_job(
        self,
        tick: int,
        profile: JobProfile,
        window: Window,
        running: Assignment | None,
        drifts: Iterable[Drift] = (),
        scale: float | None = None,
    ) -> tuple[Proposal, float]:
        """Plan for the demand (measured rates, scaled up where sources are back-pressured; the measured rates where
        nothing fits the scaled ones) and price the running placement under the same load. ``placement plan`` reads
        the same inventory, so the plan honours ``policy.max_latency_ms`` (the ILP's bound) as the pricing does; a
        measured latency breach counts against the running placement like a capacity it breaks. ``scale`` given (the
        forecast's peak) replaces the demand."""
        profile_path = self.track.windows_dir / f"tick-{tick:05d}" / "profile.json"
        scale = demand_scale(window, self.o.max_demand_scale) if scale is None else scale
        outcome, scale, demand_unmet = plan_for_demand(
            lambda out, x: self.plan_fn(profile_path, out, x), self.plans_dir, tick, scale, 1.0, scale > 1.0
        )
        current_wan, current_violations, current_peak = sum(link.mbit for link in window.links), window.violations, None
        paths = window.paths
        if running is not None:
            cost = evaluate(job_problem(self.inventory, self.o, profile, scale), running)
            current_wan, current_violations, current_peak = cost.wan_mbit, tuple(cost.violations), cost_peak(cost)
            paths = cost.paths
        proposal = proposal_from(
            outcome,
            current_wan,
            current_violations,
            current_peak,
            paths,
            drifts,
            moves(outcome.assignment, running) if outcome.fits else 0,
            demand_unmet=demand_unmet,
        )
        self.track.planned_links = dict(outcome.links)
        self.track.planned_rates = {name: rate * scale for name, rate in window.source_rates.items()}
        return proposal, scale


class JointPlanner:
    def __init__(self, options: WatchOptions, inventory: Inventory, plans_dir: Path, plan_jobs_fn: JobsPlanFn):
        self.o, self.inventory, self.plans_dir, self.plan_jobs_fn = options, inventory, plans_dir, plan_jobs_fn

    def replan(
        self,
        tick: int,
        seen: Sequence[Seen],
        drifts: Sequence[Drift],
        scales: Mapping[str, float] | None = None,
    ) -> tuple[Proposal, list[str]]:
        """One joint plan of every watched job with its fresh profile (``placement plan --profile … --profile …``),
        the running placements priced together under the same load. Each job at its own rate scale (``--rate-scale
        JOB=X``): what its own sources want now, so a job whose demand grew does not over-plan the others — the
        measured rates of every job where nothing fits them. ``scales`` given (the forecast's peak) replace the
        demand."""
        profiles = {s.track.name: s.track.windows_dir / f"tick-{tick:05d}" / "profile.json" for s in seen}
        why = FORECAST_PEAK if scales is not None else "its sources' demand now"
        asked = {
            s.track.name: demand_scale(_window(s), self.o.max_demand_scale) if scales is None else scales[s.track.name]
            for s in seen
        }
        outcome, planned, demand_unmet = plan_for_demand(
            lambda out, x: self.plan_jobs_fn(profiles, out, x),
            self.plans_dir,
            tick,
            asked,
            dict.fromkeys(asked, 1.0),
            max(asked.values()) > 1.0,
        )
        joint = joint_problem(self.inventory, self.o, {s.track.name: _profile(s) for s in seen}, 1.0, planned)
        running = joint_running(joint, {s.track.name: s.running for s in seen})
        if running is not None:
            cost = evaluate(joint.problem, running)
            paths = tuple(p for c in job_costs(joint, running, cost).values() for p in c.paths)
            current = (cost.wan_mbit, tuple(cost.violations), cost_peak(cost), paths)
        else:  # a placement not known: the windows' own figures, as for one job
            current = (
                sum(link.mbit for s in seen for link in _window(s).links),
                tuple(v for s in seen for v in _window(s).violations),
                None,
                tuple(p for s in seen for p in _window(s).paths),
            )
        moved = sum(moves(outcome.jobs[s.track.name].assignment, s.running) for s in seen) if outcome.fits else 0
        proposal = proposal_from(outcome, *current, drifts, moved, demand_unmet=demand_unmet)
        for s in seen:
            part = outcome.jobs.get(s.track.name)
            s.track.planned_links = dict(part.links) if part is not None else {}
            rates = _window(s).source_rates
            s.track.planned_rates = {name: rate * planned[s.track.name] for name, rate in rates.items()}
        notes = [
            f"planned job {name} for {scale:.2f}x its window's profiled rates ({why})"
            for name, scale in planned.items()
            if scale > 1.005
        ]
        return proposal, notes


def replanner_for(
    options: WatchOptions,
    inventory: Inventory,
    tracks: Sequence[JobTrack],
    plans_dir: Path,
    plan_fn: PlanFn | None,
    plan_jobs_fn: JobsPlanFn | None,
) -> OneJobPlanner | JointPlanner:
    if len(tracks) == 1 and plan_fn is not None:
        return OneJobPlanner(options, inventory, tracks[0], plans_dir, plan_fn)
    if len(tracks) > 1 and plan_jobs_fn is not None:
        return JointPlanner(options, inventory, plans_dir, plan_jobs_fn)
    raise ValueError("one job is planned by plan_fn, several by plan_jobs_fn")
