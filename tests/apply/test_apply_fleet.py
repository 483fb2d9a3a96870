"""Two jobs in one cluster applied as one change (``placement apply --plan FLEET``), on the real parts: the shared Flink
cluster of the apply tests, its TaskManagers ``server`` and ``rpi1``, sshd "hosts" in network namespaces.

* a dry run shows both jobs' steps in one sequence; one job's stale plan refuses the change, nothing changed;
* both jobs moved one after the other (their profiles known, so is what the running placements put on the uplink),
  every subtask of both verified where planned;
* a fault after the first job's stop — with no profiles both are stopped first, and the second job's resubmit fails
  for real (its plan splits the keyed window, which the job's own main() rejects at submit) — rolls both back: each
  runs where it ran, from its own savepoint, its keyed running totals continuing;
* ``placement watch`` of both (``--apply auto``): an uplink their running placements break is relieved by one joint
  re-plan, applied as one change through the same fleet apply.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from apply_support import (
    ALL_SERVER,
    JOB_ARGS,
    JOB_NAME,
    MOVED,
    PLACED,
    PLACEMENT,
    SshLab,
    assert_keyed_state_continued,
    fleet_profile,
    let_totals_grow,
    read_audit,
    run_cli,
    running_job,
    write_inventory,
)

from placement.errors import PlacementError
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.writers.planjson import load_plan
from support.plan_dirs import write_fleet_dir

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(600)]

JOB_B = "pp-apply-iot-b"
ARGS_B = [*JOB_ARGS[:-1], JOB_B]  # the same job under another name (JOB_ARGS ends with --job-name NAME)


@dataclass(frozen=True)
class Env:
    inventory: Path
    home: Path
    work: Path


@pytest.fixture(scope="module")
def job_b(flink_rest, lab_jobs_jar, flink_support):
    """The second job, submitted (not awaited) before the apply tests' IoT job, so that both deploy together; env waits
    until it is RUNNING."""
    job = flink_rest.run_jar(flink_rest.upload_jar(lab_jobs_jar), entry_class=IOT_SENSOR_JOB, program_args=ARGS_B)
    try:
        yield job
    finally:
        for j in flink_rest.running_jobs():
            if j.name == JOB_B:
                with contextlib.suppress(PlacementError):
                    flink_support.cancel_job(j.id, flink_rest)


@pytest.fixture(scope="module")
def env(tmp_path_factory, flink_rest, lab_jobs_jar, job_b, ssh_lab: SshLab, flink_cluster, iot_job):
    """The apply tests' IoT job and a second one beside it; the inventory names both (job: and jobs:)."""
    assert JOB_ARGS[-2] == "--job-name"
    work = tmp_path_factory.mktemp("pp-apply-fleet")
    home = work / "flink-home"
    (home / "conf").mkdir(parents=True)
    inv = write_inventory(
        work / "inventory.yaml",
        ssh_lab,
        rest_url=flink_cluster.rest_url,
        home=home,
        savepoint_dir=work / "savepoints",
        jar=lab_jobs_jar,
    )
    doc = yaml.safe_load(inv.read_text())
    doc["jobs"] = [{"name": JOB_B, "program_args": ARGS_B}]
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    flink_rest.wait_until_running(job_b, timeout=120)  # RUNNING is enough
    return Env(inv, home, work)


def counts(mapping) -> dict[tuple[str, str], int]:
    return dict(Counter((v, h) for v, hosts in mapping.items() for h in hosts))


def test_a_dry_run_shows_the_whole_sequence_and_a_failed_preflight_of_one_job_changes_nothing(env: Env, flink_rest):
    before = {n: running_job(flink_rest, n) for n in (JOB_NAME, JOB_B)}
    placement = {n: flink_rest.placement_counts(j) for n, j in before.items()}
    fleet = write_fleet_dir(env.work / "fleet-dry", env.inventory, {JOB_NAME: PLACED, JOB_B: MOVED})
    result = run_cli("apply", "--plan", str(fleet), "--inventory", str(env.inventory), "--dry-run")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "dry run: preflight of every job passed; nothing was changed" in out
    stops = [out.index(f"[stop] REST POST /jobs/{before[n]}/stop") for n in (JOB_NAME, JOB_B)]
    assert max(stops) < out.index("[redeploy] REST POST /jars/<jar>/run")  # stop-all: both stopped, then started
    assert out.count("set -C") == 1 and f"{JOB_B} r1. [redeploy]" in out
    # the second job's plan has a vertex its running job does not: refused before anything, naming the job
    wrong = write_fleet_dir(
        env.work / "fleet-wrong", env.inventory, {JOB_NAME: PLACED, JOB_B: {**MOVED, "Sink: Elsewhere": ["server"]}}
    )
    result = run_cli("apply", "--plan", str(wrong), "--inventory", str(env.inventory))
    assert result.returncode == 2, result.stdout + result.stderr
    err = result.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("error: preflight refused, nothing was changed: job pp-apply-iot-b: stale plan")
    assert f"job {JOB_NAME}:" not in err
    for name, job in before.items():
        assert running_job(flink_rest, name) == job and flink_rest.placement_counts(job) == placement[name]
    assert not (env.work / "savepoints").exists() and not (wrong / "apply-audit.jsonl").exists()


def test_two_jobs_are_applied_as_one_change_and_every_subtask_of_both_verified(env: Env, flink_rest):
    # profiles known, every link far from full: moved one job at a time, in the fleet's order
    profiles = {n: fleet_profile(env.work / f"{n}.profile.json", n) for n in (JOB_NAME, JOB_B)}
    fleet = write_fleet_dir(
        env.work / "fleet-1",
        env.inventory,
        {JOB_NAME: PLACED, JOB_B: MOVED},
        profiles=profiles,
        link_mbit={"rpi1→server": {JOB_NAME: 0.4, JOB_B: 0.2}},
    )
    before = {n: running_job(flink_rest, n) for n in (JOB_NAME, JOB_B)}
    result = run_cli("apply", "--plan", str(fleet), "--inventory", str(env.inventory), "--settle", "1", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    # --json: the report on stderr, stdout the document alone
    assert "order: sequential: moving one job at a time in this order never puts more on a link" in result.stderr
    assert "applied: 2 job(s) run every subtask on its planned TaskManager (sequential" in result.stderr
    doc = json.loads(result.stdout)
    assert (doc["format"], doc["fleet"], doc["dry_run"]) == ("placement.apply-summary/v1", True, False)
    assert doc["order"]["strategy"] == "sequential" and doc["outcome"]["status"] == "applied"
    said = {j["name"]: j for j in doc["jobs"]}
    for name, mapping in ((JOB_NAME, PLACED), (JOB_B, MOVED)):
        job = running_job(flink_rest, name)
        assert job != before[name]
        assert flink_rest.placement_counts(job) == counts(mapping)
        mine = said[name]
        assert (mine["job_id"], mine["outcome"]["status"], mine["outcome"]["job_id"]) == (before[name], "applied", job)
        # every step ran but the lock's: the fleet takes one, the first job's, for the whole change
        assert {s["status"] for s in mine["steps"] if "apply.lock" not in s["description"]} == {"done"}
        lock = [s["status"] for s in mine["steps"] if "apply.lock" in s["description"]]
        assert lock == (["done", "skipped"] if name == doc["order"]["jobs"][0] else ["skipped", "skipped"])
        assert {s["status"] for s in mine["rollback"]} == {"skipped"}
        planned = {(r["vertex"], r["host"]): r["planned"] for r in mine["verify"] if r["planned"]}
        assert planned == counts(mapping) and all(r["ok"] for r in mine["verify"])
        state = json.loads((env.home / "placement" / f"state.{name}.json").read_text())
        assert state["job_id"] == job and state["program_args"][-1] == json.dumps(mapping, separators=(",", ":"))
    audit = read_audit(fleet / "apply-audit.jsonl")
    assert audit[0]["event"] == "fleet" and audit[0]["strategy"] == "sequential"
    assert [r["kind"] for r in audit if r["event"] == "ok" and r["kind"] in ("lock", "stop", "submit", "verify")] == [
        "lock",
        "stop",
        "submit",
        "verify",
        "stop",
        "submit",
        "verify",
    ]
    assert audit[-1]["status"] == "applied"
    assert not (env.home / "placement" / "apply.lock").exists()


def test_a_fault_after_the_first_jobs_stop_rolls_both_back_with_their_keyed_state(env: Env, flink_rest):
    fleet = write_fleet_dir(
        env.work / "fleet-2",
        env.inventory,
        {JOB_NAME: ALL_SERVER, JOB_B: {**MOVED, "Window Aggregate": ["server", "rpi1"]}},
    )
    jobs = {n: running_job(flink_rest, n) for n in (JOB_NAME, JOB_B)}
    placement = {n: flink_rest.placement_counts(j) for n, j in jobs.items()}
    totals = {n: let_totals_grow(flink_rest, j, min_total=300.0) for n, j in jobs.items()}
    t0 = time.monotonic()
    result = run_cli("apply", "--plan", str(fleet), "--inventory", str(env.inventory), "--settle", "1")
    assert result.returncode == 1, result.stdout + result.stderr
    err = result.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert f"job {JOB_B}:" in err and "vanilla Flink cannot split 'Window Aggregate'" in err
    assert "every stopped job rolled back to where it ran" in err
    for name, old in jobs.items():
        new = running_job(flink_rest, name)
        assert new != old
        assert flink_rest.placement_counts(new) == placement[name]
        assert_keyed_state_continued(flink_rest, new, totals[name], t0)
        state = json.loads((env.home / "placement" / f"state.{name}.json").read_text())
        assert state["job_id"] == new and state["rolled_back"]
    audit = read_audit(fleet / "apply-audit.jsonl")
    assert [r["kind"] for r in audit if r["event"] == "failed"] == ["submit"]
    assert next(r for r in audit if r["event"] == "fleet-rollback")["failed"] == JOB_B
    assert audit[-1]["status"] == "rolled-back"
    assert not (env.home / "placement" / "apply.lock").exists()


def test_watch_of_both_jobs_re_plans_them_together_on_a_broken_uplink_and_applies_the_set_as_one_change(
    env: Env, flink_rest, tmp_path
):
    """``placement watch --job-name A --job-name B --apply auto`` for real: both jobs run where the roll back left them
    (A as PLACED, B as MOVED: B's parsed readings cross the uplink); the watch's inventory gives that uplink less
    than their measured load, so the running placement breaks it (relief), the joint re-plan keeps both jobs' readings
    on rpi1 and is applied through ``placement apply --plan FLEET`` — every subtask of both jobs where the fleet's
    plans say, their keyed totals continuing. A's PLACED is vanilla lanes (one vertex per lane under one name): the
    watch profiles it, reads its sources' rates and prices where it runs as the job's own vertices."""
    jobs = {n: running_job(flink_rest, n) for n in (JOB_NAME, JOB_B)}
    assert flink_rest.placement_counts(jobs[JOB_B]) == counts(MOVED)
    totals = {n: let_totals_grow(flink_rest, j, min_total=300.0) for n, j in jobs.items()}  # restored: at once
    doc = yaml.safe_load(env.inventory.read_text())
    # 0.3 Mbit/s: B's readings (2 x 200/s) alone need more; both jobs' alarms (the Filter's share) need far less
    doc["links"] = [{"from": "rpi1", "to": "server", "bandwidth": "300kbit"}]
    # the planner charges each subtask a fixed share of its host's memory; the test cluster's TaskManagers are small
    # processes on this machine, the server's 4 GiB too little for both jobs' 13 subtasks
    doc["hosts"][0]["memory"] = "16GiB"
    doc["pins"] = {"sources": {"Source: Sensors": "rpi1"}}  # both jobs' readings are born on rpi1
    doc["jobs"] = [{"name": JOB_NAME, "program_args": JOB_ARGS}, {"name": JOB_B, "program_args": ARGS_B}]
    inv = tmp_path / "watch-inventory.yaml"
    inv.write_text(yaml.safe_dump(doc, sort_keys=False))
    work, log = tmp_path / "watch", tmp_path / "watch.out"
    t0 = time.monotonic()
    # the first decision a whole window past --warmup (Flink's rate meters average 60 s; the jobs were just restored);
    # stopped (SIGTERM, as a service manager stops it) once the change is recorded
    with log.open("w") as out:
        watch = subprocess.Popen(
            [
                *PLACEMENT,
                "watch",
                "--inventory",
                str(inv),
                "--job-name",
                JOB_NAME,
                "--job-name",
                JOB_B,
                "--apply",
                "auto",
                "--engine",
                "pandas",
                "--interval",
                "4",
                "--window",
                "8",
                "--sample",
                "1",
                "--flush",
                "2",
                "--warmup",
                "60",
                "--settle",
                "1",
                "--cooldown",
                "600",
                "--duration",
                "200",
                "--work-dir",
                str(work),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            applied = wait_for_an_apply(work / "decisions.jsonl", watch, timeout=200)
            assert applied is not None, log.read_text()[-3000:]
            # read at once: a fresh start could not have reached the totals taken before (restored from a savepoint)
            for name in (JOB_NAME, JOB_B):
                assert_keyed_state_continued(flink_rest, running_job(flink_rest, name), totals[name], t0)
        finally:
            watch.terminate()
            rc = watch.wait(timeout=60)
    assert rc == 0, log.read_text()[-3000:]
    assert "watch stopped after" in log.read_text() and "1 applied, 0 rolled back" in log.read_text()
    records = read_audit(work / "decisions.jsonl")
    rec = applied
    assert (rec["decision"]["action"], rec["decision"]["kind"]) == ("apply", "relief")
    assert rec["decision"]["reason"].startswith("relief: the running placement breaks link rpi1→server needs 0.")
    # no rate drift before it: A's sources run as one vertex per lane (vanilla), their rates summed over the lanes
    assert not [d for r in records for j in r.get("jobs") or [] for d in j["drifts"] if d["kind"] == "rate"], records
    assert sorted(rec["apply"]["jobs"]) == sorted([JOB_NAME, JOB_B]) and rec["apply"]["changed"] is True
    fleet_dir = Path(rec["proposal"]["plan_dir"])
    for name in (JOB_NAME, JOB_B):
        planned = load_plan(fleet_dir / name / "plan.json")
        job = running_job(flink_rest, name)
        assert job != jobs[name] and job == rec["apply"]["jobs"][name]["job_id"]
        assert flink_rest.placement_counts(job) == counts(planned.mapping()), name
    # the set fits the link it broke: B's Filter now runs beside its Parse on rpi1
    assert counts(load_plan(fleet_dir / JOB_B / "plan.json").mapping())[("Filter", "rpi1")] == 2
    (link,) = json.loads((fleet_dir / "fleet.json").read_text())["links"]
    assert link["mbit"] <= link["usable_mbit"] == 0.27 and set(link["jobs"]) == {JOB_NAME, JOB_B}


def wait_for_an_apply(log: Path, watch: subprocess.Popen, timeout: float) -> dict | None:
    """The first decision record with an apply outcome, once the watch writes it (None: the watch ended or time ran
    out first)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and watch.poll() is None:
        lines = log.read_text().split("\n")[:-1] if log.exists() else []  # whole lines only: one may be half written
        done = [r for r in map(json.loads, filter(None, lines)) if r.get("apply")]
        if done:
            return done[0]
        time.sleep(1.0)
    return None
