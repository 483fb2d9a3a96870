"""``placement show PLAN_DIR`` (issue 46, item 12): a written plan's tables again without solving, read from its
plan.json — the very lines ``placement plan`` printed, and with ``--json`` the summary ``plan --json`` printed."""

from __future__ import annotations

import json

import pytest

from support.cli import EDGE_LAB, IOT, PROFILES, one_line_error, plan_args, run_placement

JOIN = PROFILES / "branching-join.json"


def _plan_lines(text: str) -> list[str]:
    """What plan printed of the plan itself: without its closing "wrote … to DIR" (wrapped onto a second line)."""
    lines = text.splitlines()
    return lines[: next(i for i, line in enumerate(lines) if line.startswith("wrote "))]


def _show_lines(text: str) -> list[str]:
    """What show printed of the plan: without the line that says which plan.json it read."""
    return [line for line in text.splitlines() if not line.startswith("plan /")]


@pytest.mark.parametrize(
    ("profile", "extra"),
    [(IOT, ()), (JOIN, ()), (IOT, ("--mode", "vanilla"))],
    ids=["iot", "join-with-contingencies", "vanilla"],
)
def test_show_prints_the_tables_plan_printed(tmp_path, profile, extra):
    planned = run_placement(*plan_args(tmp_path / "plan", EDGE_LAB, profile), *extra, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    shown = run_placement("show", tmp_path / "plan", cwd=tmp_path)
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert _show_lines(shown.stdout) == _plan_lines(planned.stdout)
    mode = "vanilla" if extra else "custom"
    assert f"plan {tmp_path / 'plan' / 'plan.json'}: {mode} mode, made " in shown.stdout
    assert "Latency per path" in shown.stdout and "Placement" in shown.stdout
    if profile == JOIN:
        assert "While an edge host or its uplink is lost" in shown.stdout


def test_a_rescaled_plan_shows_its_targets_and_parallelism(tmp_path):
    """plan.json keeps the target rates and both parallelisms, not the measured rates nor DS2's figures."""
    planned = run_placement(*plan_args(tmp_path / "plan"), "--rescale", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    shown = run_placement("show", tmp_path / "plan", cwd=tmp_path).stdout
    target = next(line for line in planned.stdout.splitlines() if line.startswith("target: "))
    assert target.split(" (")[0] + "\n" in shown

    def rows(text: str) -> list[list[str]]:
        table = text.split("Parallelism")[1].split("wrote ")[0]
        return [
            [c.strip() for c in line.strip()[1:-1].split("│")] for line in table.splitlines() if line.startswith("│")
        ]

    # vertex, today, joint, joint hosts: plan's columns but DS2's and why-fixed
    assert rows(shown) == [[v, today, joint, hosts] for v, today, _ds2, joint, hosts, _why in rows(planned.stdout)]


def test_show_json_is_plan_jsons_summary(tmp_path):
    planned = run_placement(*plan_args(tmp_path / "plan", EDGE_LAB, JOIN), "--json", cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    shown = run_placement("show", tmp_path / "plan", "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    want, have = json.loads(planned.stdout), json.loads(shown.stdout)
    assert list(have) == list(want)
    assert {k: v for k, v in have.items() if k != "out"} == {k: v for k, v in want.items() if k != "out"}
    assert set(have["out"]) == set(want["out"])


def test_a_fleet_shows_each_jobs_plan(tmp_path):
    planned = run_placement(
        "plan", "--inventory", EDGE_LAB, "--profile", IOT, "--profile", JOIN, "--out", tmp_path / "fleet", cwd=tmp_path
    )
    assert planned.returncode == 0, planned.stderr
    shown = run_placement("show", tmp_path / "fleet", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    heads = [line for line in shown.stdout.splitlines() if " on edge-lab — " in line]
    assert [h.split(" on ")[0] for h in heads] == ["iot-sensors", "camera-meter-join"]
    summary = json.loads(run_placement("show", tmp_path / "fleet", "--json", cwd=tmp_path).stdout)
    assert [j["job"] for j in summary["plans"]] == ["iot-sensors", "camera-meter-join"]


def test_an_older_plan_without_the_new_figures_shows_them_as_unknown(tmp_path):
    """Plans written before show existed record no usable cores or memory (nor, before issue 45, a link's delay)."""
    assert run_placement(*plan_args(tmp_path / "plan"), cwd=tmp_path).returncode == 0
    path = tmp_path / "plan" / "plan.json"
    doc = json.loads(path.read_text())
    for link in doc["links"]:
        del link["delay_ms"]  # read as plan.json's default, 0
    for host in doc["hosts"]:
        del host["cores_usable"], host["memory_mib_usable"]
    path.write_text(json.dumps(doc))
    shown = run_placement("show", tmp_path / "plan", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    hosts = shown.stdout.split("Hosts")[1].split("Latency per path")[0]
    server = next(line for line in hosts.splitlines() if "│ server" in line)
    assert "–" in server and "/–" in server


def _written(path, text):
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda d: d / "missing", "missing: no such plan directory"),
        (lambda d: d, "no plan.json in the plan directory"),
        (lambda d: _written(d / "plan.json", '{"format": "placement.plan/v1"}').parent, "plan.json: "),
    ],
    ids=["no-dir", "no-plan-json", "not-a-plan"],
)
def test_a_plan_dir_that_is_none_is_one_line(tmp_path, make, said):
    target = make(tmp_path)
    done = run_placement("show", target, cwd=tmp_path)
    assert done.returncode == 2
    assert said in one_line_error(done)
