"""Build the JobGraph submitter for a Flink installation and print the jar's path."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from placement.errors import PlacementError
from placement.flink.distribution import resolve_flink_home
from placement.submitter.build import DEFAULT_CACHE, build_submitter


def main(argv: list[str] | None = None) -> int:
    """``python -m placement.submitter [--flink-home DIR] [--flink-version X] [--cache DIR]``: build it, print the jar's
    path (for a JobManager host where ``placement apply`` cannot build it: copy the jar to
    ``<flink home>/placement/submitter/``)."""
    parser = argparse.ArgumentParser(prog="python -m placement.submitter", description=main.__doc__)
    parser.add_argument(
        "--flink-home", help="the Flink installation to compile against (default: $FLINK_HOME, else pyflink's)"
    )
    parser.add_argument(
        "--flink-version",
        help="build for this Flink (e.g. the JobManager's 1.20.5): against this "
        "machine's installation when it is that version, else its jars fetched once into the cache",
    )
    parser.add_argument("--cache", type=Path, help=f"where the jar goes (default {DEFAULT_CACHE})")
    args = parser.parse_args(argv)
    try:
        print(build_submitter(resolve_flink_home(args.flink_home, args.flink_version), args.cache).path)
    except PlacementError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
