"""One source's rate forecast: exponential smoothing with a damped additive trend and an additive daily or weekly
season (ETS(A,Ad,A), statsmodels' ``ETSModel``), its prediction interval analytic.

The samples are put on a grid of 15 min, 30 min or 1 h (the finest at or above their spacing: a day is then 96, 48 or
24 steps), a step's figure the mean of the samples in it. Steps with no sample (a collector that was down, a missed
day) are filled from the same time of day a day before or after, else by a straight line between their neighbours,
and the result says how much was filled; more than a quarter missing is too little to fit. The season is the one whose
lag the series (a straight trend taken out) correlates with best: weekly where two weeks of history show the days of
the week apart, else daily, else none (trend alone). Less than two days of history — two cycles, what the
least that tells a cycle from a trend — or a fit that fails is not an error but the reactive answer: the
latest rate, and why.

A season given (``season_s``, ``--season``: a shift cycle, the lab's compressed day) is not searched for: it is
fitted as given, on the finest grid at or above the samples' spacing that divides it into 12 to 96 steps
(:func:`season_step`), gaps filled from the same phase a cycle away, and two of its cycles are the least history.

The model: ETS(A,Ad,A) — why this one and what it was measured to do is in docs/plan.md (forecasting). Its initial
states are the history's own (:func:`_fit`); the trend is damped because a plan looks hours ahead from a history of
days, and an undamped trend fitted to the last few hours would run on unchecked.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

DAY_S = 86_400
WEEK_S = 7 * DAY_S
GRID_S = (900, 1800, 3600)  # the steps the model runs on (each divides a day)
MAX_MISSING = 0.25  # of the grid's steps with no sample, beyond which the history is too sparse to fit
SEASONAL_ACF = 0.3  # the autocorrelation at a period's lag (trend removed) from which that period is a cycle
WEEKLY_MARGIN = 0.1  # weekly wins when its lag correlates this much better than a day's (the days differ)
MIN_SEASON_STEPS = 12  # a season given (--season) on fewer steps than this is too coarse to tell its shape
MAX_SEASON_STEPS = 96
SPACING_JITTER = 0.01  # a sampler's timestamps wander: a 60 s sampler's median spacing of 60.2 s is still 60 s

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Forecast:
    """A source's forecast over a horizon, or (``ok`` false) the reactive answer and why."""

    ok: bool
    reason: str  # why there is no forecast ("" when ok): the plan then keeps today's rate
    level: float  # the interval's nominal coverage, e.g. 0.8
    last_ms: int  # the history's last sample (epoch ms): the horizon starts there
    last: float  # the latest rate: the last step's mean (records/s)
    step_s: int = 0
    period_s: int | None = None  # the season fitted (None: none found, trend alone), a given one too
    times_ms: tuple[int, ...] = ()  # each step ahead, where it starts (epoch ms)
    mean: tuple[float, ...] = ()
    lower: tuple[float, ...] = ()
    upper: tuple[float, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def peak_at(self) -> int:
        """The step ahead where the upper bound is highest (the first of equals); -1 without a forecast."""
        return int(np.argmax(self.upper)) if self.ok and self.upper else -1

    @property
    def peak(self) -> float:
        """The highest upper bound within the horizon; the latest rate without a forecast."""
        return self.upper[self.peak_at] if self.peak_at >= 0 else self.last

    @property
    def peak_ms(self) -> int:
        return self.times_ms[self.peak_at] if self.peak_at >= 0 else self.last_ms


def forecast(
    points: Sequence[tuple[int, float]], horizon_s: float, level: float = 0.8, season_s: float | None = None
) -> Forecast:
    """The forecast of a rate sampled at ``points`` ((epoch ms, value), any order) for ``horizon_s`` seconds after
    its last sample, with a ``level`` (0..1) prediction interval. ``season_s``: the load's cycle, fitted as it is
    given (a shift, a compressed day) instead of the daily or weekly one the series' autocorrelation picks."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, not {level}")
    if season_s is not None and not season_s > 0:
        raise ValueError(f"the season must be above 0 s, not {season_s}")
    clean = sorted((int(t), float(v)) for t, v in points if v is not None and math.isfinite(v))
    if not clean:
        return Forecast(False, "no sample in the history", level, 0, 0.0)
    last_ms = clean[-1][0]
    if len(clean) < 3:
        return Forecast(False, "fewer than three samples in the history", level, last_ms, clean[-1][1])
    spacing = float(np.median(np.diff([t for t, _ in clean]))) / 1000
    if season_s is None:
        cycle = _DAILY
        step = next((g for g in GRID_S if g >= spacing), None)
        if step is None:
            return Forecast(
                False,
                f"samples {spacing / 3600:.1f} h apart: a forecast needs one an hour at least",
                level,
                last_ms,
                0.0,
            )
    else:
        cycle = _Cycle.given(season_s)
        step = season_step(cycle.period_s, spacing)
        if step is None:
            return Forecast(
                False,
                f"samples {_length(spacing)} apart: a {cycle.name} season needs {MIN_SEASON_STEPS} steps of a sample "
                f"each at least (one every {_length(cycle.period_s / MIN_SEASON_STEPS)})",
                level,
                last_ms,
                0.0,
            )
    return _forecast_on_grid(clean, step, cycle, horizon_s, level)


@dataclass(frozen=True)
class _Cycle:
    """The cycle a history must cover twice and that fills its gaps: a day (then the season is searched for), or the
    season given."""

    period_s: int
    name: str  # "24 min", "8 h": in the reasons and notes
    given_season: bool

    @staticmethod
    def given(season_s: float) -> _Cycle:
        period = max(1, round(season_s))
        return _Cycle(period, _length(period), True)


_DAILY = _Cycle(DAY_S, "day", False)


def season_step(period_s: int, spacing_s: float) -> int | None:
    """The grid step for a season of ``period_s``: the finest whole second at or above the samples' spacing that
    divides the period into :data:`MAX_SEASON_STEPS` steps at most and :data:`MIN_SEASON_STEPS` at least (None: the
    samples are too sparse for that). At most 96, as a day on today's finest grid: the season's states are fitted one
    per step, and more would cost fits without telling the cycle better."""
    floor = max(spacing_s * (1 - SPACING_JITTER), period_s / MAX_SEASON_STEPS)
    return next(
        (d for d in range(max(1, math.ceil(floor)), period_s // MIN_SEASON_STEPS + 1) if period_s % d == 0),
        None,
    )


def _forecast_on_grid(
    clean: Sequence[tuple[int, float]], step: int, cycle: _Cycle, horizon_s: float, level: float
) -> Forecast:
    last_ms = clean[-1][0]
    start, y = _grid(clean, step)
    last = float(y[~np.isnan(y)][-1])
    span_s = len(y) * step

    def reactive(reason: str, notes: tuple[str, ...] = ()) -> Forecast:
        return Forecast(False, reason, level, last_ms, last, step, notes=notes)

    if span_s < 2 * cycle.period_s:
        need = f"two cycles of {cycle.name} at least" if cycle.given_season else "two days at least (two daily cycles)"
        return reactive(f"the history covers {_span(span_s, cycle)}: a forecast needs {need}")
    missing = int(np.isnan(y).sum())
    if missing > MAX_MISSING * len(y):
        return reactive(
            f"{_span(missing * step, cycle)} of the history's {_span(span_s, cycle)} has no sample: too sparse to fit"
        )
    steps_per_cycle = cycle.period_s // step
    y = _filled(y, steps_per_cycle)
    where = "the same phase a cycle" if cycle.given_season else "the same time a day"
    notes = (f"{_span(missing * step, cycle)} without samples filled from {where} before or after",) if missing else ()
    if cycle.given_season:
        period: int | None = steps_per_cycle  # given: fitted as it is, not searched for
    else:
        period = _season(y, steps_per_cycle, WEEK_S // step)
        if period is None:
            notes = (*notes, "no daily cycle in the history: trend alone")
    horizon = max(1, math.ceil(horizon_s / step))
    try:
        mean, lower, upper = _fit(y, period, horizon, level)
    except Exception as exc:  # statsmodels raises several kinds (ValueError, LinAlgError, …) on a series it rejects
        return reactive(f"the model could not be fitted: {exc}", notes)
    if not all(np.isfinite(a).all() for a in (mean, lower, upper)):
        return reactive("the model's forecast is not finite", notes)
    end = start + len(y) * step * 1000
    return Forecast(
        True,
        "",
        level,
        last_ms,
        last,
        step,
        period * step if period else None,
        tuple(end + k * step * 1000 for k in range(horizon)),
        tuple(float(max(0.0, x)) for x in mean),
        tuple(float(max(0.0, x)) for x in lower),
        tuple(float(max(0.0, x)) for x in upper),
        notes,
    )


def _grid(points: Sequence[tuple[int, float]], step: int) -> tuple[int, Floats]:
    """The mean per step of ``step`` seconds (steps aligned to the epoch, so a day's phase is the clock's), NaN where
    a step has no sample; and the first step's start (epoch ms)."""
    ms = step * 1000
    first = points[0][0] // ms
    index = np.array([t // ms - first for t, _ in points], dtype=np.int64)
    values = np.array([v for _, v in points], dtype=np.float64)
    n = int(index[-1]) + 1
    sums = np.bincount(index, weights=values, minlength=n)
    counts = np.bincount(index, minlength=n)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return int(first * ms), means.astype(np.float64)


def _filled(y: Floats, day: int) -> Floats:
    """Missing steps from the same time a day (``day`` steps: a given season's cycle) before or after (the nearest
    first), else a straight line."""
    out: Floats = y.copy()
    for i in np.flatnonzero(np.isnan(y)):
        for k in range(1, len(y) // day + 1):
            near = [j for j in (i - k * day, i + k * day) if 0 <= j < len(y) and not np.isnan(y[j])]
            if near:
                out[i] = y[near[0]]
                break
    gaps = np.isnan(out)
    if gaps.any():
        known = np.flatnonzero(~gaps)
        out[gaps] = np.interp(np.flatnonzero(gaps), known, out[known])
    return out


def _season(y: Floats, day: int, week: int) -> int | None:
    """The seasonal period in steps (a week's or a day's), or None: no cycle the series correlates with."""
    t = np.arange(len(y), dtype=np.float64)
    slope, intercept = np.polyfit(t, y, 1)
    x = y - (slope * t + intercept)
    if not np.std(x) > 0:
        return None
    daily = _autocorrelation(x, day)
    weekly = _autocorrelation(x, week) if len(y) >= 2 * week else -1.0
    if weekly >= SEASONAL_ACF and weekly > daily + WEEKLY_MARGIN:
        return week
    return day if daily >= SEASONAL_ACF else None


def _autocorrelation(x: Floats, lag: int) -> float:
    a, b = x[:-lag], x[lag:]
    if not (np.std(a) > 0 and np.std(b) > 0):
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _fit(y: Floats, period: int | None, horizon: int, level: float) -> tuple[Floats, Floats, Floats]:
    """ETS(A,Ad,A) (ETS(A,Ad,N) without a season) fitted to ``y``: the point forecast and the interval per step.

    The initial states are the history's own: level and trend from a straight line through it, each phase of the
    season the mean of that phase over every cycle (trend taken out) — more cycles than statsmodels' heuristic's two,
    so a noisy first day does not stay in the season. statsmodels' interval then takes those states and the
    smoothing parameters as exact: its variance is the residuals' mean square, which fitting ``period`` + 2 states
    and the parameters to the same data has made smaller than the noise, and it leaves out the error of the season's
    estimate (a phase's mean over ``n/period`` cycles). Both are put back: the variance over ``n − k`` instead of
    ``n``, and the phase mean's variance added to every step's."""
    import pandas as pd  # statsmodels' predictions carry an index: a plain array has none to give them
    from statsmodels.tsa.exponential_smoothing.ets import ETSModel

    n = len(y)
    t = np.arange(n, dtype=np.float64)
    slope, intercept = np.polyfit(t, y, 1)
    seasonal: dict[str, object] = {}
    if period:
        x = y - (slope * t + intercept)
        phases = np.array([x[p::period].mean() for p in range(period)])
        seasonal = {"seasonal": "add", "seasonal_periods": period, "initial_seasonal": phases - phases.mean()}
    model = ETSModel(
        pd.Series(y),
        error="add",
        trend="add",
        damped_trend=True,
        initialization_method="known",
        initial_level=float(intercept),
        initial_trend=float(slope),
        **seasonal,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter: the forecast is judged by its being finite
        fitted = model.fit(disp=False)
        frame = fitted.get_prediction(start=n, end=n + horizon - 1).summary_frame(alpha=1 - level)
    mean = frame["mean"].to_numpy(dtype=np.float64)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    variance = ((frame["pi_upper"].to_numpy(dtype=np.float64) - mean) / z) ** 2
    fitted_states = (period or 0) + 2 + len(fitted.params)
    if n <= fitted_states + 1:
        raise ValueError(f"{n} steps are too few for {fitted_states} fitted figures")
    widen = n / (n - fitted_states)
    sigma2 = float(fitted.mse) * widen
    variance = variance * widen + (sigma2 * period / n if period else 0.0)
    half = z * np.sqrt(variance)
    return mean, mean - half, mean + half


def _duration(seconds: float) -> str:
    if seconds >= 2 * DAY_S:
        return f"{seconds / DAY_S:.1f} days"
    return f"{seconds / 3600:.1f} h"


def _span(seconds: float, cycle: _Cycle) -> str:
    """A stretch of history: in days or hours as without a season; a season given shorter than that in minutes."""
    return _length(seconds) if cycle.given_season and seconds < 3600 else _duration(seconds)


def _length(seconds: float) -> str:
    """A season or spacing as one would give it: 24 min, 8 h, 10 s."""
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"
