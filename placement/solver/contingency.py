"""Contingency placements (N-1): for each edge host, where the subtasks run while it or its uplink is lost.

Each is the same model over the degraded problem (:func:`placement.costmodel.degraded.degraded_problem`) solved by
the same method as the plan, so it is certified optimal (or carries its gap) and every capacity holds in that state;
one that nothing fits is named with what is short. Several jobs planned together are one problem, so each lost host
has one contingency for the whole fleet, jointly feasible.

A fleet with more edge hosts than :data:`EXACT_UP_TO` is not solved once per host: its contingencies keep the plan
and put the lost host's subtasks on the servers (checked by the cost model, no optimality claimed: ``heuristic``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placement.costmodel.degraded import degraded_problem, moved
from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import PlacementProblem, SubtaskKey
from placement.solver.methods import Method, solve_with
from placement.solver.result import PlanResult, SolverOptions

EXACT_UP_TO = 64  # edge hosts: above, one exact solve per host costs more than the plan itself


@dataclass(frozen=True)
class Contingency:
    lost: str  # the edge host whose loss (or its uplink's) this plans for
    problem: PlacementProblem  # the degraded problem
    result: PlanResult
    moves: dict[SubtaskKey, tuple[str, str]] = field(default_factory=dict)  # key -> (planned host, contingency host)

    @property
    def feasible(self) -> bool:
        return self.result.assignment is not None

    @property
    def shortfall(self) -> str:
        """ "if rpi3 is lost, host server needs 2.40 cores, has 2 (1.60 usable)"; "" when it fits."""
        if self.feasible:
            return ""
        what = "; ".join(s.message for s in self.result.shortages) or self.result.reason or "no placement fits"
        return f"if {self.lost} is lost, {what}"


def _kept_plan(degraded: PlacementProblem, main: dict[SubtaskKey, str], lost: str) -> PlanResult:
    """The plan with the lost host's subtasks on the server the cost model finds room on, the rest left in place."""
    assignment = dict(main)
    servers = [h.name for h in degraded.servers]
    for s in degraded.subtasks:
        if main[s.key] != lost:
            continue
        for server in servers:
            assignment[s.key] = server
            if not [v for v in evaluate(degraded, assignment).violations if server in v]:
                break
    cost = evaluate(degraded, assignment)
    if cost.feasible:
        return PlanResult(
            "kept",
            "heuristic",
            assignment,
            cost,
            notes=("the plan kept, the lost host's subtasks on the servers (not proven optimal)",),
        )
    return PlanResult("kept", "infeasible", None, None, reason=cost.violations[0])


def plan_contingency(
    problem: PlacementProblem,
    main: dict[SubtaskKey, str],
    lost: str,
    options: SolverOptions = SolverOptions(),
    method: Method = "auto",
) -> Contingency:
    """The contingency for ``lost``: the degraded problem planned as the plan was."""
    degraded = degraded_problem(problem, lost)
    exact = len(problem.edges) <= EXACT_UP_TO
    result = solve_with(degraded, options, method) if exact else _kept_plan(degraded, main, lost)
    return Contingency(lost, degraded, result, moved(main, result.assignment) if result.assignment else {})


def plan_contingencies(
    problem: PlacementProblem,
    main: dict[SubtaskKey, str],
    options: SolverOptions = SolverOptions(),
    method: Method = "auto",
) -> tuple[Contingency, ...]:
    """One contingency per edge host of ``problem``, in inventory order."""
    return tuple(plan_contingency(problem, main, h.name, options, method) for h in problem.edges)
