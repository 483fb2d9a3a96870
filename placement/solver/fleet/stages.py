"""Running the stages of a fleet model (WAN, server CPU, latency): per stage the LP relaxation for the bound, the MIP
over what it left fractional for the plan, reduced-cost fixing into the next stage."""

from __future__ import annotations

import time
from typing import TypeAlias

import highspy
import numpy as np

from placement.solver import highs_model
from placement.solver.backends import SolveInfo, carried_optimum
from placement.solver.fleet.common import Built
from placement.solver.highs_model import INF, SparseMip
from placement.solver.result import SolverOptions, Stage

Relaxed: TypeAlias = tuple[
    float, np.ndarray, np.ndarray
]  # an LP relaxation's (objective, column values, reduced costs)


def run_stages(
    built: Built,
    tol: float,
    options: SolverOptions,
    deadline: float | None,
) -> tuple[list[Stage], np.ndarray | None]:
    h = built.mip.build(built.costs[0][1], built.costs[0][2])
    stages: list[Stage] = []
    values = None
    for name, cost, constant in built.costs:
        h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), cost)
        h.changeObjectiveOffset(constant)
        info, solution = None, None
        if name == "latency" and values is not None:
            info, solution = _latency_of(h, built.mip, cost, values, options)
        relaxed = None
        if info is None or info.gap is None or info.gap > options.gap:
            better, better_solution, relaxed = _relax_and_round(h, built.mip, options, deadline)
            if better.objective is not None or info is None:
                info, solution = better, better_solution
        stages.append(Stage(name, info))
        if info.objective is None:
            break
        values = np.asarray(solution)
        nz = np.flatnonzero(cost)  # keep this stage's objective within tolerance in the next ones
        integer = np.concatenate(built.mip.col_integer)
        rounded = float(cost @ np.where(integer, np.round(values), values)) + constant
        keep = carried_optimum(info.objective, rounded, tol)
        h.addRow(-INF, keep - constant, len(nz), nz.astype(np.int32), cost[nz])
        if relaxed is not None:
            _fix_by_reduced_cost(h, built.mip, relaxed, keep)
    return stages, values


def _fix_by_reduced_cost(h: highspy.Highs, mip: SparseMip, relaxed: Relaxed, keep: float) -> None:
    """Reduced-cost fixing for the later stages. With the stage's LP bound ``LB`` and reduced costs ``r``, every
    solution has ``objective ≥ LB + Σ_{r_j>0} r_j·x_j + Σ_{r_j<0} |r_j|·(1 − x_j)``; the later stages keep the objective
    ``≤ keep``, so a binary with ``r_j > keep − LB`` is 0 in all of them (``−r_j > keep − LB``: 1). Most columns go: the
    latency stage is left with the plans that tie on WAN and server CPU."""
    bound, x, reduced = relaxed
    slack = keep - bound + 1e-7 * max(1.0, abs(bound))
    integer = np.concatenate(mip.col_integer)
    lower, upper = np.asarray(h.getLp().col_lower_), np.asarray(h.getLp().col_upper_)
    zero = np.flatnonzero(integer & (reduced > slack) & (x < 0.5) & (lower < 0.5))
    one = np.flatnonzero(integer & (-reduced > slack) & (x > 0.5) & (upper > 0.5))
    if len(zero):
        h.changeColsBounds(len(zero), zero.astype(np.int32), np.zeros(len(zero)), np.zeros(len(zero)))
    if len(one):
        h.changeColsBounds(len(one), one.astype(np.int32), np.ones(len(one)), np.ones(len(one)))


def _latency_of(
    h: highspy.Highs,
    mip: SparseMip,
    cost: np.ndarray,
    values: np.ndarray,
    options: SolverOptions,
) -> tuple[SolveInfo | None, np.ndarray | None]:
    """The latency term of the previous stage's plan (its integer columns fixed) against the bound every plan has:
    each edge's delay column at its lower bound, the delay of the Pis that cannot avoid crossing it. When they meet
    (within ``options.gap``) the stage needs no solve; else this is the fallback when the solve runs out of time."""
    started = time.perf_counter()
    integer = np.flatnonzero(np.concatenate(mip.col_integer))
    lp_now = h.getLp()
    lower, upper = np.asarray(lp_now.col_lower_), np.asarray(lp_now.col_upper_)
    fixed = np.round(values[integer])
    h.changeColsBounds(len(integer), integer.astype(np.int32), fixed, fixed)
    info = highs_model.solve(h, time_limit=None, gap=options.gap, threads=options.threads, verbose=options.verbose)
    x = np.asarray(h.getSolution().col_value) if info.objective is not None else None
    h.changeColsBounds(len(integer), integer.astype(np.int32), lower[integer], upper[integer])
    if info.objective is None:
        return None, None
    bound = float(cost @ lower)
    gap = relative_gap(info.objective, bound)
    status = "optimal" if gap <= options.gap else "feasible"
    return SolveInfo("highs", status, info.objective, bound, gap, time.perf_counter() - started), x


FULL_MIP_COLUMNS = 50_000  # up to this many free binaries a fractional stage also gets the full MIP (time allowing)


def _relax_and_round(
    h: highspy.Highs,
    mip: SparseMip,
    options: SolverOptions,
    deadline: float | None,
) -> tuple[SolveInfo, np.ndarray | None, Relaxed | None]:
    """Solve the stage's LP relaxation (its objective is the stage's lower bound: the column form's is the
    Dantzig-Wolfe bound, each Pi's plans convexified), then the MIP over the columns the LP left fractional with every
    integral one fixed. Small models whose rounded plan is not within ``options.gap`` of the bound also get the full
    MIP. Returns (SolveInfo with the LP or MIP bound, column values)."""
    started = time.perf_counter()

    def left() -> float | None:
        return None if deadline is None else max(1.0, deadline - time.monotonic())

    h.setOptionValue("solve_relaxation", True)
    h.setOptionValue("solver", "ipm")  # the latency stage's LP: seconds with the interior point method, minutes simplex
    lp = highs_model.solve(h, time_limit=left(), gap=options.gap, threads=options.threads, verbose=options.verbose)
    h.setOptionValue("solver", "choose")
    h.setOptionValue("solve_relaxation", False)
    if lp.objective is None:
        return lp, None, None
    solution = h.getSolution()
    x = np.asarray(solution.col_value)
    relaxed = (lp.objective, x, np.asarray(solution.col_dual)) if solution.dual_valid else None
    integer = np.concatenate(mip.col_integer)
    frac = integer & (np.abs(x - np.round(x)) > 1e-6)
    bound = lp.objective
    if not frac.any():
        return (SolveInfo("highs", "optimal", lp.objective, bound, 0.0, time.perf_counter() - started), x, relaxed)
    lp_now = h.getLp()
    lower, upper = np.asarray(lp_now.col_lower_), np.asarray(lp_now.col_upper_)
    fix = np.flatnonzero(integer & ~frac)
    h.changeColsBounds(len(fix), fix.astype(np.int32), np.round(x[fix]), np.round(x[fix]))
    rounded = highs_model.solve(h, time_limit=left(), gap=options.gap, threads=options.threads, verbose=options.verbose)
    best = (rounded.objective, np.asarray(h.getSolution().col_value)) if rounded.objective is not None else None
    h.changeColsBounds(len(fix), fix.astype(np.int32), lower[fix], upper[fix])
    gap = None if best is None else relative_gap(best[0], bound)
    free = int(np.sum(integer & (lower != upper)))  # what reduced-cost fixing left: the later stages are small
    if free <= FULL_MIP_COLUMNS and (gap is None or gap > options.gap):
        if best is not None:
            h.setSolution(highspy_solution(h, best[1]))
        full = highs_model.solve(
            h, time_limit=left(), gap=options.gap, threads=options.threads, verbose=options.verbose
        )
        if full.objective is not None and (best is None or full.objective < best[0]):
            best = (full.objective, np.asarray(h.getSolution().col_value))
        if full.bound is not None:
            bound = max(bound, full.bound)
    seconds = time.perf_counter() - started
    if best is None:  # the full MIP proved there is none (its LP relaxation had one: a thread, a slot split by it)
        proven = free <= FULL_MIP_COLUMNS and full.status == "infeasible"
        return (SolveInfo("highs", "infeasible" if proven else "not solved", None, None, None, seconds), None, relaxed)
    gap = relative_gap(best[0], bound)
    status = "optimal" if gap <= options.gap else "feasible"
    return SolveInfo("highs", status, best[0], bound, gap, seconds), best[1], relaxed


def relative_gap(objective: float, bound: float) -> float:
    return abs(objective - bound) / max(abs(objective), 1e-9) if abs(objective - bound) > 1e-9 else 0.0


def highspy_solution(h: highspy.Highs, values: np.ndarray) -> highspy.HighsSolution:
    solution = h.getSolution()
    solution.col_value = list(values)
    return solution
