"""`placement apply` in custom mode against real sshd hosts and the shared (stock) test cluster: what does not need a
JobManager with the scheduler extension.

* the atomic upload over SFTP (``<path>.new`` + rename, ``.prev`` kept), checked by a reader that polls the target
  while a large file is written: it only ever sees the old or the new content, never a partial file;
* a JobManager without the extension (the shared cluster runs stock Flink): refused unless ``--yes``; with ``--yes``
  the dry run shows the extension jar uploaded into ``<home>/lib``, the JobManager config given
  ``placement.scheduler.dir`` (and ``jobmanager.scheduler: default``, never the patched forks' ``Custom``), the
  restart, the extension check and the job jar uploaded again — and nothing changes.

The placement itself (every subtask index on its planned TaskManager, savepoint restore, a TaskManager restart, two
jobs, a SQL job) is shown on the lab, whose JobManager runs the extension: ``tests/lab/test_lab_custom_end_to_end.py``.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from apply_support import (
    ALL_SERVER,
    SshLab,
    assert_in_order,
    run_cli,
    running_job,
    write_inventory,
    write_plan_dir,
)

from placement.inventory import load_inventory
from placement.remote import SshExecutor

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(600)]

CONFIG = "jobmanager:\n  scheduler: default\n  rpc:\n    address: 10.204.0.2\n"


@dataclass(frozen=True)
class Env:
    inventory: Path
    home: Path
    work: Path

    @property
    def scheduler_dir(self) -> Path:
        return self.home / "placement" / "scheduler"

    @property
    def config(self) -> Path:
        return self.home / "conf" / "config.yaml"


@pytest.fixture(scope="module")
def env(tmp_path_factory, ssh_lab: SshLab, flink_cluster, lab_jobs_jar, iot_job) -> Env:
    work = tmp_path_factory.mktemp("pp-apply-custom")
    home = work / "flink-home"
    (home / "conf").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "conf" / "config.yaml").write_text(CONFIG)
    inv = write_inventory(
        work / "inventory.yaml",
        ssh_lab,
        rest_url=flink_cluster.rest_url,
        home=home,
        mode="custom",
        savepoint_dir=work / "savepoints",
        jar=lab_jobs_jar,
    )
    return Env(inv, home, work)


def test_upload_is_atomic_over_ssh_and_keeps_the_previous_copy(ssh_lab: SshLab, tmp_path: Path):
    inv_path = write_inventory(
        tmp_path / "inv.yaml", ssh_lab, rest_url="http://127.0.0.1:1", home=tmp_path, savepoint_dir=tmp_path
    )
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
    assert re.search(r"subsystem '?sftp", ssh_lab.hosts["server"].log.read_text()), ssh_lab.hosts[
        "server"
    ].log.read_text()[-2000:]


def test_a_reader_polling_the_file_during_an_upload_never_sees_a_partial_file(ssh_lab: SshLab, tmp_path: Path):
    """24 MiB over SFTP take long enough to poll the target hundreds of times meanwhile; every read is the old or
    the new file whole. The reader also sees ``<path>.new`` half-written at some point: the write was observable,
    so a non-atomic upload (straight into the target) would have been caught."""
    inv = load_inventory(
        write_inventory(
            tmp_path / "inv.yaml", ssh_lab, rest_url="http://127.0.0.1:1", home=tmp_path, savepoint_dir=tmp_path
        )
    )
    host = inv.host("server")
    target = tmp_path / "scheduler" / "big.schedulercfg"
    old = b"".join(b"Old Operator (%d/100000); 10.204.0.2\n" % i for i in range(1, 100_001))
    new = (b"New Operator (1/1); 10.204.0.6\n" * 800_000)[: 24 * 1024 * 1024]
    digests = {hashlib.sha256(old).hexdigest(): "old", hashlib.sha256(new).hexdigest(): "new"}
    seen: list[str] = []
    partial_new: list[int] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            data = target.read_bytes()
            seen.append(digests.get(hashlib.sha256(data).hexdigest(), f"PARTIAL {len(data)} bytes"))
            staged = Path(f"{target}.new")
            try:
                size = staged.stat().st_size
            except FileNotFoundError:
                continue
            if 0 < size < len(new):
                partial_new.append(size)

    with SshExecutor("server", host.address, inv.ssh_for(host)) as ex:
        ex.upload_atomic(str(target), old)
        reader = threading.Thread(target=poll)
        reader.start()
        try:
            time.sleep(0.2)
            ex.upload_atomic(str(target), new)
            time.sleep(0.2)
        finally:
            stop.set()
            reader.join(timeout=30)
    assert target.read_bytes() == new and Path(f"{target}.prev").read_bytes() == old
    assert [s for s in seen if s.startswith("PARTIAL")] == []
    assert seen.count("old") > 10 and seen.count("new") > 0 and seen.index("new") > seen.index("old")
    assert partial_new, "the upload was never observed in progress: the test could not tell atomic from not"


def test_a_jobmanager_without_the_extension_needs_consent_to_get_it_and_restart(env: Env, flink_rest):
    plan = write_plan_dir(env.work / "plan-all-server", env.inventory, ALL_SERVER)
    job = running_job(flink_rest)
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory))
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr
    assert (
        "the JobManager on server does not run the scheduler extension (no scheduler extension jar in "
        f"server:{env.home}/lib; placement.scheduler.dir is unset, needs {env.scheduler_dir})"
    ) in result.stderr
    assert "pass --yes" in result.stderr
    # with consent, the dry run shows the jar, the config change and the restart between the stop and the resubmit
    result = run_cli("apply", str(plan), "--inventory", str(env.inventory), "--yes", "--dry-run")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    marks = [
        f"POST /jobs/{job}/stop",
        f"-> {env.scheduler_dir}/taskmanagers.cfg.new",
        f"-> {env.scheduler_dir}/pp-apply-iot.schedulercfg.new",
        f"-> {env.home}/lib/placement-scheduler-2.3.0-",
        f"-> {env.config}.new",
        f"{env.home}/bin/jobmanager.sh stop",
        f"{env.home}/bin/jobmanager.sh start",
        "GET /taskmanagers until",
        "GET /jobmanager/environment",
        "POST /jars/upload",
        "/run ",
    ]
    assert_in_order(out, marks)  # the job jar is uploaded again after the JobManager restart
    assert "restarted to load the scheduler extension" in out and "Custom" not in out
    assert '"--placement"' not in out  # the job is resubmitted unchanged
    # nothing changed
    assert running_job(flink_rest) == job
    assert env.config.read_text() == CONFIG and not env.scheduler_dir.exists() and not any((env.home / "lib").iterdir())
