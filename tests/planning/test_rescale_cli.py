"""``placement plan --rescale`` end to end: the plan files follow the chosen parallelism (plan.json, schedulercfg,
placement.json, the picture, the tables), and every malformed target or bound is a one-line error naming the file and
field, with no plan directory written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from test_rescale_baselines import FILTERED_MBIT, RAW_MBIT, edge_filter

from placement.writers.planjson import load_plan
from placement.writers.schedulercfg import parse_schedulercfg
from support.cli import run_main


@pytest.fixture
def files(tmp_path: Path):
    """The edge-filter instance as an inventory file and a profile file."""
    space = edge_filter()
    inv, prof = tmp_path / "inv.yaml", tmp_path / "job.json"
    inv.write_text(yaml.safe_dump(space.inventory.model_dump(mode="json", by_alias=True), allow_unicode=True))
    prof.write_text(json.dumps(space.profile.model_dump(mode="json")))
    return inv, prof


def plan_args(files, out, *extra):
    inv, prof = files
    return ["plan", "--inventory", inv, "--profile", prof, "--out", out, "--rescale", *extra]


def test_rescaled_plan_files_follow_the_new_parallelism(files, tmp_path, capsys):
    out = tmp_path / "plan"
    code, stdout, err = run_main(plan_args(files, out, "--compare", "--json"), capsys)
    assert code == 0, err
    summary = json.loads(stdout)
    results = {r["strategy"]: r for r in summary["results"]}
    assert list(results) == ["joint", "placement alone", "DS2 → ILP"]
    assert results["joint"]["wan_mbit"] == pytest.approx(FILTERED_MBIT, rel=0.02)
    assert results["placement alone"]["wan_mbit"] == pytest.approx(RAW_MBIT, rel=0.02)
    assert summary["parallelism"]["joint"] == {"Source: S": 1, "Filter": 3, "Sink: K": 1}
    assert summary["parallelism"]["DS2 → ILP"]["Filter"] == 1

    plan = load_plan(out)
    assert plan.parallelism == {"source-s": 1, "filter": 3, "sink-k": 1}
    assert plan.rescale.changed == {"Filter": [1, 3]}
    assert plan.rescale.target_records_per_s == {"source-s": 10_000.0}
    assert plan.solver.status == "optimal" and [s.name for s in plan.solver.stages] == [
        "wan",
        "server_cpu",
        "latency",
        "subtasks",
    ]
    cfg = parse_schedulercfg((out / "schedulercfg").read_text())
    assert {label: addr for label, addr in cfg.items() if label.startswith("Filter")} == {
        "Filter (1/3)": "10.0.1.1",
        "Filter (2/3)": "10.0.1.1",
        "Filter (3/3)": "10.0.1.1",
    }
    assert json.loads((out / "placement.json").read_text())["Filter"] == ["rpi1", "rpi1", "rpi1"]
    assert "Filter ×3" in (out / "plan.dot").read_text()
    # custom mode: a REST jar run cannot change parallelism on Flink 2.3 — the script refuses before it stops anything
    proc = subprocess.run(
        ["bash", str(out / "redeploy.sh"), "job", "jar"], capture_output=True, text=True, timeout=30, check=False
    )
    assert proc.returncode == 1 and proc.stderr.startswith("this plan changes parallelism (Filter 1→3)")


def test_vanilla_mode_redeploy_passes_the_parallelism_in_the_mapping(files, tmp_path, capsys):
    out = tmp_path / "plan"
    code, _stdout, err = run_main(plan_args(files, out, "--mode", "vanilla"), capsys)
    assert code == 0, err
    script = (out / "redeploy.sh").read_text()
    assert "changes parallelism" not in script and r"\"Filter\":[\"rpi1\",\"rpi1\",\"rpi1\"]" in script


def test_rescale_tables_show_parallelism_and_baselines(files, tmp_path, capsys):
    code, stdout, err = run_main(plan_args(files, tmp_path / "plan", "--compare"), capsys)
    assert code == 0, err
    assert "target: Source: S 10,000 records/s (1× measured)" in stdout
    table = stdout[stdout.index("Parallelism") :]
    filter_row = next(line for line in table.splitlines() if line.startswith("│ Filter"))
    assert [cell.strip() for cell in filter_row.split("│")[2:6]] == ["1", "1", "3", "rpi1 ×3"]
    assert "placement" in stdout and "DS2 → ILP" in stdout


def test_target_rate_sizes_for_that_rate(files, tmp_path, capsys):
    out = tmp_path / "plan"
    code, _stdout, err = run_main(plan_args(files, out, "--target-rate", "Source: S=15000", "--json"), capsys)
    assert code == 0, err
    plan = load_plan(out)
    # 15 000 records/s: one Pi instance needs 2.5/p cores of a thread: p = 4 keeps up (0.625 ≤ 0.8)
    assert plan.parallelism["filter"] == 4 and plan.rescale.target_records_per_s == {"source-s": 15_000.0}
    assert plan.objective.wan_mbit == pytest.approx(FILTERED_MBIT * 1.5, rel=0.02)


def test_a_target_nothing_keeps_up_with_is_infeasible_with_a_reason(files, tmp_path, capsys):
    code, _stdout, err = run_main(plan_args(files, tmp_path / "plan", "--target-rate", "Source: S=80000"), capsys)
    assert code == 3
    assert err.count("\n") == 1 and "Source: S (1/1) cannot keep up on any host it may run on" in err
    assert not (tmp_path / "plan").exists()


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--target-rate", "Source: S=5"], "--target-rate: needs --rescale"),
        (["--rescale", "--target-rate", "Source: S=lots"], "--target-rate: 'lots' is not a rate in records/s"),
        (["--rescale", "--target-rate", "Sauce=5"], "--target-rate: 'Sauce' names no source of job 'tiny'"),
        (["--rescale", "--target-rate", "Filter=5"], "--target-rate: 'Filter' is not a source of job 'tiny'"),
    ],
)
def test_bad_targets_are_one_line_errors(files, tmp_path, capsys, extra, message):
    inv, prof = files
    code, _out, err = run_main(
        ["plan", "--inventory", inv, "--profile", prof, "--out", tmp_path / "plan", *extra], capsys
    )
    assert code == 2 and err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert "Traceback" not in err and not (tmp_path / "plan").exists()


@pytest.mark.parametrize(
    "bounds,message",
    [
        ({"Filter": {"min": 5, "max": 2}}, "parallelism.Filter.min: min 5 is above max 2"),
        ({"Filter": {"max": 0}}, "parallelism.Filter.max: Input should be greater than or equal to 1"),
        ({"Filter": {"most": 3}}, "parallelism.Filter.most: unknown field"),
        ({"Source: S": {"min": 2}}, "parallelism.Source: S: 'Source: S' keeps its parallelism 1 (a source"),
        ({"Filter": {"min": 500}}, "parallelism.Filter: no parallelism of 'Filter' fits: 500..128"),
    ],
)
def test_bad_parallelism_bounds_are_one_line_errors(files, tmp_path, capsys, bounds, message):
    inv, prof = files
    doc = yaml.safe_load(inv.read_text())
    doc["parallelism"] = bounds
    inv.write_text(yaml.safe_dump(doc, allow_unicode=True))
    code, _out, err = run_main(
        ["plan", "--inventory", inv, "--profile", prof, "--out", tmp_path / "plan", "--rescale"], capsys
    )
    assert code == 2 and err.count("\n") == 1 and f"{inv}: {message}" in err, err
    assert not (tmp_path / "plan").exists()
