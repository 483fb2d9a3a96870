"""A real Spark standalone cluster (one master, N workers) from the installed PySpark: its ``bin/spark-class``
launcher runs ``org.apache.spark.deploy.master.Master`` and ``...worker.Worker`` with plain ``java``, no download.

Used by ``tests/profile/test_spark_cluster.py`` and ``benchmarks/profile_throughput.py --spark-cluster``::

    with spark_cluster(tmp_path, workers=2) as cluster:
        cluster.master_url   # "spark://127.0.0.1:<port>"
        cluster.status()     # the master's /json: workers, applications

Every daemon binds 127.0.0.1 on free ports and runs in its own process group (a worker's executors are its children,
so they are in that group too); :meth:`SparkCluster.stop` ends every group, SIGKILL after a grace period, and the JVMs
also die with the Python process that started them (``setpriv --pdeathsig``). Logs: ``<work_dir>/<daemon>.log``;
executors' logs: ``<work_dir>/worker-<i>/work/<app id>/<executor id>/stderr``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from placement.lab.flink import free_port

MASTER_MAIN = "org.apache.spark.deploy.master.Master"
WORKER_MAIN = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class SparkCluster:
    work_dir: Path
    master_url: str
    web_url: str
    processes: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def status(self) -> dict:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as answer:
            return json.load(answer)

    def alive_workers(self) -> int:
        return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")

    def executor_logs(self) -> list[Path]:
        """Every executor's stderr (one per application and worker that ran it)."""
        return sorted(self.work_dir.glob("worker-*/work/app-*/*/stderr"))

    def pids(self) -> list[int]:
        """Every process of the cluster still running: daemons and the executors they started."""
        import psutil

        found = []
        for proc in self.processes:
            with contextlib.suppress(psutil.Error):
                p = psutil.Process(proc.pid)
                found += [p.pid, *(c.pid for c in p.children(recursive=True))]
        return found

    def stop(self, timeout: float = 20.0) -> None:
        """Workers first (they stop their executors), then the master; SIGKILL whatever outlives ``timeout``.
        Returns when every daemon and executor has exited."""
        import psutil

        procs = []
        for pid in self.pids():
            with contextlib.suppress(psutil.Error):
                procs.append(psutil.Process(pid))
        for proc in reversed(self.processes):
            _signal_group(proc.pid, signal.SIGTERM)
        _, alive = psutil.wait_procs(procs, timeout=timeout)
        for proc in reversed(self.processes):
            _signal_group(proc.pid, signal.SIGKILL)  # the group: executors a dying worker left behind
        for p in alive:
            with contextlib.suppress(psutil.Error):
                p.kill()
        psutil.wait_procs(alive, timeout=10)
        for proc in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _launch(cluster: SparkCluster, name: str, args: list[str]) -> None:
    log = cluster.work_dir / f"{name}.log"
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "512m",
        "SPARK_NO_DAEMONIZE": "1",
    }
    argv = ["setpriv", "--pdeathsig", "KILL", "--", str(spark_home() / "bin" / "spark-class"), *args]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
            cwd=cluster.work_dir,
        )
    cluster.processes.append(proc)
    cluster.logs.append(log)


def start_spark_cluster(
    work_dir: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g", timeout: float = 120.0
) -> SparkCluster:
    """A master and ``workers`` workers (``cores`` cores and ``memory`` for executors each), all registered."""
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    port, web = free_port(), free_port()
    cluster = SparkCluster(work_dir, f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}")
    try:
        _launch(cluster, "master", [MASTER_MAIN, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web)])
        for i in range(workers):
            worker_dir = work_dir / f"worker-{i}"
            worker_dir.mkdir(exist_ok=True)
            _launch(
                cluster,
                f"worker-{i}",
                [
                    WORKER_MAIN,
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(cores),
                    "--memory",
                    memory,
                    "--work-dir",
                    str(worker_dir / "work"),
                    cluster.master_url,
                ],
            )
        deadline = time.monotonic() + timeout
        while True:
            for proc, log in zip(cluster.processes, cluster.logs, strict=True):
                if proc.poll() is not None:
                    tail = log.read_text(errors="replace").strip().splitlines()[-3:]
                    raise RuntimeError(f"{log.stem} exited during start: {' | '.join(tail)}")
            with contextlib.suppress(OSError, ValueError):
                if cluster.alive_workers() == workers:
                    return cluster
            if time.monotonic() > deadline:
                raise RuntimeError(f"Spark cluster not ready after {timeout:.0f} s (logs in {work_dir})")
            time.sleep(0.5)
    except BaseException:
        cluster.stop()
        raise


@contextlib.contextmanager
def spark_cluster(work_dir: Path, **kwargs) -> Iterator[SparkCluster]:
    cluster = start_spark_cluster(work_dir, **kwargs)
    try:
        yield cluster
    finally:
        cluster.stop()
