"""Machine-readable results across the CLI (issue 46, item 11): every ``--json`` document says its versioned
``format`` and is the whole of stdout, the figures under names that say what they are, and ``-q`` keeps the result.

Each run is the installed ``placement`` in a child process, as a script would run it.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from placement.profile.format import load_profile
from support.cli import EDGE_LAB, IOT, PROFILES, REPO, one_line_error, plan_args, run_placement, unreachable_edge_lab

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


def _steps_said(report: str) -> list[str]:
    """The phases of the numbered steps the report lists (``  1. [prepare] …``), not the roll back's (``r1.``)."""
    return re.findall(r"^ +\d+\. \[(\w+)\]", report.split("steps:")[1].split("roll back:")[0], re.M)


def test_apply_json_of_a_dry_run_it_could_not_check(tmp_path):
    inventory = unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    args = ("apply", tmp_path / "plan", "--inventory", inventory, "--dry-run")
    text = run_placement(*args, cwd=tmp_path, timeout=120)
    done = run_placement(*args, "--json", cwd=tmp_path, timeout=120)
    assert done.returncode == text.returncode == 1  # the exit code --json leaves as it was
    doc = json.loads(done.stdout)
    assert doc["format"] == "placement.apply-summary/v1"
    assert (doc["fleet"], doc["job"], doc["mode"], doc["dry_run"]) == (False, "iot-sensors", "custom", True)
    assert doc["plan_dir"] == str(tmp_path / "plan") and doc["job_id"] is None  # never read: not a placeholder
    assert doc["diff"] is None  # unknown against a cluster it could not read, not presumed different
    assert any("Flink REST is not up" in p for p in doc["preflight"]["unchecked"])
    # the report went to stderr, the steps it lists are the document's, none of them run
    assert "NOT CHECKED" in done.stderr and "NOT CHECKED" not in done.stdout
    assert [s["phase"] for s in doc["steps"]] == _steps_said(done.stderr) == _steps_said(text.stdout)
    assert {s["status"] for s in doc["steps"] + doc["rollback"]} == {"skipped"}
    assert doc["rollback"] and doc["verify"] == []
    outcome = doc["outcome"]
    assert outcome["status"] == "refused" and outcome["problems"][0].startswith("could not check the cluster: ")
    assert f"error: {outcome['error']}" == done.stderr.strip().splitlines()[-1] == one_line_error(text)


def test_apply_json_of_a_fleet_has_each_jobs_steps(tmp_path):
    inventory = unreachable_edge_lab(tmp_path)
    out = tmp_path / "fleet"
    fleet_args = ("plan", "--inventory", inventory, "--profile", IOT, "--profile", JOIN, "--out", out)
    planned = run_placement(*fleet_args, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    done = run_placement("apply", "--plan", out, "--inventory", inventory, "--dry-run", "--json", cwd=tmp_path)
    assert done.returncode == 1
    doc = json.loads(done.stdout)
    assert doc["format"] == "placement.apply-summary/v1" and doc["fleet"] and doc["dry_run"]
    assert [j["name"] for j in doc["jobs"]] == ["iot-sensors", "camera-meter-join"]
    assert doc["order"]["strategy"] == "stop-all" and doc["order"]["jobs"] == ["iot-sensors", "camera-meter-join"]
    for job in doc["jobs"]:
        assert job["plan_dir"] == str(out / job["name"]) and job["outcome"] is None
        assert job["steps"] and {s["status"] for s in job["steps"]} == {"skipped"}
        assert [s["phase"] for s in job["steps"]][:2] == ["prepare", "stop"]
    assert doc["outcome"]["status"] == "refused" and "could not check the cluster" in doc["outcome"]["error"]


def test_apply_quiet_keeps_the_error_and_drops_the_report(tmp_path):
    inventory = unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    done = run_placement("apply", tmp_path / "plan", "--inventory", inventory, "--dry-run", "-q", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert "could not check the cluster: " in one_line_error(done)


HISTORY = REPO / "examples" / "metrics" / "iot-sensors"


def test_profile_json_says_the_file_and_the_tables_figures(tmp_path):
    args = ("profile", HISTORY, "--job-name", "iot-sensors", "--engine", "pandas")
    doc = _json_run(*args, "--out", tmp_path / "p.json", "--json", cwd=tmp_path)
    written = load_profile(tmp_path / "p.json")
    assert doc["format"] == "placement.profile-summary/v1" and doc["profile_format"] == written.format
    assert doc["out"] == str(tmp_path / "p.json") and doc["job"]["name"] == written.job.name == "iot-sensors"
    assert [o["id"] for o in doc["operators"]] == [v.id for v in written.vertices]
    for said, vertex in zip(doc["operators"], written.vertices, strict=True):
        assert (said["vertex"], said["parallelism"]) == (vertex.name, vertex.parallelism)
        assert said["records_out_per_s"] == pytest.approx(vertex.records_out_per_s)
        assert said["selectivity"] == vertex.stats.get("selectivity")
        busy = [s.busy_ms_per_s for s in vertex.subtasks if s.busy_ms_per_s is not None]
        assert said["busy_ms_per_s"] == pytest.approx(sum(busy) / len(busy))
    names = {v.id: v.name for v in written.vertices}
    assert [(e["source"], e["target"]) for e in doc["edges"]] == [
        (names[e.source], names[e.target]) for e in written.edges
    ]
    assert all(e["records_per_s"] is None or e["records_per_s"] >= 0 for e in doc["edges"])
    # the table prints the same figures: its first vertex's out/s, as the table rounds it
    table = run_placement(*args, "--out", tmp_path / "t.json", cwd=tmp_path)
    first = doc["operators"][0]
    row = next(line for line in table.stdout.splitlines() if line.startswith(f"│ {first['vertex']} "))
    assert f"{first['records_out_per_s']:,.0f}" in row
    quiet = run_placement(*args, "--out", tmp_path / "q.json", "-q", cwd=tmp_path)
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "") and (tmp_path / "q.json").is_file()


# ---- -q: warnings, errors and the one-line result ------------------------------------------------------------------


def test_netem_apply_quiet_says_one_line_for_the_links_it_would_shape(tmp_path):
    args = ("netem", "apply", "--inventory", EDGE_LAB, "--dry-run")
    loud, quiet = run_placement(*args, cwd=tmp_path), run_placement(*args, "-q", cwd=tmp_path)
    assert loud.returncode == quiet.returncode == 0, loud.stderr + quiet.stderr
    shaped = [line for line in loud.stdout.splitlines() if ": would shape → " in line]
    hosts = sorted({line.split()[0] for line in shaped})
    assert len(shaped) >= 3 and ": would shape → " not in quiet.stdout
    assert quiet.stdout.splitlines()[-1] == f"netem: would shape {len(shaped)} link(s) on {', '.join(hosts)}"
    # the dry run's commands are its result, kept
    assert [x for x in quiet.stdout.splitlines() if " tc " in x] == [x for x in loud.stdout.splitlines() if " tc " in x]


def test_show_quiet_is_the_summary_line_alone(tmp_path):
    assert run_placement(*plan_args(tmp_path / "plan"), "-q", cwd=tmp_path).returncode == 0
    loud = run_placement("show", tmp_path / "plan", cwd=tmp_path)
    quiet = run_placement("show", tmp_path / "plan", "-q", cwd=tmp_path)
    assert loud.returncode == quiet.returncode == 0, quiet.stderr
    first, *rest = quiet.stdout.splitlines()  # the summary line, as show prints it under the plan's header
    job, summary = first.split(": ", 1)
    assert job == "iot-sensors" and [summary, *rest] == [x for x in loud.stdout.splitlines() if x in (summary, *rest)]
    assert "│" in loud.stdout and "│" not in quiet.stdout and rest[0].startswith("WAN ")


def test_watch_quiet_keeps_the_closing_line_and_the_error(tmp_path):
    doc = yaml.safe_load(EDGE_LAB.read_text())
    doc["flink"]["rest_url"] = "http://127.0.0.1:1"  # nothing listens there
    inventory = tmp_path / "inv.yaml"
    inventory.write_text(yaml.safe_dump(doc))
    args = ("watch", "--inventory", inventory, "--job-name", "iot-sensors", "--duration", "1", "--engine", "pandas")
    loud = run_placement(*args, "--work-dir", tmp_path / "w1", cwd=tmp_path, timeout=120)
    quiet = run_placement(*args, "--work-dir", tmp_path / "w2", "-q", cwd=tmp_path, timeout=120)
    assert loud.returncode == quiet.returncode == 1
    closing = [line for line in loud.stdout.splitlines() if line.startswith("watch stopped after 1 decisions")]
    assert len(closing) == 1 and len(loud.stdout.splitlines()) > 1  # the decision's line before it
    assert quiet.stdout.splitlines() == [closing[0].replace(str(tmp_path / "w1"), str(tmp_path / "w2"))]
    assert one_line_error(quiet).startswith("error: the watch never saw job 'iot-sensors': ")
