"""Every supported Flink line builds the scheduler extension, the JobGraph submitter and the lab jobs from one tree
(real javac against one real release of each line: 1.19 to 2.2 fetched once per machine into the cache, 2.3 this
machine's own), and the extension's replaced factory has exactly the constructor that line's flink-dist calls.

That last check reads both sides with ``javap``: the ``invokespecial`` of
``SlotSharingExecutionSlotAllocatorFactory.<init>`` in the line's ``DefaultSchedulerComponents``, and the constructors
of the class in the built jar. A jar without the constructor Flink calls compiles fine and fails on a cluster only, with
``NoSuchMethodError`` at the first job; here it fails without one.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from scheduler_support import require_jdk

from placement import scheduler as S
from placement.errors import PlacementError
from placement.flink.distribution import flink_home_for
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.versions import SUPPORTED_LINES, FlinkVersion, supported_lines
from placement.lab.jobs import JobsJar, build_jobs_jar
from placement.scheduler.build import ExtensionJar, read_build_info
from placement.submitter import MAIN_CLASS as SUBMITTER_MAIN
from placement.submitter import SubmitterJar, build_submitter
from support.cli import PLACEMENT, one_line_error

RELEASES = ("1.19.3", "1.20.5", "2.0.2", "2.1.3", "2.2.1", "2.3.0")  # one release of each supported line

FACTORY = "org.apache.flink.runtime.scheduler.SlotSharingExecutionSlotAllocatorFactory"
_SLOTS = (
    "Lorg/apache/flink/runtime/jobmaster/slotpool/PhysicalSlotProvider;Z"
    "Lorg/apache/flink/runtime/jobmaster/slotpool/PhysicalSlotRequestBulkChecker;"
)
# The constructor each line's DefaultSchedulerComponents calls (measured; ../shared/notes/flink-versions.md)
FLINK_CALLS = {
    **dict.fromkeys(("1.19", "1.20"), f"({_SLOTS}Lorg/apache/flink/api/common/time/Time;)V"),
    **dict.fromkeys(("2.0", "2.1"), f"({_SLOTS}Ljava/time/Duration;)V"),
    **dict.fromkeys(
        ("2.2", "2.3"),
        f"({_SLOTS}Ljava/time/Duration;Lorg/apache/flink/runtime/scheduler/SlotSharingStrategy$Factory;)V",
    ),
}
_CALL = re.compile(
    r"invokespecial\s+#\d+\s+// Method org/apache/flink/runtime/scheduler/"
    r"SlotSharingExecutionSlotAllocatorFactory\.\"<init>\":(\(\S*\)V)"
)


@dataclass(frozen=True)
class LineBuild:
    line: str
    home: FlinkHome
    extension: ExtensionJar
    submitter: SubmitterJar
    jobs: JobsJar
    cache: Path


@pytest.fixture(scope="module", params=RELEASES, ids=lambda release: f"flink-{release}")
def line_build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> LineBuild:
    """The three builds for one release, each compiled once (a fresh build cache: this proves javac, not a cache)."""
    require_jdk()
    release = request.param
    home = flink_home_for(release)  # the real cache ($PLACEMENT_CACHE_DIR, else the default): one fetch per machine
    cache = tmp_path_factory.mktemp(f"builds-{release}")
    return LineBuild(
        FlinkVersion.parse(release).line,
        home,
        S.build_extension(home, cache),
        build_submitter(home, cache),
        build_jobs_jar(cache, home=home),
        cache,
    )


def javap(*args: str) -> str:
    return subprocess.run(["javap", *args], capture_output=True, text=True, timeout=120, check=True).stdout


def flink_calls(home: FlinkHome) -> set[str]:
    """The descriptors of the replaced factory's constructors that this Flink's own scheduler calls."""
    dist = next(home.lib.glob("flink-dist*.jar"))
    code = javap("-c", "-p", "-cp", str(dist), "org.apache.flink.runtime.scheduler.DefaultSchedulerComponents")
    return set(_CALL.findall(code))


def constructors(jar: Path, cls: str) -> set[str]:
    """The descriptors of ``cls``'s constructors in ``jar`` (``javap -s``: each member, then its descriptor)."""
    lines = javap("-s", "-p", "-cp", str(jar), cls).splitlines()
    return {
        lines[i + 1].split("descriptor:", 1)[1].strip()
        for i, line in enumerate(lines)
        if f"{cls}(" in line and i + 1 < len(lines) and "descriptor:" in lines[i + 1]
    }


def test_the_matrix_covers_every_supported_line() -> None:
    assert [FlinkVersion.parse(r).line for r in RELEASES] == [f"{a}.{b}" for a, b in SUPPORTED_LINES]
    assert set(FLINK_CALLS) == {FlinkVersion.parse(r).line for r in RELEASES}


def test_each_line_builds_the_extension_the_submitter_and_the_lab_jobs(line_build: LineBuild) -> None:
    release = line_build.home.version
    ext = line_build.extension
    assert ext.flink_version == release and ext.path.name == f"placement-scheduler-{release}-{ext.digest}.jar"
    assert read_build_info(ext.path) == {
        "flink.version": release,
        "build.digest": ext.digest,
    }  # the exact-version check
    ext_classes = set(zipfile.ZipFile(ext.path).namelist())
    for cls in (
        "SlotSharingExecutionSlotAllocatorFactory",
        "PlacementAllocatorFactory",
        "PlacementCompat",
        "PlacementSlotSharingStrategy",
        "PlacementSlotProvider",
    ):
        assert f"org/apache/flink/runtime/scheduler/{cls}.class" in ext_classes

    sub = line_build.submitter
    assert sub.flink_version == release and sub.path.name == f"placement-submitter-{release}-{sub.digest}.jar"
    assert f"Main-Class: {SUBMITTER_MAIN}" in zipfile.ZipFile(sub.path).read("META-INF/MANIFEST.MF").decode()

    jobs = set(zipfile.ZipFile(line_build.jobs.path).namelist())
    for cls in (
        "IotSensorJob",
        "NexmarkBidsJob",
        "BranchingJob",
        "ZooJob",
        "ShapesJob",
        "SqlJob",
        "Params",
        "LabCompat",
        "ScheduledRateStrategy",
        "RateSchedule",
    ):
        assert f"placement/lab/{cls}.class" in jobs
    # three jars per line, nothing else left in the cache (no half-built jar, no staging dir)
    assert sorted(p.name for p in line_build.cache.iterdir()) == sorted(
        p.name for p in (ext.path, sub.path, line_build.jobs.path)
    )


def test_the_replaced_factory_has_exactly_the_constructor_this_lines_flink_calls(line_build: LineBuild) -> None:
    called = flink_calls(line_build.home)
    assert called == {FLINK_CALLS[line_build.line]}  # one call site, the signature the notes measured for the line
    assert constructors(line_build.extension.path, FACTORY) == called


def test_the_cli_builds_for_a_flink_version_from_that_versions_home(line_build: LineBuild) -> None:
    """``placement scheduler build --flink-version X`` finds the same home, sources and digest: the jar built above,
    from the cache (no second compile)."""
    release = line_build.home.version
    done = subprocess.run(
        [
            str(PLACEMENT),
            "scheduler",
            "build",
            "--flink-version",
            str(release),
            "--cache",
            str(line_build.cache),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    built = json.loads(done.stdout)  # one document, its versioned format first
    assert next(iter(built)) == "format" and built["format"] == "placement.scheduler-build/v1"
    assert (built["path"], built["flink_version"]) == (str(line_build.extension.path), str(release))


def test_an_unsupported_flink_is_refused_in_one_line_before_any_compile(tmp_path: Path) -> None:
    home = find_flink_home()
    cache = tmp_path / "cache"
    refusal = f"Flink 1.18.1 is not supported (supported: {supported_lines()})"
    with pytest.raises(PlacementError) as err:
        S.build_extension(home, cache, flink_version="1.18.1")
    assert str(err.value) == f"{home.path}: {refusal}"
    old = FlinkHome(tmp_path / "flink-1.18.1")  # an installation of a line we do not support: its version is enough
    old.lib.mkdir(parents=True)
    (old.lib / "flink-dist-1.18.1.jar").write_bytes(b"")
    for build in (
        lambda: build_submitter(old, cache),
        lambda: build_jobs_jar(cache, home=old),
        lambda: S.build_extension(old, cache),
    ):
        with pytest.raises(PlacementError) as err:
            build()
        assert str(err.value) == f"{old.path}: {refusal}"
    assert not cache.exists() or not list(cache.iterdir())
    done = subprocess.run(
        [str(PLACEMENT), "scheduler", "build", "--flink-version", "1.18.1", "--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and one_line_error(done) == f"error: --flink-version: {refusal}"
    other = subprocess.run(
        [
            str(PLACEMENT),
            "scheduler",
            "build",
            "--flink-version",
            "2.0.2",
            "--flink-home",
            str(home.path),
            "--cache",
            str(cache),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert other.returncode == 2
    assert one_line_error(other) == f"error: --flink-version: {home.path} is Flink {home.version}, not 2.0.2"
