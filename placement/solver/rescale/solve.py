"""Solving the joint rescale-and-place ILP: domains, rows, lexicographic stages, read-back, independent re-check.

Stages (``lexicographic``, the default): WAN, then server CPU, then latency, then the number of subtasks, each keeping
the earlier stages within ``lexicographic_tolerance`` of their optimum (``weighted``: the policy's weighted sum, then
subtasks). The plan is re-checked by :func:`placement.costmodel.evaluate` on the placement problem *at the chosen
parallelism* (which checks the per-instance rate row, as for every plan), and by the space's parallelism rules — a
modelling bug cannot silently produce a plan that breaks a link, a host, a thread or a Flink rule.

Identical servers are solved as one pool first (:mod:`placement.solver.pooling`); the full model only when the
pool's plan cannot be packed back onto them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal

from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import PlacementProblem
from placement.costmodel.rescaled import RescaleSpace
from placement.errors import Infeasible, PlacementError
from placement.solver import backends
from placement.solver.causes import thread_causes
from placement.solver.domains import Domain, rule_domain
from placement.solver.elastic import least_stretch
from placement.solver.pooling import pool_servers, unpool
from placement.solver.rescale import constraints, objectives, realize
from placement.solver.rescale.domains import restricted_domains
from placement.solver.rescale.model import RescaleModel, new_model
from placement.solver.result import PlanResult, Shortage, SolverOptions, Stage


@dataclass(frozen=True)
class RescaleResult:
    """A rescaled plan: ``plan`` (assignment and cost over ``problem``'s subtasks) and the parallelism it runs at."""

    plan: PlanResult
    parallelism: dict[str, int] | None  # vertex id -> parallelism (None when nothing fits)
    problem: PlacementProblem | None  # the placement problem at that parallelism

    @property
    def strategy(self) -> str:
        return self.plan.strategy

    @property
    def subtasks(self) -> int | None:
        return sum(self.parallelism.values()) if self.parallelism else None


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(1.0, deadline - time.monotonic())


def reference_problem(space: RescaleSpace) -> PlacementProblem:
    """The problem at the profiled parallelism where it is kept and the smallest choice elsewhere: hosts, channels
    and the per-subtask vertices' subtasks of the model (which do not depend on the others' parallelism)."""
    par = {}
    for g in space.groups:
        par.update(space.parallelism_of(g))
    return space.problem_at(par)


def solve_rescale(
    space: RescaleSpace, options: SolverOptions | None = None, *, strategy: str = "joint"
) -> RescaleResult:
    """The plan that is optimal over every allowed parallelism and placement (see module doc)."""
    options = options or SolverOptions()
    pooled = pool_servers(space.base)
    if pooled is not None:
        pooled_problem, pools = pooled
        result = _solve(space.with_hosts(pooled_problem.hosts), options, strategy, diagnose=False)
        if result.plan.status == "infeasible":  # the pool is a relaxation: the real servers cannot do better
            return _solve(space, options, strategy, solve=False)
        if result.parallelism is not None and result.plan.assignment is not None:
            real = space.problem_at(result.parallelism)
            assignment = unpool(real, result.plan.assignment, pools)
            if assignment is not None:
                cost = evaluate(real, assignment)
                if cost.feasible:
                    note = f"identical servers solved as pools: {', '.join(pools)}"
                    plan = replace(result.plan, assignment=assignment, cost=cost, notes=(*result.plan.notes, note))
                    return RescaleResult(plan, result.parallelism, real)
    return _solve(space, options, strategy)  # the pool's plan did not pack onto the real servers: the full model


def _stages(m: RescaleModel, mode: str, options: SolverOptions) -> tuple[list[Stage], bool]:
    """Run the objective stages (``time_limit`` for all of them together, as the plain ILP); returns them and whether
    some stage found a solution."""
    deadline = None if options.time_limit is None else time.monotonic() + options.time_limit
    policy = m.ref.policy
    if mode == "weighted":
        w = policy.weights
        first = (
            w.wan * objectives.total_wan_mbit(m)
            + w.server_cpu * objectives.server_cores(m)
            + w.latency * objectives.latency_ms(m)
        )
        plan = [("weighted", first), ("subtasks", None)]
    else:
        plan = [
            ("wan", objectives.total_wan_mbit(m)),
            ("server_cpu", objectives.server_cores(m)),
            ("latency", None),
            ("subtasks", None),
        ]
    stages: list[Stage] = []
    solved = False
    solution: dict[str, float | None] = {}  # the last stage's that found one
    for name, expr in plan:
        if expr is None:
            expr = objectives.latency_ms(m) if name == "latency" else objectives.subtasks(m)
        m.lp.setObjective(expr)
        info = backends.run(
            m.lp,
            options.solver,
            time_limit=_remaining(deadline),
            gap=options.gap,
            threads=options.threads,
            warm_start=solved,
            verbose=options.verbose,
        )
        stages.append(Stage(name, info))
        if info.objective is None:
            break
        solved = True
        solution = {var.name: var.value() for var in m.lp.variables()}
        m.lp += (
            expr
            <= backends.carried_optimum(info.objective, backends.rounded_value(expr), policy.lexicographic_tolerance),
            f"keep_{name}",
        )
    if solved:  # the last stage that found a solution satisfies every earlier stage's bound
        for var in m.lp.variables():
            var.varValue = solution.get(var.name)
    return stages, solved


def _solve(
    space: RescaleSpace, options: SolverOptions, strategy: str, *, diagnose: bool = True, solve: bool = True
) -> RescaleResult:
    """Solve (``solve=False``: the caller knows it is infeasible, only diagnose) and, when nothing fits and
    ``diagnose``, name the shortfalls on ``space``'s own hosts."""
    mode = options.objective or space.inventory.policy.objective
    ref = reference_problem(space)
    try:
        domain_x, domain_z, choices = restricted_domains(space, ref)
    except Infeasible as exc:
        return RescaleResult(
            PlanResult(strategy, "infeasible", None, None, reason=str(exc), objective_mode=mode), None, None
        )
    stages: list[Stage] = []
    solved = False
    if solve:
        m = new_model(space, ref, choices, domain_x, domain_z)
        constraints.add_all(m)
        stages, solved = _stages(m, mode, options)
    if not solve or stages[0].info.status == "infeasible":
        if not diagnose:
            return RescaleResult(
                PlanResult(
                    strategy, "infeasible", None, None, stages=tuple(stages), reason="no plan fits", objective_mode=mode
                ),
                None,
                None,
            )
        shortages, reason = _diagnose(space, ref, choices, domain_x, domain_z, options)
        plan = PlanResult(
            strategy,
            "infeasible",
            None,
            None,
            stages=tuple(stages),
            shortages=shortages,
            reason=reason,
            objective_mode=mode,
        )
        return RescaleResult(plan, None, None)
    first = stages[0].info
    if not solved:
        raise PlacementError(
            f"solver {first.solver} found no plan within the time limit ({first.status}); raise --time-limit"
        )
    parallelism = realize.chosen_parallelism(m)
    assignment = realize.assignment(m, parallelism)
    problem = space.problem_at(parallelism)
    cost = evaluate(problem, assignment)
    broken = list(cost.violations) + space.violations(parallelism)
    if broken:
        raise PlacementError(f"internal error: the rescale plan breaks a rule the model should enforce: {broken[0]}")
    notes = []
    unfinished = [st.name for st in stages if st.info.objective is None]
    if unfinished:
        notes.append(
            f"stage {unfinished[0]} found no solution within the time limit; the plan optimises the earlier stages"
        )
    optimal = all(st.info.status == "optimal" for st in stages) and not unfinished
    status: Literal["optimal", "feasible"] = "optimal" if optimal else "feasible"
    plan = PlanResult(strategy, status, assignment, cost, stages=tuple(stages), objective_mode=mode, notes=tuple(notes))
    return RescaleResult(plan, parallelism, problem)


def _diagnose(
    space: RescaleSpace,
    ref: PlacementProblem,
    choices: dict[str, tuple[int, ...]],
    domain_x: Domain,
    domain_z: dict[tuple[str, int], list[str]],
    options: SolverOptions,
) -> tuple[tuple[Shortage, ...], str]:
    """Elastic re-solve: every capacity may stretch; the smallest relative stretch names what is short."""
    m = new_model(space, ref, choices, domain_x, domain_z, elastic=True)
    constraints.add_all(m)
    shortages, reason = least_stretch(
        ref, m.lp, m.slack, m.slack_scale, options, "no plan fits at any allowed parallelism"
    )
    threads = _fixed_threads(space, ref, shortages)
    if threads:  # the cause first: a subtask that keeps its parallelism and cannot keep up where its input is
        return threads + shortages, "; ".join(s.message for s in threads + shortages)
    return shortages, reason


def _fixed_threads(space: RescaleSpace, ref: PlacementProblem, shortages: tuple[Shortage, ...]) -> tuple[Shortage, ...]:
    """The threads of subtasks whose parallelism is fixed that cannot keep up on an edge host behind the shortfalls
    (:func:`placement.solver.causes.thread_causes`); a rescalable vertex is left out — a higher parallelism is its
    remedy, and the model has tried every one allowed."""
    rules = rule_domain(ref)
    if rules is None:
        return ()
    fixed = {s.label for s in ref.subtasks if space.group_of[s.vertex_id].per_subtask}
    return tuple(s for s in thread_causes(ref, rules, shortages) if s.detail in fixed)
