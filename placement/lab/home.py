"""The lab's own Flink home: the wheel's Flink, plus (custom mode) the scheduler extension in ``lib/``.

The extension must sit in the JobManager's ``lib/``, and the lab must never write into the virtualenv's
``pyflink/lib`` (other clusters and tests use it as stock Flink). So ``lab up`` makes ``<workdir>/flink-home``:

* ``lib/``: a symlink to each jar of the source installation's ``lib/`` (no 280 MB copy) and, in custom mode, the
  extension jar as a real file (:func:`placement.scheduler.install_extension`, built with javac against these jars);
* ``bin/bash-java-utils.jar``, ``plugins/``, ``opt/``: symlinks;
* ``conf/``: the JobManager's conf dir (its ``config.yaml`` is what ``apply`` reads as ``<flink.home>/conf``);
* ``placement/scheduler/``: the scheduler dir (one schedulercfg per job and ``taskmanagers.cfg``, written by apply).

Every JVM the lab starts gets bin/config.sh's classpath order over this ``lib/`` (:mod:`placement.lab.flink`).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from placement.flink.home import FlinkHome
from placement.scheduler import install_extension, installed_extension

HOME_DIR = "flink-home"
SCHEDULER_DIR = Path("placement") / "scheduler"  # under the Flink home: the inventory's default scheduler_dir


def scheduler_dir(home: Path) -> Path:
    return Path(home) / SCHEDULER_DIR


def _link(target: Path, link: Path) -> None:
    if link.is_symlink() or link.exists():
        if link.is_symlink() and Path(os.readlink(link)) == target:
            return
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)
        else:
            link.unlink()
    link.symlink_to(target)


def make_lab_home(work_dir: Path, source: FlinkHome, *, with_extension: bool) -> FlinkHome:
    """``<work_dir>/flink-home`` mirroring ``source`` by symlinks, with the extension installed when asked.

    Idempotent; a jar that left ``source`` is unlinked, and without ``with_extension`` any installed extension is
    removed (a vanilla-mode lab runs stock Flink).
    """
    home = Path(work_dir) / HOME_DIR
    lib = home / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    wanted = {jar.name: jar.resolve() for jar in source.lib.glob("*.jar") if jar.is_file()}
    for entry in lib.iterdir():
        if entry.is_symlink() and entry.name not in wanted:
            entry.unlink()
    for name, target in wanted.items():
        _link(target, lib / name)
    (home / "bin").mkdir(exist_ok=True)
    _link(source.bash_java_utils.resolve(), home / "bin" / "bash-java-utils.jar")
    for extra in ("plugins", "opt"):
        if (source.path / extra).is_dir():
            _link((source.path / extra).resolve(), home / extra)
    (home / "conf").mkdir(exist_ok=True)
    scheduler_dir(home).mkdir(parents=True, exist_ok=True)
    lab_home = FlinkHome(home)
    if with_extension:
        install_extension(lab_home)
    else:
        installed = installed_extension(lab_home)
        if installed is not None:
            installed.unlink()
    return lab_home
