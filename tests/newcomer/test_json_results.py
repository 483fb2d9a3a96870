"""Machine-readable results across the CLI (issue 46, item 11): every ``--json`` document says its versioned
``format`` and is the whole of stdout, the figures under names that say what they are, and ``-q`` keeps the result.

Each run is the installed ``placement`` in a child process, as a script would run it.
"""

from __future__ import annotations

import json

import pytest

from support.cli import EDGE_LAB, IOT, PROFILES, plan_args, run_placement

JOIN = PROFILES / "branching-join.json"


def _json_run(*args, cwd) -> dict:
    done = run_placement(*args, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # the whole of stdout: one document


def test_plan_json_calls_the_objectives_latency_term_by_its_name(tmp_path):
    summary = _json_run(*plan_args(tmp_path / "plan"), "--compare", "--json", cwd=tmp_path)
    assert summary["format"] == "placement.plan-summary/v2"
    recorded = json.loads((tmp_path / "plan" / "plan.json").read_text(encoding="utf-8"))
    ilp, *baselines = summary["results"]
    assert ilp["strategy"] == "ilp" and {b["strategy"] for b in baselines} == {"all-on-server", "greedy"}
    for result in summary["results"]:
        assert "latency_ms" not in result and result["latency_term_ms"] >= 0
    # the term is plan.json's objective.latency_ms (apply's contract keeps its name); the worst path is a path's
    assert ilp["latency_term_ms"] == pytest.approx(recorded["objective"]["latency_ms"])
    worst = max(recorded["paths"], key=lambda p: p["latency_ms"])
    assert (ilp["worst_path"], ilp["worst_path_ms"]) == (worst["path"], pytest.approx(worst["latency_ms"]))
    assert ilp["latency_term_ms"] != pytest.approx(ilp["worst_path_ms"])
    shown = _json_run("show", tmp_path / "plan", "--json", cwd=tmp_path)
    assert shown["format"] == summary["format"] and shown["results"][0]["latency_term_ms"] == ilp["latency_term_ms"]


def test_a_fleets_summary_renames_the_term_and_fleet_json_keeps_it(tmp_path):
    out = tmp_path / "fleet"
    args = ("plan", "--inventory", EDGE_LAB, "--profile", IOT, "--profile", JOIN, "--out", out, "--compare", "--json")
    summary = _json_run(*args, cwd=tmp_path)
    joint = summary["results"][0]
    assert summary["format"] == "placement.plan-summary/v2" and "latency_ms" not in joint
    assert set(joint["jobs"]) == {"iot-sensors", "camera-meter-join"}
    assert joint["latency_term_ms"] == pytest.approx(sum(j["latency_term_ms"] for j in joint["jobs"].values()))
    fleet = json.loads((out / "fleet.json").read_text(encoding="utf-8"))
    for said, kept in zip(summary["compare"], fleet["compare"], strict=True):
        assert said["latency_term_ms"] == kept["latency_ms"] and "latency_ms" not in said
        for job, figures in said["jobs"].items():
            assert figures.get("latency_term_ms") == kept["jobs"][job].get("latency_ms")
