"""What a planning strategy returns: an assignment, its cost, how it was proven, and what is short when nothing fits."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from placement.costmodel.evaluate import PlanCost
from placement.costmodel.model import HostSpec, PlacementProblem, Subtask, SubtaskKey, thread_sentence
from placement.solver import families
from placement.solver.backends import SolveInfo, SolverName
from placement.units import figures_apart, needed_and_usable_mbit


@dataclass(frozen=True)
class SolverOptions:
    solver: SolverName = "highs"
    time_limit: float | None = 60.0  # seconds, for all stages together
    gap: float = 1e-4  # relative MIP gap at which a stage counts as optimal
    objective: Literal["lexicographic", "weighted"] | None = None  # None: the inventory policy's
    threads: int | None = None
    verbose: bool = False  # the solver's own log, on stderr


@dataclass(frozen=True)
class Stage:
    name: str  # wan | server_cpu | latency | weighted
    info: SolveInfo


@dataclass(frozen=True)
class Shortage:
    kind: Literal["link", "cpu", "memory", "slots", "thread", "latency", "budget"]
    resource: str  # link name, host name
    needed: float
    usable: float
    capacity: float
    detail: str = ""  # slots: " for <operator>"; thread: the subtask's label; latency: what its flush waits are;
    # link: why it carries less than its rate (PlacementProblem.link_bound_note);
    # budget: the job whose share of link ``resource`` it is (capacity: the link's usable bandwidth, η·bandwidth)
    running: str = (
        ""  # " after running job B's 33.1 Mbit/s": jobs already running that take part of it (plan --running)
    )

    # thread: one subtask's thread on host ``resource`` — needed and usable in cores of that host, capacity 1 core

    @classmethod
    def thread(cls, problem: PlacementProblem, s: Subtask, h: HostSpec) -> Shortage:
        """Subtask ``s``'s thread on host ``h``: what it needs of one core there against what one thread may use."""
        return cls("thread", h.name, families.cpu_need(s, h), families.thread_room(problem), 1.0, detail=s.label)

    @property
    def figures(self) -> tuple[str, str]:
        """Needed and usable, printed with the digits that tell them apart."""
        if self.kind in ("link", "budget"):
            return needed_and_usable_mbit(self.needed, self.usable)
        return figures_apart(
            self.needed, self.usable, {"cpu": 2, "thread": 2, "memory": 0, "latency": 1}.get(self.kind, 0)
        )

    @property
    def message(self) -> str:
        needed, usable = self.figures
        if self.kind == "link":
            return (
                f"link {self.resource} needs {needed} Mbit/s, has {self.capacity:g} ({usable} usable{self.running})"
                f"{self.detail}"
            )
        if self.kind == "budget":  # usable: the job's share of the link; capacity: the link's usable bandwidth
            share = self.usable / self.capacity if self.capacity else 0.0
            return (
                f"job {self.detail}'s budget on link {self.resource}: it needs {needed} Mbit/s, its budget is "
                f"{usable} ({share:.0%} of the link's {self.capacity:g} usable; jobs[].budget.uplinks)"
            )
        if self.kind == "thread":
            return thread_sentence(self.detail, self.resource, self.needed, self.usable)
        if self.kind == "latency":  # resource: the path's name; capacity = usable = its bound
            why = f" ({self.detail})" if self.detail else ""
            return f"path {self.resource} needs {needed} ms, its bound is {self.capacity:g} ms{why}"
        if self.kind == "cpu":
            return f"host {self.resource} needs {needed} cores, has {self.capacity:g} ({usable} usable{self.running})"
        if self.kind == "memory":
            return f"host {self.resource} needs {needed} MiB, has {self.capacity:.0f} ({usable} usable{self.running})"
        left = f" ({self.usable:g} free{self.running})" if self.running else ""
        return f"host {self.resource} needs {self.needed:.0f} task slots{self.detail}, has {self.capacity:g}{left}"


@dataclass(frozen=True)
class PlanResult:
    strategy: str  # ilp | all-on-server | greedy
    status: Literal["optimal", "feasible", "infeasible", "heuristic", "error"]
    assignment: dict[SubtaskKey, str] | None
    cost: PlanCost | None
    stages: tuple[Stage, ...] = ()
    shortages: tuple[Shortage, ...] = ()
    causes: tuple[
        str, ...
    ] = ()  # infeasible: operators the rules keep off the edge where their input is (solver.causes)
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
