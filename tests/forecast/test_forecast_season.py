"""The forecaster with a season given (``--season``): a cycle that is not a day or a week — a compressed 24-minute
"day", an 8-hour shift — fitted as given on a grid that divides it, on constructed series of known shape; too little
history or samples too sparse to grid it is the reactive answer with its reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from placement.forecast import forecast
from placement.forecast.model import season_step

START_MS = 1_767_225_600_000  # 2026-01-01 00:00 UTC
NOISE = 20.0


def cycle_rate(t_ms: float, period_s: float, base: float = 1000.0, amplitude: float = 300.0) -> float:
    """A cycle of ``period_s`` peaking a quarter of the way through it."""
    phase = ((t_ms - START_MS) / 1000 % period_s) / period_s
    return base + amplitude * math.sin(2 * math.pi * phase)


def series(cycles: float, period_s: float, step_s: float, seed: int = 0) -> list[tuple[int, float]]:
    rng = np.random.default_rng(seed)
    n = int(cycles * period_s / step_s)
    times = [START_MS + int(i * step_s * 1000) for i in range(n)]
    return [(t, cycle_rate(t, period_s) + float(rng.normal(0, NOISE))) for t in times]


def held_out_coverage(period_s: float, spacing_s: float, seeds: range, cycles: int = 3) -> float:
    """The share of a held-out cycle's steps (the mean of its noisy samples in each) inside the 80 % interval of the
    forecast fitted to the ``cycles`` before it."""
    hits = total = 0
    for seed in seeds:
        points = series(cycles + 1, period_s, spacing_s, seed)
        cut = START_MS + int(cycles * period_s * 1000)
        f = forecast([p for p in points if p[0] < cut], period_s, level=0.8, season_s=period_s)
        assert f.ok and f.period_s == period_s, f.reason
        held = [p for p in points if p[0] >= cut]
        for t, lo, up in zip(f.times_ms, f.lower, f.upper):
            in_step = [v for u, v in held if t <= u < t + f.step_s * 1000]
            hits += lo <= float(np.mean(in_step)) <= up
            total += 1
    return hits / total


@pytest.mark.parametrize(
    ("period_s", "spacing_s", "step"),
    [
        (1440, 60, 60),  # a 24-min day sampled every minute: 24 steps
        (1440, 10, 15),  # every 10 s: the finest step that keeps to 96 steps
        (1440, 60.3, 60),  # a sampler's jitter is not a coarser grid
        (28_800, 900, 900),  # an 8 h shift on 15 min samples: 32 steps
        (28_800, 2000, 2400),  # sparser samples: a coarser grid, 12 steps
        (28_800, 60, 300),  # 96 steps at most
        (1440, 300, None),  # 5-min samples cannot show a 24-min cycle in 12 steps
    ],
)
def test_the_grid_step_divides_the_season_into_12_to_96_steps(period_s, spacing_s, step):
    assert season_step(period_s, spacing_s) == step


def test_a_24_minute_cycle_is_fitted_as_given_and_its_interval_covers_a_held_out_cycle():
    f = forecast(series(3, 1440, 10), 1440, season_s=1440)
    assert f.ok and f.period_s == 1440 and f.step_s == 15 and len(f.times_ms) == 96
    assert all(lo <= m <= up for lo, m, up in zip(f.lower, f.mean, f.upper))
    assert max(f.mean) - min(f.mean) > 400  # the cycle's swing (600 peak to trough), not a flat line
    assert 0.70 <= held_out_coverage(1440, 10, range(8)) <= 0.92


def test_an_8_hour_shift_cycle_is_fitted_as_given_and_its_interval_covers_a_held_out_cycle():
    f = forecast(series(3, 8 * 3600, 900), 8 * 3600, season_s=8 * 3600)
    assert f.ok and f.period_s == 28_800 and f.step_s == 900 and len(f.times_ms) == 32
    assert 0.70 <= held_out_coverage(8 * 3600, 900, range(20)) <= 0.92


def test_without_a_season_given_a_24_minute_cycle_is_no_forecast():
    """The search knows days and weeks only: a 24-min cycle's hour of history is too little for it."""
    f = forecast(series(3, 1440, 60), 1440)
    assert not f.ok and "a forecast needs two days at least" in f.reason


@pytest.mark.parametrize(
    ("points", "season_s", "reason"),
    [
        (series(1.5, 1440, 60), 1440, "the history covers 36 min: a forecast needs two cycles of 24 min at least"),
        (series(1.5, 28_800, 900), 28_800, "the history covers 12.0 h: a forecast needs two cycles of 8 h at least"),
        (
            series(5, 1440, 300),
            1440,
            "samples 5 min apart: a 24 min season needs 12 steps of a sample each at least (one every 2 min)",
        ),
    ],
    ids=["short-24min", "short-8h", "ungriddable"],
)
def test_too_little_history_for_the_season_is_the_reactive_answer_with_its_reason(points, season_s, reason):
    f = forecast(points, 1440, season_s=season_s)
    assert not f.ok and f.reason == reason
    assert f.peak == f.last


def test_a_gap_is_filled_from_the_same_phase_a_cycle_away():
    points = [p for p in series(4, 1440, 60) if not 1440 * 1.5 <= (p[0] - START_MS) / 1000 < 1440 * 2]
    f = forecast(points, 1440, season_s=1440)
    assert f.ok and f.period_s == 1440
    assert "12 min without samples filled from the same phase a cycle before or after" in f.notes


def test_a_season_must_be_above_zero():
    with pytest.raises(ValueError, match="season must be above 0"):
        forecast(series(3, 1440, 60), 1440, season_s=0)
