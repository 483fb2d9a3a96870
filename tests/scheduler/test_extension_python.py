"""The Python side of the scheduler extension, without a cluster: names, classpath order, the TaskManager table, the
build (real javac) with its cache, install into a Flink home, and reading the extension's messages."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from scheduler_support import FAKE_VERSION, require_jdk

from placement import scheduler as S
from placement.errors import PlacementError
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.rest import TaskManagerInfo
from placement.scheduler.build import SOURCES_DIR, jar_info, read_build_info
from placement.scheduler.check import classpath_order

NAMES = ["iot-sensors", "IoT Sensors", ".hidden", "a/b\\c", "Käse:Wurst", "x" * 250, "数据流", "job.v2_final-1", "%"]
HOSTS = ["rpi1", "server", "edge_3-b", "10.0.0.5", "edge.local", "Ünïcode", "a b"]


def fake_home(tmp_path: Path, jars: list[str]) -> FlinkHome:
    lib = tmp_path / "flink" / "lib"
    lib.mkdir(parents=True)
    for name in jars:
        (lib / name).write_bytes(b"")
    return FlinkHome(lib.parent)


def linked_home(tmp_path: Path) -> FlinkHome:
    """A Flink home whose lib/ links the wheel's jars (installing into it never touches the wheel)."""
    source = find_flink_home()
    lib = tmp_path / "home" / "lib"
    lib.mkdir(parents=True)
    for jar in source.lib.glob("*.jar"):
        (lib / jar.name).symlink_to(jar.resolve())
    return FlinkHome(lib.parent)


# ---- names ---------------------------------------------------------------------------------------------------------


def test_schedulercfg_filename_keeps_plain_names_and_encodes_the_rest() -> None:
    assert S.schedulercfg_filename("iot-sensors") == "iot-sensors.schedulercfg"
    assert S.schedulercfg_filename("IoT Sensors") == "IoT%20Sensors.schedulercfg"
    assert S.schedulercfg_filename("../etc") == "%2E.%2Fetc.schedulercfg"  # no path, no hidden file
    assert S.schedulercfg_filename("Käse") == "K%C3%A4se.schedulercfg"
    long = S.schedulercfg_filename("x" * 250)
    assert len(long) == 200 + len(".schedulercfg") and long != S.schedulercfg_filename("x" * 251)
    assert len({S.schedulercfg_filename(n) for n in [*NAMES, "IoT_Sensors", "IoT%20Sensors"]}) == len(NAMES) + 2


def test_resource_names_keep_host_names_and_map_addresses_apart() -> None:
    assert S.taskmanager_resource_name("rpi1") == "rpi1"
    assert S.taskmanager_resource_name("edge_3-b") == "edge_3-b"
    mapped = S.taskmanager_resource_name("10.0.0.5")
    assert mapped.startswith("10_0_0_5-") and len(mapped) == len("10_0_0_5-") + 8
    assert S.taskmanager_resource_name("10_0_0_5") != mapped
    with pytest.raises(ValueError):
        S.taskmanager_resource_name("")


def test_java_and_python_map_names_the_same_way(extension_cache: Path) -> None:
    require_jdk()
    jar = S.build_extension(find_flink_home(), extension_cache)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}  # argv of the JVM decoded as UTF-8
    main = "org.apache.flink.runtime.scheduler.PlacementNames"
    for kind, names, python in (
        ("file", NAMES, S.schedulercfg_filename),
        ("resource", HOSTS, S.taskmanager_resource_name),
    ):
        out = subprocess.run(
            ["java", "-cp", str(jar.path), main, kind, *names],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        ).stdout.splitlines()
        assert out == [python(n) for n in names]


def test_taskmanager_and_jobmanager_config_keys() -> None:
    assert S.taskmanager_config("rpi1", 4) == {
        "taskmanager.resource-id": "rpi1",
        "taskmanager.numberOfTaskSlots": 4,
        "external-resources": ["rpi1"],
        "external-resource.rpi1.amount": 4,
    }
    mapped = S.taskmanager_resource_name("10.0.0.5")
    assert S.taskmanager_config("10.0.0.5", 2)[f"external-resource.{mapped}.amount"] == 2
    with pytest.raises(ValueError):
        S.taskmanager_config("rpi1", 0)
    assert S.jobmanager_config("/srv/placement") == {
        S.SCHEDULER_DIR_KEY: "/srv/placement",
        "jobmanager.scheduler": "default",
    }


def test_taskmanager_table_divides_each_taskmanager_into_its_slots() -> None:
    def tm(
        tm_id: str, host: str, slots: int, cpu: float, heap: int, off: int, managed: int, net: int
    ) -> TaskManagerInfo:
        return TaskManagerInfo(
            tm_id,
            f"pekko.tcp://flink@{host}:6122/user/rpc/taskmanager_0",
            slots,
            slots,
            {
                "cpuCores": cpu,
                "taskHeapMemory": heap,
                "taskOffHeapMemory": off,
                "managedMemory": managed,
                "networkMemory": net,
                "extendedResources": {tm_id: slots},
            },
            {},
        )

    text = S.render_taskmanagers(
        [tm("server", "10.0.0.1", 8, 8.0, 4096, 0, 8192, 512), tm("rpi1", "192.168.1.181", 3, 4.0, 1000, 10, 301, 64)],
        {"rpi1": ["rpi1.local"]},
    )
    assert text.splitlines()[1:] == [
        "rpi1; addresses=rpi1.local,192.168.1.181; slots=3; cpu=1.333; task-heap=333m; task-off-heap=3m; managed=100m; "
        "network=21m",
        "server; addresses=10.0.0.1; slots=8; cpu=1; task-heap=512m; task-off-heap=0m; managed=1024m; network=64m",
    ]


# ---- classpath -----------------------------------------------------------------------------------------------------


def test_launcher_classpath_is_config_sh_order_with_flink_dist_last(tmp_path: Path) -> None:
    home = fake_home(
        tmp_path,
        [
            "log4j-api-2.jar",
            "flink-dist-2.3.0.jar",
            "placement-scheduler-2.3.0-ab.jar",
            "flink-cep-2.3.0.jar",
            "notes.txt",
        ],
    )
    names = [Path(p).name for p in S.launcher_classpath(home).split(":")]
    assert names == [
        "flink-cep-2.3.0.jar",
        "log4j-api-2.jar",
        "placement-scheduler-2.3.0-ab.jar",
        "flink-dist-2.3.0.jar",
    ]
    with pytest.raises(PlacementError, match="no flink-dist"):
        S.launcher_classpath(fake_home(tmp_path / "empty", ["a.jar"]))


def test_classpath_order_tells_whether_the_extension_wins() -> None:
    assert (
        classpath_order(["/l/flink-cep.jar", "/l/placement-scheduler-2.3.0-ab.jar", "/l/flink-dist-2.3.0.jar"]) is True
    )
    assert classpath_order(["/l/flink-dist-2.3.0.jar", "/l/placement-scheduler-2.3.0-ab.jar"]) is False
    assert classpath_order(["/l/flink-dist-2.3.0.jar"]) is False
    assert classpath_order(["/l/other.jar"]) is None


# ---- build, cache, install -----------------------------------------------------------------------------------------


def test_build_is_cached_by_sources_and_flink_version(tmp_path: Path) -> None:
    require_jdk()
    home = find_flink_home()
    src = tmp_path / "src"
    shutil.copytree(SOURCES_DIR, src)
    first = S.build_extension(home, tmp_path / "cache", src_dir=src)
    assert (
        first.flink_version == home.version
        and first.path.name == f"placement-scheduler-{home.version}-{first.digest}.jar"
    )
    assert read_build_info(first.path) == {"flink.version": home.version, "build.digest": first.digest}
    names = zipfile.ZipFile(first.path).namelist()
    assert "org/apache/flink/runtime/scheduler/SlotSharingExecutionSlotAllocatorFactory.class" in names
    mtime = first.path.stat().st_mtime_ns
    again = S.build_extension(home, tmp_path / "cache", src_dir=src)
    assert again == first and again.path.stat().st_mtime_ns == mtime  # cached, not rebuilt

    names = src / "common/org/apache/flink/runtime/scheduler/PlacementNames.java"
    names.write_text(names.read_text() + "\n// a change\n")
    changed = S.build_extension(home, tmp_path / "cache", src_dir=src)
    assert changed.digest != first.digest and changed.path.is_file() and first.path.is_file()
    other_line = src / "1.19-1.20/org/apache/flink/runtime/scheduler/PlacementCompat.java"
    other_line.write_text(other_line.read_text() + "\n// compiled for Flink 1.19-1.20 only\n")
    assert S.build_extension(home, tmp_path / "cache", src_dir=src) == changed  # not this line's sources: same jar
    other = S.build_extension(home, tmp_path / "cache", src_dir=src, flink_version=FAKE_VERSION)
    assert other.digest != changed.digest and read_build_info(other.path)["flink.version"] == FAKE_VERSION


def test_a_compile_error_is_one_line_naming_the_file(tmp_path: Path) -> None:
    require_jdk()
    shutil.copytree(SOURCES_DIR, tmp_path / "src")  # the real tree, plus one broken class in its shared part
    src = tmp_path / "src" / "common" / "org" / "apache" / "flink" / "runtime" / "scheduler"
    (src / "Broken.java").write_text("package org.apache.flink.runtime.scheduler; class Broken { int x = ; }\n")
    with pytest.raises(PlacementError) as info:
        S.build_extension(find_flink_home(), tmp_path / "cache", src_dir=tmp_path / "src")
    assert str(info.value).startswith("javac of the scheduler extension failed:") and "Broken.java" in str(info.value)
    assert not list((tmp_path / "cache").glob("*.jar"))


def test_install_is_idempotent_replaces_older_copies_and_refuses_another_flink(
    tmp_path: Path, extension_cache: Path
) -> None:
    require_jdk()
    home = linked_home(tmp_path)
    assert S.installed_extension(home) is None
    stale = home.lib / "placement-scheduler-2.3.0-0000000000000000.jar"
    stale.write_bytes(b"an older build")
    jar = S.build_extension(home, extension_cache)
    installed = S.install_extension(home, jar)
    assert installed == home.lib / jar.path.name and installed.read_bytes() == jar.path.read_bytes()
    assert not stale.exists() and S.installed_extension(home) == installed
    mtime = installed.stat().st_mtime_ns
    assert S.install_extension(home, jar) == installed and installed.stat().st_mtime_ns == mtime  # nothing to do
    assert not [p for p in home.lib.iterdir() if p.name.startswith(".")]  # no temporary file left
    # the classpath a launcher builds from this home puts the extension before flink-dist
    assert classpath_order(S.launcher_classpath(home).split(":")) is True

    foreign = S.build_extension(home, extension_cache, flink_version=FAKE_VERSION)
    with pytest.raises(PlacementError, match=rf"built for Flink {FAKE_VERSION}, .* is Flink 2\.3\.0"):
        S.install_extension(home, foreign)
    assert S.installed_extension(home) == installed

    (home.lib / "placement-scheduler-2.3.0-ffffffffffffffff.jar").write_bytes(b"x")
    with pytest.raises(PlacementError, match="several scheduler extension jars"):
        S.installed_extension(home)
    assert jar_info(installed).digest == jar.digest


def test_install_command_builds_installs_and_reports_status(tmp_path: Path) -> None:
    require_jdk()
    home = linked_home(tmp_path)
    placement = str(Path(__import__("sys").executable).with_name("placement"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [placement, "scheduler", *args, "--flink-home", str(home.path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    missing = run("status")
    assert missing.returncode == 1 and missing.stdout.startswith("not installed in")
    first = run("install")
    assert first.returncode == 0 and first.stdout.startswith("installed ") and "restart the JobManager" in first.stdout
    again = run("install")
    assert again.returncode == 0 and again.stdout.startswith("already installed: ")
    ok = run("status")
    assert ok.returncode == 0 and ": ok" in ok.stdout
    bad = subprocess.run(
        [placement, "scheduler", "install", "--flink-home", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (
        bad.returncode == 2 and bad.stderr.strip().startswith("error: --flink-home:") and "Traceback" not in bad.stderr
    )


# ---- messages ------------------------------------------------------------------------------------------------------


def test_the_extensions_message_is_found_in_a_rest_error() -> None:
    text = (
        "Flink REST POST http://x/jars/j/run: HTTP 400: org.apache.flink.runtime.rest.handler.RestHandlerException: "
        "Could not execute application. (Caused by: org.apache.flink.runtime.scheduler.PlacementSchedulerException:"
        " placement scheduler: /d/job.schedulercfg:4: expected '<task name> (<i>/<n>); <TaskManager>' or "
        "'*; <TaskManager>', got 'x')"
    )
    assert S.extension_message(text) == (
        "placement scheduler: /d/job.schedulercfg:4: expected '<task name> (<i>/<n>); "
        "<TaskManager>' or '*; <TaskManager>', got 'x'"
    )
    trace = (
        "java.lang.RuntimeException: boom\n\tat x\nCaused by: ...: placement scheduler: no slot on 'rpi1' (a)\n\tat y"
    )
    assert S.extension_message(trace) == "placement scheduler: no slot on 'rpi1' (a)"
    assert S.extension_message("NoResourceAvailableException: Could not acquire the minimum required resources") is None
