"""``placement plan`` with several jobs whose inventory entries set priorities and budgets (issue 24, item 1): what
plan.json, fleet.json and the tables record, what a budget that cannot be met says, and ``--max-rate`` with a job's
``min_rate_scale`` (the others scale while it holds its minimum; a ``--rate-scale`` below it is refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from multi_job_factories import streaming_job
from planning_factories import cli_run, inventory
from test_multi_job_budgets import contested_40
from test_multi_job_cli import files, plan_args

from placement.writers.planjson import load_plan


def with_jobs(inv, jobs: list[dict]):
    doc = inv.model_dump(mode="json", by_alias=True)
    doc["jobs"] = jobs
    return type(inv).model_validate(doc)


def test_plan_and_fleet_json_record_each_budget_and_its_use(tmp_path, capsys):
    inv, profiles = contested_40()
    inv = with_jobs(inv, [{"name": "job-A", "priority": 1, "budget": {"uplinks": {"rpi1": 0.5}}}, {"name": "job-B"}])
    inv_path, paths = files(tmp_path, inv, profiles)
    out = tmp_path / "out"
    code, stdout, err = cli_run(plan_args(inv_path, paths, "--out", out), capsys)
    assert code == 0, err
    assert "1.00 ≤ 18.00" in stdout  # A's Mbit/s on rpi1's uplink beside its budget (50 % of 36)
    fleet = json.loads((out / "fleet.json").read_text())
    a, b = fleet["jobs"]
    assert "budget" not in b  # B sets nothing: its entry reads as before
    assert a["budget"] == {
        "priority": 1,
        "min_rate_scale": None,
        "rate_scale": 1.0,
        "uplinks": [
            {"link": "rpi1→server", "share": 0.5, "budget_mbit": pytest.approx(18), "mbit": pytest.approx(1, rel=1e-3)}
        ],
    }
    plan_a, plan_b = load_plan(out / a["dir"]), load_plan(out / b["dir"])  # the loader apply uses: optional fields
    assert plan_a.budget.uplinks[0].mbit == pytest.approx(1, rel=1e-3) and plan_a.budget.priority == 1
    assert plan_b.budget is None and "budget" not in json.loads((out / b["dir"] / "plan.json").read_text())
    assert [st["name"] for st in fleet["solver"]["stages"]][:2] == ["wan[p1]", "wan[p0]"]


def test_a_budget_short_cli_names_the_job_in_the_table_and_the_error(tmp_path, capsys):
    inv, profiles = contested_40()
    inv = with_jobs(
        inv,
        [{"name": "job-A", "budget": {"uplinks": {"rpi1": 0.2}}}, {"name": "job-B", "budget": {"uplinks": {"*": 0.5}}}],
    )
    inv_path, paths = files(tmp_path, inv, profiles)
    code, stdout, err = cli_run(plan_args(inv_path, paths, "--out", tmp_path / "out"), capsys)
    assert code != 0
    assert "budget of job job-A on link rpi1→server" in stdout
    assert "job job-A's budget on link rpi1→server" in err


def max_rate(tmp_path: Path, capsys, jobs: list[dict], *extra) -> tuple[int, dict | str]:
    inv = inventory(
        [{"name": "rpi1", "bandwidth": "20mbit"}], pins={"sources": {"Source: A": "rpi1", "Source: B": "rpi1"}}
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    inv_path, paths = files(tmp_path, with_jobs(inv, jobs), [streaming_job("A", 10), streaming_job("B", 10)])
    code, stdout, err = cli_run(plan_args(inv_path, paths, "--out", tmp_path / "out", "--json", *extra), capsys)
    return code, json.loads(stdout) if code == 0 else err


def test_max_rate_holds_a_job_at_its_minimum_and_scales_the_others(tmp_path, capsys):
    """Two jobs of 10 Mbit/s on one uplink of 18 usable. Scaled together they reach 0.9× (18 / 20, less framing);
    with A held at 1.2× (12 Mbit/s) B reaches 0.6× (6 / 10)."""
    code, free = max_rate(tmp_path / "free", capsys, [], "--max-rate")
    assert code == 0
    base = free["max_rate"]["scale"]
    assert base == pytest.approx(0.9, rel=0.02)
    code, held = max_rate(
        tmp_path / "held", capsys, [{"name": "job-A", "budget": {"min_rate_scale": 1.2}}], "--max-rate"
    )
    assert code == 0, held
    scale = held["max_rate"]["scale"]
    assert scale == pytest.approx(0.6, rel=0.02)
    a = held["jobs"][0]["budget"]
    assert a["min_rate_scale"] == 1.2 and a["rate_scale"] == 1.2
    link = held["results"][0]["links"]["rpi1→server"]
    assert link == pytest.approx(18, rel=1e-3)  # the uplink is what binds
    jobs = held["results"][0]["jobs"]
    assert jobs["job-A"]["wan_mbit"] > 2 * jobs["job-B"]["wan_mbit"]  # 12 against 6
    # the minimum above what fits at all: refused, naming the minima
    code, err = max_rate(tmp_path / "over", capsys, [{"name": "job-A", "budget": {"min_rate_scale": 2}}], "--max-rate")
    assert code != 0 and "min_rate_scale held: job-A 2" in err


def test_a_rate_scale_below_a_minimum_is_refused(tmp_path, capsys):
    code, err = max_rate(tmp_path, capsys, [{"name": "job-A", "budget": {"min_rate_scale": 1.2}}], "--rate-scale", "1")
    assert code != 0
    line = [ln for ln in err.splitlines() if "min_rate_scale" in ln]
    assert len(line) == 1 and "--rate-scale" in line[0] and "job 'job-A'" in line[0] and "1.2" in line[0]
    code, ok = max_rate(
        tmp_path / "ok", capsys, [{"name": "job-A", "budget": {"min_rate_scale": 1.2}}], "--rate-scale", "0.7"
    )
    assert code != 0  # 0.7 < 1.2 too
    code, ok = max_rate(
        tmp_path / "fine", capsys, [{"name": "job-A", "budget": {"min_rate_scale": 0.5}}], "--rate-scale", "0.7"
    )
    assert code == 0 and ok["results"][0]["status"] == "optimal"


def test_a_plan_of_one_job_says_its_priority_and_budget_are_not_used(tmp_path, capsys):
    inv, profiles = contested_40()
    inv = with_jobs(inv, [{"name": "job-A", "priority": 1, "budget": {"uplinks": {"rpi1": 0.01}}}])  # 0.36 Mbit/s
    inv_path, paths = files(tmp_path, inv, profiles[:1])
    out = tmp_path / "out"
    code, stdout, err = cli_run(plan_args(inv_path, paths, "--out", out), capsys)
    assert code == 0, err
    assert "note: jobs[] entry 'job-A' sets a priority or budget" in stdout and "jobs[]" not in err  # not a warning
    plan = load_plan(out)
    assert plan.objective.wan_mbit == pytest.approx(1, rel=1e-3) and plan.budget is None  # over 0.36: not capped
    assert any("planned together" in w for w in plan.warnings)


def test_compare_plans_one_by_one_the_higher_priority_first_and_says_the_order(tmp_path, capsys):
    """contested(): whichever job is planned first reduces on the Pi's one core. In --profile order A takes it and B
    finds no plan; with priority 1 for B, B is planned first (reduced, 1 Mbit/s) and A fits raw (10): 11 Mbit/s, as
    the joint plan. Equal priorities keep --profile order."""
    from test_multi_job_cli import contested

    inv, profiles = contested()
    runs, args = {}, {}
    for tag, jobs in (
        ("none", []),
        ("b-first", [{"name": "job-B", "priority": 1}, {"name": "job-A"}]),
        ("tie", [{"name": "job-A", "priority": 1}, {"name": "job-B", "priority": 1}]),
    ):
        (tmp_path / tag).mkdir()
        args[tag] = plan_args(*files(tmp_path / tag, with_jobs(inv, jobs), profiles), "--compare")
        code, stdout, err = cli_run([*args[tag], "--out", tmp_path / tag / "out", "--json"], capsys)
        assert code == 0, err
        runs[tag] = next(c for c in json.loads(stdout)["compare"] if c["strategy"] == "one by one")
    assert runs["none"]["order"] == ["job-A", "job-B"] and runs["none"]["failed"] == "job-B"
    assert runs["tie"]["order"] == ["job-A", "job-B"] and runs["tie"]["failed"] == "job-B"
    b_first = runs["b-first"]
    assert b_first["order"] == ["job-B", "job-A"] and b_first["feasible"] and b_first["failed"] is None
    assert b_first["jobs"]["job-B"]["wan_mbit"] == pytest.approx(1.0) and b_first["wan_mbit"] == pytest.approx(11.0)
    # the terminal's row says the order it used
    code, stdout, err = cli_run([*args["b-first"], "--out", tmp_path / "t"], capsys)
    assert code == 0, err
    assert any(line.startswith("│ one by one: job-B, job-A") for line in stdout.splitlines()), stdout
