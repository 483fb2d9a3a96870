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


def _status(lp: pulp.LpProblem) -> str:
    if lp.status == pulp.LpStatusOptimal:
        return "optimal" if lp.sol_status == pulp.LpSolutionOptimal else "feasible"
    return {pulp.LpStatusInfeasible: "infeasible", pulp.LpStatusUnbounded: "unbounded"}.get(lp.status, "not solved")


def _run_highs(lp: pulp.LpProblem, time_limit: float | None, gap: float, threads: int | None) -> SolveInfo:
    cmd = pulp.HiGHS(msg=False, timeLimit=time_limit, gapRel=gap, threads=threads)
    start = time.perf_counter()
    lp.solve(cmd)
    seconds = time.perf_counter() - start
    status = _status(lp)
    highs = lp.solverModel
    info = highs.getInfo()
    if status == "feasible" and info.primal_solution_status != 2:  # time limit without any incumbent
        status = "not solved"
    objective = pulp.value(lp.objective) if status in ("optimal", "feasible") else None
    bound = None
    if objective is not None:
        dual = info.mip_dual_bound
        # A model HiGHS solved as an LP (every binary fixed by presolve) has no MIP bound: optimal means bound = objective.
        finite = dual is not None and abs(dual) != float("inf") and info.mip_node_count >= 0
        bound = dual if finite else (objective if status == "optimal" else None)
    return SolveInfo("highs", status, objective, bound, _rel_gap(objective, bound), seconds)


def _run_cbc(lp: pulp.LpProblem, time_limit: float | None, gap: float, threads: int | None) -> SolveInfo:
    fd, log = tempfile.mkstemp(prefix="placement-cbc-", suffix=".log")
    os.close(fd)
    try:
        cmd = pulp.PULP_CBC_CMD(msg=False, timeLimit=time_limit, gapRel=gap, threads=threads, logPath=log)
        start = time.perf_counter()
        lp.solve(cmd)
        seconds = time.perf_counter() - start
        text = open(log, encoding="utf-8", errors="replace").read()
    finally:
        os.unlink(log)
    status = _status(lp)
    if "Stopped on time" in text and status == "optimal":
        status = "feasible"
    objective = pulp.value(lp.objective) if status in ("optimal", "feasible") else None
    bound = objective if status == "optimal" else None
    match = re.search(r"Lower bound:\s*([-0-9.eE+]+)", text)
    if match and objective is not None:
        bound = float(match.group(1))
    return SolveInfo("cbc", status, objective, bound, _rel_gap(objective, bound), seconds)


def run(lp: pulp.LpProblem, solver: SolverName = "highs", *, time_limit: float | None = None, gap: float = 1e-4,
        threads: int | None = None) -> SolveInfo:
    """Solve ``lp``. ``highs`` falls back to CBC when highspy is missing or HiGHS fails to return an answer."""
    if solver == "highs":
        if highs_available():
            try:
                info = _run_highs(lp, time_limit, gap, threads)
                if info.status != "not solved" or (time_limit is not None and info.seconds >= time_limit * 0.95):
                    return info
            except Exception:  # noqa: BLE001 - a HiGHS crash is what the CBC fallback is for
                pass
        solver = "cbc"
    if solver == "cbc":
        return _run_cbc(lp, time_limit, gap, threads)
    raise PlacementError(f"unknown solver {solver!r} (highs or cbc)")
