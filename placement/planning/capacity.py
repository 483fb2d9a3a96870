"""``--max-rate`` and the what-if options (``--add-host``, ``--link``) of a plan: the planning side of
:mod:`placement.solver.capacity` and :mod:`placement.inventory.whatif` (what is asked of them and what their answer
says; the option checks are the request's, :mod:`placement.planning.request`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from placement.costmodel.model import PlacementProblem, PlanOptions, RunningUse, build_problem
from placement.costmodel.running import with_running
from placement.errors import Infeasible
from placement.inventory import Inventory
from placement.inventory.whatif import apply_whatif, parse_add_host, parse_link
from placement.profile.format import JobProfile
from placement.solver.capacity import Capacity, binding_constraints, max_scale
from placement.solver.methods import Method, solve_with
from placement.solver.result import PlanResult, SolverOptions
from placement.units import figures_apart


def whatif(
    inv: Inventory, profiles: Sequence[JobProfile], add_host: Sequence[str], link: Sequence[str]
) -> tuple[Inventory, list[str]]:
    """The inventory with ``--add-host``/``--link`` applied; added Pis take over births of the jobs' sources."""
    adds = [parse_add_host(text) for text in add_host]
    links = [parse_link(text) for text in link]
    sources = {key: v.parallelism for p in profiles for v in p.sources() for key in (v.name, v.id)}
    return apply_whatif(inv, adds, links, sources)


# --max-rate scales the profiled rates, and a subtask's CPU with them on the line the profile measured: in proportion
# where it saw one rate, fixed part + per-record part where it saw several (profile.tm_cpu). Beyond the rates it saw a
# line is a guess: a wake-up, a network buffer, a flush serve more records as the rate rises. In the lab an answer
# 8.7x beyond a one-rate profile predicted 0.68 of a Pi's core where 0.25 was used; two-rate lines answered 12,613/s
# 2.3x beyond their fastest run and 15,045/s 2.0x beyond it where the Pi then held 17,659 and 18,054 at 0.90-0.92 of
# its core (a fifth to a third low), one over 5,500-11,000/s answered 21,675, 1.96x beyond, at the knee of the
# measured curve: how far a line carries depends on where the curve still bends. More than this factor beyond the
# rates measured, either way, an answer bound by CPU carries a caution, as a forecast outside its data should.
FAR_FROM_PROFILE = 1.5


def measured_scales(profile: JobProfile) -> tuple[float, float]:
    """The slowest and fastest source rates the profile measured CPU at, as scales of its rates: (1, 1) but where
    a TaskManager's CPU was fitted over runs at several rates."""
    rate = sum(v.records_out_per_s for v in profile.sources())
    fits = [t.rate_fit for t in profile.taskmanagers if t.rate_fit is not None]
    if not fits or rate <= 0:
        return 1.0, 1.0
    return min(1.0, min(f.rate_low for f in fits) / rate), max(1.0, max(f.rate_high for f in fits) / rate)


def extrapolation_caution(
    scale: float, binding_kind: str | None, measured: tuple[float, float] = (1.0, 1.0)
) -> str | None:
    """What ``--max-rate`` adds to an answer ``scale``× the profiled rates bound by ``binding_kind``, or None;
    ``measured``: the scales CPU was measured at (:func:`measured_scales`)."""
    low, high = measured
    if binding_kind not in ("cpu", "thread") or low / FAR_FROM_PROFILE <= scale <= high * FAR_FROM_PROFILE:
        return None
    direction = (
        "falls as the rate rises: the answer is likely low"
        if scale > high
        else "rises as the rate falls: the answer is likely high"
    )
    seen = "the profiled rate" if low == high else f"{low:.3g}-{high:.3g}× the profiled rates"
    return (
        f"{scale:.3g}× is far from the rates CPU was measured at and CPU binds: a subtask's CPU per record was "
        f"measured at {seen} and {direction} — profile the job nearer that rate (e.g. on this plan at half of "
        "it, and at a second rate) and ask again"
    )


@dataclass(frozen=True)
class MaxRate:
    capacity: Capacity
    problem: PlacementProblem | None  # the problem at the scale found (None: unbounded or nothing fits)
    result: PlanResult | None
    measured: tuple[float, float] = (1.0, 1.0)  # the scales CPU was measured at (measured_scales)

    @property
    def line(self) -> str:
        c = self.capacity
        if c.status == "unbounded":
            return f"max rate: unbounded — {c.note}"
        if c.status == "infeasible":
            return f"max rate: none — {c.note}"
        assert c.scale is not None and c.upper is not None
        scale, upper = figures_apart(c.scale, c.upper, 4, "g")
        text = (
            f"max rate: {scale}× the profiled source rates (the plan below; {upper}× does not fit; "
            f"{c.method}, {c.oracle_calls} feasibility solves)"
        )
        if c.binding:
            text += f"\nbeyond {scale}× the first to run out: {c.binding[0].message}"
            if len(c.binding) > 1:
                text += f" (and {len(c.binding) - 1} more: {'; '.join(s.message for s in c.binding[1:3])})"
        if c.note:
            text += f"\nnote: {c.note}"
        if self.caution:
            text += f"\ncaution: {self.caution}"
        return text

    @property
    def caution(self) -> str | None:
        c = self.capacity
        if c.status != "bounded" or c.scale is None:
            return None
        return extrapolation_caution(c.scale, c.binding[0].kind if c.binding else None, self.measured)

    def json(self) -> dict:
        c = self.capacity
        return {
            "status": c.status,
            "scale": c.scale,
            "upper": c.upper,
            "method": c.method,
            "oracle_calls": c.oracle_calls,
            "note": c.note or None,
            "caution": self.caution,
            "binding": [
                {
                    "kind": s.kind,
                    "resource": s.resource,
                    "needed": s.needed,
                    "usable": s.usable,
                    "capacity": s.capacity,
                    "message": s.message,
                    "subtask": s.detail if s.kind == "thread" else None,
                }
                for s in c.binding
            ],
        }


def plan_max_rate(
    inv: Inventory,
    profile: JobProfile,
    *,
    placement_mode: str,
    inventory_source: str,
    options: SolverOptions,
    method: Method,
    running: Mapping[str, Sequence[RunningUse]] | None = None,
    other_jobs: frozenset[str] = frozenset(),
) -> MaxRate:
    """The highest uniform scale of the source rates, what binds just above it, and the optimal plan at it
    (``running``: jobs that keep running, fixed load — what is left for this job)."""

    def build(scale: float) -> PlacementProblem:
        return with_running(
            build_problem(
                inv,
                profile,
                PlanOptions(rate_scale=scale, placement_mode=placement_mode),
                inventory_source=inventory_source,
                other_jobs=other_jobs,
            ),
            running or {},
        )

    return max_rate_of(build, options=options, method=method, measured=measured_scales(profile))


def max_rate_of(
    build: Callable[[float], PlacementProblem],
    *,
    options: SolverOptions,
    method: Method,
    measured: tuple[float, float] = (1.0, 1.0),
) -> MaxRate:
    """:func:`plan_max_rate` of any problem built at a scale (several jobs scaled together, jobs already running as
    fixed load: only what ``build`` scales grows); ``measured``: the scales CPU was measured at."""
    capacity = max_scale(build, options)
    if capacity.status == "infeasible":
        raise Infeasible(f"no placement fits at any rate: {capacity.note}; plan at --rate-scale 1 for the shortfalls")
    if capacity.status != "bounded" or capacity.scale is None:
        return MaxRate(capacity, None, None, measured)
    from dataclasses import replace

    scale = capacity.scale
    capacity = replace(capacity, binding=binding_constraints(build, scale, options))
    problem = build(scale)
    return MaxRate(capacity, problem, solve_with(problem, options, method), measured)
