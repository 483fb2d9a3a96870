"""What :func:`placement.planning.plan` made: everything ``placement plan`` prints, summarises and writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from placement.costmodel.jobs import JointProblem
from placement.costmodel.model import PlacementProblem
from placement.inventory import Inventory
from placement.planning.capacity import MaxRate
from placement.planning.request import PlanRequest
from placement.planning.running import RunningPlans
from placement.profile.format import JobProfile
from placement.solver.contingency import Contingency
from placement.solver.result import PlanResult
from placement.writers.planjson import JobBudgetRecord

if TYPE_CHECKING:  # what --rescale and several jobs' --compare make: imported by them only (start-up time)
    from placement.planning.forecasting import Forecasted
    from placement.planning.rescale import RescalePlan
    from placement.solver.one_by_one import OneByOne


@dataclass(frozen=True)
class PlanOutcome:
    request: PlanRequest
    inventory: Inventory  # with the what-if applied
    profiles: tuple[JobProfile, ...]  # in --profile order
    names: tuple[str, ...]  # each job's name in the plan (unique: a second copy of a job is job-2)
    dirs: dict[str, str]  # several jobs: job -> its plan directory under OUT
    placement_mode: str
    running: RunningPlans  # the jobs that keep running, as fixed load
    joint: JointProblem  # the problem solved (one job: a fleet of one)
    result: PlanResult  # the plan
    parts: dict[str, PlanResult]  # each job's part of it ({} when nothing fits)
    budgets: dict[str, JobBudgetRecord | None]
    contingencies: tuple[Contingency, ...] = ()
    what_if: list[str] = field(default_factory=list)  # what --add-host/--link (and --max-rate's minima) changed
    notes: list[str] = field(default_factory=list)  # said with the plan (a policy one job alone does not use)
    warnings: list[str] = field(default_factory=list)  # the input warnings said before solving
    baselines: tuple[PlanResult, ...] = ()  # --compare, one job: all-on-server and greedy (with --rescale: its own)
    one_by_one: tuple[OneByOne, ...] = ()  # --compare, several jobs: the jobs planned one by one
    rescaled: RescalePlan | None = None
    capped: MaxRate | None = None
    forecast: Forecasted | None = None  # --forecast: the sources' forecasts, the scales planned, the plan in effect

    @property
    def problem(self) -> PlacementProblem:
        return self.joint.problem

    @property
    def several(self) -> bool:
        return len(self.names) > 1

    @property
    def results(self) -> Sequence[PlanResult]:
        """The plan, then (one job, --compare) its baselines."""
        return (self.result, *self.baselines)

    @property
    def plan_notes(self) -> list[str]:
        """What plan.json's (and fleet.json's) warnings say beside the input warnings."""
        return [*self.what_if, *self.notes, *self.problem.warnings, *self.result.notes]
