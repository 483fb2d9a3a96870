"""``plan --forecast HISTORY --horizon 2h`` (issue #47): planned for the forecast's peak as a rate scale, the plan in
effect's break predicted, the forecast in the --json summary, and bad input one line naming the file or option."""

from __future__ import annotations

import json

import pytest
from rate_history import write_example

from support.cli import EDGE_LAB, IOT, REPO, run_main

EXAMPLE = REPO / "examples" / "metrics" / "iot-sensors-week"


def plan(tmp_path, *extra, history=EXAMPLE):
    return ["plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "out", "--forecast", history, *extra]


def test_the_plan_is_made_for_the_peak_of_the_upper_bound(tmp_path, capsys):
    code, out, err = run_main([*plan(tmp_path, "--horizon", "2h"), "--json"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    assert summary["format"] == "placement.plan-summary/v2"
    fc = summary["forecast"]
    (source,) = fc["sources"]
    assert source["source"] == "Source: Sensors" and source["forecast"] and source["period_s"] == 86_400
    lower, upper = source["interval"]
    assert lower <= source["mean"] <= upper == source["peak"]
    assert 0 < source["peak_in_s"] <= 7200
    assert fc["scales"]["iot-sensors"] == pytest.approx(source["peak"] / 90_000)
    written = json.loads((tmp_path / "out" / "plan.json").read_text())
    assert written["rate_scale"] == pytest.approx(fc["scales"]["iot-sensors"])
    effect = fc["plan_in_effect"]
    assert effect["plan"] == "the plan at the profiled rates" and effect["headroom"] == pytest.approx(1.088, abs=1e-3)
    assert effect["breaks_at"] is None  # the example's peak (1.04×) is within it


def test_a_plan_that_the_forecast_outgrows_is_said_to_break(tmp_path, capsys):
    code, _, _ = run_main(["plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "now"], capsys)
    assert code == 0
    hot = tmp_path / "hot"
    write_example(hot, base=82_500.0)  # the same day 4,500/s hotter: past the plan's 1.088× before the horizon ends
    code, out, err = run_main(plan(tmp_path, "--current", tmp_path / "now", history=hot), capsys)
    assert (
        "fits up to 1.088× the profiled rates: predicted to break at about 13:30 UTC, in 95 min — Parse (3/3) "
        "cannot keep up on rpi3" in out
    )
    assert code == 3  # the peak itself fits no placement: the shortfall is named as without --forecast


def test_too_little_history_plans_at_the_profiled_rates_and_says_why(tmp_path, capsys):
    short = tmp_path / "short"
    write_example(short, days=1.5)
    code, out, err = run_main([*plan(tmp_path, history=short), "--json"], capsys)
    assert code == 0, err
    fc = json.loads(out)["forecast"]
    assert fc["scales"] == {"iot-sensors": 1.0}
    assert not fc["sources"][0]["forecast"] and "two days at least" in fc["sources"][0]["reason"]
    assert any("keeps its profiled rate" in n for n in fc["notes"])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--horizon", "2"], "--horizon: '2' is not a duration"),
        (["--horizon", "soon"], "--horizon: 'soon' is not a duration"),
        (["--rate-scale", "2"], "--forecast: sets each job's rate scale from the forecast"),
        (["--max-rate"], "--forecast: plans for the forecast's peak"),
        (["--forecast-level", "100"], "--forecast-level"),
        (["--season", "8"], "--season: '8' is not a duration such as 24min, 8h or 1d"),
        (["--season", "0min"], "--season: must be a duration above 0"),
    ],
)
def test_bad_options_are_one_line(tmp_path, capsys, extra, message):
    code, out, err = run_main(plan(tmp_path, *extra), capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_missing_history_or_one_without_sources_names_the_file(tmp_path, capsys):
    code, _, err = run_main(plan(tmp_path, history=tmp_path / "nowhere"), capsys)
    assert code == 2 and f"{tmp_path / 'nowhere'}: --forecast: no such metrics directory" in err
    other = tmp_path / "other"
    write_example(other)
    (manifest,) = other.glob("job_id=*/run_id=*/_manifest.json")
    manifest.write_text(manifest.read_text().replace('"iot-sensors"', '"another-job"'))
    code, _, err = run_main(plan(tmp_path, history=other), capsys)
    assert code == 2 and f"{other}: job_name: no source of the planned jobs (iot-sensors)" in err
    assert len(err.strip().splitlines()) == 1


def test_the_shipped_twenty_minutes_are_too_little_for_a_forecast(tmp_path, capsys):
    code, out, err = run_main(plan(tmp_path, history=REPO / "examples" / "metrics" / "iot-sensors"), capsys)
    assert code == 0 and "no forecast of iot-sensors/Source: Sensors: the history covers" in out


def test_current_and_horizon_need_forecast(tmp_path, capsys):
    base = ["plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "out"]
    code, _, err = run_main([*base, "--current", tmp_path], capsys)
    assert code == 2 and "--current" in err
    code, _, err = run_main([*base, "--horizon", "3h"], capsys)
    assert code == 2 and "--horizon" in err


def test_a_season_given_is_fitted_as_given(tmp_path, capsys):
    """--season 12h on the example's 5-min samples: that cycle is fitted (on a 7.5 min grid, 96 steps), not the day
    the search would find."""
    code, out, err = run_main([*plan(tmp_path, "--season", "12h"), "--json"], capsys)
    assert code == 0, err
    fc = json.loads(out)["forecast"]
    (source,) = fc["sources"]
    assert source["forecast"] and (source["period_s"], source["step_s"]) == (43_200, 450)
    assert fc["season_s"] == 43_200
    code, out, err = run_main(plan(tmp_path, "--season", "12h"), capsys)
    assert code == 0 and "a 12 h season)" in out, out


def test_season_needs_forecast(tmp_path, capsys):
    base = ["plan", "--inventory", EDGE_LAB, "--profile", IOT, "--out", tmp_path / "out"]
    code, _, err = run_main([*base, "--season", "8h"], capsys)
    assert code == 2 and "--season: is the load's cycle a forecast fits: add --forecast HISTORY" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
