"""A class-data-sharing (CDS) archive for the Spark driver JVM that ``placement profile`` starts.

Starting PySpark loads ~15,000 classes from Spark's jars, and on a 2-core machine that is most of the 5-6 s a
``placement profile`` run spends before reading a byte; the first query loads thousands more. The JVM can map classes
it has already parsed and verified from an archive instead (JDK 13+ dynamic archives): measured here, JVM start
went from 5.4-6.4 s to 2.9-3.0 s and the first aggregation of 10M samples from 10-12 s to 8.5 s.

The archive is made once per Java installation and PySpark version, by the first run that finds none: that run's JVM
dumps its loaded classes when it exits (``-XX:ArchiveClassesAtExit``, ~10 s, once) into a file named for the process,
which :func:`publish` renames into place only after the JVM exited cleanly. The rename matters: the JVM does not
check a mapped archive's length, and a truncated one crashes it (SIGBUS, seen here), so a half-written archive must
never get the published name. A stale or foreign archive is merely ignored by the JVM (its CDS log is switched off).

Set ``PLACEMENT_SPARK_CLASS_ARCHIVE=0`` to turn this off; ``PLACEMENT_CACHE_DIR`` moves the cache
(default ``$XDG_CACHE_HOME/placement``, else ``~/.cache/placement``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ENV_SWITCH = "PLACEMENT_SPARK_CLASS_ARCHIVE"
ENV_CACHE = "PLACEMENT_CACHE_DIR"
_QUIET = "-Xlog:cds*=off"  # a stale archive, or classes CDS cannot hold, are reported at warning level otherwise
_EXIT_TIMEOUT_S = 180


@dataclass(frozen=True)
class ClassArchive:
    """Where this Java + PySpark pair keeps its archive, and the JVM options for the next driver."""

    path: Path

    @property
    def pending(self) -> Path:
        """The file this process's JVM dumps into; published by :func:`publish`."""
        return self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")

    def java_options(self) -> str:
        if self.path.is_file():
            return f"-XX:SharedArchiveFile={spark_option_word(self.path)} {_QUIET}"
        return f"-XX:ArchiveClassesAtExit={spark_option_word(self.pending)} {_QUIET}"


def spark_option_word(path: Path | str) -> str:
    """``path`` as one word of a Spark ``extraJavaOptions`` string (Spark's launcher splits it like a shell does,
    honouring double quotes and backslash escapes), so a cache directory with spaces stays one option."""
    return '"' + str(path).replace("\\", "\\\\").replace('"', '\\"') + '"'


def cache_dir() -> Path:
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "placement"


def _java_binary() -> Path | None:
    """The java that spark-submit runs: $JAVA_HOME/bin/java, else the first on PATH (as bin/spark-class does)."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def enabled() -> bool:
    """False when ``PLACEMENT_SPARK_CLASS_ARCHIVE`` is 0, false, no or off."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def class_archive() -> ClassArchive | None:
    """The archive for this Java and PySpark, or None when switched off or no java is found.

    The name digests what makes an archive valid: the java binary (path, size, mtime) and PySpark's location and
    version (its jars). Another pair gets another file rather than a mismatch the JVM would have to reject.
    """
    if not enabled():
        return None
    java = _java_binary()
    if java is None:
        return None
    import pyspark

    st = java.stat()
    key = f"{java}|{st.st_size}|{st.st_mtime_ns}|{Path(pyspark.__file__).parent}|{pyspark.__version__}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    directory = cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # an unwritable cache only costs speed
    _remove_abandoned(directory)
    return ClassArchive(directory / f"spark-driver-{digest}.jsa")


def _remove_abandoned(directory: Path) -> None:
    """Dumps left by processes that died before publishing (their pid is gone) are incomplete or orphaned."""
    for tmp in directory.glob("spark-driver-*.jsa.*.tmp"):
        pid = tmp.suffixes[-2].lstrip(".")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            tmp.unlink(missing_ok=True)


def publish(archive: ClassArchive, gateway) -> bool:
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
    os.replace(pending, archive.path)
    return True
