"""Running a PuLP model on HiGHS (via highspy) or CBC and reading back status, objective, bound and gap."""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass
from typing import Literal

import pulp

from placement.errors import PlacementError

SolverName = Literal["highs", "cbc"]


@dataclass(frozen=True)
class SolveInfo:
    solver: str
    status: str  # optimal | feasible | infeasible | unbounded | not solved
    objective: float | None
    bound: float | None
    gap: float | None  # relative: |objective - bound| / max(|objective|, 1e-9)
    seconds: float


def highs_available() -> bool:
    try:
        return pulp.HiGHS().available()
    except Exception:  # noqa: BLE001 - a broken highspy install means "not available"
        return False


def _rel_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(abs(objective), 1e-9) if abs(objective - bound) > 1e-9 else 0.0


def _objective_value(lp: pulp.LpProblem) -> float | None:
    """The objective at the solution; None when a variable of it has no value.

    An objective without terms gets PuLP's ``__dummy`` variable while it is solved; it stays in the expression with
    coefficient 0 afterwards, and CBC reports no value for it (HiGHS does). Terms with coefficient 0 do not count."""
    total = lp.objective.constant
    for var, coefficient in lp.objective.items():
        if coefficient == 0:
            continue
        if var.varValue is None:
            return None
        total += coefficient * var.varValue
    return total


def _status(lp: pulp.LpProblem) -> str:
    if lp.status == pulp.LpStatusOptimal:
        return "optimal" if lp.sol_status == pulp.LpSolutionOptimal else "feasible"
    return {pulp.LpStatusInfeasible: "infeasible", pulp.LpStatusUnbounded: "unbounded"}.get(lp.status, "not solved")


def _highs_with_start() -> type:
    """PuLP's HiGHS interface, handing HiGHS the variables' current values as a starting solution once the model is
    built (PuLP's own ``warmStart`` covers CBC only): a later lexicographic stage starts from the earlier stage's
    optimum, which satisfies that stage's bound — the solver has an incumbent before its first node."""
    import numpy as np

    class HiGHSWithStart(pulp.HiGHS):  # type: ignore[misc, valid-type]
        def buildSolverModel(self, lp: pulp.LpProblem) -> None:
            super().buildSolverModel(lp)
            known = [(var.index, var.varValue) for var in lp.variables() if var.varValue is not None]
            if known:
                index, value = zip(*known)
                lp.solverModel.setSolution(len(index), np.array(index, dtype=np.int32), np.array(value, dtype=np.float64))

    return HiGHSWithStart


def _run_highs(lp: pulp.LpProblem, time_limit: float | None, gap: float, threads: int | None,
               warm_start: bool = False) -> SolveInfo:
    solver = _highs_with_start() if warm_start else pulp.HiGHS
    cmd = solver(msg=False, timeLimit=time_limit, gapRel=gap, threads=threads)
    start = time.perf_counter()
    lp.solve(cmd)
    seconds = time.perf_counter() - start
    status = _status(lp)
    highs = lp.solverModel
    info = highs.getInfo()
    if status == "feasible" and info.primal_solution_status != 2:  # time limit without any incumbent
        status = "not solved"
    objective = _objective_value(lp) if status in ("optimal", "feasible") else None
    bound = None
    if objective is not None:
        dual = info.mip_dual_bound
        # A model HiGHS solved as an LP (every binary fixed by presolve) has no MIP bound: optimal means bound = objective.
        finite = dual is not None and abs(dual) != float("inf") and info.mip_node_count >= 0
        bound = dual if finite else (objective if status == "optimal" else None)
    return SolveInfo("highs", status, objective, bound, _rel_gap(objective, bound), seconds)


def _run_cbc(lp: pulp.LpProblem, time_limit: float | None, gap: float, threads: int | None,
             warm_start: bool = False) -> SolveInfo:
    fd, log = tempfile.mkstemp(prefix="placement-cbc-", suffix=".log")
    os.close(fd)
    try:
        cmd = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=gap, threads=threads, logPath=log,
                                warmStart=warm_start)
        start = time.perf_counter()
        lp.solve(cmd)
        seconds = time.perf_counter() - start
        text = open(log, encoding="utf-8", errors="replace").read()
    finally:
        os.unlink(log)
    status = _status(lp)
    if "Stopped on time" in text and status == "optimal":
        status = "feasible"
    objective = _objective_value(lp) if status in ("optimal", "feasible") else None
    bound = objective if status == "optimal" else None
    match = re.search(r"Lower bound:\s*([-0-9.eE+]+)", text)
    if match and objective is not None:
        bound = float(match.group(1))
    return SolveInfo("cbc", status, objective, bound, _rel_gap(objective, bound), seconds)


def run(lp: pulp.LpProblem, solver: SolverName = "highs", *, time_limit: float | None = None, gap: float = 1e-4,
        threads: int | None = None, warm_start: bool = False) -> SolveInfo:
    """Solve ``lp``. ``highs`` falls back to CBC when highspy is missing or HiGHS fails to return an answer.
    ``warm_start``: start from the variables' current values (a previous stage's solution)."""
    if solver == "highs":
        if highs_available():
            try:
                info = _run_highs(lp, time_limit, gap, threads, warm_start)
                if info.status != "not solved" or (time_limit is not None and info.seconds >= time_limit * 0.95):
                    return info
            except Exception:  # noqa: BLE001 - a HiGHS crash is what the CBC fallback is for
                pass
        solver = "cbc"
    if solver == "cbc":
        return _run_cbc(lp, time_limit, gap, threads, warm_start)
    raise PlacementError(f"unknown solver {solver!r} (highs or cbc)")
