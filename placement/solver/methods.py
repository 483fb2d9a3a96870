"""Which planner solves a problem: the exact model, or the fleet decomposition (``placement plan --method``).

* ``exact`` — :func:`placement.solver.ilp.solve`, a variable per subtask and host: the reference.
* ``decompose`` — :func:`placement.solver.fleet.solve_decomposed`, the Pi-local model over server pools: the same
  optimum wherever its pools' plan packs onto the servers (tests hold it to the exact model), with a bound it proves;
  built for 10 000 Pis, where the exact model no longer fits in memory or time.
* ``auto`` (default) — ``decompose`` above :data:`AUTO_SUBTASKS` subtasks or :data:`AUTO_HOSTS` hosts, else
  ``exact``; always ``exact`` in vanilla mode, with ``--solver cbc`` (the decomposition needs HiGHS), with a
  latency bound (``policy.max_latency_ms``: only the exact model has its rows) or with job priorities or budgets
  (``jobs[].priority``, ``jobs[].budget``: the exact model's stages and rows; ``--method decompose`` refuses them).
"""

from __future__ import annotations

from typing import Literal

from placement.costmodel.model import PlacementProblem
from placement.errors import BadInput
from placement.solver.ilp import solve
from placement.solver.result import PlanResult, SolverOptions

Method = Literal["auto", "exact", "decompose"]
AUTO_SUBTASKS = 5_000
AUTO_HOSTS = 500


def choose_method(problem: PlacementProblem, method: Method, options: SolverOptions) -> Literal["exact", "decompose"]:
    if method == "decompose":
        if problem.whole_vertices:
            raise BadInput(
                "the decomposition does not cover vanilla placement mode (an operator whole on one host "
                "ties Pis and servers together): use --method exact or auto",
                field="--method",
            )
        if options.solver != "highs":
            raise BadInput("the decomposition runs on HiGHS: use --solver highs, or --method exact", field="--method")
        return "decompose"
    if method == "exact":
        return "exact"
    big = len(problem.subtasks) > AUTO_SUBTASKS or len(problem.hosts) > AUTO_HOSTS
    if problem.latency_bounds or _ranked_or_budgeted(problem):  # only the exact model has their rows and stages
        return "exact"
    return "decompose" if big and not problem.whole_vertices and options.solver == "highs" else "exact"


def solve_with(
    problem: PlacementProblem, options: SolverOptions = SolverOptions(), method: Method = "auto"
) -> PlanResult:
    """Plan ``problem`` with the chosen method (see the module doc)."""
    if choose_method(problem, method, options) == "decompose":
        if problem.latency_bounds:
            raise BadInput(
                "the decomposition does not honour a latency bound (its Pi plans do not see the queue at "
                "their uplink): use --method exact, or drop policy.max_latency_ms",
                field="--method",
            )
        ranked = _ranked_or_budgeted(problem)
        if ranked:
            raise BadInput(
                f"the decomposition does not honour job priorities or budgets (its Pi plans rank no job "
                f"and see no job's share of an uplink; set for {', '.join(ranked)}): use --method exact, or "
                "drop jobs[].priority and jobs[].budget.uplinks",
                field="--method",
            )
        from placement.solver.fleet import solve_decomposed  # a fleet's planner: a small plan does not import it

        return solve_decomposed(problem, options)
    return solve(problem, options)


def _ranked_or_budgeted(problem: PlacementProblem) -> list[str]:
    """The jobs whose priority or uplink budget only the exact model plans (a min_rate_scale is the rate search's,
    which every method serves)."""
    return sorted(
        job
        for job, p in problem.job_policies.items()
        if p.uplink_shares or (p.priority is not None and problem.priority_classes)
    )
