"""What ``apply`` knows without a cluster comes first (issue 26, defect 6): a plan made from another inventory is
stale, said before any SSH or REST call — before the fix a dry run against a cluster that was down reported "Flink
REST is not up" and never that the plan was stale. The shipped edge-lab inventory names no jar that is not shipped.
"""

from __future__ import annotations

import yaml

from placement.inventory import load_inventory
from support.cli import EDGE_LAB, one_line_error, plan_args, run_placement
from support.cli import IOT as IOT_PROFILE


def _unreachable_edge_lab(tmp_path, **server_changes):
    """edge-lab with every address on this machine at a closed port: a live-cluster check fails at once. Each host
    at a loopback address of its own: an inventory's hosts must have distinct addresses."""
    doc = yaml.safe_load(EDGE_LAB.read_text())
    doc["ssh"]["port"] = 1
    for n, host in enumerate(doc["hosts"], start=1):
        host["address"] = f"127.0.0.{n}"
        if host["name"] == "server":
            host.update(server_changes)
    doc["flink"]["rest_url"] = "http://127.0.0.1:1"
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_a_stale_plan_is_found_offline_before_the_cluster_is_asked(tmp_path):
    inventory = _unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    changed = _unreachable_edge_lab(tmp_path, cores=4)  # the inventory changed since the plan
    done = run_placement("apply", tmp_path / "plan", "--inventory", changed, "--dry-run", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    line = one_line_error(done)
    assert line.startswith(f"error: {tmp_path / 'plan' / 'plan.json'}: inventory.digest: stale plan: ")
    assert "the inventory changed since `placement plan`" in line
    assert "REST" not in line and "ssh" not in line.lower()


def test_the_shipped_edge_lab_names_no_jar_that_is_not_there():
    inv = load_inventory(EDGE_LAB)
    assert inv.job.jar is None or (EDGE_LAB.parent / inv.job.jar).is_file()


def test_a_dry_run_against_an_unreachable_cluster_shows_its_steps_marked_unchecked(tmp_path):
    inventory = _unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    done = run_placement("apply", tmp_path / "plan", "--inventory", inventory, "--dry-run", cwd=tmp_path, timeout=120)
    assert done.returncode == 1  # a dry run is a preflight, and this one could not check the cluster
    assert "could not check the cluster: " in one_line_error(done) and "nothing was changed" in done.stderr
    shown = done.stdout
    assert shown.index("NOT CHECKED") < shown.index("steps:")
    assert "Flink REST is not up" in shown.split("steps:")[0]
    steps = shown.split("steps:")[1]
    for step in (
        "apply.lock",
        "POST /jobs/<job id>/stop",
        "iot-sensors.schedulercfg",
        "POST /jars/<jar>/run",
        "on its planned TaskManager",
    ):
        assert step in steps, (step, shown)
    assert "roll back" in steps


def test_fleet_order_on_one_jobs_plan_is_one_line_and_changes_nothing(tmp_path):
    inventory = _unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    done = run_placement(
        "apply", tmp_path / "plan", "--inventory", inventory, "--fleet-order", "stop-all", cwd=tmp_path
    )
    assert done.returncode == 2, done.stdout + done.stderr
    err = one_line_error(done)
    assert "is one job's plan; --fleet-order applies to a fleet's OUT" in err and "--fleet-order" in err
    assert not (tmp_path / "plan" / "apply-audit.jsonl").exists()


def test_a_fleet_dry_run_against_an_unreachable_cluster_shows_every_jobs_steps_unchecked(tmp_path):
    """A fleet as `placement plan` writes it for two profiles: the dry run shows both jobs' steps in one sequence
    (stop-all: no running load can be read), marked unchecked, and fails as a preflight that could not check."""
    from support.cli import PROFILES

    inventory = _unreachable_edge_lab(tmp_path)
    doc = yaml.safe_load(inventory.read_text())
    doc["jobs"] = [{"name": "camera-meter-join", "program_args": ["--job-name", "camera-meter-join"]}]
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
    planned = run_placement(
        "plan",
        "--inventory",
        inventory,
        "--profile",
        IOT_PROFILE,
        "--profile",
        PROFILES / "branching-join.json",
        "--out",
        tmp_path / "fleet",
        cwd=tmp_path,
    )
    assert planned.returncode == 0, planned.stderr
    done = run_placement(
        "apply", "--plan", tmp_path / "fleet", "--inventory", inventory, "--dry-run", cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "could not check the cluster: job iot-sensors: " in one_line_error(done)
    shown = done.stdout
    assert "order: stop-all: the running placement's load of iot-sensors, camera-meter-join is unknown" in shown
    asked = run_placement(
        "apply",
        "--plan",
        tmp_path / "fleet",
        "--inventory",
        inventory,
        "--dry-run",
        "--fleet-order",
        "stop-all",
        cwd=tmp_path,
        timeout=120,
    )
    assert asked.returncode == 1, asked.stdout + asked.stderr
    assert "order: stop-all: asked for (--fleet-order stop-all)" in asked.stdout
    steps = shown.split("steps (one lock for the whole change):")[1]
    assert steps.count("apply.lock") == 2  # taken once, released once
    assert steps.index("camera-meter-join [stop]") < steps.index("iot-sensors [redeploy]")
    for job in ("iot-sensors", "camera-meter-join"):
        assert f"{job}.schedulercfg" in steps and f"{job} r1." in steps
