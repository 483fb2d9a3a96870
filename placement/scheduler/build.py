"""Compiling the scheduler extension (``scheduler/src``) against the jars of the Flink installation it targets.

The sources are ``scheduler/src/common`` plus the overlays :func:`source_dirs` picks by the Flink line (major.minor):
the Flink internals the extension builds on changed signatures between lines (``scheduler/README.md`` lists what each
overlay holds and why). The jar carries ``placement-scheduler.properties`` with the Flink version it was built for
and its build digest; the extension compares that version with the running Flink's at every job and refuses a
mismatch (it relies on Flink internals, see ``scheduler/README.md``).
"""

from __future__ import annotations

import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.home import FlinkHome
from placement.flink.javabuild import build_jar, source_files, source_hash
from placement.flink.versions import FlinkVersion, supported_version
from placement.resources import repo_dir

SOURCES_DIR = repo_dir("scheduler") / "src"  # the clone's scheduler/src, or the copy an installed package ships
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "placement-scheduler"
JAR_PREFIX = "placement-scheduler"
BUILD_INFO = "org/apache/flink/runtime/scheduler/placement-scheduler.properties"
JAVA_RELEASE = "11"  # Flink 2.x runs on Java 11+; a Pi may have 11


@dataclass(frozen=True)
class ExtensionJar:
    path: Path
    digest: str
    flink_version: str


def compile_classpath(home: FlinkHome) -> str:
    """The installation's jars without an installed copy of the extension (its classes are being rebuilt)."""
    jars = sorted(p for p in home.lib.glob("*.jar") if p.is_file() and not p.name.startswith(JAR_PREFIX + "-"))
    return ":".join(map(str, jars))


def source_dirs(version: FlinkVersion, src_dir: Path | None = None) -> list[Path]:
    """The shared sources and the overlays for ``version``'s line, as javac compiles them together."""
    if not version.at_least(2, 0):
        overlays = ["1.19-1.20"]  # Time, not Duration; ExecutionSlotSharingGroup() + setResourceProfile
    elif not version.at_least(2, 2):
        overlays = ["since-2.0", "2.0-2.1"]  # Flink calls the factory's four-argument constructor
    else:
        overlays = ["since-2.0", "since-2.2"]  # ... its five-argument one (with the strategy factory)
    root = Path(src_dir or SOURCES_DIR)
    return [root / "common", *(root / overlay for overlay in overlays)]


def build_extension(
    home: FlinkHome, cache_dir: Path | None = None, *, flink_version: str | None = None, src_dir: Path | None = None
) -> ExtensionJar:
    """``<cache>/placement-scheduler-<flink version>-<digest>.jar``, compiled unless cached.

    ``flink_version`` defaults to the installation's; another value builds a jar that the extension itself will
    refuse on this installation (how the version check is tested); the overlays follow it, so it must be of the
    installation's line to compile. ``src_dir`` defaults to ``scheduler/src`` (``common/`` and the overlays)."""
    version = flink_version or home.version
    if not version:
        raise PlacementError(f"{home.lib}: cannot tell the Flink version (no flink-dist-<version>.jar)")
    root = Path(src_dir or SOURCES_DIR)
    dirs = source_dirs(supported_version(version, str(home.path)), root)
    # the digest covers exactly what javac compiles for this line, so another line's overlay changing rebuilds nothing
    digest = source_hash(source_files(*dirs), root, version, JAVA_RELEASE)
    info = f"flink.version={version}\nbuild.digest={digest}\n"
    built = build_jar(
        src_dirs=dirs,
        classpath=compile_classpath(home),
        cache_dir=Path(cache_dir or DEFAULT_CACHE),
        name=f"{JAR_PREFIX}-{version}",
        what="the scheduler extension",
        digest=digest,
        resources={BUILD_INFO: info},
        release=JAVA_RELEASE,
    )
    return ExtensionJar(built.path, built.digest, version)


def read_build_info(jar: Path) -> dict[str, str]:
    """The ``flink.version`` and ``build.digest`` a built jar carries."""
    try:
        with zipfile.ZipFile(jar) as zf:
            text = zf.read(BUILD_INFO).decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise PlacementError(f"{jar}: not a scheduler extension jar ({type(exc).__name__})") from None
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def jar_info(jar: Path) -> ExtensionJar:
    info = read_build_info(jar)
    return ExtensionJar(jar, info.get("build.digest", ""), info.get("flink.version", ""))
