"""A class-data-sharing (CDS) archive for the Spark driver JVM that ``placement profile`` starts.

Starting PySpark loads ~15,000 classes from Spark's jars, and on a 2-core machine that is most of the 5-6 s a
``placement profile`` run spends before reading a byte; the first query loads thousands more. The JVM can map classes
it has already parsed and verified from an archive instead (JDK 13+ dynamic archives): measured here, JVM start
went from 5.4-6.4 s to 2.9-3.0 s and the first aggregation of 10M samples from 10-12 s to 8.5 s.

The archive is made by the first run that finds none: that run's JVM dumps its loaded classes when it exits
(``-XX:ArchiveClassesAtExit``, ~10 s, once) into a file named for the process, which :func:`publish` renames into
place only after the JVM exited cleanly. The rename matters: the JVM does not check a mapped archive's length, and a
truncated one crashes it (SIGBUS, seen here), so a half-written archive must never get the published name.

**What an archive depends on, and so its name.** A dynamic archive is valid for one JVM build (its base archive and
``libjvm``) and one class path. JDK 17 checks the class path *by path, size and modification time of every jar*:
measured here, an archive dumped with Spark's jars in ``A/jars`` mapped 1,285 classes for ``A`` and none for a
byte-identical copy in ``B`` (``cp -a``, same mtimes), so jars with the same contents in another virtualenv cannot
share it. The name therefore digests the JVM build (``release``, ``libjvm.so`` and ``classes.jsa`` sizes and times —
not the java path: a relocated JDK of the same build keeps its archive), the driver's jars (``$SPARK_HOME/jars``:
directory, and each jar's name, size and mtime) and the driver's JVM flags — what the JVM validates, so a name never
points at an archive the JVM would reject, and an upgrade in place (new jars, same path) gets a new archive.

**The cache is bounded.** Every archive has a small sidecar (``.json``: the jars directory it was made for; its
mtime is the archive's last use). Each run prunes: dumps of dead processes, archives of an older placement (no
sidecar), archives whose jars are gone or changed (a deleted clone or venv, an upgraded PySpark: nothing can map them
again), then the least recently used beyond :data:`KEEP` archives or :data:`MAX_BYTES` in all — never the one in use.

Set ``PLACEMENT_SPARK_CLASS_ARCHIVE=0`` to turn this off; ``PLACEMENT_CACHE_DIR`` moves the cache
(default ``$XDG_CACHE_HOME/placement``, else ``~/.cache/placement``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement.resources import ENV_CACHE, cache_dir  # noqa: F401  (ENV_CACHE: named here in the docs and tests)

if TYPE_CHECKING:
    from py4j.java_gateway import JavaGateway

ENV_SWITCH = "PLACEMENT_SPARK_CLASS_ARCHIVE"
KEEP = 2  # archives kept (~170 MB each): this install's and one other
MAX_BYTES = 1 << 30
_PREFIX = "spark-driver-"
_QUIET = "-Xlog:cds*=off"  # a stale archive, or classes CDS cannot hold, are reported at warning level otherwise
_EXIT_TIMEOUT_S = 180


@dataclass(frozen=True)
class ClassArchive:
    """Where the archive for one JVM build and one set of Spark jars lives, and the JVM options for the next driver."""

    path: Path
    jars: Path | None = None  # the class path it is valid for (recorded in the sidecar)

    @property
    def pending(self) -> Path:
        """The file this process's JVM dumps into; published by :func:`publish`."""
        return self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")

    @property
    def sidecar(self) -> Path:
        return self.path.with_suffix(".json")

    def java_options(self) -> str:
        if self.path.is_file():
            return f"-XX:SharedArchiveFile={spark_option_word(self.path)} {_QUIET}"
        return f"-XX:ArchiveClassesAtExit={spark_option_word(self.pending)} {_QUIET}"


def spark_option_word(path: Path | str) -> str:
    """``path`` as one word of a Spark ``extraJavaOptions`` string (Spark's launcher splits it like a shell does,
    honouring double quotes and backslash escapes), so a cache directory with spaces stays one option."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _java_binary() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the first on PATH (as bin/spark-class does)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def spark_jars() -> Path | None:
    """``$SPARK_HOME/jars`` as PySpark finds it (the driver JVM's class path), or None."""
    try:
        from pyspark.find_spark_home import _find_spark_home

        jars = Path(_find_spark_home()) / "jars"
    except (ImportError, SystemExit, OSError):  # _find_spark_home exits when it finds nothing
        return None
    return jars.resolve() if jars.is_dir() else None


def _stat_word(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return f"{path.name}:-"
    return f"{path.name}:{st.st_size}:{st.st_mtime_ns}"


def jvm_identity(java_home: Path) -> str:
    """The JVM build a dynamic archive is tied to: its version file and the files CDS checks (not where it lives)."""
    server = java_home / "lib" / "server"
    try:
        release = (java_home / "release").read_text(errors="replace")
    except OSError:
        release = ""
    return "\n".join([release, _stat_word(server / "libjvm.so"), _stat_word(server / "classes.jsa")])


def classpath_identity(jars: Path) -> str:
    """What JDK 17 validates of the driver's class path: the directory and each jar's name, size and mtime."""
    return "\n".join([str(jars), *sorted(_stat_word(j) for j in jars.glob("*.jar"))])


def archive_key(java_home: Path, jars: Path, jvm_flags: str = "") -> str:
    """The digest of what the archive is valid for; ``jvm_flags`` are the driver's (a GC or JIT setting the dump was
    made with is part of what the JVM checks, or at least of what the archive holds)."""
    material = jvm_identity(java_home) + "\n--\n" + classpath_identity(jars) + "\n--\n" + jvm_flags
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def enabled() -> bool:
    """False when ``PLACEMENT_SPARK_CLASS_ARCHIVE`` is 0, false, no or off."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def class_archive(jvm_flags: str = "") -> ClassArchive | None:
    """The archive for this JVM build, Spark's jars and the driver's ``jvm_flags``, or None when switched off or
    java/Spark's jars are not found.

    Prunes the cache first (see the module doc) and marks this archive as just used.
    """
    if not enabled():
        return None
    java, jars = _java_binary(), spark_jars()
    if java is None or jars is None:
        return None
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # an unwritable cache only costs speed
    archive = ClassArchive(directory / f"{_PREFIX}{archive_key(java.parent.parent, jars, jvm_flags)}.jsa", jars)
    with contextlib.suppress(OSError):  # a read-only or shared cache only costs its upkeep
        prune(directory, current=archive.path)
        if archive.path.is_file() and archive.sidecar.is_file():
            os.utime(archive.sidecar)  # last use: what the least-recently-used pruning goes by
    return archive


def prune(directory: Path, *, current: Path | None = None, keep: int = KEEP, max_bytes: int = MAX_BYTES) -> list[Path]:
    """Remove what no JVM will map again, then the least recently used beyond ``keep`` archives / ``max_bytes``.

    Returns the removed archives and dumps. Removing a file another JVM has mapped is safe (the mapping stays).
    """
    removed: list[Path] = []

    def drop(path: Path) -> None:
        path.unlink(missing_ok=True)
        path.with_suffix(".json").unlink(missing_ok=True)
        removed.append(path)

    for tmp in directory.glob(f"{_PREFIX}*.jsa.*.tmp"):  # dumps of processes that died before publishing
        pid = tmp.suffixes[-2].lstrip(".")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    live: list[tuple[float, int, Path]] = []
    for archive in directory.glob(f"{_PREFIX}*.jsa"):
        if archive == current:
            continue
        recorded = _read_sidecar(archive.with_suffix(".json"))
        jars = Path(recorded.get("jars", "")) if recorded else None
        if (
            not recorded
            or jars is None
            or not jars.is_dir()
            or recorded.get("classpath") != _digest(classpath_identity(jars))
        ):
            drop(archive)  # an older placement's, or its jars are gone or changed
            continue
        st = archive.stat()
        live.append((archive.with_suffix(".json").stat().st_mtime, st.st_size, archive))
    for sidecar in directory.glob(f"{_PREFIX}*.json"):  # a sidecar whose archive was never published
        if not sidecar.with_suffix(".jsa").exists() and not list(directory.glob(f"{sidecar.stem}.jsa.*.tmp")):
            sidecar.unlink(missing_ok=True)
    total = current.stat().st_size if current is not None and current.is_file() else 0
    kept = 1 if current is not None and current.is_file() else 0
    for _, size, archive in sorted(live, reverse=True):  # most recently used first
        if kept < keep and total + size <= max_bytes:
            kept += 1
            total += size
        else:
            drop(archive)
    return removed


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _read_sidecar(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_sidecar(archive: ClassArchive) -> None:
    if archive.jars is None:
        return
    tmp = archive.sidecar.with_name(f"{archive.sidecar.name}.{os.getpid()}.part")
    tmp.write_text(json.dumps({"jars": str(archive.jars), "classpath": _digest(classpath_identity(archive.jars))}))
    os.replace(tmp, archive.sidecar)


def publish(archive: ClassArchive, gateway: JavaGateway) -> bool:
    """Stop the driver JVM this process started with a pending dump, wait for the dump, and move it into place.

    Returns True when an archive was published. Call it only when the process needs no more Spark: the JVM is gone
    afterwards. Nothing happens when the archive already existed (the JVM was started to use it, not to dump).
    """
    pending = archive.pending
    proc = getattr(gateway, "proc", None)
    if proc is None:
        return False
    with contextlib.suppress(Exception):  # py4j raises assorted errors on a gateway that is already closing
        gateway.shutdown()
    try:
        if proc.stdin:
            proc.stdin.close()  # the PySpark gateway JVM exits when its stdin closes, and dumps the archive on exit
        code = proc.wait(timeout=_EXIT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        pending.unlink(missing_ok=True)
        return False
    if code != 0 or not pending.is_file() or pending.stat().st_size == 0:
        pending.unlink(missing_ok=True)
        return False
    _write_sidecar(archive)  # first: an archive without a sidecar is an older placement's, and pruned as such
    os.replace(pending, archive.path)
    return True
