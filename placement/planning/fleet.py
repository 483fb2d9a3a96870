"""One job is a fleet of one: the jobs of a plan as one :class:`JointProblem`, whatever their number.

Several jobs (issue 24): each job's problem is built as for one job and the problems are combined into one
(:mod:`placement.costmodel.jobs`); the joint assignment is split back into each job's. One job: its own problem is
the joint problem, under its own vertex ids (prefix ``""``), so splitting is the identity and the job's part is the
whole result — its plan is exactly the plan of that job alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from placement.costmodel.jobs import Job, JointProblem, build_joint, job_costs
from placement.costmodel.model import JobPolicy, PlacementProblem, PlanOptions, build_problem
from placement.costmodel.running import with_running
from placement.inventory import Inventory
from placement.planning.running import RunningPlans
from placement.profile.format import JobProfile
from placement.solver.result import PlanResult
from placement.writers.planjson import JobBudgetRecord, budget_record

Builder = Callable[[float], JointProblem]  # the fleet's rate scale -> the joint problem at it


def alone(name: str, problem: PlacementProblem) -> JointProblem:
    """A fleet of one: ``problem`` as the joint problem of its one job."""
    return JointProblem(problem, (Job(name, problem, ""),))


def builder(
    inv: Inventory,
    profiles: Sequence[JobProfile],
    names: Sequence[str],
    running: RunningPlans,
    *,
    placement_mode: str,
    inventory_source: str,
    policies: dict[str, JobPolicy],
    job_scales: dict[str, float],
) -> Builder:
    """The joint problem at a fleet rate scale, every job around the running ones. Several jobs: :func:`build_joint`
    (each job at that scale, or its own ``--rate-scale JOB=X``, or its ``min_rate_scale`` when higher — what
    ``--max-rate`` searches over). One job: its own problem (its pins checked against the running jobs' vertices
    only, as planning it alone always did)."""
    named = list(zip(names, profiles))

    def joint(scale: float) -> JointProblem:
        return build_joint(
            inv,
            named,
            scale,
            placement_mode=placement_mode,
            inventory_source=inventory_source,
            policies=policies,
            known=running.vertices,
            adjust=lambda p: with_running(p, running.uses),
            job_scales=job_scales,
        )

    def one(scale: float) -> JointProblem:
        problem = build_problem(
            inv,
            profiles[0],
            PlanOptions(rate_scale=scale, placement_mode=placement_mode),
            inventory_source=inventory_source,
            other_jobs=running.vertices,
        )
        return alone(names[0], with_running(problem, running.uses))

    return one if len(profiles) == 1 else joint


def per_job(joint: JointProblem, result: PlanResult) -> dict[str, PlanResult]:
    """Each job's part of the joint plan as a result of its own: its assignment, its own evaluation (paths queued
    behind every job's traffic, :func:`job_costs`), the joint solve's status and stages (the proof is of the joint
    plan). A fleet of one's part is the result itself."""
    if result.assignment is None:
        return {}
    if len(joint.jobs) == 1:
        return {joint.jobs[0].name: result}
    split = joint.split(result.assignment)
    costs = job_costs(joint, result.assignment, result.cost)
    return {job.name: replace(result, assignment=split[job.name], cost=costs[job.name]) for job in joint.jobs}


def held_at_minimum(joint: JointProblem) -> list[str]:
    """The jobs planned above the fleet's rate scale, held at their ``budget.min_rate_scale`` (``--max-rate``)."""
    fleet = joint.problem.rate_scale
    return [
        f"job {job.name} is held at its budget.min_rate_scale {job.problem.rate_scale:g} (the fleet's scale is "
        f"{fleet:.4g})"
        for job in joint.jobs
        if job.problem.rate_scale > fleet
    ]


def budgets(joint: JointProblem, parts: dict[str, PlanResult]) -> dict[str, JobBudgetRecord | None]:
    """Each job's priority and budget with its use of them (None for a job that sets neither); {} with no plan."""
    return {
        job.name: budget_record(joint.problem.job_policies.get(job.name), job.problem, part.cost)
        for job in joint.jobs
        if (part := parts.get(job.name)) is not None and part.cost is not None
    }
