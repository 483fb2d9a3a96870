"""The plan itself, for one job or several: load → what-if → running load → build → solve → contingencies.

One pipeline for any number of jobs: one job is a fleet of one (:mod:`placement.planning.fleet`). What only one job
can have (``--rescale``, its baselines all-on-server and greedy) or only several (the jobs' budgets, planning them
one by one) is told apart by the number of jobs where it arises, not by a second path through the stages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from placement.costmodel.credit import credit_needs, credit_notes
from placement.costmodel.jobs import JointProblem, check_rate_scale, dir_names, job_policies, unique_names
from placement.costmodel.model import JobPolicy, PlacementProblem, flink_network
from placement.errors import Infeasible
from placement.inventory import Inventory, load_inventory
from placement.planning import capacity, contingency, fleet
from placement.planning.cluster import running_load
from placement.planning.notes import alone_policy_notes, input_warnings, report_warnings
from placement.planning.outcome import PlanOutcome
from placement.planning.request import PlanRequest
from placement.planning.running import RunningPlans
from placement.profile.format import JobProfile, load_profile
from placement.solver.methods import Method, solve_with
from placement.solver.result import PlanResult, SolverOptions
from placement.writers.plandir import check_writable

if TYPE_CHECKING:  # --rescale's and --compare's planners are imported when asked for: a plain plan starts faster
    from placement.planning.forecasting import Forecasted
    from placement.planning.rescale import RescalePlan
    from placement.solver.one_by_one import OneByOne


def plan(request: PlanRequest) -> PlanOutcome:
    """Plan ``request``: bad input (options, files, ``--strict`` warnings) is :class:`BadInput`, a ``--max-rate``
    or ``--require-contingency`` that nothing fits :class:`Infeasible`; a plain plan that does not fit is an outcome
    (its result infeasible, with its shortfalls). Nothing is written (:func:`placement.planning.write_outcome`)."""
    request.validate()
    inv = load_inventory(request.inventory)
    profiles = tuple(load_profile(p) for p in request.profiles)
    if request.out_dir is not None:  # before solving: an unwritable --out is bad input, not a failure after the work
        check_writable(Path(request.out_dir))
    inv, what_if = capacity.whatif(inv, profiles, request.add_host, request.link)
    names = unique_names([p.job.name for p in profiles])
    forecasted = None
    if request.forecast is not None:  # each job's scale from its sources' forecast, as --rate-scale would give it
        from placement.planning import forecasting  # statsmodels and the history's reader: --forecast's alone

        forecasted = forecasting.forecast_sources(
            request.forecast, request.horizon_s, request.forecast_level, profiles, names, season_s=request.season_s
        )
        request = (
            replace(request, job_rate_scales=forecasted.job_scales)
            if len(names) > 1
            else replace(request, rate_scale=forecasted.job_scales[names[0]])
        )
    request.check_job_scales(names)
    notes = alone_policy_notes(inv, names[0]) if len(names) == 1 else []  # said with the plan, beside the what-if's
    runs = running_load(request.running, request.cluster, inv, names, request.inventory)  # fixed load
    options = SolverOptions(
        solver=request.solver,
        time_limit=request.time_limit,
        gap=request.gap,
        objective=request.objective,
        verbose=request.verbose,
    )
    method = request.method
    placement_mode = request.mode or inv.flink.placement_mode  # vanilla keeps operators after the source chain whole
    policies = job_policies(inv, list(zip(names, (p.job.name for p in profiles)))) if len(names) > 1 else {}
    if not request.max_rate:
        check_rate_scale(policies, request.rate_scale, request.job_rate_scales)

    def make(job_scales: dict[str, float]) -> fleet.Builder:
        return fleet.builder(
            inv,
            profiles,
            names,
            runs,
            placement_mode=placement_mode,
            inventory_source=request.inventory,
            policies=policies,
            job_scales=job_scales,
        )

    build = make(dict(request.job_rate_scales))
    # the problem at the asked scale, built before any solve: its pins' warnings come before the work (--strict)
    joint = build(request.rate_scale)
    warnings = _warnings(request, inv, profiles, names, runs, joint)
    report_warnings(warnings, strict=request.strict, say=request.say_warning)
    request.check_latency_bounds(joint.problem)

    rescaled = capped = None
    if request.rescale:
        from placement.planning import rescale

        rescaled = rescale.plan_rescaled(
            inv,
            profiles[0],
            inventory_source=request.inventory,
            rate_scale=request.rate_scale,
            target_rate=request.target_rate,
            options=options,
            compare=request.compare,
            placement_mode=placement_mode,
        )
        joint, result = fleet.alone(names[0], rescaled.problem), rescaled.joint.plan
    else:
        if request.max_rate:  # every job's rates scaled together; running jobs stay as they are
            capped = _max_rate(build, options, method, policies, profiles)
            if capped.problem is not None:
                joint = build(capped.capacity.scale)  # type: ignore[arg-type]
                what_if = [*what_if, *fleet.held_at_minimum(joint)]
        result = (
            capped.result
            if capped is not None and capped.result is not None
            else solve_with(joint.problem, options, method)
        )
    contingencies = (
        contingency.plan_for(joint.problem, result, options, method, placement_mode)
        if request.contingency != "off"
        else ()
    )
    contingency.require(contingencies, request.contingency == "required")
    if result.assignment is not None:  # a channel above its credit at the plan's placement: the setting that lifts it
        network = flink_network(inv)
        notes = [*notes, *credit_notes(credit_needs(joint.problem, result.assignment, network), network)]
    parts = fleet.per_job(joint, result)
    if forecasted is not None:
        forecasted = _in_effect(forecasted, request, names, make, options, method)
    return PlanOutcome(
        request=request,
        inventory=inv,
        profiles=profiles,
        names=tuple(names),
        dirs=dict(zip(names, dir_names(names))),
        placement_mode=placement_mode,
        running=runs,
        joint=joint,
        result=result,
        parts=parts,
        budgets=fleet.budgets(joint, parts),
        contingencies=contingencies,
        what_if=what_if,
        notes=notes,
        warnings=warnings,
        rescaled=rescaled,
        capped=capped,
        forecast=forecasted,
        baselines=_baselines(request, joint, rescaled),
        one_by_one=_one_by_one(request, joint, options, method),
    )


def _in_effect(
    forecasted: Forecasted,
    request: PlanRequest,
    names: Sequence[str],
    make: Callable[[dict[str, float]], fleet.Builder],
    options: SolverOptions,
    method: Method,
) -> Forecasted:
    """The forecast with when the plan in effect breaks (``make``: the fleet's builder at each job's own scale)."""
    from placement.planning import forecasting

    def at(scales: Mapping[str, float]) -> PlacementProblem:
        if len(names) == 1:
            return make({})(scales[names[0]]).problem
        return make(dict(scales))(1.0).problem

    breaks = forecasting.predict_breaks(forecasted, names, at, request.current, options, method)
    return replace(forecasted, breaks=breaks)


def _warnings(
    request: PlanRequest,
    inv: Inventory,
    profiles: Sequence[JobProfile],
    names: Sequence[str],
    runs: RunningPlans,
    joint: JointProblem,
) -> list[str]:
    """The input warnings, each once: the files' and options', a job planned twice, the running jobs', the pins'."""
    # the inventory's job block is one job's submission: a job with neither it nor a jobs: entry would be
    # resubmitted (redeploy.sh, apply) as that job — said for every job
    mine = [w for p in profiles for w in input_warnings(inv, p, request.inventory, request.link)]
    mine += [
        f"--profile {path}: job {p.job.name!r} is planned more than once (this copy as {name!r}): each copy's "
        "plan.json names the same Flink job, so apply can run only one of them"
        for path, p, name in zip(request.profiles, profiles, names)
        if name != p.job.name
    ]
    return [*dict.fromkeys(mine), *runs.warnings, *(f"{request.inventory}: {w}" for w in joint.problem.input_warnings)]


def _max_rate(
    build: fleet.Builder,
    options: SolverOptions,
    method: Method,
    policies: dict[str, JobPolicy],
    profiles: Sequence[JobProfile],
) -> capacity.MaxRate:
    """``--max-rate`` over the jobs scaled together, each held at its ``min_rate_scale`` at least; when even the
    minima do not fit, the error names them. One job's answer knows the rates its CPU was measured at."""
    minima = ", ".join(f"{name} {p.min_rate_scale:g}" for name, p in policies.items() if p.min_rate_scale is not None)
    measured = capacity.measured_scales(profiles[0]) if len(profiles) == 1 else (1.0, 1.0)
    try:
        return capacity.max_rate_of(lambda x: build(x).problem, options=options, method=method, measured=measured)
    except Infeasible as exc:
        if not minima:
            raise
        raise Infeasible(f"{exc} (with the jobs' budget.min_rate_scale held: {minima})") from exc


def _baselines(request: PlanRequest, joint: JointProblem, rescaled: RescalePlan | None) -> tuple[PlanResult, ...]:
    """``--compare`` of one job: all-on-server and greedy beside the plan (with ``--rescale``: its own baselines)."""
    if rescaled is not None:
        return tuple(b.plan for b in rescaled.baselines)
    if not request.compare or request.several:
        return ()
    from placement.solver.baselines import all_on_server, greedy

    return all_on_server(joint.problem), greedy(joint.problem)


def _one_by_one(
    request: PlanRequest, joint: JointProblem, options: SolverOptions, method: Method
) -> tuple[OneByOne, ...]:
    """``--compare`` of several jobs: the joint plan beside planning them one by one."""
    if not request.compare or not request.several:
        return ()
    from placement.solver.one_by_one import all_jobs_on_server, each_alone, in_sequence

    return in_sequence(joint, options, method), each_alone(joint, options, method), all_jobs_on_server(joint)
