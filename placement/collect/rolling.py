"""A metric history that rolls: the same Parquet layout, bounded on disk, and windows cut from it.

``placement watch`` keeps a collector writing into one directory for hours. Two things keep that bounded and usable:

* :func:`prune` drops the oldest part files of the whole directory (every job and run in it; the samples, the
  TaskManager CPU parts in ``_taskmanagers/`` and the latency-tracking parts in ``_latency/`` alike) once they are older
  than an age bound or the parts together pass a size bound; a finished run whose parts are all gone goes with its
  manifest. The collector calls it after every flush when :class:`~placement.collect.collector.CollectOptions` has a
  bound. A part's age is the newest sample in it (its ``ts_ms`` statistics, read from the footer).
* :func:`snapshot_window` cuts a window out of it as a metrics directory of its own: hard links to the part files
  (samples and TaskManager CPU) whose rows reach into the window, and the runs' manifests (their ``files`` cut to
  match). ``placement profile`` on that directory is, by construction, the profile of the window; pruning or later
  flushes never change it.

Parts are the unit: a window starts at a part boundary (a collector flushes a part every ``--flush`` seconds), so
choose a flush interval small against the window.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from placement.collect.layout import (
    LATENCY_DIR,
    MANIFEST_NAME,
    TASKMANAGER_DIR,
    THREAD_DIR,
    find_manifests,
    read_manifest,
    run_dir,
    write_manifest,
)
from placement.errors import BadInput

SAMPLE_PARTS = "job_id=*/run_id=*/part-*.parquet"
TASKMANAGER_PARTS = f"job_id=*/run_id=*/{TASKMANAGER_DIR}/part-*.parquet"
LATENCY_PARTS = f"job_id=*/run_id=*/{LATENCY_DIR}/part-*.parquet"  # latency tracking (issue 25): rolls alike
THREAD_PARTS = f"job_id=*/run_id=*/{THREAD_DIR}/part-*.parquet"  # per-thread CPU: rolls alike
# side table dir -> manifest field
SIDE_DIRS = {TASKMANAGER_DIR: "taskmanager_files", LATENCY_DIR: "latency_files", THREAD_DIR: "thread_files"}


@dataclass(frozen=True)
class Part:
    path: Path
    bytes: int
    first_ms: int  # oldest sample in the part
    last_ms: int  # newest sample in the part

    @property
    def run(self) -> Path:
        """The run directory the part belongs to (a TaskManager CPU or latency part sits one level down)."""
        return self.path.parent.parent if self.path.parent.name in SIDE_DIRS else self.path.parent


def part_span(path: Path) -> tuple[int, int] | None:
    """(oldest, newest) ``ts_ms`` of a part from its footer's statistics; None for an empty or unreadable part."""
    try:
        meta = pq.read_metadata(path)
    except (pa.ArrowException, OSError):
        return None
    column = meta.schema.to_arrow_schema().get_field_index("ts_ms")
    lows, highs = [], []
    for i in range(meta.num_row_groups):
        stats = meta.row_group(i).column(column).statistics
        if stats is None or not stats.has_min_max:
            return None
        lows.append(stats.min)
        highs.append(stats.max)
    return (int(min(lows)), int(max(highs))) if lows else None


def parts_of(root: str | Path, *patterns: str) -> list[Part]:
    """Every readable part file under ``root`` (all jobs and runs; the sample parts unless ``patterns`` say which),
    oldest newest-sample first."""
    found = []
    for path in (p for pattern in patterns or (SAMPLE_PARTS,) for p in Path(root).glob(pattern)):
        span = part_span(path)
        if span is not None:
            found.append(Part(path, path.stat().st_size, *span))
    return sorted(found, key=lambda p: (p.last_ms, str(p.path)))


def prune(
    root: str | Path,
    *,
    now_ms: int,
    max_age_s: float | None = None,
    max_bytes: int | None = None,
    keep_runs: frozenset[Path] = frozenset(),
) -> list[Path]:
    """Delete the oldest parts (samples and TaskManager CPU alike) until none is older than ``max_age_s`` (its newest
    sample) and all together take at most ``max_bytes``; the newest part always stays. Run directories left without
    sample parts are removed unless listed in ``keep_runs`` (a run still being written). Returns the deleted part
    files."""
    parts = parts_of(root, SAMPLE_PARTS, TASKMANAGER_PARTS, LATENCY_PARTS, THREAD_PARTS)
    total = sum(p.bytes for p in parts)
    dropped: list[Path] = []
    for p in parts[:-1]:
        too_old = max_age_s is not None and now_ms - p.last_ms > max_age_s * 1000
        too_big = max_bytes is not None and total > max_bytes
        if not (too_old or too_big):
            break
        p.path.unlink(missing_ok=True)
        total -= p.bytes
        dropped.append(p.path)
    keep = {Path(k).resolve() for k in keep_runs}
    for d in {p.run for p in parts if p.path in dropped}:
        if d.resolve() not in keep and not any(d.glob("part-*.parquet")):
            shutil.rmtree(d, ignore_errors=True)
            if d.parent.is_dir() and not any(d.parent.iterdir()):
                d.parent.rmdir()
    return dropped


def snapshot_window(
    root: str | Path, dest: str | Path, *, job_name: str, since_ms: int, until_ms: int | None = None
) -> int:
    """Make ``dest`` a metrics directory holding the window ``[since_ms, until_ms]`` of job ``job_name``: the parts
    whose samples reach into it, hard-linked (copied across file systems), and their runs' manifests with ``files``
    cut to those parts. Returns the number of parts; 0 (and nothing written) when the window holds none."""
    dest = Path(dest)
    if dest.exists():
        raise BadInput("exists already (a window snapshot is written once)", source=str(dest))
    chosen: dict[Path, list[Part]] = {}
    side: dict[str, dict[Path, list[Part]]] = {d: {} for d in SIDE_DIRS}
    for p in parts_of(root, SAMPLE_PARTS, TASKMANAGER_PARTS, LATENCY_PARTS, THREAD_PARTS):
        if p.last_ms >= since_ms and (until_ms is None or p.first_ms <= until_ms):
            (chosen if p.path.parent == p.run else side[p.path.parent.name]).setdefault(p.run, []).append(p)
    runs = {d: m for d, m in find_manifests(root) if m.job_name == job_name} if chosen else {}
    chosen = {d: ps for d, ps in chosen.items() if d in runs}
    if not chosen:
        return 0
    tmp = dest.with_name("." + dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for d, ps in chosen.items():
        manifest = read_manifest(d / MANIFEST_NAME)  # as it is now (the collector may have flushed since the listing)
        target = run_dir(tmp, manifest.job_id, manifest.run_id)
        target.mkdir(parents=True)
        linked = [p.path.name for p in ps if _link(p.path, target / p.path.name)]
        manifest.files = sorted(linked)
        for sub, attr in SIDE_DIRS.items():  # TaskManager CPU, latency and thread parts
            if side[sub].get(d):
                (target / sub).mkdir()
            setattr(
                manifest,
                attr,
                sorted(
                    f"{sub}/{p.path.name}" for p in side[sub].get(d, []) if _link(p.path, target / sub / p.path.name)
                ),
            )
        write_manifest(tmp, manifest)
    os.replace(tmp, dest)
    return len(list(dest.glob("job_id=*/run_id=*/part-*.parquet")))


def _link(src: Path, dst: Path) -> bool:
    """Hard-link (or copy) ``src``; False when it was pruned in the meantime."""
    try:
        os.link(src, dst)
    except FileNotFoundError:
        return False
    except OSError:
        try:
            shutil.copy2(src, dst)
        except FileNotFoundError:
            return False
    return True
