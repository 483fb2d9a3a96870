"""Compiling the scheduler extension (``scheduler/src``) against the jars of the Flink installation it targets.

The jar carries ``placement-scheduler.properties`` with the Flink version it was built for and its build digest; the
extension compares that version with the running Flink's at every job and refuses a mismatch (it relies on Flink
internals, see ``scheduler/README.md``).
"""

from __future__ import annotations

import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.home import FlinkHome
from placement.flink.javabuild import build_jar, source_files, source_hash
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


def build_extension(
    home: FlinkHome, cache_dir: Path | None = None, *, flink_version: str | None = None, src_dir: Path | None = None
) -> ExtensionJar:
    """``<cache>/placement-scheduler-<flink version>-<digest>.jar``, compiled unless cached.

    ``flink_version`` defaults to the installation's; another value builds a jar that the extension itself will
    refuse on this installation (how the version check is tested). ``src_dir`` defaults to ``scheduler/src``."""
    version = flink_version or home.version
    if not version:
        raise PlacementError(f"{home.lib}: cannot tell the Flink version (no flink-dist-<version>.jar)")
    src_dir = Path(src_dir or SOURCES_DIR)
    digest = source_hash(source_files(src_dir), src_dir, version, JAVA_RELEASE)
    info = f"flink.version={version}\nbuild.digest={digest}\n"
    built = build_jar(
        src_dir=src_dir, classpath=compile_classpath(home), cache_dir=Path(cache_dir or DEFAULT_CACHE),
        name=f"{JAR_PREFIX}-{version}", what="the scheduler extension", digest=digest,
        resources={BUILD_INFO: info}, release=JAVA_RELEASE,
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
