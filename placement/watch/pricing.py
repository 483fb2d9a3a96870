"""The watch's pure arithmetic between the cost model and the policy: the busiest resource of a placement, the
subtasks a plan moves, the jobs' running placements as one joint assignment, and the proposal the policy weighs."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from placement.costmodel.evaluate import PlanCost, latency_sentence
from placement.costmodel.jobs import JointProblem
from placement.costmodel.latency import PathLatency
from placement.costmodel.model import Assignment
from placement.watch.options import PlanOutcome
from placement.watch.policy import Proposal
from placement.watch.signals import Drift


def peak_use(
    links: Iterable[tuple[float, float]],
    hosts: Iterable[tuple[float, float]],
    paths: Iterable[tuple[float | None, float | None]] = (),
) -> float | None:
    """The busiest resource as a share of its capacity: (Mbit/s, bandwidth) per uplink, (cores used, cores) per
    host, and (predicted latency, bound) per bounded source → sink path — a latency bound is a capacity too, so a
    plan that comes closer to it (or breaks it) is not "roomier". A latency of None is one without a bound (an uplink
    past 99 %, plan.json's null). The cost model's figures for the running placement and the plan's predictions are
    read the same way."""
    shares = [used / cap for used, cap in [*links, *hosts] if cap > 0]
    shares += [math.inf if ms is None else ms / bound for ms, bound in paths if bound]
    return max(shares) if shares else None


def cost_peak(cost: PlanCost) -> float | None:
    return peak_use(
        ((link.mbit, link.bandwidth_mbit) for link in cost.links),
        ((h.cores_used, h.cores) for h in cost.hosts),
        ((p.latency_ms, p.bound_ms) for p in cost.paths),
    )


def measured_breaches(drifts: Iterable[Drift]) -> tuple[str, ...]:
    """Latency bounds the running placement breaks as measured (Flink's latency markers, sustained): a breach like
    the cost model's, so the re-plan is a relief as for a broken link. (A predicted breach is in the cost model's
    violations already.)"""
    return tuple(d.message for d in drifts if d.kind == "latency" and d.basis == "measured")


def moves(planned: Mapping[tuple[str, int], str], running: Mapping[tuple[str, int], str] | None) -> int:
    """Subtasks the plan puts elsewhere than they run (or that exist on one side only)."""
    if running is None:
        return len(planned)
    return sum(1 for k in set(planned) | set(running) if planned.get(k) != running.get(k))


def proposal_from(
    outcome: PlanOutcome,
    current_wan: float,
    current_violations: tuple[str, ...],
    current_peak: float | None,
    paths: Iterable[PathLatency],
    drifts: Iterable[Drift],
    moved: int,
    *,
    demand_unmet: bool = False,
) -> Proposal:
    """The running placement (its WAN, breaches and busiest resource under the re-plan's load) beside the plan; a
    measured latency breach counts against the running placement like a capacity it breaks. ``demand_unmet``: the
    plan is for the measured rates because no plan carries the sources' demand."""
    drifts = list(drifts)
    latency_breaches = (*(latency_sentence(p) for p in paths if p.over_bound), *measured_breaches(drifts))
    return Proposal(
        current_wan_mbit=current_wan,
        current_violations=(*current_violations, *measured_breaches(drifts)),
        planned_wan_mbit=outcome.wan_mbit,
        planned_violations=() if outcome.fits else (outcome.violations or ("no placement fits",)),
        moves=moved,
        plan_dir=str(outcome.plan_dir),
        current_peak=current_peak,
        planned_peak=outcome.peak,
        current_latency_breaches=latency_breaches,
        demand_unmet=demand_unmet,
    )


def joint_running(joint: JointProblem, running: Mapping[str, Assignment | None]) -> Assignment | None:
    """The jobs' running placements as one assignment of the joint problem; None when one is unknown or does not
    place every subtask its profile has."""
    if any(running.get(job.name) is None for job in joint.jobs):
        return None
    placed = {job.name: set(running[job.name] or ()) for job in joint.jobs}
    if any(not {s.key for s in job.problem.subtasks} <= placed[job.name] for job in joint.jobs):
        return None
    return joint.join({job.name: running[job.name] for job in joint.jobs})  # type: ignore[misc]
