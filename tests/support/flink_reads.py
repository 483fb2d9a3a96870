"""What a given Flink version itself reads from a conf dir: its own ``GlobalConfiguration`` and option definitions.

A few lines of Java, compiled once per session, load a conf dir the way every Flink process does
(``GlobalConfiguration.loadConfiguration``: whichever config file that version picks, with that version's parser) and
print the value of each option asked for, typed as that version defines it (``Class#FIELD`` of its own option
constants, fallback and deprecated keys included) -- or the error that version raises for it, which is what a
JobManager would fail to start with. The API used is the same from 1.19 to 2.3, so one class file runs on each.

    reads = FlinkReads.compile(tmp_dir)
    reads(home, conf_dir, "org.apache.flink.configuration.JobManagerOptions#SLOT_REQUEST_TIMEOUT")
    # {"...#SLOT_REQUEST_TIMEOUT": "PT1M"}  (1.20+), "60000" (1.19), or "error: Could not parse value ..."

:func:`tm_process_mib` is the TaskManager's process size as that version's BashJavaUtils (what its start scripts ask)
derives it from a conf dir.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from placement.flink.home import FlinkHome, find_flink_home
from support import real_parts

SOURCE = """\
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;

public class FlinkReads {
    public static void main(String[] args) throws Exception {
        Configuration conf = GlobalConfiguration.loadConfiguration(args[0]);
        for (int i = 1; i < args.length; i++) {
            String[] at = args[i].split("#", 2);
            ConfigOption<?> option = (ConfigOption<?>) Class.forName(at[0]).getField(at[1]).get(null);
            String line;
            try {
                Object value = conf.get(option);
                line = "value " + args[i] + " " + value;
            } catch (RuntimeException e) {
                line = "error " + args[i] + " " + String.valueOf(e.getMessage()).replace('\\n', ' ');
            }
            System.out.println("FLINK_READS " + line);
        }
    }
}
"""


@dataclass(frozen=True)
class FlinkReads:
    classes: Path

    @classmethod
    def compile(cls, work_dir: Path) -> FlinkReads:
        if shutil.which("javac") is None:
            real_parts.missing("javac not found (a JDK 17)")
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / "FlinkReads.java").write_text(SOURCE)
        classes = work_dir / "classes"
        classes.mkdir(exist_ok=True)
        home = find_flink_home()
        subprocess.run(
            ["javac", "--release", "17", "-cp", home.classpath, "-d", str(classes), str(work_dir / "FlinkReads.java")],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return cls(classes)

    def __call__(self, home: FlinkHome, conf_dir: Path, *options: str) -> dict[str, str]:
        """``Class#FIELD`` -> the value as that Flink's ``toString`` shows it (``null`` when unset), or
        ``error: <message>`` when that version cannot parse what the conf dir says."""
        proc = subprocess.run(
            ["java", "-cp", f"{self.classes}:{home.classpath}", "FlinkReads", str(conf_dir), *options],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        out: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            if line.startswith("FLINK_READS "):
                kind, option, value = line.split(" ", 3)[1:]
                out[option] = value if kind == "value" else f"error: {value}"
        return out


def tm_process_mib(home: FlinkHome, conf_dir: Path) -> float:
    """The TaskManager's process size as that version's BashJavaUtils derives it (JVM flags + dynamic properties)."""
    proc = subprocess.run(
        [
            "java",
            "-cp",
            f"{home.bash_java_utils}:{home.classpath}",
            "org.apache.flink.runtime.util.bash.BashJavaUtils",
            "GET_TM_RESOURCE_PARAMS",
            "-c",
            str(conf_dir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    jvm, dyn = [
        line.split(":", 1)[1] for line in proc.stdout.splitlines() if line.startswith("BASH_JAVA_UTILS_EXEC_RESULT:")
    ][-2:]
    props = dict(re.findall(r"-D (\S+?)=(\S+)", dyn))

    def mib(text: str) -> float:
        number, unit = re.fullmatch(r"(\d+)(\D*)", text.strip().lower()).groups()  # type: ignore[union-attr]
        return int(number) / {"": 2**20, "b": 2**20, "bytes": 2**20, "k": 1024, "kb": 1024, "m": 1, "mb": 1}[unit]

    flags = jvm.split()
    heap = mib(next(f[4:] for f in flags if f.startswith("-Xmx")))
    direct = mib(next(f.split("=")[1] for f in flags if f.startswith("-XX:MaxDirectMemorySize=")))
    metaspace = mib(next(f.split("=")[1] for f in flags if f.startswith("-XX:MaxMetaspaceSize=")))
    return (
        heap
        + direct
        + metaspace
        + mib(props["taskmanager.memory.managed.size"])
        + mib(props["taskmanager.memory.jvm-overhead.max"])
    )


_C = "org.apache.flink.configuration."
# flink.failure_detection's keys -> the option constant every line (1.19 to 2.3) defines for each
FAILURE_OPTIONS = {
    "heartbeat.interval": _C + "HeartbeatManagerOptions#HEARTBEAT_INTERVAL",
    "heartbeat.timeout": _C + "HeartbeatManagerOptions#HEARTBEAT_TIMEOUT",
    "heartbeat.rpc-failure-threshold": _C + "HeartbeatManagerOptions#HEARTBEAT_RPC_FAILURE_THRESHOLD",
    "slot.request.timeout": _C + "JobManagerOptions#SLOT_REQUEST_TIMEOUT",
    "restart-strategy.type": _C + "RestartStrategyOptions#RESTART_STRATEGY",
    "restart-strategy.exponential-delay.initial-backoff": _C
    + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF",
    "restart-strategy.exponential-delay.max-backoff": _C
    + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF",
    "restart-strategy.exponential-delay.backoff-multiplier": _C
    + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER",
    "restart-strategy.exponential-delay.jitter-factor": _C
    + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR",
    "restart-strategy.exponential-delay.reset-backoff-threshold": _C
    + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD",
    "restart-strategy.exponential-delay.attempts-before-reset-backoff": _C
    + "RestartStrategyOptions#RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS",
    "restart-strategy.fixed-delay.attempts": _C + "RestartStrategyOptions#RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS",
    "restart-strategy.fixed-delay.delay": _C + "RestartStrategyOptions#RESTART_STRATEGY_FIXED_DELAY_DELAY",
    "taskmanager.registration.timeout": _C + "TaskManagerOptions#REGISTRATION_TIMEOUT",
    "cluster.registration.max-timeout": _C + "ClusterOptions#MAX_REGISTRATION_TIMEOUT",
    "cluster.registration.error-delay": _C + "ClusterOptions#ERROR_REGISTRATION_DELAY",
}


def as_written(value: str) -> object:
    """A value as Flink's toString shows it, in the form the project writes: ``PT168H``/``10000`` -> ms."""
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?", value)
    if m:
        h, mins, s = (float(g) if g else 0.0 for g in m.groups())
        return round((h * 3600 + mins * 60 + s) * 1000)
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


VERSIONS = ("1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0")  # one release of every supported line


def line_home(version: str) -> FlinkHome:
    """The Flink home of ``version`` for a read test: this machine's 2.3 (missing if it runs another), the other
    lines fetched once into the cache."""
    from placement.flink.distribution import flink_home_for

    local = find_flink_home()
    if version == "2.3.0" and local.version != "2.3.0":
        real_parts.missing(f"this machine's Flink is {local.version}, not 2.3.0")
    return flink_home_for(version)
