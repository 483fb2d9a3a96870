"""``--rescale``: the joint plan (parallelism and placement) and its baselines (their tables:
:mod:`placement.cli.rescale_tables`)."""

from __future__ import annotations

from dataclasses import dataclass

from placement.costmodel.model import PlacementProblem
from placement.costmodel.rates import parse_target_rates
from placement.costmodel.rescaled import RescaleSpace, build_space
from placement.inventory import Inventory
from placement.profile.format import JobProfile
from placement.solver.rescale import (
    RescaleResult,
    ds2_then_place,
    placement_alone,
    solve_rescale,
)
from placement.solver.result import PlanResult, SolverOptions
from placement.writers.planjson import RescaleInfo


@dataclass(frozen=True)
class RescalePlan:
    space: RescaleSpace
    joint: RescaleResult
    baselines: tuple[RescaleResult, ...]

    @property
    def problem(self) -> PlacementProblem:
        """The joint plan's problem, or the profiled parallelism's when nothing fits (for the headers)."""
        return self.joint.problem or self.space.problem_at(self.space.profiled_parallelism())

    @property
    def results(self) -> list[PlanResult]:
        return [self.joint.plan] + [b.plan for b in self.baselines]

    def info(self, result: RescaleResult | None = None) -> RescaleInfo:
        """What plan.json records of the rescale: of the joint plan, or of ``result`` (a baseline's plan.json)."""
        chosen = result or self.joint
        assert chosen.parallelism is not None
        profiled = self.space.profiled_parallelism()
        names = {v.id: v.name for v in self.space.profile.vertices}
        return RescaleInfo(
            profiled_parallelism=profiled,
            target_records_per_s=dict(self.space.targets),
            changed={names[vid]: [profiled[vid], p] for vid, p in chosen.parallelism.items() if p != profiled[vid]},
        )


def plan_rescaled(
    inv: Inventory,
    profile: JobProfile,
    *,
    inventory_source: str,
    rate_scale: float,
    target_rate: str | None,
    options: SolverOptions,
    compare: bool,
    placement_mode: str = "custom",
) -> RescalePlan:
    targets = parse_target_rates(target_rate) if target_rate is not None else None
    space = build_space(
        inv,
        profile,
        rate_scale=rate_scale,
        target_rates=targets,
        inventory_source=inventory_source,
        placement_mode=placement_mode,
    )
    joint = solve_rescale(space, options)
    baselines = (placement_alone(space, options), ds2_then_place(space, options)) if compare else ()
    return RescalePlan(space, joint, baselines)


def result_parallelism(plan: RescalePlan) -> dict[str, dict[str, int] | None]:
    """strategy -> vertex name -> parallelism (for the JSON summary)."""
    names = {v.id: v.name for v in plan.space.profile.vertices}
    return {
        r.strategy: ({names[vid]: p for vid, p in r.parallelism.items()} if r.parallelism else None)
        for r in (plan.joint, *plan.baselines)
    }
