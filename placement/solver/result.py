"""What a planning strategy returns: an assignment, its cost, how it was proven, and what is short when nothing fits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from placement.costmodel.evaluate import PlanCost
from placement.costmodel.model import SubtaskKey
from placement.solver.backends import SolveInfo, SolverName


@dataclass(frozen=True)
class SolverOptions:
    solver: SolverName = "highs"
    time_limit: float | None = 60.0  # seconds, for all stages together
    gap: float = 1e-4  # relative MIP gap at which a stage counts as optimal
    objective: Literal["lexicographic", "weighted"] | None = None  # None: the inventory policy's
    threads: int | None = None


@dataclass(frozen=True)
class Stage:
    name: str  # wan | server_cpu | latency | weighted
    info: SolveInfo


def _num(x: float) -> str:
    """71.3 for large figures, 0.45 for small ones: three significant digits at most."""
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"


@dataclass(frozen=True)
class Shortage:
    kind: Literal["link", "cpu", "memory", "slots"]
    resource: str  # link name, host name
    needed: float
    usable: float
    capacity: float
    detail: str = ""

    @property
    def message(self) -> str:
        if self.kind == "link":
            return (f"link {self.resource} needs {_num(self.needed)} Mbit/s, has {self.capacity:g} "
                    f"({_num(self.usable)} usable)")
        if self.kind == "cpu":
            return f"host {self.resource} needs {self.needed:.2f} cores, has {self.capacity:g} ({self.usable:.2f} usable)"
        if self.kind == "memory":
            return f"host {self.resource} needs {self.needed:.0f} MiB, has {self.capacity:.0f} ({self.usable:.0f} usable)"
        return f"host {self.resource} needs {self.needed:.0f} task slots{self.detail}, has {self.capacity:g}"


@dataclass(frozen=True)
class PlanResult:
    strategy: str  # ilp | all-on-server | greedy
    status: Literal["optimal", "feasible", "infeasible", "heuristic", "error"]
    assignment: dict[SubtaskKey, str] | None
    cost: PlanCost | None
    stages: tuple[Stage, ...] = ()
    shortages: tuple[Shortage, ...] = ()
    reason: str | None = None
    objective_mode: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def solver(self) -> str | None:
        return self.stages[0].info.solver if self.stages else None

    @property
    def seconds(self) -> float:
        return sum(s.info.seconds for s in self.stages)

    @property
    def gap(self) -> float | None:
        gaps = [s.info.gap for s in self.stages if s.info.gap is not None]
        return max(gaps) if gaps else None

    @property
    def primary(self) -> SolveInfo | None:
        return self.stages[0].info if self.stages else None
