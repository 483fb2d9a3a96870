"""A MILP built straight into HiGHS from numpy arrays — for models too big for PuLP's one-object-per-term build.

PuLP builds an expression object per term and hands HiGHS one column and one row at a time (and marks each integer
column in its own call); at 100 000 subtasks that is most of the time. :class:`SparseMip` collects columns and rows as
arrays, sums duplicate entries, and passes the whole model in one call; :meth:`SparseMip.solve` runs it and returns
the same :class:`~placement.solver.backends.SolveInfo` the PuLP path does (status, objective, MIP dual bound, gap).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import highspy
import numpy as np
from numpy.typing import ArrayLike

from placement.solver.backends import (
    SolveInfo,
    certify,
    native_output,
    new_highs,
    relative_gap,
)

if TYPE_CHECKING:
    from placement.solver.families import Row, Var

INF = highspy.kHighsInf


@dataclass
class SparseMip:
    col_lower: list[np.ndarray] = field(default_factory=list)
    col_upper: list[np.ndarray] = field(default_factory=list)
    col_integer: list[np.ndarray] = field(default_factory=list)
    row_lower: list[np.ndarray] = field(default_factory=list)
    row_upper: list[np.ndarray] = field(default_factory=list)
    entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)  # (row, col, value)
    n_cols: int = 0
    n_rows: int = 0
    highs: highspy.Highs | None = None

    def add_cols(self, n: int, lower: float = 0.0, upper: float = 1.0, integer: bool = True) -> np.ndarray:
        """``n`` new columns; returns their indices."""
        self.col_lower.append(np.full(n, lower, dtype=float))
        self.col_upper.append(np.full(n, upper, dtype=float))
        self.col_integer.append(np.full(n, integer, dtype=bool))
        first = self.n_cols
        self.n_cols += n
        return np.arange(first, first + n)

    def add_rows(
        self,
        n: int,
        lower: ArrayLike,
        upper: ArrayLike,
        row: ArrayLike,
        col: ArrayLike,
        value: ArrayLike,
    ) -> np.ndarray:
        """``n`` rows ``lower ≤ Σ value·x[col] ≤ upper``; ``row`` numbers them from 0 (one entry per term), ``lower``
        and ``upper`` are per row or shared scalars. Returns the new rows' indices."""
        self.row_lower.append(np.broadcast_to(np.asarray(lower, dtype=float), (n,)).copy())
        self.row_upper.append(np.broadcast_to(np.asarray(upper, dtype=float), (n,)).copy())
        self.entries.append(
            (
                np.asarray(row, dtype=np.int64) + self.n_rows,
                np.asarray(col, dtype=np.int64),
                np.asarray(value, dtype=float),
            )
        )
        first = self.n_rows
        self.n_rows += n
        return np.arange(first, first + n)

    def build(self, cost: np.ndarray, offset: float = 0.0) -> highspy.Highs:
        """Pass the model (minimise ``cost·x + offset``) to a new silent HiGHS instance."""
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = self.n_cols, self.n_rows
        lp.col_cost_ = np.asarray(cost, dtype=float)
        lp.offset_ = float(offset)
        lp.col_lower_ = np.concatenate(self.col_lower) if self.col_lower else np.zeros(0)
        lp.col_upper_ = np.concatenate(self.col_upper) if self.col_upper else np.zeros(0)
        lp.row_lower_ = np.concatenate(self.row_lower) if self.row_lower else np.zeros(0)
        lp.row_upper_ = np.concatenate(self.row_upper) if self.row_upper else np.zeros(0)
        rows = np.concatenate([e[0] for e in self.entries]) if self.entries else np.zeros(0, dtype=np.int64)
        cols = np.concatenate([e[1] for e in self.entries]) if self.entries else np.zeros(0, dtype=np.int64)
        vals = np.concatenate([e[2] for e in self.entries]) if self.entries else np.zeros(0)
        key = rows * max(self.n_cols, 1) + cols  # sum duplicate (row, col) terms; drop zeros
        unique, inverse = np.unique(key, return_inverse=True)
        summed = np.bincount(inverse, weights=vals, minlength=len(unique))
        keep = summed != 0
        unique, summed = unique[keep], summed[keep]
        r, c = unique // max(self.n_cols, 1), unique % max(self.n_cols, 1)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = self.n_cols, self.n_rows
        lp.a_matrix_.start_ = np.searchsorted(r, np.arange(self.n_rows + 1)).astype(np.int32)
        lp.a_matrix_.index_ = c.astype(np.int32)
        lp.a_matrix_.value_ = summed
        integer = np.concatenate(self.col_integer) if self.col_integer else np.zeros(0, dtype=bool)
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integer]
        h = new_highs()
        h.passModel(lp)
        self.highs = h
        return h


def solve(
    h: highspy.Highs, *, time_limit: float | None, gap: float, threads: int | None = None, verbose: bool = False
) -> SolveInfo:
    """Run HiGHS on the model as it stands and read status, objective, bound and relative gap. The objective is that
    of the columns HiGHS returns (``cost·x + offset``), and "optimal" needs it certified against HiGHS's bound
    (:func:`placement.solver.backends.certify`): HiGHS 1.16 can report an optimum's value beside a start solution's
    columns."""
    if time_limit is not None:
        h.setOptionValue("time_limit", float(max(time_limit, 0.1)))
    h.setOptionValue("mip_rel_gap", float(gap))
    h.setOptionValue("output_flag", bool(verbose))
    if threads:
        h.setOptionValue("threads", int(threads))
    start = time.perf_counter()
    with native_output(verbose):
        h.run()
    seconds = time.perf_counter() - start
    status = h.getModelStatus()
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    if status == highspy.HighsModelStatus.kOptimal:
        name = "optimal"
    elif status == highspy.HighsModelStatus.kInfeasible:
        name = "infeasible"
    elif status == highspy.HighsModelStatus.kUnbounded:
        name = "unbounded"
    else:
        name = "feasible" if has_solution else "not solved"
    objective = _columns_objective(h) if name in ("optimal", "feasible") else None
    bound = None
    if objective is not None:
        dual = info.mip_dual_bound
        finite = dual is not None and abs(dual) != INF and abs(dual) < 1e300
        relaxation = bool(_option(h, "solve_relaxation"))  # an LP's optimum is its own bound
        bound = dual if finite and not relaxation else (objective if name == "optimal" else None)
    if name == "optimal" and not certify(objective, bound, gap):
        name = "feasible"
    return SolveInfo("highs", name, objective, bound, relative_gap(objective, bound), seconds)


def _option(h: highspy.Highs, name: str) -> object:
    value = h.getOptionValue(name)  # (status, value) in highspy 1.7–1.16; the value alone in some builds
    return value[1] if isinstance(value, tuple) else value


def _columns_objective(h: highspy.Highs) -> float:
    lp = h.getLp()
    x = np.asarray(h.getSolution().col_value)
    return float(np.asarray(lp.col_cost_) @ x) + float(lp.offset_)


class Rows:
    """Rows collected as (row, column, value) triples, with per-row bounds, then added in one call."""

    def __init__(self) -> None:
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, terms: list[tuple[int, float]], lower: float, upper: float) -> None:
        n = len(self.lower)
        for col, value in terms:
            self.r.append(n)
            self.c.append(col)
            self.v.append(value)
        self.lower.append(lower)
        self.upper.append(upper)

    def flush(self, mip: SparseMip) -> None:
        if self.lower:
            mip.add_rows(len(self.lower), np.array(self.lower), np.array(self.upper), self.r, self.c, self.v)


class ColumnSink:
    """:mod:`placement.solver.families`' rows as :class:`Rows` over a :class:`SparseMip`'s columns: a term whose
    column is None is fixed at 1 and moves to the right-hand side; an elastic capacity row gets a slack column
    (``slack``: its name -> (column, capacity))."""

    def __init__(
        self,
        mip: SparseMip,
        rows: Rows,
        elastic: bool,
        slack: dict[tuple[str, ...], tuple[int, float]],
        eps: float = 1e-6,
    ):
        self.mip, self.rows, self.elastic, self.slack, self.eps = mip, rows, elastic, slack, eps

    def add(self, row: Row) -> None:
        fixed = sum(c for col, c in row.terms if col is None)
        free = [(col, c) for col, c in row.terms if col is not None and c != 0]
        if row.slack is not None and self.elastic:
            col = int(self.mip.add_cols(1, 0.0, INF, integer=False)[0])
            self.slack[row.slack] = (col, max(row.rhs, 1e-9))
            free.append((col, -1.0))
        rhs = row.rhs - fixed
        lower, upper = {"<=": (-INF, rhs), ">=": (rhs, INF), "==": (rhs, rhs)}[row.sense]
        self.rows.add(free, lower, upper)  # type: ignore[arg-type]

    def fresh(self, name: str, low: float = 0.0, up: float | None = None, binary: bool = False) -> int:
        return int(self.mip.add_cols(1, low, INF if up is None else up, integer=binary)[0])

    def upper(self, var: Var) -> float:
        return 1.0
