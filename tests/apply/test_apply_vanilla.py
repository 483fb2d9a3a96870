"""`placement apply` in vanilla mode against real sshd hosts and a real Flink cluster: dry run, full apply with the
verify table all green and keyed state carried over, a second apply that is a no-op, the audit log and the state file.

The tests of this module run in order on one job (module fixtures); each leaves it RUNNING.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from apply_support import (
    JOB_NAME,
    MOVED,
    PLACED,
    SETTLE,
    SshLab,
    assert_in_order,
    assert_keyed_state_continued,
    let_totals_grow,
    max_key_total,
    read_audit,
    run_cli,
    running_job,
    write_inventory,
    write_plan_dir,
)

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(600)]


@dataclass(frozen=True)
class Env:
    inventory: Path
    home: Path
    savepoints: Path
    work: Path
    rest_url: str


@pytest.fixture(scope="module")
def env(tmp_path_factory, ssh_lab: SshLab, flink_cluster, lab_jobs_jar, iot_job) -> Env:
    work = tmp_path_factory.mktemp("pp-apply-vanilla")
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
    return Env(inv, home, work / "savepoints", work, flink_cluster.rest_url)


def counts(mapping: dict[str, list[str]]) -> dict[tuple[str, str], int]:
    return dict(Counter((v, h) for v, hosts in mapping.items() for h in hosts))


def test_dry_run_prints_every_step_in_order_and_changes_nothing(env: Env, flink_rest, iot_job):
    plan = write_plan_dir(env.work / "plan-placed", env.inventory, PLACED)
    job = running_job(flink_rest)
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory), "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    order = [
        "set -C",
        "POST /jars/upload",
        f"POST /jobs/{job}/stop",
        "/run ",
        "until the job and every vertex are RUNNING",
        "taskmanager-id == planned host",
        "state.json",
        f"rm -f {env.home}/placement/apply.lock",
    ]
    assert_in_order(out, order)
    assert_in_order(
        out,
        [
            "ssh server: true",
            "ssh rpi1: true",
            f"ssh server: cat {env.home}/placement/state.json",
            "mktemp",
            "REST GET /overview",
        ],
        start="preflight read",
    )
    assert (
        '"--placement"' in out
        and '"allowNonRestoredState": true' in out
        and '"entryClass": "placement.lab.IotSensorJob"' in out
    )
    assert "roll back" in out and "dry run: preflight passed; nothing was changed" in out
    # the diff against what runs, as REST reports it: vanilla compares each vertex's hosts as counts
    running, planned = flink_rest.placement_counts(job), counts(PLACED)
    moved = sum(max(0, n - running.get(k, 0)) for k, n in planned.items())
    unchanged = sum(min(n, running.get(k, 0)) for k, n in planned.items())
    said = f"subtasks: {moved} to move, {unchanged} unchanged" if moved else f"nothing moves: all {unchanged}"
    assert out.startswith(f"job {job} ({JOB_NAME}), vanilla mode") and "placement against the running job:\n" in out
    assert said in out.split("preflight read")[0], out
    # nothing changed: same job, no lock/state, no savepoint, no audit log, no jar uploaded
    assert running_job(flink_rest) == job
    assert not (env.home / "placement").exists() and not env.savepoints.exists()
    assert not (plan / "apply-audit.jsonl").exists()


def test_full_apply_puts_every_subtask_on_its_planned_taskmanager_and_keeps_keyed_state(env: Env, flink_rest):
    plan = write_plan_dir(env.work / "plan-placed", env.inventory, PLACED)
    old = running_job(flink_rest)
    # 322, not the default 450: the restored job's age at the check below is 8 s shorter with --settle 2 than it was
    # with the default 10, so a fresh start's ceiling there (PER_KEY_RATE_MAX x age) is 8 x 16 = 128 lower and the
    # margin stays what 450 gave; the fresh job (started with this module) gets there ~10 s sooner
    before = let_totals_grow(flink_rest, old, min_total=322.0)
    t0 = time.monotonic()
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory), *SETTLE)
    assert result.returncode == 0, result.stdout + result.stderr
    new = running_job(flink_rest)
    assert new != old and flink_rest.job_raw(old)["state"] == "FINISHED"
    # verify table printed all green; and REST agrees independently
    assert "WRONG" not in result.stdout and result.stdout.count(" ok") >= len(counts(PLACED)), result.stdout
    assert flink_rest.placement_counts(new) == counts(PLACED)
    assert_keyed_state_continued(flink_rest, new, before, t0)
    # state file on the JobManager host: what was applied
    state = json.loads((env.home / "placement" / "state.json").read_text())
    assert state["job_id"] == new and state["mapping"] == PLACED and state["previous"]["job_id"] == old
    assert state["program_args"][-2:] == ["--placement", json.dumps(PLACED, separators=(",", ":"))]
    assert Path(state["savepoint"].removeprefix("file:")).joinpath("_metadata").is_file()
    assert not (env.home / "placement" / "apply.lock").exists()
    # audit log: every step started and finished ok, in order, ending "applied"; no key material in it
    audit = read_audit(plan / "apply-audit.jsonl")
    kinds = [r["kind"] for r in audit if r["event"] == "ok"]
    assert kinds == ["lock", "upload-jar", "stop", "submit", "wait", "verify", "watch", "record", "unlock"]
    assert audit[-1]["event"] == "done" and audit[-1]["status"] == "applied"
    text = (plan / "apply-audit.jsonl").read_text()
    assert "PRIVATE KEY" not in text and str(env.inventory) not in text
    downtime = float(result.stdout.split("RUNNING again: ")[1].split(" s")[0])
    assert 0 < downtime <= 15.0  # the redeploy downtime target (benchmarks/redeploy_downtime.py measures it)


def test_second_apply_of_the_same_plan_changes_nothing_and_says_so(env: Env, flink_rest):
    plan = env.work / "plan-placed"
    job = running_job(flink_rest)
    state_before = (env.home / "placement" / "state.json").read_text()
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 0, result.stderr
    assert "plan already in effect" in result.stdout and "nothing to do" in result.stdout
    assert running_job(flink_rest) == job
    assert (env.home / "placement" / "state.json").read_text() == state_before
    assert read_audit(plan / "apply-audit.jsonl")[-1]["status"] == "noop"


def test_a_new_plan_moves_operators_and_the_previous_mapping_is_remembered(env: Env, flink_rest):
    plan = write_plan_dir(env.work / "plan-moved", env.inventory, MOVED)
    old = running_job(flink_rest)
    before = max_key_total(flink_rest, old)
    t0 = time.monotonic()
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory), *SETTLE)
    assert result.returncode == 0, result.stdout + result.stderr
    new = running_job(flink_rest)
    assert flink_rest.placement_counts(new) == counts(MOVED)
    assert_keyed_state_continued(flink_rest, new, before, t0)
    state = json.loads((env.home / "placement" / "state.json").read_text())
    assert state["previous"]["job_id"] == old
    assert state["previous"]["program_args"][-1] == json.dumps(PLACED, separators=(",", ":"))


def test_the_job_is_found_by_name_and_a_wrong_name_is_bad_input(env: Env, flink_rest):
    result = run_cli(
        "apply", str(env.work / "plan-moved"), "--inventory", str(env.inventory), "--job-name", "no-such-job"
    )
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no running job named 'no-such-job'" in result.stderr
    assert JOB_NAME in result.stderr  # names what does run
