"""STAND-IN for Flink's bin/taskmanager.sh (the wheel ships none), everything else real: the inventory's
``flink.network`` keys go into every planned TaskManager's config (atomic, ``.prev`` kept) and those TaskManagers
are restarted after the savepoint — only with ``--yes`` — and a failure after the write rolls the configs back.

A cluster of its own, one Flink home per TaskManager host at the one path the inventory names (``flink.home``):

* ``server`` (JobManager host and a TaskManager) is this machine: its inventory address is the root side of the
  pp-rpi1 veth (10.204.0.5), so apply runs its commands locally, as on any JobManager host it runs on. Its
  TaskManager must run in the root namespace anyway: the JobManager listens there, and pp-server has no route to
  pp-rpi1. Its home is ``<cluster>/tm-server`` (``conf/config.yaml`` is that TaskManager's config).
* ``rpi1`` is reached over SSH (the real sshd in pp-rpi1); its TaskManager runs inside pp-rpi1. Its home
  ``<cluster>/tm-rpi1`` is bind-mounted over ``<cluster>/tm-server`` for that sshd's sessions only, so apply reads,
  writes and restarts rpi1's own config and TaskManager at the inventory's path, as on a real Pi.

``bin/taskmanager.sh`` in each home is the stand-in (apply_support.TM_CTL): it stops the TaskManager whose pid it knows
and starts a new one from that home's ``conf/``; started over SSH, the new rpi1 TaskManager runs in pp-rpi1 again.

The failure after the write is a real one: rpi1's restarted TaskManager is killed (a Pi lost) once the
redeployed job runs, while apply watches it settle; the job restarts, apply fails after the stop and rolls back
(configs from ``.prev``, both TaskManagers restarted with them, the job resubmitted from the savepoint).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import requests
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

from placement.flink.options import read_config
from placement.flink.rest import FlinkRest
from placement.lab.flink import TaskManagerSpec
from placement.lab.jobs import IOT_SENSOR_JOB
from support.sshd import mounted_for_sessions

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(900)]

KEY = "taskmanager.network.memory.buffers-per-channel"
BUFFERS = 4  # Flink's default is 2
# the failing apply watches the job this long: the Pi's TaskManager is killed within it (well under a second after
# the job runs); the other applies settle 2 s (SETTLE)
LONG_SETTLE = ("--settle", "15")
QUICK_START = ("-XX:TieredStopAtLevel=1",)  # the JIT's first tier only (scheduler_support.JVM_FLAGS): a faster start
STARTED = " Starting TaskManager (Version:"  # the banner of every TaskManager start in its (appended) log


def test_flink_network_keys_are_written_and_taskmanagers_restarted_only_with_consent_stand_in_script(
    tmp_path, ssh_lab: SshLab, lab_jobs_jar, flink_support
):
    rpi1 = ssh_lab.hosts["rpi1"]
    root_side = "10.204.0.5"  # the root namespace's end of the pp-rpi1 veth: reachable from inside pp-rpi1
    tms = (
        TaskManagerSpec("server", slots=4, address=root_side, external_resource="server", external_resource_amount=16),
        TaskManagerSpec(
            "rpi1",
            slots=4,
            address=rpi1.address,
            wrapper=("ip", "netns", "exec", rpi1.namespace),
            external_resource="rpi1",
            external_resource_amount=4,
        ),
    )
    work = tmp_path / "cluster"
    homes = {h: work / f"tm-{h}" for h in ("server", "rpi1")}
    for home in homes.values():
        home.mkdir(parents=True)  # a bind mount needs both ends
    home = homes["server"]  # the inventory's flink.home; on rpi1 its sessions see homes["rpi1"] there
    with (
        flink_support.start_flink(work, tms, jobmanager_address=root_side, jvm_flags=QUICK_START) as cluster,
        contextlib.ExitStack() as cleanup,
    ):
        cleanup.enter_context(mounted_for_sessions(rpi1, homes["rpi1"], home))
        for host, h in homes.items():
            install_taskmanager_script(h, host, cluster.taskmanagers[host].pid, QUICK_START)
            # the restarted TaskManagers are not the cluster's children; ended before the mount goes
            cleanup.callback(kill_from_pidfile, h / "taskmanager.pid")
        rest = FlinkRest(cluster.rest_url)
        configs = {h: p / "conf" / "config.yaml" for h, p in homes.items()}
        original = {h: c.read_bytes() for h, c in configs.items()}
        assert all(KEY not in read_config(t.decode(), "config.yaml") for t in original.values())

        inv = write_inventory(
            tmp_path / "inventory.yaml",
            ssh_lab,
            rest_url=cluster.rest_url,
            home=home,
            savepoint_dir=tmp_path / "savepoints",
            jar=lab_jobs_jar,
            addresses={"server": root_side},
            flink={"network": {"buffers_per_channel": BUFFERS}},
        )
        plan = write_plan_dir(tmp_path / "plan", inv, PLACED)
        job = flink_support.submit_job(rest, lab_jobs_jar, IOT_SENSOR_JOB, JOB_ARGS, wait_metrics=False)
        pids = {h: cluster.taskmanagers[h].pid for h in homes}
        paths = tm_paths(rest)

        # without --yes: one line naming the keys and hosts; nothing changes
        t0 = time.monotonic()
        refused = run_cli("apply", str(plan), "--inventory", str(inv))
        refused_s = time.monotonic() - t0
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stdout + refused.stderr
        assert f"flink.network: the TaskManager config of rpi1, server lacks {KEY}: {BUFFERS}" in refused.stderr
        assert "pass --yes" in refused.stderr
        assert {h: c.read_bytes() for h, c in configs.items()} == original
        assert not any(Path(f"{c}.prev").exists() for c in configs.values())
        assert running_job(rest) == job.job_id and tm_paths(rest) == paths
        assert all(cluster.taskmanagers[h].alive() and pidfile(homes[h]) == pids[h] for h in homes)

        # written, restarted, redeployed; then the Pi's TaskManager dies while the job settles: rolled back
        killer = PiLoss(rest, homes["rpi1"], seen={job.job_id})
        killer.start()
        t0 = time.monotonic()
        failed = run_cli("apply", str(plan), "--inventory", str(inv), "--yes", *LONG_SETTLE)
        failed_s = time.monotonic() - t0
        killer.join(timeout=30)
        out = failed.stdout + failed.stderr
        assert killer.killed is not None, out
        assert failed.returncode != 0 and "did not stay RUNNING" in out and "rolled back" in out, out
        for host, config in configs.items():
            assert config.read_bytes() == original[host], host  # restored byte for byte
            starts = tm_starts(homes[host])
            # started by the cluster, by apply with the key, by the roll back with the old config again
            assert [s.get(KEY) for s in starts] == [None, str(BUFFERS), None], (host, starts)
            assert pidfile(homes[host]) != pids[host]
        assert not cluster.taskmanagers["server"].alive() and not cluster.taskmanagers["rpi1"].alive()
        rolled_back = running_job(rest)
        assert rolled_back != job.job_id and rest.job(rolled_back).all_running
        back_pids = {h: pidfile(homes[h]) for h in homes}

        # the same apply again: written with .prev, both TaskManagers restarted, the job placed as planned
        t0 = time.monotonic()
        result = run_cli("apply", str(plan), "--inventory", str(inv), "--yes", *SETTLE)
        applied_s = time.monotonic() - t0
        assert result.returncode == 0, result.stdout + result.stderr
        for host in homes:
            assert f"ssh {host}: {home}/bin/taskmanager.sh stop" in result.stdout
        new_pids = {h: pidfile(homes[h]) for h in homes}
        new_paths = tm_paths(rest)
        for host, config in configs.items():
            assert read_config(config.read_text(), "config.yaml")[KEY] == BUFFERS
            assert Path(f"{config}.prev").read_bytes() == original[host]  # what ran before, kept for a roll back
            assert new_pids[host] not in (pids[host], back_pids[host])
            assert new_paths[host] != paths[host]  # a new TaskManager process (new RPC port), same resource id
            # what the restarted TaskManager read: its log, served by REST from that TaskManager
            log = requests.get(f"{cluster.rest_url}/taskmanagers/{host}/log", timeout=30).text
            assert log_starts(log)[-1].get(KEY) == str(BUFFERS), host
        assert f"@{rpi1.address}:" in new_paths["rpi1"] and f"@{root_side}:" in new_paths["server"]
        new = running_job(rest)
        planned = dict(Counter((v, h) for v, hs in PLACED.items() for h in hs))
        assert rest.job(new).all_running and rest.placement_counts(new) == planned
        # the keys are in effect now: a second apply changes nothing
        again = run_cli("apply", str(plan), "--inventory", str(inv))
        assert again.returncode == 0 and "plan already in effect" in again.stdout, again.stdout + again.stderr
        assert pidfile(homes["server"]) == new_pids["server"] and pidfile(homes["rpi1"]) == new_pids["rpi1"]
        print(
            f"\nfigures: {KEY} {BUFFERS}; pids cluster {pids} -> killed rpi1 {killer.killed} -> rolled back "
            f"{back_pids} -> applied {new_pids}; refused in {refused_s:.1f}s, failed+rolled back in {failed_s:.1f}s "
            f"(kill {killer.after_s:.1f}s in), "
            f"applied in {applied_s:.1f}s; placement {sorted(rest.placement_counts(new).items())}"
        )
        flink_support.cancel_job(new, rest)


class PiLoss(threading.Thread):
    """Kills the TaskManager a stand-in started in ``home`` as soon as a job not in ``seen`` runs every subtask: a
    Pi lost right after the redeploy, while apply watches the job settle."""

    def __init__(self, rest: FlinkRest, home: Path, seen: set[str], timeout: float = 240.0):
        super().__init__(daemon=True)
        self.rest, self.home, self.seen, self.timeout = rest, home, seen, timeout
        self.killed: int | None = None
        self.after_s = 0.0

    def run(self) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.timeout:
            with contextlib.suppress(Exception):  # REST while TaskManagers restart: ask again
                new = [j.id for j in self.rest.running_jobs() if j.id not in self.seen]
                if new and self.rest.job(new[0]).all_running:
                    self.killed = pidfile(self.home)
                    kill_from_pidfile(self.home / "taskmanager.pid")
                    self.after_s = time.monotonic() - t0
                    return
            time.sleep(0.1)


def pidfile(home: Path) -> int:
    return int((home / "taskmanager.pid").read_text())


def tm_paths(rest: FlinkRest) -> dict[str, str]:
    """Resource id -> the TaskManager's RPC address (its port is new with every start)."""
    return {t.id: t.path for t in rest.taskmanagers()}


def tm_starts(home: Path) -> list[dict[str, str]]:
    return log_starts((home / "taskmanager.log").read_text(errors="replace"))


def log_starts(log: str) -> list[dict[str, str]]:
    """The configuration each start in a TaskManager's log loaded (``Loading configuration property: key, value``),
    one mapping per start, oldest first (the log file is appended to by every start)."""
    starts: list[dict[str, str]] = []
    for line in log.splitlines():
        if STARTED in line:
            starts.append({})
        elif "Loading configuration property: " in line and starts:
            key, _, value = line.split("Loading configuration property: ", 1)[1].partition(", ")
            starts[-1][key] = value.strip()
    return starts
