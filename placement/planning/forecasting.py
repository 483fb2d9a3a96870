"""``plan --forecast HISTORY --horizon 2h``: plan for the peak of the sources' forecast rates, and say when the plan
in effect is predicted to break.

Each source's rate over the history (:mod:`placement.collect.sources`) is forecast over the horizon
(:mod:`placement.forecast`); a job's rate scale — what ``--rate-scale`` would say — is the highest upper bound of
the interval within the horizon over the profile's rate of that source, the largest over the job's sources: the cost
model scales a job's rates together, so its busiest source decides. A source without a forecast (too little history,
no fit) keeps the profiled rate, and the plan says why.

The plan in effect — ``--current PLAN_DIR``, else the plan the same options make at the profiled rates — is held
at its placement: its headroom is the highest uniform scale at which it still fits
(:func:`placement.solver.capacity.placement_headroom`, the evaluator as oracle), and it breaks at the first step
ahead where the forecast's upper bounds no longer fit it; what runs out is the evaluator's first violation there.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from placement.clock import SYSTEM_CLOCK, Clock
from placement.costmodel.evaluate import evaluate
from placement.costmodel.model import Assignment, PlacementProblem
from placement.errors import BadInput, PlacementError
from placement.forecast import Forecast, forecast
from placement.profile.format import JobProfile
from placement.solver.capacity import Capacity, placement_headroom
from placement.solver.methods import Method, solve_with
from placement.solver.result import SolverOptions

TODAY = "the plan at the profiled rates"


@dataclass(frozen=True)
class SourceForecast:
    job: str
    source: str
    profiled: float  # the profile's records/s of the source (all its subtasks)
    forecast: Forecast

    @property
    def scale(self) -> float | None:
        """The forecast's peak upper bound over the profiled rate (None: no forecast, or no profiled rate)."""
        return self.forecast.peak / self.profiled if self.forecast.ok and self.profiled > 0 else None

    def scale_at(self, t_ms: int) -> float | None:
        """The upper bound over the profiled rate in the step ahead that holds ``t_ms``."""
        f = self.forecast
        if self.scale is None:
            return None
        steps = [i for i, t in enumerate(f.times_ms) if t <= t_ms]
        return f.upper[steps[-1] if steps else 0] / self.profiled

    def json(self) -> dict:
        f = self.forecast
        out: dict = {
            "job": self.job,
            "source": self.source,
            "profiled": self.profiled,
            "latest": f.last,
            "forecast": f.ok,
            "reason": f.reason or None,
        }
        if f.ok:
            i = f.peak_at
            out |= {
                "peak": f.peak,
                "peak_at": _iso(f.peak_ms),
                "peak_in_s": (f.peak_ms - f.last_ms) / 1000,
                "interval": [f.lower[i], f.upper[i]],
                "mean": f.mean[i],
                "scale": self.scale,
                "period_s": f.period_s,
                "step_s": f.step_s,
            }
        if f.notes:
            out["notes"] = list(f.notes)
        return out


@dataclass(frozen=True)
class Breaks:
    """When the plan in effect is predicted to break within the horizon."""

    plan: str  # its directory, or TODAY
    headroom: Capacity | None  # the highest uniform scale it fits at (None: no plan fits at the profiled rates)
    at_ms: int | None = None  # the step ahead where it no longer fits (None: it holds over the horizon)
    after_ms: int = 0  # the history's end, from which "in N min" counts
    reason: str = ""  # what runs out there, or why there is no plan in effect

    @property
    def line(self) -> str:
        h = self.headroom
        if h is None:
            return f"plan in effect: none — {self.reason}"
        room = (
            f"fits up to {h.scale:.4g}× the profiled rates"
            if h.status == "bounded" and h.scale is not None
            else "fits at every rate"
            if h.status == "unbounded"
            else "does not fit even at the profiled rates"
        )
        if self.at_ms is None:
            return f"plan in effect ({self.plan}) {room}: it holds over the horizon"
        minutes = max(0, round((self.at_ms - self.after_ms) / 60_000))
        return (
            f"plan in effect ({self.plan}) {room}: predicted to break at about {_clock(self.at_ms)}, in {minutes} min"
            f" — {self.reason}"
        )

    def json(self) -> dict:
        h = self.headroom
        return {
            "plan": self.plan,
            "headroom": h.scale if h is not None and h.status == "bounded" else None,
            "headroom_status": h.status if h is not None else None,
            "breaks_at": _iso(self.at_ms) if self.at_ms is not None else None,
            "breaks_in_s": (self.at_ms - self.after_ms) / 1000 if self.at_ms is not None else None,
            "reason": self.reason or None,
        }


@dataclass(frozen=True)
class Forecasted:
    history: str
    horizon_s: float
    level: float
    sources: tuple[SourceForecast, ...]
    job_scales: dict[str, float]  # each job's planned scale (1 where no source of it has a forecast)
    notes: tuple[str, ...]
    breaks: Breaks | None = None
    season_s: float | None = None  # --season: the cycle given (None: a day or a week, searched for)

    @property
    def lines(self) -> list[str]:
        out = []
        for s in self.sources:
            f = s.forecast
            if f.ok:
                lower, upper = f.lower[f.peak_at], f.upper[f.peak_at]
                season = season_name(f.period_s)
                out.append(
                    f"forecast {s.job}/{s.source}: peak {upper:,.0f}/s at about {_clock(f.peak_ms)} "
                    f"({f.level:.0%} interval {lower:,.0f}-{upper:,.0f}, {season} season) = {s.scale:.4g}× "
                    f"the profiled {s.profiled:,.0f}/s"
                )
        for job, scale in self.job_scales.items():
            if any(s.job == job and s.scale is not None for s in self.sources):
                out.append(
                    f"planned for {scale:.4g}× the profiled rates of {job} (the forecast's peak within {_span(self)})"
                )
            else:
                out.append(f"planned at the profiled rates of {job}: no forecast of its sources")
        out += [f"note: {n}" for n in self.notes]
        if self.breaks is not None:
            out.append(self.breaks.line)
        return out

    def json(self) -> dict:
        return {
            "history": self.history,
            "horizon_s": self.horizon_s,
            "level": self.level,
            "season_s": self.season_s,
            "scales": self.job_scales,
            "sources": [s.json() for s in self.sources],
            "notes": list(self.notes),
            "plan_in_effect": self.breaks.json() if self.breaks is not None else None,
        }


def require_statsmodels() -> None:
    """The forecast extra's one library, asked for up front so a missing install is one line, not a traceback."""
    try:
        import statsmodels  # noqa: F401
    except ImportError:
        raise PlacementError(
            "--forecast needs statsmodels: pip install 'placement[forecast]' (or -c constraints.txt statsmodels)"
        ) from None


def read_rates(history: str) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """job name -> source vertex name -> its rate over ``history`` (a metrics directory); bad input names it."""
    from placement.collect.sources import source_rates

    if not Path(history).is_dir():
        raise BadInput(
            "no such metrics directory (one `placement metrics collect` wrote)"
            if not Path(history).exists()
            else "not a directory (a metrics directory `placement metrics collect` wrote)",
            source=history,
            field="--forecast",
        )
    return source_rates(history)


def forecast_sources(
    history: str,
    horizon_s: float,
    level: float,
    profiles: Sequence[JobProfile],
    names: Sequence[str],
    clock: Clock = SYSTEM_CLOCK,
    season_s: float | None = None,
) -> Forecasted:
    """Each planned job's sources forecast from ``history`` (``season_s``: the load's cycle, fitted as given); each
    job's scale from their peaks."""
    require_statsmodels()
    rates = read_rates(history)
    sources, scales, notes = source_forecasts(rates, history, horizon_s, level, profiles, names, season_s)
    if not sources:
        raise BadInput(
            f"no source of the planned jobs ({', '.join(p.job.name for p in profiles)}) has rates in the history "
            f"(its jobs: {', '.join(sorted(rates))})",
            source=history,
            field="job_name",
        )
    end = max(s.forecast.last_ms for s in sources)
    if clock.now() * 1000 - end > horizon_s * 1000:  # the horizon is counted from the history's end, not from now
        notes.append(
            f"{history} ends at {_iso(end)}, more than the horizon ago: the forecast is for the {_span_s(horizon_s)} "
            "after it — collect up to now for a forecast from now"
        )
    return Forecasted(history, horizon_s, level, tuple(sources), scales, tuple(notes), season_s=season_s)


def source_forecasts(
    rates: Mapping[str, Mapping[str, Sequence[tuple[int, float]]]],
    history: str,
    horizon_s: float,
    level: float,
    profiles: Sequence[JobProfile],
    names: Sequence[str],
    season_s: float | None = None,
) -> tuple[list[SourceForecast], dict[str, float], list[str]]:
    """Each job's sources forecast from ``rates`` (:func:`read_rates`, named ``history`` in the notes; ``season_s``:
    the load's cycle, fitted as given): the forecasts, each job's scale (:func:`peak_scales`) and what has none."""
    sources: list[SourceForecast] = []
    notes: list[str] = []
    for name, profile in zip(names, profiles):
        seen = rates.get(profile.job.name)
        if seen is None:
            notes.append(
                f"{history}: no source rates of job {profile.job.name!r} (the history has "
                f"{', '.join(sorted(rates))}): {name} planned at its profiled rates"
            )
            continue
        for v in profile.sources():
            points = seen.get(v.name)
            if points is None:
                notes.append(f"{history}: no rates of {name}'s source {v.name!r}: it keeps its profiled rate")
                continue
            s = SourceForecast(name, v.name, v.records_out_per_s, forecast(points, horizon_s, level, season_s))
            if not s.forecast.ok:
                notes.append(f"no forecast of {name}/{v.name}: {s.forecast.reason}; it keeps its profiled rate")
            sources.append(s)
    return sources, peak_scales(sources, names), notes


def peak_scales(sources: Sequence[SourceForecast], names: Sequence[str]) -> dict[str, float]:
    """Each job's rate scale: its busiest source's peak over its profiled rate (1 where none has a forecast) — the
    cost model scales a job's rates together."""
    out = {}
    for name in names:
        peaks = [x for s in sources if s.job == name and (x := s.scale) is not None]
        out[name] = max(peaks) if peaks else 1.0
    return out


def current_assignment(path: str, problem: PlacementProblem) -> Assignment:
    """The placement of a written plan (a plan directory or its plan.json) over ``problem``'s subtasks."""
    from placement.writers.planjson import load_plan

    file = Path(path) / "plan.json" if Path(path).is_dir() else Path(path)
    if not file.is_file():
        raise BadInput(
            "no plan.json here (a plan directory `placement plan` wrote)", source=str(path), field="--current"
        )
    doc = load_plan(file)
    placed = {(a.vertex_id, a.subtask): a.host for a in doc.assignment}
    for s in problem.subtasks:
        if s.key not in placed:
            raise BadInput(
                f"does not place {s.label} of the profile (a plan of another job or parallelism)",
                source=str(file),
                field="assignment",
            )
        if placed[s.key] not in problem.host_by_name:
            raise BadInput(
                f"places {s.label} on {placed[s.key]}, which the inventory does not have",
                source=str(file),
                field="assignment",
            )
    return {s.key: placed[s.key] for s in problem.subtasks}


def predict_breaks(
    forecasted: Forecasted,
    names: Sequence[str],
    make: Callable[[Mapping[str, float]], PlacementProblem],
    current: str | None,
    options: SolverOptions,
    method: Method,
) -> Breaks:
    """When the plan in effect breaks: ``make(job -> scale)`` builds the problem with each job at its scale."""
    today = make({n: 1.0 for n in names})
    if current is not None:
        assignment, plan = current_assignment(current, today), current
    else:
        result = solve_with(today, options, method)
        if result.assignment is None:
            after = max(s.forecast.last_ms for s in forecasted.sources)
            return Breaks(TODAY, None, after_ms=after, reason="no plan fits at the profiled rates")
        assignment, plan = result.assignment, TODAY
    return breaks_of(forecasted.sources, names, make, assignment, plan)


def breaks_of(
    sources: Sequence[SourceForecast],
    names: Sequence[str],
    make: Callable[[Mapping[str, float]], PlacementProblem],
    assignment: Assignment,
    plan: str,
) -> Breaks:
    """Where the placement ``assignment`` (named ``plan``) first breaks under the forecasts' upper bounds, each job
    at its sources' scale step by step (``make``: the problem at job -> scale); ``watch --forecast`` asks it of the
    placement running."""
    after = max(s.forecast.last_ms for s in sources)
    headroom = placement_headroom(lambda x: make({n: x for n in names}), assignment)
    times = sorted({t for s in sources for t in s.forecast.times_ms})
    for t in times:
        scales = {}
        for n in names:
            at = [x for s in sources if s.job == n and (x := s.scale_at(t)) is not None]
            scales[n] = max(at) if at else 1.0
        violations = evaluate(make(scales), assignment).violations
        if violations:
            return Breaks(plan, headroom, t, after, violations[0])
    return Breaks(plan, headroom, None, after)


def season_name(period_s: int | None) -> str:
    """How a forecast line names its season: daily, weekly, a given cycle by its length (a 24 min), or no."""
    named = {86_400: "daily", 604_800: "weekly"}
    if period_s is None:
        return "no"
    return named.get(period_s) or f"a {_span_s(period_s)}"


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="minutes").replace("+00:00", "Z")


def _clock(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%H:%M UTC")


def _span(f: Forecasted) -> str:
    return _span_s(f.horizon_s)


def _span_s(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"
