"""A real Prometheus server (the Debian package's ``prometheus`` binary) scraping given targets, for tests.

::

    with start_prometheus(tmp_path, ["127.0.0.1:9250", "127.0.0.1:9251"], scrape_interval="1s") as prom:
        prom.url              # "http://127.0.0.1:<free port>"
        prom.wait_for_targets()

It listens on 127.0.0.1 only, keeps its TSDB in ``<work_dir>/prometheus-data`` and is stopped (SIGTERM, then
SIGKILL) and its data directory removed when the block ends, also on error; it dies with the Python process that
started it (``setpriv --pdeathsig``).
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from placement.lab.flink import free_port
from support import real_parts


@dataclass
class RunningPrometheus:
    url: str
    data_dir: Path
    log: Path
    proc: subprocess.Popen

    def api(self, path: str) -> dict:
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=5) as answer:
            return json.load(answer)["data"]

    def wait_for_targets(self, timeout: float = 60.0) -> None:
        """Until every target has been scraped successfully at least once."""
        deadline = time.monotonic() + timeout
        while True:
            targets = self.api("targets?state=active")["activeTargets"]
            if targets and all(t["health"] == "up" for t in targets):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"Prometheus targets not up after {timeout:.0f} s: "
                    f"{[(t['scrapeUrl'], t['health'], t.get('lastError')) for t in targets]}"
                )
            time.sleep(0.5)


@contextlib.contextmanager
def start_prometheus(
    work_dir: Path, targets: Sequence[str], *, scrape_interval: str = "1s", timeout: float = 60.0
) -> Iterator[RunningPrometheus]:
    binary = shutil.which("prometheus")
    if binary is None:
        real_parts.missing("needs the prometheus binary (Debian package prometheus: scripts/setup.sh --full)")
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    config = work_dir / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {
                    "scrape_interval": scrape_interval,
                    "scrape_timeout": scrape_interval,
                    "evaluation_interval": "1m",
                },
                "scrape_configs": [{"job_name": "flink", "static_configs": [{"targets": list(targets)}]}],
            }
        )
    )
    data = work_dir / "prometheus-data"
    log = work_dir / "prometheus.log"
    url = f"http://127.0.0.1:{free_port()}"
    argv = [
        "setpriv",
        "--pdeathsig",
        "KILL",
        "--",
        str(binary),
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address={url.removeprefix('http://')}",
    ]
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    running = RunningPrometheus(url, data, log, proc)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited during start: {log.read_text(errors='replace')[-500:]}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{url}/-/ready", timeout=2) as answer:
                if answer.status == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus not ready after {timeout:.0f} s (log {log})")
            time.sleep(0.3)
        yield running
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        shutil.rmtree(data, ignore_errors=True)


def reporter_port(taken: Collection[int] = ()) -> int:
    """A port free now for a TaskManager's reporter, below the kernel's ephemeral range.

    The reporter binds its port seconds after it is chosen (the JobManager and the TaskManager's JVM start first),
    and no retry follows a taken one: the reporter is then left out, and that TaskManager's series with it. A port
    from :func:`free_port` lies in the ephemeral range, which every outgoing connection of this machine draws from
    meanwhile (another cluster starting beside this one, a job's, a test's); one below it is taken only by a process
    that binds it by number."""
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    pick = random.SystemRandom()
    for _ in range(100):
        port = pick.randrange(20000, max(ephemeral_low, 20001))
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:  # the reporter listens on every address
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
    return free_port()


REPORTER_FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory"


def with_prometheus_reporter(taskmanagers, work_dir: Path, flink_home: Path | None = None):
    """The TaskManager specs, each with Flink's Prometheus reporter on a port of its own, and ``host:port`` of each.

    The reporter is a Flink plugin (``plugins/metrics-prometheus`` of the pyflink wheel, or of ``flink_home``: every
    supported release ships it there, with the same reporter keys): each TaskManager gets ``FLINK_PLUGINS_DIR``
    pointing at a directory holding only that plugin (through its ``wrapper``), so the shared Flink home stays
    untouched."""
    import dataclasses

    from placement.flink.home import find_flink_home

    plugins = Path(work_dir) / "flink-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    link = plugins / "metrics-prometheus"
    if not link.exists():
        source = (flink_home or find_flink_home().path) / "plugins" / "metrics-prometheus"
        if not source.is_dir():
            real_parts.missing(f"the Flink home has no {source} (the Prometheus reporter plugin)")
        link.symlink_to(source)
    specs, targets, chosen = [], [], set()
    for tm in taskmanagers:
        port = reporter_port(chosen)
        chosen.add(port)
        targets.append(f"127.0.0.1:{port}")
        specs.append(
            dataclasses.replace(
                tm,
                wrapper=("env", f"FLINK_PLUGINS_DIR={plugins}", *tm.wrapper),
                extra_config={
                    **tm.extra_config,
                    "metrics.reporters": "prom",
                    "metrics.reporter.prom.factory.class": REPORTER_FACTORY,
                    "metrics.reporter.prom.port": str(port),
                },
            )
        )
    return tuple(specs), targets
