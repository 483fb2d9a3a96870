"""Running a PuLP model on HiGHS (via highspy) or CBC and reading back a *certified* status, objective, bound and gap.

Two things here do not trust a solver release's defaults:

* **Output.** Solvers write from native code to the process's file descriptors: HiGHS ≥ 1.16 prints its banner when
  the ``Highs`` object is made, before any option can silence it; CBC runs as a child process. While a solver runs,
  :func:`native_output` points fd 1 at ``/dev/null`` (at stderr when the user asked for the log), so stdout stays the
  command's own (``--json`` is JSON alone) whatever the solver version prints.
* **Certificates.** The options a certificate depends on (gaps, integrality and feasibility tolerances, seed) are set
  explicitly on every solve (:class:`Tolerances`), and a stage counts as optimal only when the objective *of the
  solution the solver returned* — computed here from its columns — is within the gap of the solver's bound
  (:func:`certify`). HiGHS 1.16 showed why: given a start solution, it evaluated the start in its presolved space at
  a wrong objective (0.02 instead of 0.14 server cores), declared it optimal at the root, and handed the start back
  unchanged while reporting the optimum's value. A warm-started answer that does not certify is solved again cold.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pulp

from placement.errors import PlacementError

if TYPE_CHECKING:  # imported where a model is solved (placement.solver imports it first, for a clean Ctrl-C)
    import highspy

SolverName = Literal["highs", "cbc"]


@dataclass(frozen=True)
class Tolerances:
    """The solver settings a certificate depends on, set on every solve instead of taken from a release's defaults."""

    abs_gap: float = 1e-6  # a stage is optimal when |objective − bound| ≤ max(gap·|objective|, abs_gap)
    integrality: float = 1e-6  # how far from 0/1 a binary may be and count as integral
    feasibility: float = 1e-7  # how far a row may be broken and count as satisfied
    seed: int = 0  # HiGHS's random seed: the same model gives the same plan run to run


TOLERANCES = Tolerances()


def carried_optimum(optimum: float, rounded: float, relative: float, tolerances: Tolerances = TOLERANCES) -> float:
    """The right-hand side that carries a lexicographic stage's optimum into the later stages. ``rounded`` is the
    stage's objective at the incumbent with its integer columns rounded — the plan as it is read back — which may lie
    above the solver's value by what the integrality tolerance lets binaries stray; both must stay feasible (the
    incumbent starts the next stage, the rounded one is the plan), so the row admits the larger of the two, plus the
    policy's relative tolerance and the solver's row feasibility tolerance: derived from the solution, no constant."""
    return max(optimum, rounded) + relative * abs(optimum) + tolerances.feasibility


def rounded_value(expr: pulp.LpAffineExpression) -> float:
    """``expr`` at the variables' current values with the integer ones rounded (see :func:`carried_optimum`)."""
    total: float = expr.constant
    for var, coefficient in expr.items():
        value = var.varValue or 0.0
        total += coefficient * (round(value) if var.cat == pulp.LpInteger else value)
    return total


@dataclass(frozen=True)
class SolveInfo:
    solver: str
    status: str  # optimal | feasible | infeasible | unbounded | not solved
    objective: float | None
    bound: float | None
    gap: float | None  # relative: |objective - bound| / max(|objective|, 1e-9)
    seconds: float


@contextlib.contextmanager
def native_output(verbose: bool = False) -> Iterator[None]:
    """While a solver runs, its native writes to fd 1 go to ``/dev/null`` (``verbose``: to stderr) — see the module
    doc. Python's own streams are flushed first so nothing of the command's output is lost or reordered."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 at all (a daemon): nothing to protect
        yield
        return
    target = os.dup(2) if verbose else os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(target, 1)
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(target)


def new_highs(verbose: bool = False, tolerances: Tolerances = TOLERANCES) -> highspy.Highs:
    """A ``highspy.Highs`` with its output off (unless ``verbose``) and the certificate's options set explicitly."""
    import highspy

    with native_output(verbose):  # the banner of HiGHS >= 1.16 is printed by the constructor
        h = highspy.Highs()
    h.setOptionValue("output_flag", bool(verbose))
    h.setOptionValue("mip_abs_gap", tolerances.abs_gap)
    h.setOptionValue("mip_feasibility_tolerance", tolerances.integrality)
    h.setOptionValue("primal_feasibility_tolerance", tolerances.feasibility)
    h.setOptionValue("dual_feasibility_tolerance", tolerances.feasibility)
    h.setOptionValue("random_seed", tolerances.seed)
    return h


def highs_available() -> bool:
    try:
        available: bool = pulp.HiGHS().available()
        return available
    except Exception:
        return False


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    if objective is None or bound is None:
        return None
    return abs(objective - bound) / max(abs(objective), 1e-9) if abs(objective - bound) > 1e-9 else 0.0


def certify(objective: float | None, bound: float | None, gap: float, tolerances: Tolerances = TOLERANCES) -> bool:
    """Is ``objective`` (of the returned solution) proven within ``gap`` (relative) or ``abs_gap`` of the bound?"""
    if objective is None or bound is None:
        return False
    return abs(objective - bound) <= max(gap * abs(objective), tolerances.abs_gap)


def _objective_value(lp: pulp.LpProblem) -> float | None:
    """The objective at the solution; None when a variable of it has no value.

    An objective without terms gets PuLP's ``__dummy`` variable while it is solved; it stays in the expression with
    coefficient 0 afterwards, and CBC reports no value for it (HiGHS does). Terms with coefficient 0 do not count."""
    total: float = lp.objective.constant
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


def _certified_info(
    solver: str, status: str, objective: float | None, bound: float | None, gap: float, seconds: float
) -> SolveInfo:
    """The solver's claim of optimality stands only when the returned solution certifies (see :func:`certify`)."""
    if status == "optimal" and not certify(objective, bound, gap):
        status = "feasible"
    return SolveInfo(solver, status, objective, bound, relative_gap(objective, bound), seconds)


def _highs_command(verbose: bool, warm_start: bool, tolerances: Tolerances) -> type:
    """PuLP's HiGHS interface on a :func:`new_highs` object (silent, explicit tolerances); with ``warm_start`` it hands
    HiGHS the variables' current values as a starting solution (PuLP's own ``warmStart`` covers CBC only)."""
    import highspy
    import numpy as np

    class PlacementHiGHS(pulp.HiGHS):  # type: ignore[misc]  # PuLP has no types: subclassing Any
        def createAndConfigureSolver(self, lp: pulp.LpProblem) -> None:
            lp.solverModel = new_highs(verbose, tolerances)
            lp.solverModel.setOptionValue("mip_rel_gap", float(self.gapRel))
            if self.threads is not None:
                lp.solverModel.setOptionValue("threads", int(self.threads))
            if self.timeLimit is not None:
                lp.solverModel.setOptionValue("time_limit", float(self.timeLimit))

        def buildSolverModel(self, lp: pulp.LpProblem) -> None:
            super().buildSolverModel(lp)
            variables = lp.variables()
            if warm_start and any(var.varValue is not None for var in variables):
                # The dense form: highspy < 1.8 has no sparse setSolution. A variable new in this stage starts at 0.
                start = highspy.HighsSolution()
                values = np.zeros(len(variables))
                for var in variables:
                    values[var.index] = var.varValue or 0.0
                start.col_value = values
                start.value_valid = True
                lp.solverModel.setSolution(start)

    return PlacementHiGHS


def _run_highs(
    lp: pulp.LpProblem,
    time_limit: float | None,
    gap: float,
    threads: int | None,
    warm_start: bool = False,
    verbose: bool = False,
) -> tuple[SolveInfo, bool]:
    """(certified answer, whether HiGHS itself claimed optimality)."""
    cmd = _highs_command(verbose, warm_start, TOLERANCES)(
        msg=verbose, timeLimit=time_limit, gapRel=gap, threads=threads
    )
    start = time.perf_counter()
    with native_output(verbose):
        lp.solve(cmd)
    seconds = time.perf_counter() - start
    status = _status(lp)
    info = lp.solverModel.getInfo()
    if status == "feasible" and info.primal_solution_status != 2:  # time limit without any incumbent
        status = "not solved"
    objective = _objective_value(lp) if status in ("optimal", "feasible") else None
    bound = None
    if objective is not None:
        dual = info.mip_dual_bound
        # A model HiGHS solved as an LP (every binary fixed by presolve) has no MIP bound: optimal means bound =
        # objective.
        finite = dual is not None and abs(dual) != float("inf") and info.mip_node_count >= 0
        # PuLP does not hand HiGHS the objective's constant; the bound is HiGHS's, the objective ours: add it back.
        bound = dual + lp.objective.constant if finite else (objective if status == "optimal" else None)
    return _certified_info("highs", status, objective, bound, gap, seconds), status == "optimal"


def _run_cbc(
    lp: pulp.LpProblem,
    time_limit: float | None,
    gap: float,
    threads: int | None,
    warm_start: bool = False,
    verbose: bool = False,
) -> SolveInfo:
    fd, log = tempfile.mkstemp(prefix="placement-cbc-", suffix=".log")
    os.close(fd)
    try:
        options = [
            f"integerTolerance {TOLERANCES.integrality}",
            f"primalTolerance {TOLERANCES.feasibility}",
            f"randomSeed {TOLERANCES.seed}",
        ]
        cmd = pulp.PULP_CBC_CMD(
            msg=verbose,
            timeLimit=time_limit,
            gapRel=gap,
            gapAbs=TOLERANCES.abs_gap,
            threads=threads,
            logPath=log,
            warmStart=warm_start,
            options=options,
        )
        start = time.perf_counter()
        with native_output(verbose):
            lp.solve(cmd)
        seconds = time.perf_counter() - start
        text = Path(log).read_text(encoding="utf-8", errors="replace")
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
    return _certified_info("cbc", status, objective, bound, gap, seconds)


_FALLBACK_SAID: set[str] = set()


def _say_fallback(why: str) -> None:
    """A solver switch is never silent; said once per process, on stderr (stdout may be --json)."""
    if why not in _FALLBACK_SAID:
        _FALLBACK_SAID.add(why)
        print(f"note: {why}; solving with CBC instead", file=sys.stderr)


def run(
    lp: pulp.LpProblem,
    solver: SolverName = "highs",
    *,
    time_limit: float | None = None,
    gap: float = 1e-4,
    threads: int | None = None,
    warm_start: bool = False,
    verbose: bool = False,
) -> SolveInfo:
    """Solve ``lp``. ``highs`` falls back to CBC — and says so on stderr — when highspy is missing or HiGHS fails.
    ``warm_start``: start from the variables' current values (a previous stage's solution); an answer from a start
    that HiGHS claims optimal but that does not certify is solved again without it. ``verbose``: the solver's log,
    on stderr."""
    if solver not in ("highs", "cbc"):
        raise PlacementError(f"unknown solver {solver!r} (highs or cbc)")
    if solver == "highs":
        if not highs_available():
            _say_fallback("HiGHS (highspy) is not available")
        else:
            try:
                info, claimed = _run_highs(lp, time_limit, gap, threads, warm_start, verbose)
                if warm_start and claimed and info.status != "optimal":
                    info, _ = _run_highs(lp, time_limit, gap, threads, False, verbose)
                if info.status != "not solved" or (time_limit is not None and info.seconds >= time_limit * 0.95):
                    return info
                _say_fallback(f"HiGHS returned no answer ({info.status})")
            except Exception as exc:
                _say_fallback(f"HiGHS failed ({_first_line(exc)})")
    try:
        return _run_cbc(lp, time_limit, gap, threads, warm_start, verbose)
    except (
        pulp.PulpSolverError,
        OSError,
    ) as exc:  # the last solver there is: its failure ends the command, in one line
        raise PlacementError(f"the CBC solver failed ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
