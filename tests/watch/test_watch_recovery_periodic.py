"""The lab proof's periodic phase offline (benchmarks/watch_recovery.py --phase periodic; the lab itself is not run
here): the compressed day's schedule, where it rises, and the figures a run is judged by — sustained back-pressure,
records/s below target — from constructed samples; the command line's refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from watch_recovery import (
    REPLACE_S,
    SPIKE_HOUR,
    SPIKE_HOURS,
    SPIKE_PLACE_BACK_HOUR,
    WARM_S,
    Day,
    Sample,
    day_rates,
    day_row,
    periodic_steps,
    rate_at,
    rise_windows,
    rises,
    shortfall,
    sustained_backpressure_s,
)

from placement.lab.watch_scenario import schedule

DAY_S = 1440.0
HOUR_S = DAY_S / 24


def test_a_day_has_a_night_a_working_day_and_a_lunch_dip():
    rates = day_rates(100, 300)
    assert len(rates) == 24 and set(rates) == {100, 200, 300}
    assert rates[:8] == [100] * 8 and rates[18:] == [100] * 6
    assert rates[8:12] == [300] * 4 and rates[13:18] == [300] * 5
    assert rates[12] == 200


def test_the_schedule_repeats_the_day_with_a_step_only_where_the_rate_changes():
    steps = periodic_steps(DAY_S, 3, 100, 300)
    one_day = [(0.0, 100), (8 * HOUR_S, 300), (12 * HOUR_S, 200), (13 * HOUR_S, 300), (18 * HOUR_S, 100)]
    assert steps[:5] == one_day
    assert steps[5:10] == [(t + DAY_S, r) for t, r in one_day[1:]] + [(2 * DAY_S + 8 * HOUR_S, 300)]
    assert len(steps) == 1 + 4 * 3
    assert schedule(steps).startswith("0:100,480:300,720:200,780:300,1080:100,1920:300")
    assert rate_at(steps, 2 * DAY_S + 9 * HOUR_S) == 300 and rate_at(steps, 10 * DAY_S) == 100


def test_the_spike_is_on_the_measured_day_only():
    plain, spiked = periodic_steps(DAY_S, 3, 100, 300), periodic_steps(DAY_S, 3, 100, 300, spike=True)
    at = 2 * DAY_S + SPIKE_HOUR * HOUR_S
    assert rate_at(spiked, at) == 300 and rate_at(plain, at) == 100
    assert rate_at(spiked, at + 2 * HOUR_S) == 300 and rate_at(spiked, at + SPIKE_HOURS * HOUR_S) == 100
    assert [s for s in spiked if s[0] < 2 * DAY_S] == [s for s in plain if s[0] < 2 * DAY_S]


def test_the_forecastable_rises_of_the_measured_day():
    steps = periodic_steps(DAY_S, 3, 100, 300)
    assert rises(steps, 2 * DAY_S, 3 * DAY_S) == [2 * DAY_S + 8 * HOUR_S, 2 * DAY_S + 13 * HOUR_S]


def samples(bp: list[float], every: float = 10.0, rate: float = 600.0, target: float = 600.0) -> list[Sample]:
    return [Sample(i * every, rate, b, target) for i, b in enumerate(bp)]


def test_back_pressure_counts_once_it_is_sustained():
    blip = samples([0, 500, 0, 0])  # 10 s: an apply's hand-over
    assert sustained_backpressure_s(blip) == 0
    held = samples([0, 500, 900, 800, 0])  # 30 s
    assert sustained_backpressure_s(held) == 30
    assert sustained_backpressure_s(held, [(15.0, 100.0)]) == 20  # the run's samples inside the window
    assert sustained_backpressure_s(held, [(100.0, 200.0)]) == 0
    assert sustained_backpressure_s(samples([50, 90, 99, 0])) == 0  # below 100 ms/s is not back-pressure
    assert sustained_backpressure_s(samples([0, 500, 0], every=30)) == 0  # one sample alone, however long the gap


def test_records_below_target_are_the_time_weighted_mean():
    s = [Sample(0, 600, 0, 600), Sample(10, 300, 0, 600), Sample(30, 700, 0, 600), Sample(40, 0, 0, 600)]
    assert shortfall(s) == pytest.approx((0 * 10 + 300 * 20 + 0 * 10) / 40)
    assert shortfall(s[:1]) == 0.0


def test_a_day_is_judged_by_its_own_hours_and_redeploys(tmp_path):
    clock = 1_000.0
    log = tmp_path / "decisions.jsonl"
    records = [
        {
            "record": "decision",
            "at_ms": (clock + 290) * 1000,
            "apply": {"status": "applied"},
            "decision": {"kind": "relief"},
        },
        {
            "record": "decision",
            "at_ms": (clock + 300) * 1000,
            "apply": {"status": "refused"},
            "decision": {"kind": "relief"},
        },
        {
            "record": "decision",
            "at_ms": (clock + 2000) * 1000,
            "apply": {"status": "applied"},
            "decision": {"kind": "back"},
        },
        {"record": "tick", "at_ms": (clock + 310) * 1000},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    day = Day(samples([0, 0, 500, 900, 800, 0], every=10.0), wan_mbit=1.25)
    row = day_row(day, log, clock, 0.0, 900.0, at_rises=[(20.0, 60.0)])
    assert row["redeploys"] == 1 and row["kinds"] == ["relief"]  # the refused one and the next day's are not counted
    assert row["bp_rises_s"] == 30 and row["bp_day_s"] == 30 and row["wan_mbit"] == 1.25
    assert day_row(day, log, clock, 0.0, 900.0, at_rises=[])["bp_rises_s"] == 0


def test_the_spike_night_is_placed_back_and_warm_before_the_spike():
    hour_s = 15 * 60 / 24  # the shortest day the phase takes
    assert (24 - SPIKE_PLACE_BACK_HOUR + SPIKE_HOUR) * hour_s > REPLACE_S + WARM_S
    steps = periodic_steps(15 * 60, 4, 100, 300, spike=True)
    # the measured day's hours end before its evening, the spike is the next night's only rise before 08:00
    assert rises(steps, 3 * 15 * 60, 3 * 15 * 60 + 8 * hour_s) == [3 * 15 * 60 + SPIKE_HOUR * hour_s]
    assert rises(steps, 2 * 15 * 60, 2 * 15 * 60 + SPIKE_PLACE_BACK_HOUR * hour_s) == [
        2 * 15 * 60 + 8 * hour_s,
        2 * 15 * 60 + 13 * hour_s,
    ]


BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "watch_recovery.py"


def test_help_works_without_a_lab():
    out = subprocess.run([sys.executable, str(BENCH), "--help"], capture_output=True, text=True, check=True).stdout
    assert "--phase periodic" in out and "--spike" in out and "--season DAY" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--days", "2"], "--days: 3 at least"),
        (["--day", "10min"], "--day: 15min at least"),
        (["--day", "soon"], "--day:"),
        (["--spike", "--day", "15min"], "--spike: --day 24min at least"),
        (["--phase", "weekly"], "--phase: unknown ['weekly']"),
    ],
)
def test_bad_periodic_options_are_refused_before_the_lab(args, message, tmp_path):
    nowhere = ["--inventory", str(tmp_path / "none.yaml"), "--workdir", str(tmp_path)]  # never a lab, whatever passes
    done = subprocess.run(
        [sys.executable, str(BENCH), "--phase", "periodic", *nowhere, *args], capture_output=True, text=True
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr


def test_a_rise_owns_the_back_pressure_until_the_next_step():
    steps = periodic_steps(DAY_S, 3, 100, 300)
    day = 2 * DAY_S
    assert rise_windows(steps, day, day + DAY_S) == [
        (day + 8 * HOUR_S, day + 12 * HOUR_S),  # to the lunch dip
        (day + 13 * HOUR_S, day + 18 * HOUR_S),  # to the evening
    ]
    assert rise_windows(steps, day, day + 10 * HOUR_S) == [(day + 8 * HOUR_S, day + 10 * HOUR_S)]  # the span's end
