"""What ``apply`` knows without a cluster comes first (issue 26, defect 6): a plan made from another inventory is
stale, said before any SSH or REST call — before the fix a dry run against a cluster that was down reported "Flink
REST is not up" and never that the plan was stale. The shipped edge-lab inventory names no jar that is not shipped.
"""

from __future__ import annotations

import json

import pytest
import yaml

from placement.apply.request import load_request
from placement.errors import BadInput
from placement.inventory import load_inventory
from support.cli import EDGE_LAB, PROFILES, one_line_error, plan_args, run_placement, unreachable_edge_lab
from support.cli import IOT as IOT_PROFILE
from support.plan_dirs import write_plan_dir


def test_a_stale_plan_is_found_offline_before_the_cluster_is_asked(tmp_path):
    inventory = unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    changed = unreachable_edge_lab(tmp_path, cores=4)  # the inventory changed since the plan
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
    inventory = unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    done = run_placement("apply", tmp_path / "plan", "--inventory", inventory, "--dry-run", cwd=tmp_path, timeout=120)
    assert done.returncode == 1  # a dry run is a preflight, and this one could not check the cluster
    assert "could not check the cluster: " in one_line_error(done) and "nothing was changed" in done.stderr
    shown = done.stdout
    assert shown.index("NOT CHECKED") < shown.index("steps:")
    assert "Flink REST is not up" in shown.split("steps:")[0]
    # what the plan changes against what runs is not known, and said so once, not presumed different
    assert "placement against the running job: unknown, the cluster could not be read\n" in shown
    assert "the running placement differs" not in shown
    assert "%3C" not in shown and "/iot-sensors.schedulercfg" in shown.split("steps:")[0]
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


def test_a_dry_run_by_job_id_names_no_encoded_placeholder(tmp_path):
    """By --job ID alone the job's name is known only once REST is read: the read is shown with a placeholder as it
    is, the steps with the plan's job's file (before, both as the file ``%3Cjob%20name%3E.schedulercfg``)."""
    inventory = unreachable_edge_lab(tmp_path)
    assert run_placement(*plan_args(tmp_path / "plan", inventory), cwd=tmp_path).returncode == 0
    done = run_placement(
        "apply", tmp_path / "plan", "--inventory", inventory, "--job", "abc", "--dry-run", cwd=tmp_path, timeout=120
    )
    assert done.returncode == 1 and "%3C" not in done.stdout, done.stdout
    reads, steps = done.stdout.split("steps:")
    assert "/<job name>.schedulercfg" in reads and "/iot-sensors.schedulercfg" in steps


def test_fleet_order_on_one_jobs_plan_is_one_line_and_changes_nothing(tmp_path):
    inventory = unreachable_edge_lab(tmp_path)
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

    inventory = unreachable_edge_lab(tmp_path)
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
    assert shown.count("  placement against the running job: unknown, the cluster could not be read\n") == 2
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


# ---- a plan directory that cannot be right: refused before any host or REST call (issue 46, item 8) --------------

JOIN = PROFILES / "branching-join.json"


@pytest.fixture(scope="module")
def join_plan(tmp_path_factory):
    """The join example planned on an unreachable edge-lab: plan.json, its schedulercfg with contingency sections."""
    tmp = tmp_path_factory.mktemp("join")
    inventory = unreachable_edge_lab(tmp)
    assert run_placement(*plan_args(tmp / "plan", inventory, JOIN), cwd=tmp).returncode == 0
    return tmp / "plan", inventory


def _copy_plan(join_plan, tmp_path):
    plan, inventory = join_plan
    copy = tmp_path / "plan"
    copy.mkdir()
    for name in ("plan.json", "schedulercfg"):
        (copy / name).write_text((plan / name).read_text())
    return copy, inventory


def _refused(plan, inventory, tmp_path) -> str:
    done = run_placement("apply", plan, "--inventory", inventory, "--dry-run", cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""  # nothing read, no step shown
    return one_line_error(done)


def _move(plan, row: int, host: str, address: str) -> str:
    """plan.json's assignment row ``row`` moved to ``host`` as a hand edit would; its schedulercfg label."""
    doc = json.loads((plan / "plan.json").read_text())
    doc["assignment"][row].update(host=host, address=address)
    (plan / "plan.json").write_text(json.dumps(doc, indent=2))
    return doc["assignment"][row]["label"]


def test_a_plan_of_another_job_than_the_inventory_names_is_refused(tmp_path):
    """Without a jobs: entry for the join, apply would stop and resubmit iot-sensors (job:) for the join's plan."""
    inventory = unreachable_edge_lab(tmp_path)
    doc = yaml.safe_load(inventory.read_text())
    del doc["jobs"]
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert run_placement(*plan_args(tmp_path / "plan", inventory, JOIN), cwd=tmp_path).returncode == 0
    line = _refused(tmp_path / "plan", inventory, tmp_path)
    assert line.startswith(f"error: {inventory}: jobs: no entry named 'camera-meter-join', the job ")
    assert "apply would stop and resubmit 'iot-sensors' (job.name)" in line and "--job-name" in line


def test_a_plan_json_moved_by_hand_disagrees_with_its_schedulercfg(join_plan, tmp_path):
    plan, inventory = _copy_plan(join_plan, tmp_path)
    doc = json.loads((plan / "plan.json").read_text())
    row = next(i for i, a in enumerate(doc["assignment"]) if a["vertex"] == "Parse Meters")
    label = _move(plan, row, "server", "127.0.0.1")
    line = _refused(plan, inventory, tmp_path)
    assert line == (
        f"error: {plan / 'schedulercfg'}: line {label!r} places it on 'rpi2', plan.json (assignment[{row}].host) on "
        "'server': the two files disagree (one was edited by hand); write the plan directory again with "
        "`placement plan`"
    )


def test_a_plan_json_and_schedulercfg_moved_together_against_a_pin_are_refused(join_plan, tmp_path):
    """Both files say the same, but the camera source's data is born on rpi1 (pins.sources)."""
    plan, inventory = _copy_plan(join_plan, tmp_path)
    doc = json.loads((plan / "plan.json").read_text())
    row = next(i for i, a in enumerate(doc["assignment"]) if a["vertex"] == "Source: Cameras")
    label = _move(plan, row, "server", "127.0.0.1")
    cfg = plan / "schedulercfg"
    cfg.write_text(cfg.read_text().replace(f"{label}; 127.0.0.2\n", f"{label}; 127.0.0.1\n", 1))
    line = _refused(plan, inventory, tmp_path)
    assert line.startswith(f"error: {plan / 'plan.json'}: assignment[{row}].host: {label} on 'server' breaks ")
    assert "pins.sources.Source: Cameras (rpi1)" in line


def test_an_address_that_is_not_its_hosts_is_refused(join_plan, tmp_path):
    plan, inventory = _copy_plan(join_plan, tmp_path)
    doc = json.loads((plan / "plan.json").read_text())
    doc["assignment"][0]["address"] = "127.0.0.9"
    (plan / "plan.json").write_text(json.dumps(doc))
    line = _refused(plan, inventory, tmp_path)
    assert line.startswith(f"error: {plan / 'plan.json'}: assignment[0].address: '127.0.0.9' is not the address ")


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda t: t + "Foo (1/1); 127.0.0.1\n", "section [lost 127.0.0.3]: line 'Foo (1/1)' is no subtask"),
        (lambda t: t.split("\n[lost 127.0.0.2]")[0] + "\n", "no section [lost 127.0.0.2]"),
        (lambda t: t.replace("[lost 127.0.0.2]", "[lost 127.0.0.4]"), "section [lost 127.0.0.4]: plan.json has no"),
    ],
    ids=["extra-line", "section-missing", "section-of-another-host"],
)
def test_a_schedulercfg_whose_contingency_sections_plan_json_does_not_have_is_refused(join_plan, tmp_path, edit, said):
    plan, inventory = _copy_plan(join_plan, tmp_path)
    cfg = plan / "schedulercfg"
    cfg.write_text(edit(cfg.read_text()))
    line = _refused(plan, inventory, tmp_path)
    assert line.startswith(f"error: {cfg}: {said}"), line


@pytest.mark.parametrize(
    ("pins", "said"),
    [
        (
            {"operators": {"Parse": ["rpi1", "rpi2"]}},
            "Parse (1/1) on 'server' breaks the inventory's pins.operators.Parse",
        ),
        ({"forbid": {"parse": "server"}}, "Parse (1/1) on 'server' breaks the inventory's pins.forbid.parse (server)"),
    ],
    ids=["operators-by-name", "forbid-by-id"],
)
def test_a_plan_against_an_operator_pin_or_forbid_is_refused(tmp_path, pins, said):
    """A vertex is pinned by name or by id, as the planner matches it (plan_dirs' made-up ids are the name lowered)."""
    inventory = unreachable_edge_lab(tmp_path)
    doc = yaml.safe_load(inventory.read_text())
    doc["pins"].update(pins)
    inventory.write_text(yaml.safe_dump(doc, sort_keys=False))
    plan = write_plan_dir(
        tmp_path / "plan", inventory, {"Parse": ["server"], "Sink: Out": ["server"]}, job="iot-sensors"
    )
    with pytest.raises(BadInput) as refused:
        load_request(plan, inventory)
    assert str(refused.value).startswith(f"{plan / 'plan.json'}: assignment[0].host: {said}")
