"""Build the lab jobs jar from the Java sources under ``deploy/jobs/src`` with ``javac`` and ``jar``.

The sources are ``deploy/jobs/src/common`` plus the overlays :func:`source_dirs` picks by the Flink line (major.minor):
the DataStream API moved a few classes between lines (``deploy/jobs/README.md`` lists what each overlay holds).

Maven is not reachable from the lab machines, and the lab jobs need nothing beyond Flink's own jars, so they are
compiled against ``<flink>/lib/*`` at lab start (:mod:`placement.flink.javabuild`, shared with the scheduler extension).
The jar is cached in a work dir under a name that carries the hash of the sources and of the Flink version, so an
unchanged tree is compiled once.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.javabuild import build_jar, require_jdk, source_files, source_hash
from placement.flink.versions import FlinkVersion, supported_version
from placement.resources import repo_dir

JOBS_DIR = repo_dir("deploy") / "jobs"  # the clone's deploy/jobs, or the copy an installed package ships
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "placement-lab-jobs"

# The lab jobs: main class and the vertex names Flink shows (what profiles, plans and --placement refer to).
IOT_SENSOR_JOB = "placement.lab.IotSensorJob"
NEXMARK_BIDS_JOB = "placement.lab.NexmarkBidsJob"
BRANCHING_JOB = "placement.lab.BranchingJob"

IOT_VERTICES = ("Source: Sensors", "Parse", "Filter", "Enrich", "Window Aggregate", "Sink: Readings")
NEXMARK_VERTICES = ("Source: Bids", "Parse Bids", "Currency Convert", "Filter Auctions", "Hot Items", "Sink: HotItems")
BRANCHING_VERTICES = (
    "Source: Cameras",
    "Detect Objects",
    "Source: Meters",
    "Parse Meters",
    "Join Frames Meters",
    "Sink: Alerts",
)
# With `--sink v2` the sink vertex is "<name>: Writer" instead of "Sink: <name>" (Flink 2.3's Sink v2 naming).


@dataclass(frozen=True)
class JobsJar:
    path: Path
    source_hash: str


def source_dirs(version: FlinkVersion, src_dir: Path | None = None) -> list[Path]:
    """The shared sources and the overlays for ``version``'s line, as javac compiles them together."""
    root = Path(src_dir or JOBS_DIR / "src")
    api = "since-2.0" if version.at_least(2, 0) else "1.19-1.20"  # ParameterTool's package, the legacy DiscardingSink
    rate = "since-2.2" if version.at_least(2, 2) else "1.19-2.1"  # the RateLimiter API (generic, acquire(int) in 2.2)
    return [root / "common", root / api, root / rate]


def jobs_digest(version: str, src_dir: Path | None = None) -> str:
    """The jar's hash: exactly the sources compiled for ``version`` (shared + its overlays) and the version."""
    root = Path(src_dir or JOBS_DIR / "src")
    return source_hash(source_files(*source_dirs(FlinkVersion.parse(version), root)), root, version)


def build_jobs_jar(
    cache_dir: Path | None = None,
    *,
    home: FlinkHome | None = None,
    src_dir: Path | None = None,
    main_class: str = IOT_SENSOR_JOB,
) -> JobsJar:
    """Compile ``deploy/jobs/src`` for ``home``'s Flink line into ``<cache>/placement-lab-jobs-<hash>.jar`` unless that
    jar exists already; another version than the supported ones is refused in one line."""
    require_jdk()
    home = home or find_flink_home()
    version = supported_version(home.version, str(home.path))
    built = build_jar(
        src_dirs=source_dirs(version, src_dir),
        classpath=home.classpath,
        cache_dir=Path(cache_dir or DEFAULT_CACHE),
        name="placement-lab-jobs",
        what="the lab jobs",
        digest=jobs_digest(str(home.version), src_dir),
        manifest={"Main-Class": main_class},
    )
    return JobsJar(built.path, built.digest)


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
