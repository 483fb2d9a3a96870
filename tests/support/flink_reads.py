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
        subprocess.run(["javac", "--release", "17", "-cp", home.classpath, "-d", str(classes), str(work_dir / "FlinkReads.java")],
                       check=True, capture_output=True, timeout=120)
        return cls(classes)

    def __call__(self, home: FlinkHome, conf_dir: Path, *options: str) -> dict[str, str]:
        """``Class#FIELD`` -> the value as that Flink's ``toString`` shows it (``null`` when unset), or
        ``error: <message>`` when that version cannot parse what the conf dir says."""
        proc = subprocess.run(["java", "-cp", f"{self.classes}:{home.classpath}", "FlinkReads", str(conf_dir), *options],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        out: dict[str, str] = {}
        for line in proc.stdout.splitlines():
            if line.startswith("FLINK_READS "):
                kind, option, value = line.split(" ", 3)[1:]
                out[option] = value if kind == "value" else f"error: {value}"
        return out


def tm_process_mib(home: FlinkHome, conf_dir: Path) -> float:
    """The TaskManager's process size as that version's BashJavaUtils derives it (JVM flags + dynamic properties)."""
    proc = subprocess.run(["java", "-cp", f"{home.bash_java_utils}:{home.classpath}",
                           "org.apache.flink.runtime.util.bash.BashJavaUtils", "GET_TM_RESOURCE_PARAMS", "-c", str(conf_dir)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    jvm, dyn = [line.split(":", 1)[1] for line in proc.stdout.splitlines() if line.startswith("BASH_JAVA_UTILS_EXEC_RESULT:")][-2:]
    props = dict(re.findall(r"-D (\S+?)=(\S+)", dyn))

    def mib(text: str) -> float:
        number, unit = re.fullmatch(r"(\d+)(\D*)", text.strip().lower()).groups()  # type: ignore[union-attr]
        return int(number) / {"": 2**20, "b": 2**20, "bytes": 2**20, "k": 1024, "kb": 1024, "m": 1, "mb": 1}[unit]

    flags = jvm.split()
    heap = mib(next(f[4:] for f in flags if f.startswith("-Xmx")))
    direct = mib(next(f.split("=")[1] for f in flags if f.startswith("-XX:MaxDirectMemorySize=")))
    metaspace = mib(next(f.split("=")[1] for f in flags if f.startswith("-XX:MaxMetaspaceSize=")))
    return heap + direct + metaspace + mib(props["taskmanager.memory.managed.size"]) + mib(props["taskmanager.memory.jvm-overhead.max"])
