"""`placement apply` in custom mode: what can be real here without the patched scheduler.

The patched Flink (flink-placement / CAPSys CustomScheduler) needs Maven to build, which this machine cannot reach, so
the JobManager here is vanilla Flink 2.3 and nothing reads the schedulercfg. Real here: the JobManager config check
and its consent path, the atomic schedulercfg upload over SSH with ``.prev`` kept, the redeploy from a savepoint, the
verify step, and the roll back that restores the previous schedulercfg. The job's inventory arguments pin it to the
server itself (``--placement``), so where its subtasks land is known: verify is green for a plan that agrees with that
pinning and red (-> roll back) for one that does not. Verify-green *because of the Custom scheduler* cannot be shown.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from apply_support import (
    ALL_SERVER,
    JOB_ARGS,
    PLACED,
    SshLab,
    assert_in_order,
    assert_keyed_state_continued,
    let_totals_grow,
    read_audit,
    run_cli,
    running_job,
    write_inventory,
    write_plan_dir,
)

from placement.inventory import load_inventory
from placement.remote import SshExecutor

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(600)]

PINNED_ARGS = [*JOB_ARGS, "--placement", json.dumps(ALL_SERVER, separators=(",", ":"))]
INITIAL_JOB_ARGS = PINNED_ARGS  # the job runs as the inventory says (custom mode passes no mapping of its own)
OLD_CFG = "Old Operator (1/1); 10.204.0.2\n"


@dataclass(frozen=True)
class Env:
    inventory: Path
    home: Path
    work: Path

    @property
    def schedulercfg(self) -> Path:
        return self.home / "scripts" / "schedulercfg"

    @property
    def config(self) -> Path:
        return self.home / "conf" / "config.yaml"


@pytest.fixture(scope="module")
def env(tmp_path_factory, ssh_lab: SshLab, flink_cluster, lab_jobs_jar, iot_job) -> Env:
    work = tmp_path_factory.mktemp("pp-apply-custom")
    home = work / "flink-home"
    (home / "conf").mkdir(parents=True)
    (home / "scripts").mkdir()
    (home / "conf" / "config.yaml").write_text("jobmanager:\n  scheduler: default\n  rpc:\n    address: 10.204.0.2\n")
    (home / "scripts" / "schedulercfg").write_text(OLD_CFG)
    inv = write_inventory(work / "inventory.yaml", ssh_lab, rest_url=flink_cluster.rest_url, home=home, mode="custom",
                          savepoint_dir=work / "savepoints", jar=lab_jobs_jar, program_args=PINNED_ARGS)
    return Env(inv, home, work)


def test_upload_is_atomic_over_ssh_and_keeps_the_previous_copy(ssh_lab: SshLab, tmp_path: Path):
    inv_path = write_inventory(tmp_path / "inv.yaml", ssh_lab, rest_url="http://127.0.0.1:1", home=tmp_path, savepoint_dir=tmp_path)
    inv = load_inventory(inv_path)
    host = inv.host("server")
    target = tmp_path / "deep" / "dir" / "schedulercfg"
    with SshExecutor("server", host.address, inv.ssh_for(host)) as ex:
        ex.upload_atomic(str(target), "first\n")
        assert target.read_text() == "first\n" and not Path(f"{target}.prev").exists()
        ex.upload_atomic(str(target), "second\n")
        assert target.read_text() == "second\n" and Path(f"{target}.prev").read_text() == "first\n"
        assert not Path(f"{target}.new").exists()
        assert ex.read_text(str(target)) == "second\n" and ex.read_text(str(tmp_path / "absent")) is None
        ex.restore_previous(str(target))
        assert target.read_text() == "first\n"
    # the sshd saw a real session: the upload went through SFTP on that host
    assert re.search(r"subsystem '?sftp", ssh_lab.hosts["server"].log.read_text()), ssh_lab.hosts["server"].log.read_text()[-2000:]


def test_a_jobmanager_without_the_custom_scheduler_needs_consent_to_restart(env: Env, flink_rest):
    plan = write_plan_dir(env.work / "plan-all-server", env.inventory, ALL_SERVER)
    job = running_job(flink_rest)
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "has jobmanager.scheduler: default, not Custom" in result.stderr and "pass --yes" in result.stderr
    # with consent, the dry run shows the config change and the restart between the stop and the resubmit
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory), "--yes", "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    marks = [f"POST /jobs/{job}/stop", f"-> {env.schedulercfg}.new", f"-> {env.config}.new",
             f"{env.home}/bin/jobmanager.sh stop", f"{env.home}/bin/jobmanager.sh start", "GET /taskmanagers until",
             "POST /jars/upload", "/run "]
    assert_in_order(out, marks)  # the jar is uploaded again after the JobManager restart
    assert "restarted to load jobmanager.scheduler: Custom" in out
    # nothing changed
    assert running_job(flink_rest) == job
    assert env.schedulercfg.read_text() == OLD_CFG and "default" in env.config.read_text()


def test_custom_mode_installs_the_schedulercfg_and_redeploys_placement_enforced_by_job_args_not_by_scheduler(env: Env, flink_rest):
    # the JobManager's config asks for the Custom scheduler (as on a patched cluster)
    env.config.write_text(yaml.safe_dump({"jobmanager": {"scheduler": "Custom", "rpc": {"address": "10.204.0.2"}}}))
    plan = write_plan_dir(env.work / "plan-all-server", env.inventory, ALL_SERVER)
    old = running_job(flink_rest)
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 0, result.stdout + result.stderr
    assert env.schedulercfg.read_text() == (plan / "schedulercfg").read_text()
    assert Path(f"{env.schedulercfg}.prev").read_text() == OLD_CFG and not Path(f"{env.schedulercfg}.new").exists()
    new = running_job(flink_rest)
    assert new != old and "WRONG" not in result.stdout
    state = json.loads((env.home / "placement" / "state.json").read_text())
    assert state["job_id"] == new and state["program_args"] == PINNED_ARGS  # custom mode adds no mapping of its own
    again = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert again.returncode == 0 and "plan already in effect" in again.stdout and running_job(flink_rest) == new


def test_custom_mode_rolls_back_the_schedulercfg_when_verify_fails(env: Env, flink_rest):
    installed = env.schedulercfg.read_text()
    plan = write_plan_dir(env.work / "plan-placed", env.inventory, PLACED)  # sources on rpi1: nothing here honours it
    job = running_job(flink_rest)
    placement = flink_rest.placement_counts(job)
    before = let_totals_grow(flink_rest, job)
    t0 = time.monotonic()
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "verify failed: Source: Sensors@rpi1 planned 2 actual 0; Source: Sensors@server planned 0 actual 2" in result.stderr
    assert "rolled back" in result.stderr
    assert "WRONG" in result.stdout  # the table shows what landed where
    assert f"restored server:{env.schedulercfg} from .prev" in result.stderr
    assert env.schedulercfg.read_text() == installed  # the previous plan's schedulercfg is back
    new = running_job(flink_rest)
    assert new != job and flink_rest.placement_counts(new) == placement
    assert_keyed_state_continued(flink_rest, new, before, t0)
    audit = read_audit(plan / "apply-audit.jsonl")
    assert [r["kind"] for r in audit if r["event"] == "failed"] == ["verify"]
    assert [r["kind"] for r in audit if r["event"] == "ok" and r.get("seq") == "rollback"] == ["restore", "submit", "wait"]
