"""Several jobs planned one at a time — what a user does without joint planning — to set beside the joint plan
(``placement plan --profile a.json --profile b.json --compare``).

* :func:`in_sequence`: each job planned optimally around the earlier ones' plans, as fixed load
  (:mod:`placement.costmodel.running`), the higher priority first (the inventory's ``jobs:`` entries; ties, and jobs
  without one, in the order given) — as a user who ranks the jobs would plan them. A later job may find nothing left
  that fits.
* :func:`each_alone`: each job planned as if it had the fleet to itself; together they may oversubscribe a link or
  a host (the joint problem's evaluation says where).
* :func:`all_jobs_on_server`: nobody places them — sources where their data is born, the rest on servers.

Both are judged on the joint problem by :func:`placement.costmodel.evaluate`, so their figures add up the same way as
the joint plan's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.jobs import Job, JointProblem
from placement.costmodel.model import RunningUse
from placement.costmodel.running import cost_uses, merged, with_running
from placement.solver.baselines import all_on_server
from placement.solver.methods import Method, solve_with
from placement.solver.result import PlanResult, SolverOptions


@dataclass(frozen=True)
class OneByOne:
    """The jobs planned some other way than jointly: each job's result and what they cost together."""

    strategy: str  # "one by one" | "each alone" | "all on server"
    results: dict[str, PlanResult]  # job -> its own plan (as far as the sequence got)
    cost: PlanCost | None  # the jobs' plans together, on the joint problem (None: some job found no plan)
    failed: str | None = None  # the first job that found no plan
    reason: str = ""  # why (its shortfall)
    order: tuple[str, ...] = ()  # the order the jobs were planned in (one by one); () where order plays no part

    @property
    def label(self) -> str:
        """The strategy as a row says it: one by one with the order used (``one by one: job-B, job-A``)."""
        return f"{self.strategy}: {', '.join(self.order)}" if self.order else self.strategy

    @property
    def feasible(self) -> bool:
        return self.cost is not None and self.cost.feasible


def _together(joint: JointProblem, results: dict[str, PlanResult]) -> PlanCost | None:
    if len(results) < len(joint.jobs) or any(r.assignment is None for r in results.values()):
        return None
    return evaluate(joint.problem, joint.join({name: r.assignment for name, r in results.items()}))  # type: ignore[misc]


def priority_order(joint: JointProblem) -> list[Job]:
    """The jobs the higher priority first; ties keep their given order (``sorted`` is stable)."""
    return sorted(joint.jobs, key=lambda job: -joint.problem.priority_of(job.name))


def in_sequence(joint: JointProblem, options: SolverOptions = SolverOptions(), method: Method = "auto") -> OneByOne:
    """Each job in turn, in :func:`priority_order`, around the earlier jobs' plans (and whatever runs already, in each
    job's own problem)."""
    results: dict[str, PlanResult] = {}
    earlier: dict[str, list[RunningUse]] = {}
    jobs = priority_order(joint)
    order = tuple(job.name for job in jobs)
    for job in jobs:
        result = solve_with(with_running(job.problem, earlier), options, method)
        results[job.name] = result
        if result.assignment is None or result.cost is None:
            return OneByOne(
                "one by one", results, None, failed=job.name, reason=result.reason or result.status, order=order
            )
        earlier = merged(earlier, cost_uses(job.name, result.cost))
    return OneByOne("one by one", results, _together(joint, results), order=order)


def each_alone(joint: JointProblem, options: SolverOptions = SolverOptions(), method: Method = "auto") -> OneByOne:
    """Each job as if the fleet were its own."""
    results = {job.name: solve_with(job.problem, options, method) for job in joint.jobs}
    failed = next((name for name, r in results.items() if r.assignment is None), None)
    reason = (results[failed].reason or "") if failed else ""
    return OneByOne("each alone", results, _together(joint, results), failed=failed, reason=reason)


def all_jobs_on_server(joint: JointProblem) -> OneByOne:
    """The baseline of every job, judged together (what the fleet runs when nobody places the jobs)."""
    placed = all_on_server(joint.problem)
    split = joint.split(placed.assignment or {})
    results = {
        job.name: replace(placed, assignment=split[job.name], cost=evaluate(job.problem, split[job.name]))
        for job in joint.jobs
    }
    return OneByOne("all on server", results, placed.cost)
