"""A rolling metric history (placement.collect.rolling): bounded by age and size, windows cut as metrics directories
of their own that ``placement profile`` reads."""

from __future__ import annotations

import json

import pytest

from placement.cli import main
from placement.collect.layout import (
    PartWriter,
    RunManifest,
    RunVertex,
    find_manifests,
    read_taskmanager_cpu,
    rows_to_table,
    taskmanager_rows_to_table,
    taskmanager_writer,
    write_manifest,
)
from placement.collect.rolling import SAMPLE_PARTS, TASKMANAGER_PARTS, parts_of, prune, snapshot_window
from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.watch.observing import JobTrack, SnapshotWindows, last_tick, tick_dirs
from placement.watch.options import WatchOptions
from support.watch_world import one_pi_inventory

T0 = 1_700_000_000_000
VERTICES = [
    RunVertex(id="a" * 32, name="Source: S", parallelism=1),
    RunVertex(id="b" * 32, name="Sink: K", parallelism=1),
]


def rows(start_ms: int, seconds: int, rate: float):
    out = []
    for s in range(seconds):
        for v in VERTICES:
            out.append(
                {
                    "ts_ms": start_ms + s * 1000,
                    "vertex_id": v.id,
                    "subtask": 0,
                    "attempt": 0,
                    "attempt_start_ms": T0 - 120_000,
                    "running": True,
                    "busy_ms_per_s": 100.0,
                    "idle_ms_per_s": 900.0,
                    "backpressured_ms_per_s": 0.0,
                    "records_in_per_s": 0.0 if v.name.startswith("Source") else rate,
                    "records_out_per_s": rate if v.name.startswith("Source") else 0.0,
                    "bytes_in_per_s": rate * 100,
                    "bytes_out_per_s": rate * 100,
                }
            )
    return out


def history(root, job_id: str, run_id: str, parts: list[tuple[int, int, float]]) -> PartWriter:
    """A run of the job 'j' with one part per (start second, seconds, rate)."""
    writer = PartWriter(root, job_id, run_id)
    for start_s, seconds, rate in parts:
        writer.write(rows_to_table(rows(T0 + start_s * 1000, seconds, rate)))
    write_manifest(
        root,
        RunManifest(
            job_id=job_id,
            job_name="j",
            run_id=run_id,
            started_ms=T0,
            interval_s=1,
            vertices=VERTICES,
            files=list(writer.files),
        ),
    )
    return writer


def test_prune_drops_the_oldest_parts_by_age_and_whole_finished_runs(tmp_path):
    history(tmp_path, "old", "r0", [(0, 10, 100.0), (10, 10, 100.0)])
    live = history(tmp_path, "new", "r1", [(20, 10, 200.0), (30, 10, 200.0), (40, 10, 200.0)])
    dropped = prune(tmp_path, now_ms=T0 + 50_000, max_age_s=15, keep_runs=frozenset({live.dir}))
    assert sorted(str(p.relative_to(tmp_path)) for p in dropped) == [
        "job_id=new/run_id=r1/part-00000.parquet",
        "job_id=old/run_id=r0/part-00000.parquet",
        "job_id=old/run_id=r0/part-00001.parquet",
    ]
    assert [p.last_ms for p in parts_of(tmp_path)] == [T0 + 39_000, T0 + 49_000]
    assert not (tmp_path / "job_id=old").exists()  # its run had no part left: gone with its manifest
    assert [m.run_id for _, m in find_manifests(tmp_path)] == ["r1"]


def test_prune_by_size_keeps_the_newest_part(tmp_path):
    live = history(tmp_path, "j1", "r", [(0, 10, 1.0), (10, 10, 1.0), (20, 10, 1.0)])
    one = parts_of(tmp_path)[0].bytes
    prune(tmp_path, now_ms=T0, max_bytes=int(one * 1.5), keep_runs=frozenset({live.dir}))
    assert [p.path.name for p in parts_of(tmp_path)] == ["part-00002.parquet"]
    prune(tmp_path, now_ms=T0, max_bytes=1, keep_runs=frozenset({live.dir}))
    assert len(parts_of(tmp_path)) == 1


def test_a_window_snapshot_is_a_metrics_directory_profile_reads(tmp_path, capsys):
    root = tmp_path / "rolling"
    history(root, "j1", "r", [(0, 30, 100.0), (30, 30, 300.0), (60, 30, 300.0)])
    snap = tmp_path / "w1"
    assert snapshot_window(root, snap, job_name="j", since_ms=T0 + 45_000) == 2
    ((_, m),) = find_manifests(snap)
    assert m.files == ["part-00001.parquet", "part-00002.parquet"]
    # the live history rolls on; the snapshot does not change
    prune(root, now_ms=T0 + 200_000, max_age_s=1)
    with pytest.raises(SystemExit) as exit_info:
        main(
            ["profile", str(snap), "--engine", "pandas", "--warmup", "0", "--out", str(tmp_path / "p.json"), "--quiet"]
        )
    assert exit_info.value.code == 0
    profile = json.loads((tmp_path / "p.json").read_text())
    source = next(v for v in profile["vertices"] if v["name"] == "Source: S")
    assert source["subtasks"][0]["records_out_per_s"] == pytest.approx(300.0)  # the window's rate, not the 100 before
    assert snapshot_window(root, tmp_path / "w2", job_name="other", since_ms=T0) == 0
    with pytest.raises(BadInput, match="exists already"):
        snapshot_window(root, snap, job_name="j", since_ms=T0)


def test_taskmanager_cpu_parts_roll_with_the_samples_and_never_reuse_a_name(tmp_path):
    """A collector flushing for longer than its age bound (as `placement watch` does for hours): every flush writes
    a sample part and a TaskManager CPU part; pruning drops both by the same age, and a new part never takes the
    name of one that is still there (it used to: the manifest listed one file many times, its rows overwritten)."""
    samples, cpu = PartWriter(tmp_path, "j1", "r"), taskmanager_writer(tmp_path, "j1", "r")
    kept: list[str] = []
    for flush in range(12):  # a flush every 5 s, 15 s kept
        start = T0 + flush * 5_000
        samples.write(rows_to_table(rows(start, 5, 100.0)))
        cpu.write(
            taskmanager_rows_to_table(
                {
                    "ts_ms": start + s * 1000,
                    "taskmanager_id": "tm-1",
                    "cpu_time_ns": float(start + s * 1000) * 1e6,
                    "cpu_load": 0.1,
                }
                for s in range(5)
            )
        )
        prune(tmp_path, now_ms=start + 4_000, max_age_s=15, keep_runs=frozenset({samples.dir}))
        kept = [f for f in cpu.files if (samples.dir / f).exists()]
    assert len(cpu.files) == len(set(cpu.files)) == 12  # every flush a name of its own
    assert kept == [f"_taskmanagers/part-{i:05d}.parquet" for i in (8, 9, 10, 11)]
    assert [p.path.name for p in parts_of(tmp_path)] == [f"part-{i:05d}.parquet" for i in (8, 9, 10, 11)]
    write_manifest(
        tmp_path,
        RunManifest(
            job_id="j1",
            job_name="j",
            run_id="r",
            started_ms=T0,
            interval_s=1,
            vertices=VERTICES,
            files=[f for f in samples.files if (samples.dir / f).exists()],
            taskmanager_files=kept,
            taskmanager_metrics=["Status.JVM.CPU.Time"],
        ),
    )
    ((run, manifest),) = find_manifests(tmp_path)
    table = read_taskmanager_cpu(run, manifest)
    assert table.num_rows == 20 and len(set(table.column("ts_ms").to_pylist())) == 20  # no row twice

    # a window snapshot links the TaskManager parts whose rows reach into it, as it does the samples
    snap = tmp_path.parent / (tmp_path.name + "-w")
    assert snapshot_window(tmp_path, snap, job_name="j", since_ms=T0 + 52_000) == 2
    ((_, m),) = find_manifests(snap)
    assert m.files == ["part-00010.parquet", "part-00011.parquet"]
    assert m.taskmanager_files == ["_taskmanagers/part-00010.parquet", "_taskmanagers/part-00011.parquet"]
    assert len(parts_of(snap, TASKMANAGER_PARTS)) == 2 and len(parts_of(snap, SAMPLE_PARTS)) == 2


def test_latency_parts_roll_with_the_samples_and_windows_link_them(tmp_path):
    """Latency-tracking parts (issue 25, ``_latency/``) are pruned by the same age and linked into window snapshots."""
    from placement.collect.layout import latency_rows_to_table, latency_writer, read_latency
    from placement.collect.rolling import LATENCY_PARTS

    samples, lat = PartWriter(tmp_path, "j1", "r"), latency_writer(tmp_path, "j1", "r")
    for flush in range(6):  # a flush every 5 s, 15 s kept
        start = T0 + flush * 5_000
        samples.write(rows_to_table(rows(start, 5, 100.0)))
        lat.write(
            latency_rows_to_table(
                {
                    "ts_ms": start + s * 1000,
                    "vertex_id": "b" * 32,
                    "subtask": 0,
                    "source_id": "a" * 32,
                    "operator_id": "b" * 32,
                    "p50_ms": 50.0 + flush,
                    "p95_ms": 80.0,
                    "p99_ms": 90.0,
                }
                for s in range(5)
            )
        )
        prune(tmp_path, now_ms=start + 4_000, max_age_s=15, keep_runs=frozenset({samples.dir}))
    kept = [f for f in lat.files if (samples.dir / f).exists()]
    assert kept == [f"_latency/part-{i:05d}.parquet" for i in (2, 3, 4, 5)]
    write_manifest(
        tmp_path,
        RunManifest(
            job_id="j1",
            job_name="j",
            run_id="r",
            started_ms=T0,
            interval_s=1,
            vertices=VERTICES,
            files=[f for f in samples.files if (samples.dir / f).exists()],
            latency_files=kept,
        ),
    )
    snap = tmp_path.parent / (tmp_path.name + "-w")
    assert snapshot_window(tmp_path, snap, job_name="j", since_ms=T0 + 22_000) == 2
    ((run, m),) = find_manifests(snap)
    assert m.latency_files == ["_latency/part-00004.parquet", "_latency/part-00005.parquet"]
    assert len(parts_of(snap, LATENCY_PARTS)) == 2
    assert sorted(set(read_latency(run, m).column("p50_ms").to_pylist())) == [54.0, 55.0]


def test_tick_dirs_are_ordered_by_number_and_a_restart_numbers_on(tmp_path):
    windows, plans = tmp_path / "windows", tmp_path / "plans"
    for name in ("tick-99999", "tick-100000", "tick-00007"):
        (windows / name).mkdir(parents=True)
    for name in ("tick-100001", "tick-100001-measured", "other"):
        (plans / name).mkdir(parents=True)
    assert [p.name for p in tick_dirs(windows)] == ["tick-00007", "tick-99999", "tick-100000"]
    assert last_tick(windows, plans) == 100001
    assert last_tick(tmp_path / "absent") == 0


def test_a_window_is_pruned_oldest_by_tick_not_by_name(tmp_path):
    """A watch past tick 99999 (35 days at a 30 s interval): its new window sorts first as text. Pruned by name it
    was the one removed, and every tick after found no window."""
    root = tmp_path / "w"
    history(root / "history", "j1", "r", [(0, 30, 100.0), (30, 30, 300.0)])
    for n in range(99_997, 100_000):
        (root / "windows" / f"tick-{n:05d}").mkdir(parents=True)
    inv = one_pi_inventory(tmp_path / "inv.yaml", ["j"], jobs=False)
    options = WatchOptions(inventory_path=inv, job_name="j", work_dir=root, engine="pandas", warmup_s=0)
    windows = SnapshotWindows(options, load_inventory(inv), keep=2)
    window = windows.read(JobTrack("j", root), 100_000, since_ms=T0)
    assert window.snapshot == root / "windows" / "tick-100000" and window.snapshot.is_dir()
    assert [p.name for p in tick_dirs(root / "windows")] == ["tick-99999", "tick-100000"]
    source = next(v for v in window.profile.vertices if v.name == "Source: S")
    assert source.subtasks[0].records_out_per_s == pytest.approx(200.0, rel=0.05)
