"""Faults, each caused for real, each ending with the job RUNNING and its keyed totals intact:

* a host down at preflight (its sshd is not running) -> refused, nothing changed anywhere;
* a wrong host key (refused) and an unknown one (refused unless --accept-new-host-keys);
* a stale plan (inventory changed; job graph changed) -> refused with the reason, exit 2;
* a savepoint directory that cannot be written: refused at preflight; one that fills up during the stop (a full
  tmpfs) -> the stop fails, Flink keeps the job, apply says so;
* a resubmit that fails (the job itself rejects the mapping at submit) -> rolled back from the same savepoint to the
  previous placement;
* a lock held by another apply -> refused; a stale lock -> broken and reported;
* bad input: missing plan dir, corrupt plan.json -> one line, exit 2.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from apply_support import (
    ALL_SERVER,
    JOB_NAME,
    PLACED,
    SETTLE,
    SshLab,
    assert_keyed_state_continued,
    let_totals_grow,
    max_key_total,
    read_audit,
    run_cli,
    running_job,
    write_inventory,
    write_plan_dir,
)

from support.sshd import generate_key, known_hosts_line

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(600)]


@dataclass(frozen=True)
class Env:
    inventory: Path
    home: Path
    work: Path
    rest_url: str
    jar: Path
    lab: SshLab

    def inventory_variant(self, name: str, **kwargs) -> Path:
        args = {
            "rest_url": self.rest_url,
            "home": self.home,
            "savepoint_dir": self.work / "savepoints",
            "jar": self.jar,
        } | kwargs
        return write_inventory(self.work / f"{name}.yaml", self.lab, **args)


@pytest.fixture(scope="module")
def env(tmp_path_factory, ssh_lab: SshLab, flink_cluster, lab_jobs_jar, iot_job) -> Env:
    work = tmp_path_factory.mktemp("pp-apply-faults")
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
    return Env(inv, home, work, flink_cluster.rest_url, lab_jobs_jar, ssh_lab)


def one_line(text: str) -> bool:
    return text.strip() != "" and "\n" not in text.strip() and "Traceback" not in text


def assert_untouched(env: Env, rest, job: str, placement_before) -> None:
    assert running_job(rest) == job and rest.job_raw(job)["state"] == "RUNNING"
    assert rest.placement_counts(job) == placement_before
    assert not (env.home / "placement" / "apply.lock").exists()
    assert not (env.home / "placement" / "state.json").exists()


def test_a_host_down_at_preflight_changes_nothing_anywhere(env: Env, flink_rest):
    inv = env.inventory_variant("rpi1-down", addresses={"rpi1": env.lab.down_address})
    plan = write_plan_dir(env.work / "plan-down", inv, PLACED)
    job = running_job(flink_rest)
    before = flink_rest.placement_counts(job)
    result = run_cli("apply", str(plan), "--inventory", str(inv))
    assert result.returncode == 1, result.stdout + result.stderr
    assert one_line(result.stderr) and f"rpi1 ({env.lab.down_address}:22): cannot connect" in result.stderr
    assert "nothing was changed" in result.stderr
    assert_untouched(env, flink_rest, job, before)
    assert not (env.work / "savepoints").exists() and not (plan / "apply-audit.jsonl").exists()


def test_a_changed_host_key_is_refused_and_an_unknown_one_needs_consent(env: Env, flink_rest):
    job = running_job(flink_rest)
    before = flink_rest.placement_counts(job)
    # a known_hosts that has another key for rpi1: a man in the middle, or a reinstalled host
    impostor = generate_key(env.work / "impostor_host_key", "impostor")
    server = env.lab.hosts["server"]
    wrong = env.work / "known_hosts.wrong"
    wrong.write_text(
        server.known_hosts.read_text() + known_hosts_line(env.lab.hosts["rpi1"].address, 22, Path(f"{impostor}.pub"))
    )
    inv = env.inventory_variant("wrong-key", known_hosts=wrong)
    plan = write_plan_dir(env.work / "plan-wrong-key", inv, PLACED)
    result = run_cli("apply", str(plan), "--inventory", str(inv), "--accept-new-host-keys")
    assert result.returncode == 1 and one_line(result.stderr)
    assert "rpi1 (10.204.0.6): host key CHANGED" in result.stderr
    assert_untouched(env, flink_rest, job, before)

    # unknown key: refused by default; learned (and then trusted) with --accept-new-host-keys
    partial = env.work / "known_hosts.partial"
    partial.write_text(server.known_hosts.read_text())
    inv = env.inventory_variant("unknown-key", known_hosts=partial)
    plan = write_plan_dir(env.work / "plan-unknown-key", inv, PLACED)
    result = run_cli("apply", str(plan), "--inventory", str(inv))
    assert result.returncode == 1 and "host key not in" in result.stderr and "--accept-new-host-keys" in result.stderr
    result = run_cli("apply", str(plan), "--inventory", str(inv), "--dry-run", "--accept-new-host-keys")
    assert result.returncode == 0, result.stderr
    assert "10.204.0.6" in partial.read_text()
    assert_untouched(env, flink_rest, job, before)


def test_a_stale_plan_is_refused_with_the_reason(env: Env, flink_rest):
    job = running_job(flink_rest)
    before = flink_rest.placement_counts(job)
    # the inventory changed after planning (a link got slower)
    inv = env.inventory_variant("stale")
    plan = write_plan_dir(env.work / "plan-stale", inv, PLACED)
    inv.write_text(inv.read_text().replace("bandwidth: 50mbit", "bandwidth: 20mbit"))
    result = run_cli("apply", str(plan), "--inventory", str(inv))
    assert result.returncode == 2 and one_line(result.stderr)
    assert "stale plan" in result.stderr and "the inventory changed since `placement plan`" in result.stderr
    # the job's graph changed (the plan expects Parse with 3 subtasks)
    plan = write_plan_dir(env.work / "plan-graph", env.inventory, {**PLACED, "Parse": ["rpi1", "rpi1", "server"]})
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 2 and one_line(result.stderr)
    assert "'Parse' plan 3 vs running 2" in result.stderr
    assert_untouched(env, flink_rest, job, before)


def test_bad_input_is_one_line_exit_2(env: Env, tmp_path):
    result = run_cli("apply", str(tmp_path / "nope"), "--inventory", str(env.inventory))
    assert result.returncode == 2 and one_line(result.stderr) and "nope: no such plan directory" in result.stderr
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "plan.json").write_text('{"format": "placement.plan/v1", "assignment": [')
    result = run_cli("apply", str(corrupt), "--inventory", str(env.inventory))
    assert result.returncode == 2 and one_line(result.stderr) and "corrupt/plan.json" in result.stderr
    plan = write_plan_dir(tmp_path / "bad-field", env.inventory, PLACED)
    doc = json.loads((plan / "plan.json").read_text())
    doc["assignment"][0]["subtask"] = -1
    (plan / "plan.json").write_text(json.dumps(doc))
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 2 and one_line(result.stderr) and "plan.json: assignment[0].subtask" in result.stderr
    result = run_cli("apply", str(plan), "--inventory", str(tmp_path / "missing.yaml"))
    assert result.returncode == 2 and one_line(result.stderr) and "missing.yaml: file not found" in result.stderr


def test_a_savepoint_directory_that_cannot_be_written_is_refused_at_preflight(env: Env, flink_rest):
    job = running_job(flink_rest)
    before = flink_rest.placement_counts(job)
    blocker = env.work / "not-a-dir"
    blocker.write_text("a file where the savepoint directory's parent should be")
    inv = env.inventory_variant("sp-blocked", savepoint_dir=blocker / "savepoints")
    plan = write_plan_dir(env.work / "plan-sp-blocked", inv, PLACED)
    result = run_cli("apply", str(plan), "--inventory", str(inv))
    assert result.returncode == 1 and one_line(result.stderr)
    assert f"savepoint directory {(blocker / 'savepoints').as_uri()} on server is not writable" in result.stderr
    assert_untouched(env, flink_rest, job, before)


@pytest.fixture
def full_tmpfs(env: Env):
    """A 8 KiB tmpfs, filled: an empty probe file fits, a savepoint's _metadata does not (ENOSPC during the stop)."""
    mount = env.work / "full-savepoints"
    mount.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "pp-apply-full", str(mount)], check=True)
    try:
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={mount}/filler", "bs=4k", "count=4"], capture_output=True, check=False
        )
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_savepoint_that_cannot_be_written_leaves_the_job_running(env: Env, flink_rest, full_tmpfs: Path):
    job = running_job(flink_rest)
    placement = flink_rest.placement_counts(job)
    inv = env.inventory_variant("sp-full", savepoint_dir=full_tmpfs)
    plan = write_plan_dir(env.work / "plan-sp-full", inv, PLACED)
    before = let_totals_grow(flink_rest, job)
    t0 = time.monotonic()
    result = run_cli("apply", str(plan), "--inventory", str(inv))
    assert result.returncode == 1, result.stdout + result.stderr
    assert one_line(result.stderr) and "the stop with savepoint failed" in result.stderr
    assert "No space left on device" in result.stderr and "nothing was installed" in result.stderr
    # Flink fails the tasks that took the synchronous savepoint and restarts the job a moment after the savepoint
    # status reports the failure: apply waits that restart out instead of reporting the RUNNING it read first
    assert f"job {job} is RUNNING again (Flink restarted it from its last checkpoint)" in result.stderr
    assert flink_rest.job_raw(job)["timestamps"]["RESTARTING"] > 0
    assert_untouched(env, flink_rest, job, placement)  # same job id, same placement, no lock, no state
    assert_keyed_state_continued(flink_rest, job, before, t0)  # Flink failed over to its last checkpoint
    audit = read_audit(plan / "apply-audit.jsonl")
    assert [r["kind"] for r in audit if r["event"] == "failed"] == ["stop"]
    assert audit[-1]["status"] == "stop-failed" and not any(r["event"] == "rollback" for r in audit)


def test_a_resubmit_that_fails_is_rolled_back_to_the_previous_placement_from_the_same_savepoint(env: Env, flink_rest):
    # first put the job under apply's control (all on the server), so the previous mapping is known
    good = write_plan_dir(env.work / "plan-all-server", env.inventory, ALL_SERVER)
    done = run_cli("apply", str(good), "--inventory", str(env.inventory), *SETTLE, "--json")
    assert done.returncode == 0, done.stderr
    job = running_job(flink_rest)
    assert_applied_json(json.loads(done.stdout), job)  # stdout is the document alone, the report on stderr
    placement = flink_rest.placement_counts(job)
    # a stale lock left by a crashed apply on this machine: its pid is gone
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = env.home / "placement" / "apply.lock"
    lock.write_text(
        json.dumps(
            {
                "holder": "crashed",
                "machine": socket.gethostname(),
                "pid": dead.pid,
                "since": "earlier",
                "since_epoch": time.time() - 5,
            }
        )
    )
    # vanilla Flink cannot split a vertex after the all-to-all edge: the job's main() rejects this at submit
    bad = write_plan_dir(
        env.work / "plan-split-window", env.inventory, {**ALL_SERVER, "Window Aggregate": ["server", "rpi1"]}
    )
    before = let_totals_grow(flink_rest, job)
    t0 = time.monotonic()
    result = run_cli("apply", str(bad), "--inventory", str(env.inventory), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "broke a stale lock held by crashed" in result.stderr and f"pid {dead.pid}" in result.stderr
    assert_rolled_back_json(json.loads(result.stdout), job)
    error = result.stderr.strip().splitlines()[-1]  # --json: the report before it on stderr, stdout the document
    assert error.startswith("error: ") and "Traceback" not in result.stderr
    assert "vanilla Flink cannot split 'Window Aggregate'" in error
    assert "rolled back: job" in error and "with the previous placement" in error
    new = running_job(flink_rest)
    assert new != job and flink_rest.placement_counts(new) == placement
    assert_keyed_state_continued(flink_rest, new, before, t0)
    state = json.loads((env.home / "placement" / "state.json").read_text())
    assert state["job_id"] == new and state["rolled_back"] and state["plan"] is None
    assert state["program_args"][-1] == json.dumps(ALL_SERVER, separators=(",", ":"))
    assert not lock.exists()
    audit = read_audit(bad / "apply-audit.jsonl")
    assert [r["kind"] for r in audit if r["event"] == "failed"] == ["submit"]
    rollback_ok = [r["kind"] for r in audit if r["event"] == "ok" and r.get("seq") == "rollback"]
    assert rollback_ok == ["submit", "wait"] and audit[-1]["status"] == "rolled-back"


def assert_applied_json(doc: dict, job: str) -> None:
    """apply --json of a plan put into effect (or already in effect): every step done, planned = actual."""
    assert doc["format"] == "placement.apply-summary/v1" and not doc["fleet"] and not doc["dry_run"]
    assert doc["mode"] == "vanilla" and doc["outcome"]["job_id"] == job
    subtasks = sum(len(hosts) for hosts in ALL_SERVER.values())
    assert doc["verify"] and all(r["ok"] and r["host"] == "server" for r in doc["verify"])
    assert sum(r["planned"] for r in doc["verify"]) == sum(r["actual"] for r in doc["verify"]) == subtasks
    if doc["outcome"]["status"] == "noop":  # an earlier test of the module left this placement in effect
        assert doc["diff"]["moves"] == [] and doc["diff"]["unchanged"] == subtasks
        return
    assert doc["outcome"]["status"] == "applied" and doc["outcome"]["savepoint"]
    # applied also when nothing moves: the first apply of a job records its arguments for a roll back
    assert sum(m["subtasks"] for m in doc["diff"]["moves"]) + doc["diff"]["unchanged"] == subtasks
    assert doc["outcome"]["downtime_s"] > 0
    assert {s["status"] for s in doc["steps"]} == {"done"} and {s["status"] for s in doc["rollback"]} == {"skipped"}
    phases = [s["phase"] for s in doc["steps"]]
    order = ["prepare", "stop", "install", "redeploy", "verify", "finish"]
    assert phases == sorted(phases, key=order.index) and {"stop", "redeploy", "verify"} <= set(phases)
    assert "<savepoint>" not in json.dumps(doc["steps"])  # said as they ran: the savepoint taken named


def assert_rolled_back_json(doc: dict, job: str) -> None:
    """apply --json of a resubmit that failed: the failed step, the ones after it not run, the roll back's."""
    assert doc["outcome"]["status"] == "rolled-back" and doc["outcome"]["job_id"] != job
    assert "vanilla Flink cannot split 'Window Aggregate'" in doc["outcome"]["error"]
    statuses = [s["status"] for s in doc["steps"]]
    failed = statuses.index("failed")
    assert doc["steps"][failed]["phase"] == "redeploy" and statuses.count("failed") == 1
    assert set(statuses[:failed]) == {"done"} and set(statuses[failed + 1 :]) <= {"skipped"}
    assert [s["status"] for s in doc["rollback"]].count("done") == 2  # the audit's: submit, wait
    (split,) = [m for m in doc["diff"]["moves"] if m["vertex"] == "Window Aggregate"]
    assert (split["from"], split["to"], split["subtask"]) == ("server ×2", "rpi1, server", None)
    assert doc["verify"] == []  # the resubmit failed before the verify


def test_a_lock_held_by_a_live_apply_is_respected(env: Env, flink_rest):
    job = running_job(flink_rest)
    placement = flink_rest.placement_counts(job)
    lock = env.home / "placement" / "apply.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(
        json.dumps(
            {
                "holder": "alice@ops pid 4242",
                "machine": socket.gethostname(),
                "pid": os.getpid(),
                "since": "2026-11-21T20:00:00+00:00",
                "since_epoch": time.time(),
            }
        )
    )
    try:
        plan = write_plan_dir(env.work / "plan-locked", env.inventory, PLACED)
        before = max_key_total(flink_rest, job)
        result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
        assert result.returncode == 1 and one_line(result.stderr)
        assert (
            "another apply holds the lock" in result.stderr
            and "alice@ops pid 4242 since 2026-11-21T20:00:00+00:00" in result.stderr
        )
        assert running_job(flink_rest) == job and flink_rest.placement_counts(job) == placement
        assert lock.exists() and "alice@ops" in lock.read_text()  # not ours to remove
        assert max_key_total(flink_rest, job) >= before
    finally:
        lock.unlink(missing_ok=True)


def test_an_apply_the_watch_triggers_meets_each_fault_and_the_job_runs_on_where_it_ran(
    env: Env, flink_rest, full_tmpfs
):
    """``placement watch --apply auto`` applies through :func:`placement.watch.acting.apply_plan`: a host down, another
    apply's live lock and a savepoint that cannot be written each end with the job RUNNING on its known placement and
    an outcome the decision log records (``changed`` tells the loop whether the job restarted: its cooldown starts)."""
    from placement.watch.acting import apply_plan
    from placement.watch.options import WatchOptions
    from placement.watch.policy import Decision, PolicyState
    from placement.watch.record import DecisionLog, decision_record, read_log

    job = running_job(flink_rest)
    placement = flink_rest.placement_counts(job)
    lock = env.home / "placement" / "apply.lock"

    def runs_on_where_it_ran() -> None:  # (an earlier test of this module may have left apply's state file: no check)
        assert running_job(flink_rest) == job and flink_rest.job_raw(job)["state"] == "RUNNING"
        assert flink_rest.placement_counts(job) == placement and not lock.exists()

    def watch_apply(name: str, inv: Path) -> dict:
        plan = write_plan_dir(env.work / f"plan-watch-{name}", inv, PLACED)
        return apply_plan(
            plan,
            WatchOptions(inventory_path=inv, job_name=JOB_NAME, work_dir=env.work / "watch", apply="auto", settle_s=2),
            flink_rest,
        )

    down = watch_apply("down", env.inventory_variant("watch-rpi1-down", addresses={"rpi1": env.lab.down_address}))
    assert down["status"] == "refused" and not down["changed"]
    assert f"rpi1 ({env.lab.down_address}:22): cannot connect" in down["message"]
    runs_on_where_it_ran()

    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(
        json.dumps(
            {
                "holder": "bob@ops pid 4343",
                "machine": socket.gethostname(),
                "pid": os.getpid(),
                "since": "2026-11-22T23:00:00+00:00",
                "since_epoch": time.time(),
            }
        )
    )
    try:
        locked = watch_apply("locked", env.inventory)
    finally:
        lock.unlink(missing_ok=True)
    assert locked["status"] == "failed-before-stop" and not locked["changed"]
    assert "another apply holds the lock" in locked["message"] and "bob@ops pid 4343" in locked["message"]
    runs_on_where_it_ran()

    full = watch_apply("sp-full", env.inventory_variant("watch-sp-full", savepoint_dir=full_tmpfs))
    assert full["status"] == "stop-failed" and full["changed"]  # Flink restarted the job from its last checkpoint
    assert "No space left on device" in full["message"] and full["job_id"] == job
    runs_on_where_it_ran()

    log = env.work / "watch-decisions.jsonl"
    writer = DecisionLog(log)
    for tick, outcome in enumerate((down, locked, full), 1):
        writer.write(
            decision_record(
                tick, 0, None, None, [], None, Decision("apply", "test", PolicyState(), "relief"), apply=outcome
            )
        )
    assert [r["apply"]["status"] for r in read_log(log)] == ["refused", "failed-before-stop", "stop-failed"]
