"""The forecaster on constructed series (benchmarks/rate_history.py): a known daily or weekly cycle, trend, noise and
a missed day. The season is found, the trend followed, the 80 % interval covers near 80 % of held-out points over
many seeds, and too little history or an unfittable series is the reactive answer with its reason."""

from __future__ import annotations

import numpy as np
import pytest
from rate_history import history, rate

from placement.forecast import DAY_S, WEEK_S, forecast

NOISE = 30.0


def test_a_daily_cycle_is_found_and_forecast():
    f = forecast(history(5, step_s=300), 7200)
    assert f.ok and f.period_s == DAY_S and f.step_s == 900
    truth = [rate(t) for t in f.times_ms]
    assert len(f.times_ms) == 8
    assert np.max(np.abs(np.subtract(f.mean, truth))) < 3 * NOISE
    assert all(lo <= m <= up for lo, m, up in zip(f.lower, f.mean, f.upper))


def test_a_weekly_cycle_is_found_where_two_weeks_show_the_weekend():
    assert forecast(history(16, step_s=900, weekend=300), 7200).period_s == WEEK_S
    assert forecast(history(16, step_s=900), 7200).period_s == DAY_S  # the same days every week: daily


def test_a_trend_is_followed():
    slope = 200.0  # records/s a day: 1000 over the history
    f = forecast(history(5, step_s=300, slope_per_day=slope), 7200)
    truth = [rate(t, slope_per_day=slope) for t in f.times_ms]
    assert np.max(np.abs(np.subtract(f.mean, truth))) < 3 * NOISE
    flat = forecast(history(5, step_s=300), 7200)
    assert np.mean(f.mean) - np.mean(flat.mean) == pytest.approx(5 * slope, abs=3 * NOISE)


def test_a_missed_day_is_filled_and_said():
    f = forecast(history(5, step_s=300, gap_days=(2, 3)), 7200)
    assert f.ok and f.period_s == DAY_S
    assert any("24.0 h without samples filled" in n for n in f.notes)
    assert np.max(np.abs(np.subtract(f.mean, [rate(t) for t in f.times_ms]))) < 3 * NOISE


def test_the_interval_covers_near_its_level_over_many_seeds():
    """80 % intervals over 40 seeds × 8 steps ahead (320 held-out points, each with noise of its own)."""
    hits = total = 0
    for seed in range(40):
        f = forecast(history(4.3, step_s=900, seed=seed), 7200, level=0.8)
        assert f.ok, f.reason
        rng = np.random.default_rng(10_000 + seed)
        for t, lo, up in zip(f.times_ms, f.lower, f.upper):
            hits += lo <= rate(t) + rng.normal(0, NOISE) <= up
            total += 1
    assert 0.70 <= hits / total <= 0.90, hits / total


@pytest.mark.parametrize(
    ("points", "reason"),
    [
        (history(1.5, step_s=300), "the history covers 36.0 h: a forecast needs two days"),
        ([], "no sample in the history"),
        (history(5, step_s=4 * 3600), "samples 4.0 h apart"),
        (history(5, step_s=300, gap_days=(1, 3)), "too sparse to fit"),
    ],
    ids=["short", "empty", "sparse-samples", "mostly-missing"],
)
def test_too_little_history_is_the_reactive_answer_with_its_reason(points, reason):
    f = forecast(points, 7200)
    assert not f.ok and reason in f.reason
    assert f.peak == f.last  # the reactive answer: the latest rate


def test_a_series_without_a_cycle_is_a_trend_alone():
    f = forecast(history(5, step_s=300, amplitude=0), 7200)
    assert f.ok and f.period_s is None and "no daily cycle" in f.notes[-1]


def test_a_series_the_model_cannot_fit_is_the_reactive_answer(monkeypatch):
    import placement.forecast.model as model

    def refuses(*args, **kwargs):
        raise np.linalg.LinAlgError("singular matrix")

    monkeypatch.setattr(model, "_fit", refuses)
    f = forecast(history(5, step_s=300), 7200)
    assert not f.ok and f.reason == "the model could not be fitted: singular matrix"
