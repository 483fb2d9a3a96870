"""``watch --forecast``'s world-touching side: the sources' forecasts fitted to the history, read at each tick's time,
and where the placement running is predicted to break — the data :mod:`.foresight`'s pure decision takes.

The forecaster and the break are ``plan --forecast``'s own (:mod:`placement.planning.forecasting`): each source's
rate forecast from HISTORY (a metrics directory of days to weeks) with the watch's rolling history appended, so the
series reaches up to now while the watch runs; the plan in effect is the placement running, priced with the problem
the re-planner builds (:func:`~placement.watch.assessing.job_problem`, several jobs
:func:`~placement.watch.assessing.joint_problem`), step by step under the intervals' upper bounds.

Fitting is the expensive part (seconds), a tick is not: a fit looks :data:`AHEAD_S` past the horizon and is made
again only once the series has grown by a step of the model's grid or the fit no longer reaches a horizon ahead;
each tick reads the steps from its own time to a horizon later. A history too short or a series that cannot be fitted
is said once ("no forecast: …") and the ticks are reactive until a fit succeeds. A season given (``--season``) is
passed to the forecaster as it is, and its grid — seconds for a compressed day — sets how often a fit is made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from placement.costmodel.model import Assignment, PlacementProblem
from placement.errors import BadInput, PlacementError
from placement.forecast.model import MIN_SEASON_STEPS
from placement.inventory import Inventory
from placement.planning.forecasting import (
    Breaks,
    SourceForecast,
    breaks_of,
    current_assignment,
    peak_scales,
    read_rates,
    require_statsmodels,
    source_forecasts,
)
from placement.profile.format import JobProfile
from placement.watch.assessing import job_problem, joint_problem
from placement.watch.foresight import (
    AheadDecision,
    ForesightConfig,
    Point,
    decide_ahead,
    lead_time_s,
    measured_break,
    predicted_at,
    record_fields,
)
from placement.watch.observing import JobTrack, Seen
from placement.watch.options import WatchOptions
from placement.watch.pricing import joint_running

REFIT_S = 900  # the model's finest grid step: a rolling history adds one step's figure no faster than this
AHEAD_S = 6 * 3600  # a fit reaches this far past the horizon, so a history that does not grow is refitted rarely

Rates = dict[str, dict[str, list[tuple[int, float]]]]  # job -> source -> (epoch ms, records/s)


@dataclass(frozen=True)
class Foreseen:
    """One tick's forecast: each source's point now (None: no usable forecast, ``reason`` says why), where the
    placement running breaks within the horizon, each job's scale at the forecast's peak, and the rates measured."""

    predicted: dict[str, Point] | None
    measured: dict[str, float]
    breaks: Breaks | None = None
    scales: dict[str, float] = field(default_factory=dict)
    made_from_ms: int | None = None  # the series' last sample the forecast was fitted to
    reason: str = ""
    notes: tuple[str, ...] = ()  # said once: why there is no forecast, what a source lacks

    @property
    def breaks_at_ms(self) -> int | None:
        return self.breaks.at_ms if self.breaks is not None else None

    def decide(
        self, now_ms: int, lead_s: float, kinds: Sequence[str], cheaper: bool | None = None, tick_s: float = 0.0
    ) -> AheadDecision:
        """:func:`~placement.watch.foresight.decide_ahead` on this forecast (``tick_s``: the watch's interval, so a
        relief starts at the last tick at least the lead time ahead); a measured break first goes to the reactive
        policy (:func:`~placement.watch.foresight.measured_break`)."""
        if self.predicted is not None and (broken := measured_break(kinds)) is not None:
            return broken
        return decide_ahead(now_ms, lead_s, self.breaks_at_ms, self.measured, self.predicted, cheaper, tick_s)

    def fields(self, ahead: AheadDecision, lead_s: float) -> dict[str, Any]:
        """The decision record's ``foresight``: the forecast now, its interval and what came (the rates measured at
        the time it was for), the decision ahead, the break and the lead time."""
        outcome = {k: v for k, v in self.measured.items() if k in (self.predicted or {})}
        return {
            **record_fields(self.predicted, outcome),
            "action": ahead.action,
            "reason": ahead.reason,  # why there is no forecast is said once, in the notes
            "lead_s": round(lead_s, 1),
            "breaks_at_ms": self.breaks_at_ms,
            "breaks": self.breaks.reason or None if self.breaks is not None else None,
            "scales": dict(self.scales),
            "made_from_ms": self.made_from_ms,
        }


class Foreseer:
    def __init__(self, options: WatchOptions, inventory: Inventory, tracks: Sequence[JobTrack]):
        require_statsmodels()
        assert options.forecast_history is not None, "the foreseer is made for --forecast HISTORY"
        self.o, self.inventory, self.tracks = options, inventory, tracks
        self.history = str(options.forecast_history)
        self.config = ForesightConfig(
            horizon_s=options.horizon_s,
            level=options.forecast_level,
            warmup_s=options.warmup_s,
        )
        self.past: Rates | None = None  # HISTORY's rates, read once: the directory is the past, it does not grow
        self.fitted: list[SourceForecast] = []
        self.fitted_end_ms: int | None = None  # the series' last sample when it was fitted
        self.unfit = ""  # why the last fit gave no forecast
        self.checked_ms: int | None = None
        self.said: set[str] = set()
        self.apply_s: float | None = None  # the last apply's measured duration
        self.now: list[SourceForecast] = []  # the last tick's forecasts, from its time to a horizon later

    @property
    def lead_s(self) -> float:
        return lead_time_s(self.config, self.apply_s)

    def look(self, seen: Sequence[Seen], now_ms: int) -> Foreseen:
        """The tick's forecast for jobs that each have their window and profile."""
        measured = {f"{s.track.name}/{k}": v for s in seen for k, v in _window_rates(s).items()}
        notes = self._refit(seen, now_ms)
        horizon_ms = int(self.o.horizon_s * 1000)
        rates = {s.track.name: _profiled(s) for s in seen}
        self.now = [_from_now(f, rates[f.job], now_ms, horizon_ms) for f in self.fitted]
        predicted = predicted_at(self.now, now_ms)
        if predicted is None:
            reason = self.unfit or "the forecast does not reach this tick"
            if "no forecast" not in self.said:
                self.said.add("no forecast")
                notes.append(f"no forecast: {reason}")
            return Foreseen(None, measured, reason=reason, notes=tuple(notes))
        self.said.discard("no forecast")  # a later loss of the forecast is said again
        make, running, _ = self._problems(seen)
        if running is None:
            return Foreseen(None, measured, reason="the placement running is not known", notes=tuple(notes))
        names = [s.track.name for s in seen]
        scales = {n: min(x, self.o.max_demand_scale) for n, x in peak_scales(self.now, names).items()}
        plan = seen[0].track.plan_in_effect() or "the placement running"
        return Foreseen(
            predicted,
            measured,
            breaks_of(self.now, names, make, running, plan),
            scales,
            self.fitted_end_ms,
            notes=tuple(notes),
        )

    def holds(self, seen: Sequence[Seen], plan_dir: str | None) -> bool:
        """Whether the plan in ``plan_dir`` (a re-plan's) holds over the whole horizon of the last tick's forecast."""
        if plan_dir is None or not self.now:
            return False
        make, _, join = self._problems(seen)
        try:
            placed = {
                s.track.name: current_assignment(
                    str(s.track.plan_json(plan_dir)), job_problem(self.inventory, self.o, _profile(s), 1.0)
                )
                for s in seen
            }
        except PlacementError:
            return False
        assignment = join(placed)
        names = [s.track.name for s in seen]
        return assignment is not None and breaks_of(self.now, names, make, assignment, plan_dir).at_ms is None

    # ---- the fit ---------------------------------------------------------------------------------------------------

    def _refit(self, seen: Sequence[Seen], now_ms: int) -> list[str]:
        """Fit again when due; the notes not said yet (what a source has no forecast for)."""
        reaches = min((f.forecast.times_ms[-1] for f in self.fitted), default=0)
        short = bool(self.fitted) and now_ms + self.o.horizon_s * 1000 > reaches
        if not short and self.checked_ms is not None and now_ms - self.checked_ms < self._refit_s() * 1000:
            return []
        self.checked_ms = now_ms
        try:
            rates = self._rates(seen)
        except BadInput as exc:
            self.fitted, self.unfit = [], str(exc)
            return []
        watched = [pts for s in seen for pts in rates.get(_profile(s).job.name, {}).values() if pts]
        end = max((pts[-1][0] for pts in watched), default=None)
        if end is not None and end == self.fitted_end_ms and not short:
            return []  # nothing new since the last fit
        horizon_s = max(0.0, now_ms - (end or now_ms)) / 1000 + self.o.horizon_s + self._ahead_s()
        sources, _, notes = source_forecasts(
            rates,
            self.history,
            horizon_s,
            self.o.forecast_level,
            [_profile(s) for s in seen],
            [s.track.name for s in seen],
            self.o.season_s,
        )
        self.fitted = [f for f in sources if f.forecast.ok]
        self.fitted_end_ms = end
        unfit = [f"{f.job}/{f.source}: {f.forecast.reason}" for f in sources if not f.forecast.ok]
        self.unfit = "" if self.fitted else "; ".join(unfit or notes) or f"{self.history}: no watched source"
        if not self.fitted:
            return []  # said as the reason of "no forecast"
        fresh = [n for n in notes if n not in self.said]
        self.said.update(fresh)
        return [f"forecast: {n}" for n in fresh]

    def _refit_s(self) -> float:
        """How long a fit stands while the series grows: a step of its grid — a given season's may be seconds (a
        compressed day's), and a fit older than a step would miss the rolling history's latest figure."""
        if self.o.season_s is None:
            return REFIT_S
        steps = [f.forecast.step_s for f in self.fitted]
        return min(REFIT_S, min(steps) if steps else self.o.season_s / MIN_SEASON_STEPS)

    def _ahead_s(self) -> float:
        """How far past the horizon a fit reaches: a given season's fit is made again every step of its grid, so a
        cycle ahead is enough — six hours of a seconds-wide grid would be thousands of steps never read."""
        return AHEAD_S if self.o.season_s is None else min(AHEAD_S, self.o.season_s)

    def _rates(self, seen: Sequence[Seen]) -> Rates:
        """HISTORY's source rates with each job's rolling history appended (its samples after HISTORY's last)."""
        if self.past is None:
            self.past = read_rates(self.history)
        out: Rates = {job: {v: list(pts) for v, pts in by.items()} for job, by in self.past.items()}
        for s in seen:
            try:
                recent = read_rates(str(s.track.history))
            except BadInput:  # nothing collected yet
                continue
            for job, by in recent.items():
                for source, pts in by.items():
                    known = out.setdefault(job, {}).setdefault(source, [])
                    after = known[-1][0] if known else -1
                    known += [p for p in pts if p[0] > after]
        return out

    def _problems(
        self, seen: Sequence[Seen]
    ) -> tuple[
        Callable[[Mapping[str, float]], PlacementProblem],
        Assignment | None,
        Callable[[Mapping[str, Assignment]], Assignment | None],
    ]:
        """The problem at job -> scale as the re-planner builds it, the placement running in it, and how a plan's
        per-job placements join into one of its assignments."""
        if len(seen) == 1:
            s = seen[0]
            profile, name = _profile(s), s.track.name
            return (
                lambda scales: job_problem(self.inventory, self.o, profile, scales[name]),
                s.running,
                lambda placed: placed.get(name),
            )
        profiles = {s.track.name: _profile(s) for s in seen}
        joint = joint_problem(self.inventory, self.o, profiles, 1.0)
        return (
            lambda scales: joint_problem(self.inventory, self.o, profiles, 1.0, scales).problem,
            joint_running(joint, {s.track.name: s.running for s in seen}),
            lambda placed: joint_running(joint, placed),
        )


def _profile(s: Seen) -> JobProfile:
    assert s.profile is not None, f"job {s.track.name} foreseen without a profile"
    return s.profile


def _profiled(s: Seen) -> Mapping[str, float]:
    assert s.window is not None, f"job {s.track.name} foreseen without a window"
    return s.window.source_rates


def _window_rates(s: Seen) -> Mapping[str, float]:
    assert s.window is not None, f"job {s.track.name} foreseen without a window"
    return s.window.rates_now()


def _from_now(s: SourceForecast, profiled: Mapping[str, float], now_ms: int, horizon_ms: int) -> SourceForecast:
    """A fitted forecast cut to the steps from ``now_ms`` (the one holding it) to a horizon later, its scale over the
    tick's window (the profile the re-plan scales)."""
    f = s.forecast
    step_ms = f.step_s * 1000
    keep = [i for i, t in enumerate(f.times_ms) if t + step_ms > now_ms and t < now_ms + horizon_ms]
    cut = replace(
        f,
        ok=bool(keep),
        reason="" if keep else "the forecast does not reach this tick",
        times_ms=tuple(f.times_ms[i] for i in keep),
        mean=tuple(f.mean[i] for i in keep),
        lower=tuple(f.lower[i] for i in keep),
        upper=tuple(f.upper[i] for i in keep),
    )
    return replace(s, profiled=profiled.get(s.source, s.profiled), forecast=cut)
