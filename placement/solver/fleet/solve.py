"""Solving a fleet: build the column form (or the compact one), run the stages, pack each pool onto its servers."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import replace
from typing import Literal

from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import PlacementProblem, Subtask, SubtaskKey
from placement.errors import Infeasible, PlacementError
from placement.solver.backends import SolveInfo
from placement.solver.fleet.columns import NoPlan, column_form
from placement.solver.fleet.common import pool_name
from placement.solver.fleet.compact import compact_form, infeasible_result
from placement.solver.fleet.plans import TooMany
from placement.solver.fleet.stages import relative_gap, run_stages
from placement.solver.homes import homes
from placement.solver.ilp import solve
from placement.solver.packing import pack
from placement.solver.result import PlanResult, SolverOptions, Stage
from placement.solver.server_pools import Pool, server_classes

MAX_REPACKS = 3
EXACT_FALLBACK_SUBTASKS = 5_000  # a pooled plan that does not pack: up to this size the exact model takes over


def solve_decomposed(problem: PlacementProblem, options: SolverOptions = SolverOptions()) -> PlanResult:
    """The plan of the Pi-local model over server pools, packed onto the servers (see the module doc)."""
    mode = options.objective or problem.policy.objective
    if problem.whole_vertices:
        raise PlacementError(
            "the decomposition does not cover vanilla placement mode (whole operators per host): use --method exact"
        )
    started = time.monotonic()
    deadline = None if options.time_limit is None else started + options.time_limit
    try:
        hm = homes(problem)
    except Infeasible as exc:  # a rule, or a thread that keeps up nowhere it may run
        if len(problem.subtasks) <= EXACT_FALLBACK_SUBTASKS:
            # small enough for the exact model's slack re-solve, whose table (threads beside hosts and links) is a
            # set whose relief gives a plan; the sentence alone names one subtask, maybe not all that is short
            return solve(problem, options)
        return PlanResult("ilp", "infeasible", None, None, reason=str(exc), objective_mode=mode)
    pools = server_classes(problem)
    shrink: dict[int, float] = {}
    first_bounds: list[Stage] | None = None
    notes: list[str] = []
    for attempt in range(MAX_REPACKS + 1):
        t0 = time.perf_counter()
        try:
            built = column_form(problem, hm, pools, shrink, mode)
        except (TooMany, NoPlan):  # a Pi the column form does not cover, or one without a plan: the compact form
            built = compact_form(problem, hm, pools, shrink, mode)
        t1 = time.perf_counter()
        stages, values = run_stages(built, problem.policy.lexicographic_tolerance, options, deadline)
        t2 = time.perf_counter()
        if first_bounds is None:
            first_bounds = stages
        if stages and stages[0].info.status == "infeasible":
            if attempt == 0:
                result = infeasible_result(problem, hm, pools, options, stages, mode)
                one_flow = _one_flow_note(problem)
                if one_flow:
                    result = replace(result, reason="; ".join(r for r in (result.reason, one_flow) if r))
                return result
            break
        if values is None:
            raise PlacementError(
                f"HiGHS found no placement within the time limit ({stages[0].info.status}); raise --time-limit"
            )
        pooled = built.decode(values)
        assignment, failed = _unpack(problem, pooled, pools, deadline)
        if assignment is not None:
            notes.append(
                f"decomposed ({built.form} form{built.detail}; {_count(len(pools), 'server pool')}; "
                f"model {t1 - t0:.1f} s, stages {t2 - t1:.1f} s, packing {time.perf_counter() - t2:.1f} s)"
            )
            return _result(problem, assignment, stages, first_bounds, mode, notes, attempt)
        if len(problem.subtasks) <= EXACT_FALLBACK_SUBTASKS:  # small enough for the reference: it settles it
            result = solve(problem, options)
            note = "the pooled plan did not pack onto the servers: solved by the exact model"
            return replace(result, notes=(*result.notes, note))
        for k, short in failed.items():  # tighten the pools that did not pack by what was left over, and retry
            shrink[k] = shrink.get(k, 1.0) * (1.0 - max(short, 0.005))
        notes.append(
            f"the pooled plan did not pack onto the servers of {', '.join(pool_name(pools[k]) for k in failed)};"
            " re-solved with those pools tightened"
        )
    raise PlacementError(
        f"the decomposition's plans did not pack onto the servers after {MAX_REPACKS} tightenings: use --method exact"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _unpack(
    problem: PlacementProblem,
    pooled: dict[SubtaskKey, str],
    pools: list[Pool],
    deadline: float | None,
) -> tuple[dict[SubtaskKey, str] | None, dict[int, float]]:
    """Pack each pool onto its servers; (assignment, {}) or (None, {pool: share of its load left over})."""
    names = {pool_name(p): k for k, p in enumerate(pools)}
    by_pool: dict[int, list[Subtask]] = defaultdict(list)
    out: dict[SubtaskKey, str] = {}
    for s in problem.subtasks:
        k = names.get(pooled[s.key])
        if k is None:
            out[s.key] = pooled[s.key]
        else:
            by_pool[k].append(s)
    failed: dict[int, float] = {}
    for k, items in by_pool.items():
        left = None if deadline is None else max(5.0, deadline - time.monotonic())
        packed = pack(problem, items, pools[k].members, time_limit=left)
        if packed is None:
            failed[k] = 0.01
        else:
            out.update(packed)
    return (out, {}) if not failed else (None, failed)


def _result(
    problem: PlacementProblem,
    assignment: dict[SubtaskKey, str],
    stages: list[Stage],
    first: list[Stage],
    mode: str,
    notes: list[str],
    attempt: int,
) -> PlanResult:
    cost = evaluate(problem, assignment)
    if not cost.feasible:
        raise PlacementError(f"internal error: the decomposition's plan breaks a rule: {cost.violations[0]}")
    if attempt:  # the bound of the untightened model is the valid one; the gap is measured against it
        stages = [Stage(st.name, _rebound(st.info, fb.info, n == 0)) for n, (st, fb) in enumerate(zip(stages, first))]
    one_flow = _one_flow_note(problem)
    if one_flow:  # its rows count one TCP flow for such an uplink, not one per server: its bounds hold for that only
        stages = [Stage(st.name, _rebound(st.info, st.info, False)) for st in stages]
        notes.append(one_flow)
    status: Literal["optimal", "feasible"] = (
        "optimal" if stages and all(st.info.status == "optimal" for st in stages) else "feasible"
    )
    unfinished = [st.name for st in stages if st.info.objective is None]
    if unfinished:
        notes.append(
            f"stage {unfinished[0]} found no solution within the time limit; the plan optimises the earlier stages"
        )
        status = "feasible"
    return PlanResult("ilp", status, assignment, cost, stages=tuple(stages), objective_mode=mode, notes=tuple(notes))


def _one_flow_note(problem: PlacementProblem) -> str:
    """What the decomposition leaves out where one TCP flow per TaskManager pair binds ("" where none does): its Pi
    plans and pool rows count one flow for the whole uplink (placement.solver.families.uplink_one_flow)."""
    hosts = [h.name for h in problem.edges if problem.pair_bound(h)]
    if not hosts:
        return ""
    more = " and more" if len(hosts) > 3 else ""
    return (
        f"the decomposition counts one TCP flow for the whole uplink of {', '.join(hosts[:3])}{more}; --method exact "
        "may spread their load over servers, a flow each"
    )


def _rebound(info: SolveInfo, first: SolveInfo, valid: bool) -> SolveInfo:
    """A stage of a re-solve with tightened pools: its own bound holds for the tightened model only. The first
    stage's bound of the first attempt holds for the real problem (``valid``); a later stage's, which depends on the
    earlier stages' objectives, is not known — reported as none."""
    if info.objective is None:
        return info
    if not valid or first.bound is None:
        return replace(info, bound=None, gap=None, status="feasible")
    gap = relative_gap(info.objective, first.bound)
    return replace(info, bound=first.bound, gap=gap, status="optimal" if gap <= 1e-9 else "feasible")
