"""Compile a tree of Java sources into a jar with ``javac`` and ``jar``, cached by a hash of the sources.

Maven is not reachable from the machines this tool runs on, and what it compiles (the lab jobs, the scheduler
extension) needs nothing beyond the jars of the Flink installation it targets. A jar is cached under a name that
carries the hash of its sources and of whatever else it depends on (the Flink version), so an unchanged tree is
compiled once; the jar appears atomically (a concurrent builder sees no jar or a whole one).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError


@dataclass(frozen=True)
class BuiltJar:
    path: Path
    digest: str


def source_files(*src_dirs: Path) -> list[Path]:
    """The ``.java`` files under each of ``src_dirs`` (a shared tree and the overlays chosen for a Flink line)."""
    return sorted(p for src_dir in src_dirs for p in Path(src_dir).rglob("*.java") if p.is_file())


def source_hash(files: Sequence[Path], root: Path, flink_version: str | None, *extra: str) -> str:
    """16 hex digits over the sources (relative path and bytes), the Flink version and ``extra`` strings."""
    digest = hashlib.sha256(f"flink={flink_version}\n".encode())
    for item in extra:
        digest.update(item.encode() + b"\0")
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def javac_argv(classpath: str, classes_dir: Path, files: Sequence[Path], release: str = "17") -> list[str]:
    return [
        "javac",
        "-nowarn",
        "-encoding",
        "UTF-8",
        "--release",
        release,
        "-cp",
        classpath,
        "-d",
        str(classes_dir),
        *map(str, files),
    ]


def jar_argv(jar: Path, manifest: Path, classes_dir: Path) -> list[str]:
    return ["jar", "cfm", str(jar), str(manifest), "-C", str(classes_dir), "."]


def require_jdk() -> None:
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise PlacementError(f"`{tool}` not found: install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)")


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        output = (proc.stderr + proc.stdout).splitlines()
        errors = [line for line in output if "error" in line] or output
        raise PlacementError(f"{what} failed: {errors[0].strip() if errors else f'exit {proc.returncode}'}")


def build_jar(
    *,
    src_dirs: Sequence[Path],
    classpath: str,
    cache_dir: Path,
    name: str,
    what: str,
    digest: str,
    manifest: Mapping[str, str] | None = None,
    resources: Mapping[str, str] | None = None,
    release: str = "17",
) -> BuiltJar:
    """``<cache_dir>/<name>-<digest>.jar`` from the sources under ``src_dirs``, unless that jar exists already.

    ``src_dirs`` are compiled together (one package may span them: an overlay adds the classes a Flink line needs to
    a shared tree); each must hold sources, so a missing overlay is named rather than left to a javac symbol error.
    ``digest`` is the caller's :func:`source_hash` (it decides what a rebuild depends on); ``resources`` are text
    files put into the jar beside the classes (path inside the jar -> content); ``what`` names the build in errors."""
    require_jdk()
    for src_dir in src_dirs:
        if not source_files(src_dir):
            raise PlacementError(f"{src_dir}: no Java sources")
    files = source_files(*src_dirs)
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    jar = cache_dir / f"{name}-{digest}.jar"
    if jar.is_file():
        return BuiltJar(jar, digest)
    with tempfile.TemporaryDirectory(prefix="build-", dir=cache_dir) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        _run(javac_argv(classpath, classes, files, release), f"javac of {what}")
        for inner, text in (resources or {}).items():
            target = classes / inner
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        manifest_file = Path(tmp) / "MANIFEST.MF"
        entries = {"Manifest-Version": "1.0", **(manifest or {}), "Created-By": "placement"}
        manifest_file.write_text("".join(f"{k}: {v}\n" for k, v in entries.items()))
        partial = Path(tmp) / jar.name
        _run(jar_argv(partial, manifest_file, classes), f"jar of {what}")
        os.replace(partial, jar)
    return BuiltJar(jar, digest)
