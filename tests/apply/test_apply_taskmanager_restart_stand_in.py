"""STAND-IN for Flink's bin/taskmanager.sh (the wheel ships none): vanilla mode where an edge TaskManager does not
declare its external resource yet: apply changes that host's
Flink config over SSH (atomic, ``.prev`` kept) and restarts its TaskManager with ``<home>/bin/taskmanager.sh`` — only
with ``--yes`` — then redeploys and verifies.

A cluster of its own: the JobManager and the ``server`` TaskManager on the root side of the rpi1 veth (10.204.0.5), the
``rpi1`` TaskManager *inside* namespace pp-rpi1 (10.204.0.6), started without any external resource. Its Flink home
is ``<cluster>/tm-rpi1`` (``conf/config.yaml`` is that TaskManager's config). ``bin/taskmanager.sh`` there is a
stand-in for Flink's script (the wheel ships no bin/*.sh): it stops the TaskManager whose pid it knows and starts a
new one from ``conf/`` the way :mod:`placement.lab.flink` does. apply runs it over SSH on rpi1, so the new TaskManager
runs inside pp-rpi1 like the old one.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path

import pytest
import yaml
from apply_support import (
    JOB_ARGS,
    PLACED,
    SETTLE,
    SshLab,
    install_taskmanager_script,
    kill_from_pidfile,
    run_cli,
    running_job,
    write_inventory,
    write_plan_dir,
)

from placement.flink.rest import FlinkRest
from placement.lab.flink import TaskManagerSpec
from placement.lab.jobs import IOT_SENSOR_JOB

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(600)]


def test_a_taskmanager_without_its_resource_is_reconfigured_and_restarted_only_with_consent_stand_in_script(
    tmp_path, ssh_lab: SshLab, lab_jobs_jar, flink_support
):
    rpi1 = ssh_lab.hosts["rpi1"]
    root_side = "10.204.0.5"  # the root namespace's end of the pp-rpi1 veth: reachable from inside pp-rpi1
    tms = (
        TaskManagerSpec("server", slots=4, address=root_side, external_resource="server", external_resource_amount=16),
        TaskManagerSpec("rpi1", slots=4, address=rpi1.address, wrapper=("ip", "netns", "exec", rpi1.namespace)),
    )
    work = tmp_path / "cluster"
    # the JIT's first tier only, as the scheduler tests' clusters (scheduler_support.JVM_FLAGS): a faster start; this
    # test reads configs, TaskManagers and placements, no throughput
    quick_start = ("-XX:TieredStopAtLevel=1",)
    with (
        flink_support.start_flink(work, tms, jobmanager_address=root_side, jvm_flags=quick_start) as cluster,
        contextlib.ExitStack() as cleanup,
    ):
        home = work / "tm-rpi1"  # rpi1's Flink home: conf/config.yaml is its TaskManager's config
        install_taskmanager_script(home, "rpi1", cluster.taskmanagers["rpi1"].pid, quick_start)
        cleanup.callback(kill_from_pidfile, home / "taskmanager.pid")  # the restarted TM is not the cluster's child
        rest = FlinkRest(cluster.rest_url)
        inv = write_inventory(
            tmp_path / "inventory.yaml",
            ssh_lab,
            rest_url=cluster.rest_url,
            home=home,
            savepoint_dir=tmp_path / "savepoints",
            jar=lab_jobs_jar,
        )
        plan = write_plan_dir(tmp_path / "plan", inv, PLACED)
        job = flink_support.submit_job(rest, lab_jobs_jar, IOT_SENSOR_JOB, JOB_ARGS, wait_metrics=False)
        config = home / "conf" / "config.yaml"
        original = config.read_text()
        assert "external-resources" not in original

        refused = run_cli("apply", str(plan), "--inventory", str(inv))
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1
        assert "TaskManager rpi1 does not declare external resource 'rpi1'" in refused.stderr
        assert f"set external-resources, external-resource.rpi1.amount in rpi1:{config}" in refused.stderr
        assert "pass --yes" in refused.stderr and config.read_text() == original and running_job(rest) == job.job_id

        result = run_cli("apply", str(plan), "--inventory", str(inv), "--yes", *SETTLE)
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"ssh rpi1: {home}/bin/taskmanager.sh stop" in result.stdout
        new_config = yaml.safe_load(config.read_text())
        assert new_config["external-resources"] == ["rpi1"] and new_config["external-resource"]["rpi1"]["amount"] == 4
        assert Path(f"{config}.prev").read_text() == original  # the old config kept for roll back
        tm_info = {t.id: t for t in rest.taskmanagers()}
        assert tm_info["rpi1"].total_resource["extendedResources"] == {"rpi1": 4.0}
        assert f"@{rpi1.address}:" in tm_info["rpi1"].path  # the new TaskManager runs inside pp-rpi1 again
        assert int((home / "taskmanager.pid").read_text()) != cluster.taskmanagers["rpi1"].pid
        new = running_job(rest)
        assert rest.placement_counts(new) == dict(Counter((v, h) for v, hs in PLACED.items() for h in hs))
        # only rpi1 was touched: the server's TaskManager kept running with its config
        assert cluster.taskmanagers["server"].alive()
        # and now the resource is there: a second apply needs no restart (and changes nothing)
        again = run_cli("apply", str(plan), "--inventory", str(inv))
        assert again.returncode == 0 and "plan already in effect" in again.stdout
        flink_support.cancel_job(new, rest)
