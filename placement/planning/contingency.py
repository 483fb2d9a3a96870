"""A plan's contingencies (issue 43): planned after the plan, recorded in plan.json (their table:
:mod:`placement.cli.contingency_plan`).

One job and several jobs call the same functions: several jobs' contingencies are the joint problem's, split back
into each job's moves (``split``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from placement.costmodel.model import PlacementProblem, SubtaskKey
from placement.errors import Infeasible
from placement.solver.contingency import Contingency, plan_contingencies
from placement.solver.result import PlanResult, SolverOptions
from placement.writers.planjson import ContingencyRecord, contingency_record

VANILLA_NOTE = (
    "vanilla mode has no contingency: the job's own slot sharing groups pin its subtasks, so while an edge "
    "host is lost Flink restarts the job until the host is back, and fails it after the restart "
    "strategy's attempts; custom mode (the scheduler extension) moves them to the plan's contingency"
)

Split = Callable[[Mapping[SubtaskKey, str]], Mapping[str, Mapping[SubtaskKey, str]]]


def plan_for(
    problem: PlacementProblem, result: PlanResult, options: SolverOptions, method: str, placement_mode: str
) -> tuple[Contingency, ...]:
    """Every edge host's contingency of a solved plan (none in vanilla mode, or without a plan)."""
    if result.assignment is None or placement_mode == "vanilla":
        return ()
    return plan_contingencies(problem, dict(result.assignment), options, method)  # type: ignore[arg-type]


def require(contingencies: Sequence[Contingency], required: bool) -> None:
    """``--require-contingency``: a plan with a degraded state nothing fits is an error, naming each."""
    short = [c.shortfall for c in contingencies if not c.feasible]
    if required and short:
        raise Infeasible(f"--require-contingency: {'; '.join(short)}")


def records(
    problem: PlacementProblem, main: Mapping[SubtaskKey, str], contingencies: Sequence[Contingency]
) -> list[ContingencyRecord] | None:
    """One job's plan.json records (``problem``, ``main``: that job's, each contingency already its part)."""
    if not contingencies:
        return None
    return [
        contingency_record(problem, main, c.lost, c.result, c.result.assignment, c.shortfall) for c in contingencies
    ]


def job_records(
    problem: PlacementProblem,
    main: Mapping[SubtaskKey, str],
    contingencies: Sequence[Contingency],
    split: Split,
    job: str,
) -> list[ContingencyRecord] | None:
    """Several jobs: job ``job``'s records of the fleet's contingencies (its moves, the fleet's figures)."""
    if not contingencies:
        return None
    return [
        contingency_record(
            problem,
            main,
            c.lost,
            c.result,
            split(c.result.assignment)[job] if c.result.assignment else None,
            c.shortfall,
        )
        for c in contingencies
    ]


def summary(contingencies: Sequence[Contingency]) -> list[dict]:
    """The --json summary's ``contingencies``."""
    out = []
    for c in contingencies:
        row: dict = {"lost": c.lost, "status": c.result.status, "moves": len(c.moves)}
        if c.result.cost is not None:
            row.update(wan_mbit=c.result.cost.wan_mbit, server_cores=c.result.cost.server_cores)
        if c.shortfall:
            row["shortfall"] = c.shortfall
        out.append(row)
    return out
