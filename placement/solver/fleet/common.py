"""What the two forms of the fleet decomposition share: server classes, row collection, the WAN term of a subtask,
the stages' costs, and the built model the stages run on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from placement.costmodel.model import PlacementProblem, SubtaskKey
from placement.solver import families
from placement.solver.highs_model import INF, SparseMip
from placement.solver.server_pools import Pool

EPS = 1e-6


def pool_name(pool: Pool) -> str:
    """A pool's name in plans: the server itself when it is alone."""
    return pool.members[0].name if len(pool.members) == 1 else pool.name


class PoolsOf:
    """The pools (indexes) a subtask's allowed servers fall in, worked out once per tuple of servers: most subtasks
    share one (every server), and a fleet has 100 000 subtasks and hundreds of servers."""

    def __init__(self, pools: list[Pool]):
        self.of_server = {h.name: k for k, p in enumerate(pools) for h in p.members}
        self.cache: dict[int, tuple[tuple[str, ...], list[int]]] = {}

    def __call__(self, servers: tuple[str, ...]) -> list[int]:
        hit = self.cache.get(id(servers))
        if hit is None or hit[0] is not servers:
            hit = self.cache[id(servers)] = (servers, sorted({self.of_server[h] for h in servers}))
        return hit[1]


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

    eps = EPS

    def __init__(self, mip: SparseMip, rows: Rows, elastic: bool, slack: dict[tuple[str, ...], tuple[int, float]]):
        self.mip, self.rows, self.elastic, self.slack = mip, rows, elastic, slack

    def add(self, row: families.Row) -> None:
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

    def upper(self, var) -> float:
        return 1.0


def net_mbit(problem: PlacementProblem) -> dict[SubtaskKey, float]:
    """Per subtask: what it sends over its output edges minus what it receives over its input edges plus its
    checkpoint upload — its term in its edge host's uplink ``W_h`` (:mod:`placement.solver.objectives`)."""
    net = {s.key: s.checkpoint_mbit for s in problem.subtasks}
    for ch in problem.channels:
        for i in range(ch.n_up):
            net[(ch.source, i)] += ch.sent_mbit(i)
        for j in range(ch.n_down):
            net[(ch.target, j)] -= ch.received_mbit(j)
    return net


@dataclass
class Built:
    """A model ready for the stages: its MIP, each stage's (name, costs, constant), and how to read a plan back."""

    mip: SparseMip
    costs: list[tuple[str, np.ndarray, float]]
    decode: Callable[[np.ndarray], dict[SubtaskKey, str]]  # values -> {subtask: edge host or pool name}
    form: str  # "columns" | "compact"
    detail: str = ""


def staged(problem: PlacementProblem, mode: str, wan: tuple[np.ndarray, float], cpu: tuple[np.ndarray, float],
           latc: np.ndarray) -> list[tuple[str, np.ndarray, float]]:
    if mode == "weighted":
        w = problem.policy.weights
        return [("weighted", w.wan * wan[0] + w.server_cpu * cpu[0] + w.latency * latc,
                 w.wan * wan[1] + w.server_cpu * cpu[1])]
    return [("wan", wan[0], wan[1]), ("server_cpu", cpu[0], cpu[1]), ("latency", latc, 0.0)]
