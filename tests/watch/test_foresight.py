"""``watch --forecast``'s pure decision: a relief ahead of the predicted break by the lead time, no move back on a
dip, a departure from the interval handed to the reactive policy, and the decision log's forecast fields."""

from __future__ import annotations

import pytest

from placement.watch.foresight import (
    ForesightConfig,
    Point,
    decide_ahead,
    departures,
    lead_time_s,
    point_at,
    record_fields,
)

S = 1000  # ms per second


def test_lead_time_is_apply_plus_warmup_plus_margin() -> None:
    config = ForesightConfig(apply_s=45, warmup_s=60, margin_s=30)
    assert lead_time_s(config) == 135
    assert lead_time_s(config, measured_apply_s=80) == 170  # the last apply, measured, replaces the configured one


def test_relief_starts_once_the_break_is_within_the_lead_time() -> None:
    lead = lead_time_s(ForesightConfig(apply_s=60, warmup_s=60, margin_s=30))  # 150 s
    predicted = {"src": Point(200, 150, 260)}
    measured = {"src": 210.0}
    brk = 10_000 * S
    # a tick every 30 s: the first tick whose break is within 150 s relieves, at least the lead time ahead
    relieved = [
        t
        for t in range(brk - 600 * S, brk, 30 * S)
        if decide_ahead(t, lead, brk, measured, predicted).action == "relieve"
    ]
    assert relieved[0] == brk - 150 * S
    assert (brk - relieved[0]) / 1000 >= lead
    held = decide_ahead(brk - 180 * S, lead, brk, measured, predicted)
    assert held.action == "hold" and "180 s" in held.reason


def test_a_relief_starts_at_the_last_tick_at_least_the_lead_time_ahead() -> None:
    """Ticks every 300 s, lead time 180 s: the tick 300 s before the break relieves (the next one would be 0 s
    before it), the one 600 s before holds."""
    predicted, measured = {"src": Point(200, 150, 260)}, {"src": 210.0}
    brk = 10_000 * S
    early = decide_ahead(brk - 300 * S, 180, brk, measured, predicted, tick_s=300)
    assert early.action == "relieve" and "the next tick, in 300 s, would be within it" in early.reason
    assert decide_ahead(brk - 600 * S, 180, brk, measured, predicted, tick_s=300).action == "hold"
    assert decide_ahead(brk - 300 * S, 180, brk, measured, predicted).action == "hold"  # ticks taken as aligned


def test_a_measured_break_is_the_reactive_policys() -> None:
    from placement.watch.foresight import measured_break

    assert measured_break(["rate", "rate"]) is None
    broken = measured_break(["rate", "link", "backpressure"])
    assert broken is not None and broken.action == "reactive"
    assert broken.reason == "measured backpressure, link drift: the reactive policy decides"


def test_a_dip_does_not_move_back_until_the_cheaper_plan_holds_the_next_horizon() -> None:
    predicted = {"src": Point(100, 80, 120)}
    dip = decide_ahead(0, 150, None, {"src": 90.0}, predicted, cheaper_holds_next_horizon=False)
    assert dip.action == "hold"
    back = decide_ahead(0, 150, None, {"src": 90.0}, predicted, cheaper_holds_next_horizon=True)
    assert back.action == "move_back"
    assert decide_ahead(0, 150, None, {"src": 90.0}, predicted).action == "hold"


@pytest.mark.parametrize("rate", [79.0, 121.0])
def test_a_rate_outside_the_interval_is_a_departure_handled_reactively(rate: float) -> None:
    predicted = {"src": Point(100, 80, 120), "other": Point(5, 4, 6)}
    assert departures({"src": rate, "other": 5.0}, predicted) == {"src": rate}
    d = decide_ahead(0, 150, 60 * S, {"src": rate, "other": 5.0}, predicted)
    assert d.action == "reactive" and "departure" in d.reason and f"{rate:,.0f}/s outside 80-120" in d.reason


def test_no_forecast_is_reactive() -> None:
    d = decide_ahead(0, 150, None, {"src": 100.0}, None)
    assert d.action == "reactive" and "no forecast" in d.reason


def test_record_fields_carry_forecast_interval_and_outcome() -> None:
    predicted = {"b": Point(20, 15, 25), "a": Point(100, 80, 120)}
    assert record_fields(predicted) == {"forecast": {"a": 100, "b": 20}, "interval": {"a": [80, 120], "b": [15, 25]}}
    later = record_fields(predicted, {"a": 131.5, "b": 19.0})
    assert later["outcome"] == {"a": 131.5, "b": 19.0}
    assert record_fields(None, {"a": 1.0}) == {}


def test_point_at_picks_the_step_that_holds_the_time() -> None:
    times = (0, 900 * S, 1800 * S)
    mean, lower, upper = (1.0, 2.0, 3.0), (0.5, 1.5, 2.5), (1.5, 2.5, 3.5)
    assert point_at(times, mean, lower, upper, 1000 * S) == Point(2.0, 1.5, 2.5)
    assert point_at(times, mean, lower, upper, -1) is None
    assert point_at(times, mean, lower, upper, 1800 * S + 901 * S) is None
    ahead = (900 * S, 1800 * S)  # a fit's steps begin at the grid step after the series' last sample's
    assert point_at(ahead, mean[1:], lower[1:], upper[1:], 700 * S, series_end_ms=600 * S) == Point(2.0, 1.5, 2.5)
    assert point_at(ahead, mean[1:], lower[1:], upper[1:], 500 * S, series_end_ms=600 * S) is None  # the past
    assert point_at(ahead, mean[1:], lower[1:], upper[1:], 700 * S) is None  # the series' end not known


@pytest.mark.parametrize("kw", [{"horizon_s": 0}, {"level": 1.0}, {"margin_s": -1}])
def test_bad_config_is_refused(kw: dict) -> None:
    with pytest.raises(ValueError):
        ForesightConfig(**kw)


def test_predicted_at_reads_the_planning_forecasts_and_skips_the_unfit() -> None:
    from placement.forecast import Forecast
    from placement.planning.forecasting import SourceForecast
    from placement.watch.foresight import predicted_at

    fit = Forecast(
        True, "", 0.8, 0, 100.0, 900, 86_400, (900 * S, 1800 * S), (110.0, 300.0), (90.0, 250.0), (130.0, 350.0)
    )
    unfit = Forecast(False, "less than two days of history", 0.8, 0, 50.0)
    sources = [SourceForecast("iot", "src", 100.0, fit), SourceForecast("iot", "other", 50.0, unfit)]
    assert predicted_at(sources, 1900 * S) == {"iot/src": Point(300.0, 250.0, 350.0)}
    assert predicted_at(sources, -1) is None  # before the series' end: no forecast for then
    # after the series' last sample (0), before the first step ahead (900 s): that step stands for now
    assert predicted_at(sources, 0) == predicted_at(sources, 899 * S) == {"iot/src": Point(110.0, 90.0, 130.0)}
    assert predicted_at([sources[1]], 1900 * S) is None  # too little history: reactive
