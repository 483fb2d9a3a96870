"""Build the lab jobs jar from the Java sources under ``deploy/jobs/src`` with ``javac`` and ``jar``.

Maven is not reachable from the lab machines, and the lab jobs need nothing beyond Flink's own jars, so they are
compiled against ``<flink>/lib/*`` at lab start. The jar is cached in a work dir under a name that carries the hash
of the sources and of the Flink version, so an unchanged tree is compiled once.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError
from placement.flink_home import FlinkHome, find_flink_home

JOBS_DIR = Path(__file__).resolve().parents[2] / "deploy" / "jobs"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "placement-lab-jobs"

# The lab jobs: main class and the vertex names Flink shows (what profiles, plans and --placement refer to).
IOT_SENSOR_JOB = "placement.lab.IotSensorJob"
NEXMARK_BIDS_JOB = "placement.lab.NexmarkBidsJob"
BRANCHING_JOB = "placement.lab.BranchingJob"

IOT_VERTICES = ("Source: Sensors", "Parse", "Filter", "Enrich", "Window Aggregate", "Sink: Readings")
NEXMARK_VERTICES = ("Source: Bids", "Parse Bids", "Currency Convert", "Filter Auctions", "Hot Items", "Sink: HotItems")
BRANCHING_VERTICES = (
    "Source: Cameras", "Detect Objects", "Source: Meters", "Parse Meters", "Join Frames Meters", "Sink: Alerts",
)
# With `--sink v2` the sink vertex is "<name>: Writer" instead of "Sink: <name>" (Flink 2.3's Sink v2 naming).


@dataclass(frozen=True)
class JobsJar:
    path: Path
    source_hash: str


def source_files(src_dir: Path) -> list[Path]:
    return sorted(p for p in src_dir.rglob("*.java") if p.is_file())


def source_hash(files: list[Path], root: Path, flink_version: str | None) -> str:
    digest = hashlib.sha256(f"flink={flink_version}\n".encode())
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def javac_argv(home: FlinkHome, classes_dir: Path, files: list[Path]) -> list[str]:
    return ["javac", "-nowarn", "-encoding", "UTF-8", "--release", "17", "-cp", home.classpath, "-d", str(classes_dir), *map(str, files)]


def jar_argv(jar: Path, manifest: Path, classes_dir: Path) -> list[str]:
    return ["jar", "cfm", str(jar), str(manifest), "-C", str(classes_dir), "."]


def _run(argv: list[str], what: str) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        errors = [line for line in (proc.stderr + proc.stdout).splitlines() if "error" in line] or (proc.stderr + proc.stdout).splitlines()
        raise PlacementError(f"{what} failed: {errors[0].strip() if errors else f'exit {proc.returncode}'}")


def build_jobs_jar(
    cache_dir: Path | None = None,
    *,
    home: FlinkHome | None = None,
    src_dir: Path | None = None,
    main_class: str = IOT_SENSOR_JOB,
) -> JobsJar:
    """Compile ``deploy/jobs/src`` into ``<cache>/placement-lab-jobs-<hash>.jar`` unless that jar exists already."""
    for tool in ("javac", "jar"):
        if shutil.which(tool) is None:
            raise PlacementError(f"`{tool}` not found: install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless)")
    home = home or find_flink_home()
    src_dir = src_dir or JOBS_DIR / "src"
    files = source_files(src_dir)
    if not files:
        raise PlacementError(f"{src_dir}: no Java sources")
    cache_dir = Path(cache_dir or DEFAULT_CACHE)
    cache_dir.mkdir(parents=True, exist_ok=True)
    digest = source_hash(files, src_dir, home.version)
    jar = cache_dir / f"placement-lab-jobs-{digest}.jar"
    if jar.is_file():
        return JobsJar(jar, digest)

    with tempfile.TemporaryDirectory(prefix="build-", dir=cache_dir) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        _run(javac_argv(home, classes, files), "javac of the lab jobs")
        manifest = Path(tmp) / "MANIFEST.MF"
        manifest.write_text(f"Manifest-Version: 1.0\nMain-Class: {main_class}\nCreated-By: placement.lab.jobs\n")
        partial = Path(tmp) / jar.name
        _run(jar_argv(partial, manifest, classes), "jar of the lab jobs")
        os.replace(partial, jar)  # atomic: a concurrent builder sees either no jar or a whole one
    return JobsJar(jar, digest)


def main(argv: list[str] | None = None) -> None:
    """``python -m placement.lab.jobs [--out PATH]``: build the jar (and copy it to PATH); prints its path."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m placement.lab.jobs", description=main.__doc__)
    parser.add_argument("--out", type=Path, help="also copy the jar here (e.g. deploy/jobs/placement-lab-jobs.jar)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    try:
        built = build_jobs_jar(args.cache)
        path = built.path
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built.path, args.out)
            path = args.out
    except PlacementError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    print(path)


if __name__ == "__main__":
    main()
