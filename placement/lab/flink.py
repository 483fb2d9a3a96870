"""Start and stop a real Flink standalone cluster (any supported version) with plain ``java`` (no bin/*.sh, no Maven).

The apache-flink-libraries packages ship Flink's jars but neither the start scripts nor a ``conf/`` dir, so this module
does what ``jobmanager.sh``/``taskmanager.sh`` would: it writes one conf dir per process (a ``config.yaml`` every
supported version reads, and a log4j properties file), asks ``BashJavaUtils`` for the JVM memory flags Flink derives
from that config, and starts each JVM in its own process group so :meth:`RunningCluster.stop` can end it and everything
it spawned.

Pipeline: :class:`ClusterSpec` (pure, typed) -> :func:`render_*` / :func:`*_argv` (pure command/config builders, tested
without a cluster) -> :func:`start_cluster` (the only side effects) -> :class:`RunningCluster` (what runs, where its
REST endpoint and logs are; :meth:`~RunningCluster.stop`).

A TaskManager can be started through a wrapper argv (e.g. ``ip netns exec pl-rpi1`` or a cgroup launcher), which is how
the lab puts an "edge" TaskManager into its own network namespace and CPU budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.home import JAVA17_FLAGS, FlinkHome, find_flink_home
from placement.flink.options import (
    CONFIG_YAML,
    duration,
    jobmanager_bind_host,
    render_config,
)
from placement.flink.versions import FlinkVersion
from placement.inventory.failure_detection import FailureDetection, flink_config
from placement.lab import stopping
from placement.polling import poll
from placement.scheduler.install import launcher_classpath

JOBMANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
BASH_JAVA_UTILS_MAIN = "org.apache.flink.runtime.util.bash.BashJavaUtils"
_BJU_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:"

LOG4J_PROPERTIES = """\
# Written by placement.lab.flink: one log file per JVM, named by -Dlog.file.
monitorInterval = 0
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.append = true
appender.main.fileName = ${sys:log.file}
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
# Flink warns at INFO about every missing external-resource driver and about many harmless things; keep them.
logger.pekko.name = org.apache.pekko
logger.pekko.level = WARN
logger.zookeeper.name = org.apache.zookeeper
logger.zookeeper.level = WARN
logger.netty.name = org.jboss.netty.channel.DefaultChannelPipeline
logger.netty.level = ERROR
"""


# ---- specs ---------------------------------------------------------------------------------------------------------


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free right now on ``host`` (the kernel picks it, so concurrent clusters do not collide)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class TaskManagerSpec:
    """One TaskManager. ``resource_id`` becomes ``taskmanager.resource-id`` (what REST shows as taskmanager-id)."""

    resource_id: str
    slots: int = 2
    address: str = "127.0.0.1"  # bind host and the address the TM announces to the JobManager
    external_resource: str | None = None  # a resource only this TM has: the vanilla-placement pin
    external_resource_amount: int = 0  # how many subtask slots may request it (>= largest parallelism placed here)
    wrapper: tuple[str, ...] = ()  # argv prefix, e.g. ("ip", "netns", "exec", "pl-rpi1")
    task_heap_mib: int = 192
    managed_mib: int = 32
    network_mib: int = 64
    extra_config: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterSpec:
    """A whole standalone cluster. ``rest_port``/``rpc_port`` of 0 mean "pick a free one at start"."""

    work_dir: Path
    taskmanagers: tuple[TaskManagerSpec, ...]
    jobmanager_address: str = "127.0.0.1"  # rpc address; TMs in namespaces must be able to reach it
    jobmanager_bind_host: str | None = None  # default: jobmanager_address; "0.0.0.0" to accept on every interface
    rest_address: str = "127.0.0.1"
    rest_port: int = 0
    rpc_port: int = 0
    jobmanager_heap_mib: int = 256
    flink_home: Path | None = None
    extra_config: Mapping[str, object] = field(default_factory=dict)
    jobmanager_extra_config: Mapping[str, object] = field(default_factory=dict)  # only the JobManager's config.yaml
    jobmanager_conf_dir: Path | None = None  # default <work_dir>/jobmanager/conf; the lab uses <flink home>/conf
    jvm_flags: tuple[str, ...] = ()  # more flags for every JobManager and TaskManager JVM (kept in cluster.json's argv)
    # heartbeats, slot requests, restarts, rejoining: every process's (the inventory's flink.failure_detection, mapped
    # by placement.inventory.failure_detection.flink_config; default: its edge defaults)
    failure_detection: Mapping[str, object] = field(default_factory=lambda: flink_config(FailureDetection()))
    # buffers per channel and gate, where the inventory's flink.network differs from Flink's defaults
    network: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = [tm.resource_id for tm in self.taskmanagers]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise PlacementError(f"duplicate TaskManager resource id(s): {', '.join(dupes)}")


# ---- pure builders -------------------------------------------------------------------------------------------------


def common_config(spec: ClusterSpec, rest_port: int, rpc_port: int) -> dict[str, object]:
    return {
        "jobmanager.rpc.address": spec.jobmanager_address,
        "jobmanager.rpc.port": rpc_port,
        "rest.address": spec.rest_address,
        "rest.port": rest_port,
        "env.java.opts.all": " ".join(JAVA17_FLAGS),
        # The default scheduler honours fine-grained slot sharing groups; the adaptive one ignores them.
        "jobmanager.scheduler": "default",
        # durations as plain milliseconds: the form every supported Flink parses (placement.flink.options)
        "execution.checkpointing.interval": duration(timedelta(seconds=10)),
        "state.backend.type": "hashmap",
        "metrics.fetcher.update-interval": duration(timedelta(seconds=2)),
        # Heartbeats, slot request timeout, restart strategy (bounded: a pinned subtask that can never be scheduled
        # fails the job after the attempts) and rejoining, as the inventory says. Its cluster.registration.error-delay
        # (edge default 1 s, Flink's 10 s) also serves the start: a TaskManager that asks for the ResourceManager before
        # the JobManager has it up tries again after it (measured with 10 s, a start that hit it took 21.5 s, not ~12)
        **spec.failure_detection,
        **spec.network,
        # REST answers a job's state, vertices and checkpoints from a cache of its execution graph kept this long
        # (Flink's default 3 s; web.refresh-interval before 2.0, rest.cache.execution-graph.timeout since): a job
        # CANCELED or RUNNING was read as still CANCELLING or DEPLOYING for up to 3 s. Measured on a 2.3 test
        # cluster: cancel -> CANCELED seen 3.1-3.4 s with the default, 0.7-0.8 s with 0.5 s
        "web.refresh-interval": duration(timedelta(milliseconds=500)),
        "rest.cache.execution-graph.timeout": duration(timedelta(milliseconds=500)),
        "web.submit.enable": True,
        "web.cancel.enable": True,
        **spec.extra_config,
    }


def jobmanager_config(
    spec: ClusterSpec, rest_port: int, rpc_port: int, version: FlinkVersion | None = None
) -> dict[str, object]:
    """``version``: the release the JobManager runs (None: the newest behaviour)."""
    bind = spec.jobmanager_address if version is None else jobmanager_bind_host(version, spec.jobmanager_address)
    return {
        **common_config(spec, rest_port, rpc_port),
        "jobmanager.bind-host": spec.jobmanager_bind_host or bind,
        "rest.bind-address": spec.rest_address,
        "jobmanager.memory.heap.size": f"{spec.jobmanager_heap_mib}m",
        "jobmanager.memory.off-heap.size": "64m",
        "jobmanager.memory.jvm-metaspace.size": "192m",
        "jobmanager.memory.jvm-overhead.min": "64m",
        "web.upload.dir": str(spec.work_dir / "jobmanager" / "upload"),
        "io.tmp.dirs": str(spec.work_dir / "jobmanager" / "tmp"),
        "blob.storage.directory": str(spec.work_dir / "jobmanager" / "blob"),
        **spec.jobmanager_extra_config,
    }


def taskmanager_config(spec: ClusterSpec, tm: TaskManagerSpec, rest_port: int, rpc_port: int) -> dict[str, object]:
    tm_dir = spec.work_dir / f"tm-{tm.resource_id}"
    conf: dict[str, object] = {
        **common_config(spec, rest_port, rpc_port),
        "taskmanager.resource-id": tm.resource_id,
        "taskmanager.numberOfTaskSlots": tm.slots,
        "taskmanager.bind-host": tm.address,
        "taskmanager.host": tm.address,
        "taskmanager.memory.task.heap.size": f"{tm.task_heap_mib}m",
        "taskmanager.memory.managed.size": f"{tm.managed_mib}m",
        "taskmanager.memory.network.min": f"{tm.network_mib}m",
        "taskmanager.memory.network.max": f"{tm.network_mib}m",
        "taskmanager.memory.framework.heap.size": "64m",
        "taskmanager.memory.framework.off-heap.size": "64m",
        "taskmanager.memory.jvm-metaspace.size": "192m",
        "taskmanager.memory.jvm-overhead.min": "64m",
        "taskmanager.memory.jvm-overhead.max": "128m",
        "io.tmp.dirs": str(tm_dir / "tmp"),
        "blob.storage.directory": str(tm_dir / "blob"),
    }
    if tm.external_resource:
        conf["external-resources"] = [tm.external_resource]
        conf[f"external-resource.{tm.external_resource}.amount"] = tm.external_resource_amount
    conf.update(tm.extra_config)
    return conf


def memory_sizing_key(conf: Mapping[str, object]) -> str:
    """What BashJavaUtils' answer depends on: memory options, slots, CPU cores and the external resources (its
    dynamic properties carry the TM's whole resource spec, extended resources included)."""
    keys = sorted(
        k
        for k in conf
        if k.startswith(("taskmanager.memory.", "external-resource"))
        or k in ("taskmanager.numberOfTaskSlots", "taskmanager.cpu.cores")
    )
    return json.dumps({k: conf[k] for k in keys}, sort_keys=True, default=str)


def jvm_base_flags(log_file: Path, conf_dir: Path) -> list[str]:
    return [
        *JAVA17_FLAGS,
        f"-Dlog.file={log_file}",
        f"-Dlog4j.configurationFile=file:{conf_dir / 'log4j.properties'}",
        "-XX:+UseSerialGC",  # two shared cores: no parallel GC threads fighting the other JVMs
    ]


# Every JVM gets bin/config.sh's classpath (sorted lib/*.jar, flink-dist last), not "lib/*": a class in a lib/ jar
# (the scheduler extension) must win over flink-dist's copy, and "lib/*" leaves that order to the file system.


def jobmanager_argv(
    home: FlinkHome, conf_dir: Path, log_file: Path, jvm_mem: Sequence[str], dyn: Sequence[str]
) -> list[str]:
    return [
        "java",
        *jvm_base_flags(log_file, conf_dir),
        *jvm_mem,
        "-cp",
        launcher_classpath(home),
        JOBMANAGER_MAIN,
        "-c",
        str(conf_dir),
        *dyn,
    ]


def taskmanager_argv(
    home: FlinkHome, tm: TaskManagerSpec, conf_dir: Path, log_file: Path, jvm_mem: Sequence[str], dyn: Sequence[str]
) -> list[str]:
    return [
        *tm.wrapper,
        "java",
        *jvm_base_flags(log_file, conf_dir),
        *jvm_mem,
        "-cp",
        launcher_classpath(home),
        TASKMANAGER_MAIN,
        "-c",
        str(conf_dir),
        *dyn,
    ]


def bash_java_utils_argv(home: FlinkHome, command: str, conf_dir: Path) -> list[str]:
    return [
        "java",
        "-cp",
        f"{home.bash_java_utils}:{launcher_classpath(home)}",
        BASH_JAVA_UTILS_MAIN,
        command,
        "-c",
        str(conf_dir),
    ]


def parse_bash_java_utils(stdout: str) -> tuple[list[str], list[str]]:
    """The JVM flags and ``-D`` dynamic properties BashJavaUtils printed (last two result lines)."""
    results = [line[len(_BJU_PREFIX) :] for line in stdout.splitlines() if line.startswith(_BJU_PREFIX)]
    if len(results) < 2:
        raise PlacementError(f"BashJavaUtils printed no memory settings: {stdout.strip()[-300:]!r}")
    jvm, dyn = results[-2].split(), results[-1].split()
    return jvm, dyn


# ---- side effects --------------------------------------------------------------------------------------------------


@dataclass
class FlinkProcess:
    """One JVM the cluster started: its role, process (group) id and log file."""

    name: str
    pid: int
    log_file: Path
    stdout_file: Path
    argv: list[str]
    popen: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def log_tail(self, lines: int = 5) -> str:
        texts = []
        for path in (self.stdout_file, self.log_file):
            if path.is_file():
                texts.extend(path.read_text(errors="replace").splitlines())
        interesting = [t for t in texts if "ERROR" in t or "Exception" in t] or texts
        return " | ".join(t.strip() for t in interesting[-lines:])


@dataclass
class RunningCluster:
    """A started cluster: its REST URL, the processes, and :meth:`stop`."""

    spec: ClusterSpec
    home: FlinkHome
    rest_url: str
    rest_port: int
    rpc_port: int
    jobmanager: FlinkProcess
    taskmanagers: dict[str, FlinkProcess]

    @property
    def processes(self) -> list[FlinkProcess]:
        return [*self.taskmanagers.values(), self.jobmanager]

    @property
    def state_file(self) -> Path:
        return self.spec.work_dir / "cluster.json"

    def save_state(self) -> Path:
        """Record pids and the REST URL so another process (``placement lab down``) can stop this cluster."""
        state = {
            "rest_url": self.rest_url,
            "processes": [
                {"name": p.name, "pid": p.pid, "log_file": str(p.log_file), "argv": p.argv} for p in self.processes
            ],
        }
        self.state_file.write_text(json.dumps(state, indent=2))
        return self.state_file

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every process group (TaskManagers first), SIGKILL what is left after ``timeout``."""
        stop_processes(self.processes, timeout)
        self.state_file.unlink(missing_ok=True)


def stop_processes(processes: Sequence[FlinkProcess], timeout: float = 20.0) -> None:
    """TERM each process and what it started (its wrapper's JVM), KILL what is left after ``timeout``."""
    stopping.stop([p.pid for p in processes], timeout=timeout, tree=True)
    for p in processes:
        if p.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(timeout=5)


def stop_from_state(work_dir: Path, timeout: float = 20.0) -> bool:
    """Stop a cluster another process started (from its ``cluster.json``); False when there is none."""
    state_file = Path(work_dir) / "cluster.json"
    if not state_file.is_file():
        return False
    state = json.loads(state_file.read_text())
    procs = [
        FlinkProcess(p["name"], p["pid"], Path(p["log_file"]), Path(p["log_file"]), []) for p in state["processes"]
    ]
    stop_processes(procs, timeout)
    state_file.unlink(missing_ok=True)
    return True


def relaunch_from_state(work_dir: Path, name: str, *, timeout: float = 20.0) -> int:
    """End process ``name`` of the cluster recorded in ``<work_dir>/cluster.json`` (if it still runs) and start it
    again with the argv it was started with (its wrapper included: namespace, cgroup); returns the new pid.

    What a TaskManager's host does when its service restarts: same config, same resource id, a new JVM."""
    state_file = Path(work_dir) / "cluster.json"
    if not state_file.is_file():
        raise PlacementError(f"no cluster recorded in {work_dir}")
    state = json.loads(state_file.read_text())
    entry = next((p for p in state["processes"] if p["name"] == name), None)
    if entry is None or not entry.get("argv"):
        raise PlacementError(f"{state_file}: no process {name!r} with a recorded command line")
    old = FlinkProcess(
        name, int(entry["pid"]), Path(entry["log_file"]), Path(entry["log_file"]).with_suffix(".out"), entry["argv"]
    )
    stop_processes([old], timeout)
    new = _launch(name, list(entry["argv"]), Path(entry["log_file"]), die_with_parent=False)
    entry["pid"] = new.pid
    state_file.write_text(json.dumps(state, indent=2))
    return new.pid


def _write_conf_dir(conf_dir: Path, conf: Mapping[str, object]) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    # config.yaml in a conf dir of its own: read by every supported version (1.x would prefer a flink-conf.yaml, and
    # there is none)
    (conf_dir / CONFIG_YAML).write_text(render_config(conf))
    (conf_dir / "log4j.properties").write_text(LOG4J_PROPERTIES)


# BashJavaUtils' answers: a function of that Flink's code and the sizing options alone, and each call is a JVM start of
# its own (1.2-1.5 s, more on a busy machine; three per cluster). Kept in this process (key: its jar and flink-dist,
# both resolved, the command, the sizing key) and in the tool's cache (the same, the two jars' sizes and times too:
# a jar replaced in place is another Flink), so clusters of one Flink and sizing ask once per machine — also across lab
# homes, which link the jars of the Flink they mirror. Only answers are kept; a rejected config is asked again.
_MEMORY_FLAGS: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {}
MEMORY_FLAGS_CACHE = "flink-memory-flags"  # under placement.resources.cache_dir()


def jobmanager_sizing_key(conf: Mapping[str, object]) -> str:
    """What GET_JM_RESOURCE_PARAMS' answer depends on: the JobManager's memory options."""
    return json.dumps(
        {k: conf[k] for k in sorted(conf) if k.startswith("jobmanager.memory.")}, sort_keys=True, default=str
    )


def _memory_flags_file(jars: Sequence[Path], command: str, sizing: str) -> Path:
    from placement.resources import cache_dir

    stats = [(str(j), j.stat().st_size, j.stat().st_mtime_ns) for j in jars]
    digest = hashlib.sha256(json.dumps([stats, command, sizing]).encode()).hexdigest()[:24]
    return cache_dir() / MEMORY_FLAGS_CACHE / f"{digest}.json"


def _memory_flags_cached(home: FlinkHome, command: str, conf_dir: Path, sizing: str) -> tuple[list[str], list[str]]:
    jars = [home.bash_java_utils.resolve(), *(j.resolve() for j in sorted(home.lib.glob("flink-dist*.jar"))[:1])]
    key = (*(str(j) for j in jars), command, sizing)
    if key not in _MEMORY_FLAGS:
        stored = _memory_flags_file(jars, command, sizing)
        try:
            answer = json.loads(stored.read_text())
            jvm, dyn = [str(f) for f in answer["jvm"]], [str(f) for f in answer["dyn"]]
        except (OSError, ValueError, KeyError, TypeError):
            jvm, dyn = _memory_flags(home, command, conf_dir)
            with contextlib.suppress(OSError):  # a cache that cannot be written only costs the next start this call
                stored.parent.mkdir(parents=True, exist_ok=True)
                staging = stored.with_name(f".{stored.name}.{os.getpid()}")
                staging.write_text(json.dumps({"jvm": jvm, "dyn": dyn}))
                os.replace(staging, stored)
        _MEMORY_FLAGS[key] = (tuple(jvm), tuple(dyn))
    jvm_t, dyn_t = _MEMORY_FLAGS[key]
    return list(jvm_t), list(dyn_t)


def _memory_flags(home: FlinkHome, command: str, conf_dir: Path) -> tuple[list[str], list[str]]:
    proc = subprocess.run(
        bash_java_utils_argv(home, command, conf_dir), capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        last = (proc.stdout + proc.stderr).strip().splitlines()
        raise PlacementError(
            f"{conf_dir / 'config.yaml'}: Flink rejected the memory settings: {last[-1] if last else proc.returncode}"
        )
    return parse_bash_java_utils(proc.stdout)


def _launch(name: str, argv: list[str], log_file: Path, die_with_parent: bool) -> FlinkProcess:
    stdout_file = log_file.with_suffix(".out")
    if die_with_parent:
        # If the Python process dies without its teardown (kill -9, crash) the JVMs go with it instead of lingering.
        argv = ["setpriv", "--pdeathsig", "KILL", "--", *argv]
    with open(stdout_file, "ab") as out:
        try:
            popen = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        except FileNotFoundError as exc:
            raise PlacementError(f"cannot start {name}: {exc.filename} not found") from None
    return FlinkProcess(name=name, pid=popen.pid, log_file=log_file, stdout_file=stdout_file, argv=argv, popen=popen)


def start_cluster(spec: ClusterSpec, *, timeout: float = 120.0, die_with_parent: bool = False) -> RunningCluster:
    """Start the JobManager and every TaskManager, wait until REST answers and all TMs registered.

    On any failure everything already started is stopped again before the error is raised (nothing half-up).
    ``die_with_parent`` ties the JVMs' lives to this Python process (for tests); ``placement lab up`` leaves it off.
    """
    home = FlinkHome(Path(spec.flink_home)) if spec.flink_home else find_flink_home()
    spec.work_dir.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, PORT_ATTEMPTS + 1):
        # a port free when chosen can be taken before the JobManager binds it (another cluster starting, an outgoing
        # connection's ephemeral port): then the start fails at once, and new ports are chosen
        rest_port = spec.rest_port or free_port(spec.rest_address)
        rpc_port = spec.rpc_port or free_port(spec.jobmanager_address)
        try:
            return _start(spec, home, rest_port, rpc_port, timeout=timeout, die_with_parent=die_with_parent)
        except PortTaken:
            if attempt == PORT_ATTEMPTS or (spec.rest_port and spec.rpc_port):
                raise
            jm_log = spec.work_dir / "jobmanager" / "jobmanager.log"  # kept, and out of the next attempt's way
            jm_log.replace(jm_log.with_name(f"jobmanager.port-taken-{attempt}.log"))
    raise AssertionError("unreachable")


class PortTaken(PlacementError):
    """A JobManager could not bind a port chosen for it (its log says BindException)."""


PORT_ATTEMPTS = 3


def _start(
    spec: ClusterSpec, home: FlinkHome, rest_port: int, rpc_port: int, *, timeout: float, die_with_parent: bool
) -> RunningCluster:
    from placement.flink.rest import (
        FlinkRest,  # the REST client is also used without a lab
    )

    started: list[FlinkProcess] = []
    try:
        jm_conf_dir = spec.jobmanager_conf_dir or spec.work_dir / "jobmanager" / "conf"
        version = FlinkVersion.parse(home.version) if home.version else None
        jm_conf = jobmanager_config(spec, rest_port, rpc_port, version)
        _write_conf_dir(jm_conf_dir, jm_conf)
        jvm, dyn = _memory_flags_cached(home, "GET_JM_RESOURCE_PARAMS", jm_conf_dir, jobmanager_sizing_key(jm_conf))
        jm_log = spec.work_dir / "jobmanager" / "jobmanager.log"
        jm_log.parent.mkdir(parents=True, exist_ok=True)
        jobmanager = _launch(
            "jobmanager",
            jobmanager_argv(home, jm_conf_dir, jm_log, [*jvm, *spec.jvm_flags], dyn),
            jm_log,
            die_with_parent,
        )
        started.append(jobmanager)

        taskmanagers: dict[str, FlinkProcess] = {}
        for tm in spec.taskmanagers:
            tm_dir = spec.work_dir / f"tm-{tm.resource_id}"
            conf_dir = tm_dir / "conf"
            conf = taskmanager_config(spec, tm, rest_port, rpc_port)
            _write_conf_dir(conf_dir, conf)
            # BashJavaUtils is a JVM start of its own (seconds on a busy machine): asked once per distinct sizing
            jvm, dyn = _memory_flags_cached(home, "GET_TM_RESOURCE_PARAMS", conf_dir, memory_sizing_key(conf))
            log = tm_dir / "taskmanager.log"
            argv = taskmanager_argv(home, tm, conf_dir, log, [*jvm, *spec.jvm_flags], dyn)
            proc = _launch(f"taskmanager {tm.resource_id}", argv, log, die_with_parent)
            started.append(proc)
            taskmanagers[tm.resource_id] = proc

        cluster = RunningCluster(
            spec, home, f"http://{spec.rest_address}:{rest_port}", rest_port, rpc_port, jobmanager, taskmanagers
        )
        _wait_until_ready(cluster, FlinkRest(cluster.rest_url, timeout=5), timeout)
        cluster.save_state()
        return cluster
    except BaseException:
        stop_processes(list(reversed(started)))
        raise


def _wait_until_ready(cluster: RunningCluster, rest: object, timeout: float) -> None:
    from placement.flink.rest import FlinkRest

    assert isinstance(rest, FlinkRest)
    wanted = set(cluster.taskmanagers)

    def registered_now() -> set[str]:
        for p in cluster.processes:
            if not p.alive():
                error = PortTaken if _bind_failed(p) else PlacementError
                raise error(f"{p.name} exited during start (log {p.log_file}): {p.log_tail()}")
        try:
            # a TM counts once its slots are reported too (registration and the slot report are separate steps)
            return {tm.id for tm in rest.taskmanagers() if tm.slots > 0}
        except PlacementError:
            return set()

    registered, ready = poll(registered_now, lambda ids: wanted <= ids, timeout=timeout, every=0.5)
    if ready:
        return
    missing = ", ".join(sorted(wanted - registered)) or "REST endpoint"
    raise PlacementError(
        f"Flink cluster at {cluster.rest_url} not ready after {timeout:.0f}s: waiting for {missing} (logs in "
        f"{cluster.spec.work_dir})"
    )


def _bind_failed(p: FlinkProcess) -> bool:
    try:
        return "java.net.BindException" in Path(p.log_file).read_text(errors="replace")
    except OSError:
        return False


def describe(cluster: RunningCluster) -> dict[str, object]:
    """A JSON-able summary (for ``lab status`` and debugging)."""
    return {
        "rest_url": cluster.rest_url,
        "flink_home": str(cluster.home.path),
        "work_dir": str(cluster.spec.work_dir),
        "processes": {p.name: {"pid": p.pid, "alive": p.alive(), "log": str(p.log_file)} for p in cluster.processes},
        "taskmanagers": [asdict(tm) | {"wrapper": list(tm.wrapper)} for tm in cluster.spec.taskmanagers],
    }
