"""A Flink home for a version this machine does not run: fetched once from the package index into the cache.

Building the scheduler extension, the submitter or the lab jobs for a cluster means compiling against *that
cluster's* jars, and the lab on another version needs that version's runtime. Flink publishes its distribution's
``lib/``, ``opt/``, ``plugins/`` and ``bin/bash-java-utils.jar`` as the ``apache-flink-libraries`` package: a wheel
holds them under ``pyflink/`` (2.2 and later), an sdist under ``<name>-<version>/deps/`` (1.x to 2.1). The package
is fetched with the user's own pip (so its index, mirror and proxy settings apply, and nothing else is contacted),
unpacked into ``<cache>/flink/<version>/`` and renamed into place whole; later calls find it there.

The exact version is fetched, never a neighbour: the extension refuses to run on any Flink but the one it was
compiled against.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from placement.errors import BadInput, PlacementError
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.versions import FlinkVersion, is_line, supported_version
from placement.resources import cache_dir

PACKAGE = "apache-flink-libraries"
PARTS = ("lib", "opt", "plugins", "bin")  # what a Flink home needs here; licenses, examples and sources stay out
_FETCH_TIMEOUT_S = 900  # a 230-280 MB download


def distributions_dir() -> Path:
    return cache_dir() / "flink"


def cached_home(version: str) -> FlinkHome | None:
    """The fetched home of exactly ``version``, if it is in the cache."""
    home = FlinkHome(distributions_dir() / version)
    return home if home.version == version else None


def flink_home_for(version: str, *, where: str = "--flink-version") -> FlinkHome:
    """A Flink home of exactly ``version``: this machine's own (``$FLINK_HOME`` or the pyflink wheel) when it is that
    version, else the cached distribution, fetched first when missing. ``where`` names the version's origin in
    errors (an option, an inventory field, a JobManager's REST answer)."""
    supported_version(version, where)
    local = _local_home()
    if local is not None and local.version == version:
        return local
    return cached_home(version) or fetch(version)


def _local_home() -> FlinkHome | None:
    """This machine's own Flink home (``$FLINK_HOME`` or the pyflink wheel), or None when it has none."""
    try:
        return find_flink_home()
    except PlacementError:
        return None


def release_for(text: str, *, where: str = "--flink-version") -> str:
    """``text`` as an exact release. A release (``1.20.5``) is itself; a release line (``1.20``, what a user running
    "Flink 1.20" types) is this machine's own Flink when it is of that line, else the line's newest release in the
    package index, else (offline) its newest release in the cache. The extension is built for one exact release, so
    every later step works with the answer, never with the line."""
    version = supported_version(text, where)
    if not is_line(text):
        return text.strip()
    local = _local_home()
    if local is not None and local.version and FlinkVersion.parse(local.version).line == version.line:
        return local.version
    releases = _index_releases() or [p.name for p in distributions_dir().glob("*") if cached_home(p.name)]
    of_line = [r for r in releases if _is_release_of(r, version.line)]
    if not of_line:
        raise PlacementError(
            f"{where}: no Flink {version.line} release found in the package index ({PACKAGE}) "
            f"or the cache; give the exact release, e.g. {version.line}.0"
        )
    return str(max(FlinkVersion.parse(r) for r in of_line))


def _is_release_of(text: str, line: str) -> bool:
    """``1.20.5`` is a release of ``1.20``; ``1.20.0rc1`` and ``1.2.0`` are not."""
    return re.fullmatch(rf"{re.escape(line)}\.\d+", text) is not None


def _index_releases() -> list[str]:
    """Every release of the package the user's pip sees in its index (its mirror and proxy settings apply); empty
    when pip cannot tell (offline, an old pip without ``index versions``)."""
    argv = [sys.executable, "-m", "pip", "index", "versions", PACKAGE, "--disable-pip-version-check"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    # "Available versions: 2.3.0, 2.2.1, ..." (pip 21.2 and later; --json is newer than many users' pip)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("Available versions:")), "")
    return [v.strip() for v in line.removeprefix("Available versions:").split(",") if v.strip()]


def resolve_flink_home(flink_home: str | os.PathLike[str] | None = None, flink_version: str | None = None) -> FlinkHome:
    """What ``--flink-home`` and ``--flink-version`` name together: the given installation (default ``$FLINK_HOME``,
    else pyflink's), or the home of exactly ``flink_version`` (:func:`flink_home_for`); given both, the installation
    must be that version (one-line error otherwise)."""
    if flink_version is None:
        return find_flink_home(flink_home)
    if flink_home is None:
        return flink_home_for(release_for(flink_version), where="--flink-version")
    home = find_flink_home(flink_home)
    if flink_version.strip() not in (home.version, home.version and FlinkVersion.parse(home.version).line):
        raise BadInput(f"{home.path} is Flink {home.version}, not {flink_version}", field="--flink-version")
    return home


def fetch(version: str) -> FlinkHome:
    """Download ``apache-flink-libraries==version`` with pip and unpack its Flink home into the cache."""
    target = distributions_dir() / version
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".fetch-{version}-", dir=target.parent) as tmp:
        download = Path(tmp) / "download"
        argv = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
            "--quiet",
            "--dest",
            str(download),
            f"{PACKAGE}=={version}",
        ]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=_FETCH_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            raise PlacementError(f"Flink {version}: fetching {PACKAGE} took over {_FETCH_TIMEOUT_S} s") from None
        if proc.returncode != 0:
            said = [line for line in (proc.stderr + proc.stdout).splitlines() if line.startswith("ERROR")]
            reason = said[0].removeprefix("ERROR: ") if said else f"pip exit {proc.returncode}"
            raise PlacementError(
                f"Flink {version}: cannot fetch {PACKAGE}=={version} from the package index ({reason})"
            )
        archives = sorted(download.iterdir())
        if len(archives) != 1:
            raise PlacementError(f"Flink {version}: pip left {len(archives)} files for {PACKAGE}, expected one")
        staged = Path(tmp) / "home"
        _unpack(archives[0], staged)
        found = FlinkHome(staged).version
        if found != version:
            raise PlacementError(f"{archives[0].name}: holds Flink {found or 'of no version'}, not {version}")
        try:
            os.replace(staged, target)  # whole or not at all; a concurrent fetch that won leaves its copy
        except OSError:
            if cached_home(version) is None:
                raise
    home = cached_home(version)
    assert home is not None
    return home


def _home_part(member: str) -> PurePosixPath | None:
    """Where an archive member goes in the home (``lib/x.jar``), or None when it is not part of one.

    Wheel: ``pyflink/lib/x.jar``; sdist: ``apache_flink_libraries-1.20.5/deps/lib/x.jar``."""
    parts = PurePosixPath(member).parts
    for prefix in (("pyflink",), (parts[0] if parts else "", "deps")):
        n = len(prefix)
        if parts[:n] == prefix and len(parts) > n + 1 and parts[n] in PARTS:
            return PurePosixPath(*parts[n:])
    return None


def _unpack(archive: Path, home: Path) -> None:
    home.mkdir()
    if archive.name.endswith(".whl"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                part = _home_part(info.filename)
                if part is None or info.is_dir():
                    continue
                out = home / part
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
    elif archive.name.endswith((".tar.gz", ".tgz")):
        with tarfile.open(archive) as tf:
            members = []
            for member in tf.getmembers():
                part = _home_part(member.name)
                if part is not None:
                    member.name = str(part)
                    members.append(member)
            tf.extractall(home, members=members, filter="data")  # nothing outside home, no device files
    else:
        raise PlacementError(f"{archive.name}: neither a wheel nor an sdist of {PACKAGE}")
