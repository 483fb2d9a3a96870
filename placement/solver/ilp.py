"""Solving the placement ILP: build the model from the constraint families, optimise the objective stages, read back.

The assignment the solver returns is re-checked by :func:`placement.costmodel.evaluate` — an independent computation
of the same rules — so a modelling bug cannot silently produce a plan that breaks a link or a host.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Literal

import pulp

from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import PlacementProblem, SubtaskKey
from placement.errors import BadInput, Infeasible, PlacementError
from placement.solver import backends, constraints, objectives
from placement.solver.domains import filtered_domain, restricted_domain, rule_domain
from placement.solver.model import IlpModel, new_model
from placement.solver.result import PlanResult, SolverOptions, Stage
from placement.solver.server_pools import pooled_problem, server_pools, unpool


def _assignment(m: IlpModel) -> dict[SubtaskKey, str]:
    out = {}
    for s in m.problem.subtasks:
        values = [(m.x[(s.key, h)].value() or 0.0, h) for h in m.domain[s.key]]
        out[s.key] = max(values)[1]
    return out


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(1.0, deadline - time.monotonic())


def solve(problem: PlacementProblem, options: SolverOptions = SolverOptions()) -> PlanResult:
    """Optimal placement of ``problem`` (see :mod:`placement.solver.objectives` for the objective).

    Servers the rules cannot tell apart are first solved as one pool each (:mod:`placement.solver.server_pools`);
    the full model is solved only when the pool's plan cannot be packed onto them, or when the pooled model is
    infeasible.
    """
    pools = server_pools(problem)
    if pools:
        start = time.monotonic()
        result = _solve(pooled_problem(problem, pools), options)
        if result.assignment is not None:
            left = None if options.time_limit is None else max(1.0, options.time_limit - (time.monotonic() - start))
            assignment = unpool(problem, result.assignment, pools, time_limit=left)
            if assignment is not None:
                cost = evaluate(problem, assignment)
                if cost.feasible:
                    note = f"servers solved as pools: {', '.join(p.name for p in pools)}"
                    return replace(result, assignment=assignment, cost=cost, notes=(*result.notes, note))
    return _solve(problem, options)


def check_weighted(problem: PlacementProblem) -> None:
    """Job priorities order the lexicographic stages; a weighted sum has no order to put one job's WAN first in (a
    scaled weight would trade a job's Mbit/s against another's at a rate nobody chose), so they are refused there."""
    ranked = sorted(job for job, p in problem.job_policies.items() if p.priority is not None)
    if problem.priority_classes and ranked:
        raise BadInput(
            f"jobs[].priority (set for {', '.join(ranked)}) orders the lexicographic objective: use "
            "policy.objective lexicographic (or --objective lexicographic), or drop the priorities",
            field="--objective",
        )


def _solve(problem: PlacementProblem, options: SolverOptions) -> PlanResult:
    mode = options.objective or problem.policy.objective
    try:
        domain = restricted_domain(problem)
    except Infeasible as exc:  # a rule, or a thread that keeps up nowhere it may run (then named as what is short)
        return _emptied(problem, exc, options, mode)
    m = new_model(problem, domain)
    constraints.add_all(m)
    deadline = None if options.time_limit is None else time.monotonic() + options.time_limit

    def run() -> backends.SolveInfo:
        return backends.run(
            m.lp,
            options.solver,
            time_limit=_remaining(deadline),
            gap=options.gap,
            threads=options.threads,
            verbose=options.verbose,
        )

    stages: list[Stage] = []
    notes: list[str] = []
    assignment: dict[SubtaskKey, str] | None = None
    if mode == "weighted":
        check_weighted(problem)
        w = problem.policy.weights
        wan, cpu = objectives.total_wan_mbit(m), objectives.server_cores(m)
        m.lp.setObjective(w.wan * wan + w.server_cpu * cpu + w.latency * objectives.latency_ms(m))
        stages.append(Stage("weighted", run()))
        if stages[0].info.objective is not None:
            assignment = _assignment(m)
    else:
        tol = problem.policy.lexicographic_tolerance
        for name, expr in objectives.stages(m):
            expr = expr() if callable(expr) else expr
            m.lp.setObjective(expr if isinstance(expr, pulp.LpAffineExpression) else pulp.lpSum(expr))
            info = run()
            stages.append(Stage(name, info))
            if info.objective is None:
                break
            # Each stage's solution satisfies every earlier stage's bound: the latest one is the plan so far.
            assignment = _assignment(m)
            m.lp += expr <= backends.carried_optimum(info.objective, backends.rounded_value(expr), tol), f"keep_{name}"
    first = stages[0].info
    if first.status == "infeasible":
        from placement.solver.causes import structural_causes  # what is short, asked of an infeasible model only
        from placement.solver.elastic import diagnose

        shortages, reason = diagnose(problem, domain, options)
        causes = structural_causes(problem, domain, shortages)
        return PlanResult(
            "ilp",
            "infeasible",
            None,
            None,
            stages=tuple(stages),
            shortages=shortages,
            causes=causes,
            reason="; ".join((reason, *causes)),
            objective_mode=mode,
        )
    if assignment is None:
        raise PlacementError(
            f"solver {first.solver} found no placement within the time limit ({first.status}); raise --time-limit"
        )
    unfinished = [st.name for st in stages if st.info.objective is None]
    if unfinished:  # time ran out in a later stage: keep the earlier stages' plan and say so
        notes.append(
            f"stage {unfinished[0]} found no solution within the time limit; the plan optimises the earlier stages"
        )
    cost = evaluate(problem, assignment)
    if not cost.feasible:
        raise PlacementError(
            f"internal error: the solver's plan breaks a rule the model should enforce: {cost.violations[0]}"
        )
    status: Literal["optimal", "feasible"] = (
        "optimal" if all(st.info.status == "optimal" for st in stages) else "feasible"
    )
    return PlanResult("ilp", status, assignment, cost, stages=tuple(stages), objective_mode=mode, notes=tuple(notes))


def _emptied(problem: PlacementProblem, exc: Infeasible, options: SolverOptions, mode: str) -> PlanResult:
    """The domain families left a subtask no host. When the rules alone leave every subtask one (:func:`rule_domain`),
    the thread limit is why — directly (a thread that keeps up nowhere it may run) or through a rule it feeds (a
    pinned operator whose sender's thread cannot follow it onto its Pi) — and what is short is found as for any
    infeasible model: the slack re-solve over the rules' domain, every thread row beside the hosts' and links' rows
    (:func:`placement.solver.elastic.diagnose`), so the table lists a set whose relief gives a plan, threads first.
    Naming only the subtask whose domain emptied was not enough: another thread, or a host's CPU, may be short too.
    When the rules alone contradict each other no capacity is involved: the rule is the reason, with no shortage."""
    from placement.solver.causes import structural_causes
    from placement.solver.elastic import diagnose

    rules = rule_domain(problem)
    if rules is None:
        return PlanResult("ilp", "infeasible", None, None, reason=str(exc), objective_mode=mode)
    shortages, reason = diagnose(problem, rules, options)
    if not shortages:  # the elastic model found no explanation: say what the domain families did
        return PlanResult("ilp", "infeasible", None, None, reason=f"{exc}; {reason}", objective_mode=mode)
    causes = structural_causes(problem, filtered_domain(problem), shortages)
    # the thread family's own sentence ("…, nor on any other host it may run on") leads when it names the cause;
    # a later family's ("can run on no host once 'no data flows down…' applies") blames a rule the shortfalls explain
    lead = (str(exc),) if any(str(exc).startswith(s.message) for s in shortages) else ()
    rest = tuple(s.message for s in shortages if not (lead and lead[0].startswith(s.message)))
    return PlanResult(
        "ilp",
        "infeasible",
        None,
        None,
        shortages=shortages,
        causes=causes,
        reason="; ".join((*lead, *rest, *causes)),
        objective_mode=mode,
    )
