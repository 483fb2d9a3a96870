"""Putting the extension into a Flink installation's ``lib/``, and the classpath a launcher must use for it to win.

The extension replaces one class of flink-dist. Both are on the JVM's application classpath, where the first jar that
has a class wins: Flink's ``bin/config.sh`` puts the sorted ``lib/*.jar`` first and flink-dist last, so the copy in
``lib/`` wins. A launcher that passes ``-cp lib/*`` lets the JVM list the directory in whatever order the file system
gives, and the replacement may silently lose; :func:`launcher_classpath` builds config.sh's order.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.home import FlinkHome
from placement.scheduler.build import (
    JAR_PREFIX,
    ExtensionJar,
    build_extension,
    read_build_info,
)


def launcher_classpath(home: FlinkHome) -> str:
    """``lib/*.jar`` sorted by name except flink-dist, then flink-dist last, ``:``-joined (``bin/config.sh``'s
    order)."""
    jars = sorted(p for p in home.lib.glob("*.jar") if p.is_file())
    dist = [p for p in jars if p.name.startswith("flink-dist")]
    if not dist:
        raise PlacementError(f"{home.lib}: no flink-dist*.jar (not a Flink installation)")
    others = [p for p in jars if not p.name.startswith("flink-dist")]
    return ":".join(str(p) for p in [*others, *dist])


def _installed_copies(home: FlinkHome) -> list[Path]:
    return sorted(p for p in home.lib.glob(f"{JAR_PREFIX}-*.jar"))


def installed_extension(home: FlinkHome) -> Path | None:
    """The extension jar in ``<home>/lib/``, or None. More than one copy is an error (which one wins is undefined)."""
    copies = _installed_copies(home)
    if len(copies) > 1:
        raise PlacementError(
            f"{home.lib}: several scheduler extension jars ({', '.join(p.name for p in copies)}); "
            "run `placement scheduler install` to keep one"
        )
    return copies[0] if copies else None


def install_extension(home: FlinkHome, jar: ExtensionJar | None = None) -> Path:
    """Copy the extension (built for ``home`` when ``jar`` is None) into ``<home>/lib/`` and remove other copies.

    Idempotent: an identical jar already there is left alone. The copy is written to a temporary name in ``lib/`` and
    renamed (never a half-written jar on a JobManager's classpath). A JobManager must be restarted to load a new copy.
    """
    jar = jar or build_extension(home)
    info = read_build_info(jar.path)
    if info.get("flink.version") != home.version:
        raise PlacementError(
            f"{jar.path} was built for Flink {info.get('flink.version')}, {home.path} is Flink "
            f"{home.version}: build it for this installation (placement scheduler build --flink-home)"
        )
    if not os.access(home.lib, os.W_OK):
        raise PlacementError(f"{home.lib}: not writable (run as the user who owns the Flink installation)")
    target = home.lib / jar.path.name
    if not (target.is_file() and target.read_bytes() == jar.path.read_bytes()):
        fd, tmp = tempfile.mkstemp(prefix=".placement-scheduler-", suffix=".tmp", dir=home.lib)
        os.close(fd)
        try:
            shutil.copyfile(jar.path, tmp)
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
    for old in _installed_copies(home):
        if old != target:
            old.unlink()
    return target
