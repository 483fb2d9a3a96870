"""Compiling the submitter (``submitter/src``) against the jars of the Flink installation it targets.

Built like the scheduler extension (:mod:`placement.flink.javabuild`: ``javac``, cached by a hash of the sources and the
Flink version); the jar's name carries both, so ``placement apply`` can tell from a directory listing on the
JobManager host whether the right jar is there already (no JDK needed here then).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.home import FlinkHome
from placement.flink.javabuild import build_jar, source_files, source_hash
from placement.flink.versions import supported_version
from placement.resources import repo_dir

SOURCES_DIR = repo_dir("submitter") / "src"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "placement-submitter"
JAR_PREFIX = "placement-submitter"
MAIN_CLASS = "placement.submitter.SubmitJobGraph"
JAVA_RELEASE = "11"  # Flink 2.x runs on Java 11+; the JobManager host may have 11
# Flink's client logs through log4j2; without a config it prints a status error and its own lines around ours.
LOG_CONFIG = ("placement/submitter/log4j2.properties", "status = off\nrootLogger.level = off\n")


@dataclass(frozen=True)
class SubmitterJar:
    path: Path
    digest: str
    flink_version: str


def submitter_digest(flink_version: str, src_dir: Path | None = None) -> str:
    src = Path(src_dir or SOURCES_DIR)
    return source_hash(source_files(src), src, flink_version, JAVA_RELEASE, *LOG_CONFIG)


def submitter_jar_name(flink_version: str) -> str:
    """``placement-submitter-<flink version>-<digest>.jar``: what this tree builds for that Flink (no JDK needed)."""
    return f"{JAR_PREFIX}-{flink_version}-{submitter_digest(flink_version)}.jar"


def build_submitter(home: FlinkHome, cache_dir: Path | None = None) -> SubmitterJar:
    """``<cache>/placement-submitter-<flink version>-<digest>.jar``, compiled against ``home``'s jars unless cached.

    One source for every supported line (what moved, ``rest.retry.delay``'s type, is set by key); another version is
    refused in one line."""
    version = home.version
    if not version:
        raise PlacementError(f"{home.lib}: cannot tell the Flink version (no flink-dist-<version>.jar)")
    supported_version(version, str(home.path))
    digest = submitter_digest(version)
    built = build_jar(
        src_dirs=[SOURCES_DIR],
        classpath=home.classpath,
        cache_dir=Path(cache_dir or DEFAULT_CACHE),
        name=f"{JAR_PREFIX}-{version}",
        what="the JobGraph submitter",
        digest=digest,
        manifest={"Main-Class": MAIN_CLASS},
        resources=dict([LOG_CONFIG]),
        release=JAVA_RELEASE,
    )
    return SubmitterJar(built.path, built.digest, version)
