"""``watch --forecast``: when to act ahead of a predicted break, when a move back holds, and when the load left the
forecast. Pure: the forecasts come from :mod:`placement.planning.forecasting`, the loop does the I/O.

The reactive policy (:mod:`placement.watch.policy`) acts once a break is measured, so each rise of a periodic load
costs the back-pressure of one apply plus its warm-up. With a forecast the watch acts that much earlier: the lead time
is the apply's duration (measured on the last apply, else configured) plus the warm-up plus a margin, and a relief
is applied when the plan in effect is predicted (the interval's upper bound) to break within it. The plan applied is
the one made for the forecast's peak over the horizon, so a dip inside the horizon is no reason to move; a move back
to a cheaper plan is taken only when that plan holds over the whole next horizon too. A measured rate outside the
forecast's interval says the forecast no longer describes the load: the tick falls back to the reactive policy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from placement.planning.forecasting import SourceForecast

Ahead = Literal["relieve", "move_back", "hold", "reactive"]


@dataclass(frozen=True)
class ForesightConfig:
    horizon_s: float = 7200.0
    level: float = 0.8
    apply_s: float = 60.0  # an apply's duration until the last one is measured
    warmup_s: float = 60.0
    margin_s: float = 60.0  # slack on top of apply + warm-up: a tick's interval at least

    def __post_init__(self) -> None:
        if self.horizon_s <= 0:
            raise ValueError("horizon must be > 0")
        if not 0 < self.level < 1:
            raise ValueError("level must be in (0, 1)")
        if min(self.apply_s, self.warmup_s, self.margin_s) < 0:
            raise ValueError("apply, warm-up and margin must be >= 0")


def lead_time_s(config: ForesightConfig, measured_apply_s: float | None = None) -> float:
    """How long before a predicted break a relief must start: the last apply's duration when measured."""
    apply_s = config.apply_s if measured_apply_s is None else measured_apply_s
    return apply_s + config.warmup_s + config.margin_s


@dataclass(frozen=True)
class Point:
    """One source's forecast for the step that holds a time: the mean and the interval."""

    mean: float
    lower: float
    upper: float


def departures(measured: Mapping[str, float], predicted: Mapping[str, Point]) -> dict[str, float]:
    """The sources whose measured rate is outside their forecast interval (source -> measured rate)."""
    return {
        s: rate
        for s, rate in measured.items()
        if (p := predicted.get(s)) is not None and not p.lower <= rate <= p.upper
    }


@dataclass(frozen=True)
class AheadDecision:
    action: Ahead
    reason: str


def decide_ahead(
    now_ms: int,
    lead_s: float,
    breaks_at_ms: int | None,
    measured: Mapping[str, float],
    predicted: Mapping[str, Point] | None,
    cheaper_holds_next_horizon: bool | None = None,
    tick_s: float = 0.0,
) -> AheadDecision:
    """One tick of ``watch --forecast``.

    ``breaks_at_ms``: where the plan in effect is predicted to break under the upper bounds (None: it holds over the
    horizon). ``predicted``: each source's forecast now (None: no forecast — too little history or no fit).
    ``cheaper_holds_next_horizon``: a cheaper plan exists and holds over the whole next horizon (None: no cheaper
    plan was found). ``tick_s``: the time to the next tick — a relief is started at the last tick that is still at
    least the lead time ahead of the break (0: ticks aligned on the lead time)."""
    if predicted is None:
        return AheadDecision("reactive", "no forecast: the reactive policy decides")
    gone = departures(measured, predicted)
    if gone:
        shown = ", ".join(
            f"{s} {r:,.0f}/s outside {predicted[s].lower:,.0f}-{predicted[s].upper:,.0f}"
            for s, r in sorted(gone.items())
        )
        return AheadDecision("reactive", f"departure from the forecast ({shown}): the reactive policy decides")
    if breaks_at_ms is not None:
        left_s = (breaks_at_ms - now_ms) / 1000
        if left_s <= lead_s or left_s - tick_s < lead_s:
            late = "" if left_s <= lead_s else f"; the next tick, in {tick_s:.0f} s, would be within it"
            return AheadDecision(
                "relieve",
                f"the plan in effect is predicted to break in {max(0.0, left_s):.0f} s, lead time "
                f"{lead_s:.0f} s{late}: relief for the forecast peak",
            )
        return AheadDecision(
            "hold", f"the plan in effect is predicted to break in {left_s:.0f} s, beyond the lead time {lead_s:.0f} s"
        )
    if cheaper_holds_next_horizon:
        return AheadDecision("move_back", "a cheaper plan holds over the whole next horizon")
    if cheaper_holds_next_horizon is False:
        return AheadDecision("hold", "a cheaper plan exists but breaks within the next horizon: stay")
    return AheadDecision("hold", "the plan in effect holds over the horizon")


def measured_break(kinds: Sequence[str]) -> AheadDecision | None:
    """A drift the forecast does not describe — a capacity measured broken (uplink, backpressure, latency) or one
    that changed (a TaskManager lost or added) — is the reactive policy's, whatever the forecast says: the forecast
    is of the load, the measurement is of what the placement does with it. None: only rates moved."""
    other = sorted({k for k in kinds if k not in ("rate", "forecast")})
    if not other:
        return None
    return AheadDecision("reactive", f"measured {', '.join(other)} drift: the reactive policy decides")


def record_fields(
    predicted: Mapping[str, Point] | None, outcome: Mapping[str, float] | None = None
) -> dict[str, object]:
    """What a decision-log line gains with a forecast: the forecast, its interval and (later) what was measured."""
    if predicted is None:
        return {}
    out: dict[str, object] = {
        "forecast": {s: p.mean for s, p in sorted(predicted.items())},
        "interval": {s: [p.lower, p.upper] for s, p in sorted(predicted.items())},
    }
    if outcome is not None:
        out["outcome"] = dict(sorted(outcome.items()))
    return out


def point_at(
    times_ms: tuple[int, ...],
    mean: tuple[float, ...],
    lower: tuple[float, ...],
    upper: tuple[float, ...],
    t_ms: int,
    series_end_ms: int | None = None,
) -> Point | None:
    """A forecast's step that holds ``t_ms`` (None: before its first step or past its last). A time after the
    series' last sample (``series_end_ms``) but before the first step ahead is in the series' last grid step, which
    the samples only began: the first step ahead stands for it — a watch fitting its rolling history, sampled more
    often than the grid's step, is there at almost every tick."""
    steps = [i for i, t in enumerate(times_ms) if t <= t_ms]
    if not times_ms:
        return None
    if not steps:
        return Point(mean[0], lower[0], upper[0]) if series_end_ms is not None and t_ms >= series_end_ms else None
    i = steps[-1]
    if i == len(times_ms) - 1 and len(times_ms) > 1 and t_ms - times_ms[i] > times_ms[1] - times_ms[0]:
        return None
    return Point(mean[i], lower[i], upper[i])


def predicted_at(sources: Sequence[SourceForecast], t_ms: int) -> dict[str, Point] | None:
    """Each forecast source's point at ``t_ms``, keyed ``job/source`` (None: no source has a forecast there, so the
    tick is reactive)."""
    out = {}
    for s in sources:
        f = s.forecast
        if not f.ok:
            continue
        p = point_at(f.times_ms, f.mean, f.lower, f.upper, t_ms, f.last_ms)
        if p is not None:
            out[f"{s.job}/{s.source}"] = p
    return out or None
