"""The sources' rates read from a metrics directory (placement/collect/sources.py): per source vertex, summed over
its subtasks, only at instants where every subtask reported."""

from __future__ import annotations

import pytest
from rate_history import history, write_example

from placement.collect.layout import PartWriter, RunManifest, RunVertex, rows_to_table, write_manifest
from placement.collect.sources import source_rates
from placement.errors import BadInput


def test_the_shipped_example_reads_as_the_generated_series(tmp_path):
    write_example(tmp_path / "h")
    (job,) = source_rates(tmp_path / "h").items()
    assert job[0] == "iot-sensors" and list(job[1]) == ["Source: Sensors"]
    points = job[1]["Source: Sensors"]
    assert len(points) == len(history(6.5, step_s=300))  # 7.5 days less the missed one
    assert points[0][1] > 0


def _history(root, rows):
    write_manifest(
        root,
        RunManifest(
            job_id="j1",
            job_name="job",
            run_id="r1",
            started_ms=0,
            interval_s=1.0,
            vertices=[RunVertex(id="src", name="Source", parallelism=2), RunVertex(id="op", name="Op", parallelism=1)],
            edges=[{"source": "src", "target": "op", "ship_strategy": "FORWARD"}],
        ),
    )
    base = {"attempt": 0, "attempt_start_ms": -3_600_000, "running": True}  # an hour into the attempt
    PartWriter(root, "j1", "r1").write(rows_to_table([{**base, **r} for r in rows]))


def test_an_instant_a_subtask_missed_is_left_out(tmp_path):
    rows = [
        {"ts_ms": 1000, "vertex_id": "src", "subtask": 0, "records_out_per_s": 10.0},
        {"ts_ms": 1000, "vertex_id": "src", "subtask": 1, "records_out_per_s": 5.0},
        {"ts_ms": 2000, "vertex_id": "src", "subtask": 0, "records_out_per_s": 10.0},
        {"ts_ms": 2000, "vertex_id": "src", "subtask": 1, "records_out_per_s": None},  # not reported
        {"ts_ms": 1000, "vertex_id": "op", "subtask": 0, "records_out_per_s": 99.0},  # not a source
    ]
    _history(tmp_path, rows)
    assert source_rates(tmp_path) == {"job": {"Source": [(1000, 15.0)]}}


def test_a_history_without_source_rates_is_bad_input(tmp_path):
    _history(tmp_path, [{"ts_ms": 1000, "vertex_id": "op", "subtask": 0, "records_out_per_s": 1.0}])
    with pytest.raises(BadInput, match="records_out_per_s: no source rates in the history"):
        source_rates(tmp_path)


def test_a_subtasks_first_minute_is_not_the_load(tmp_path):
    # Flink's meters average the minute before: after a (re)start a source's rate ramps from 0 to the load
    restarted = 100_000
    rows = [
        {"ts_ms": t, "vertex_id": "src", "subtask": k, "records_out_per_s": rate, "attempt_start_ms": start}
        for t, rate, start in [
            (90_000, 100.0, -3_600_000),
            (110_000, 20.0, restarted),  # 10 s into the new attempt: a sixth of the minute's meter
            (159_000, 95.0, restarted),
            (160_000, 100.0, restarted),  # a whole minute: the load again
            (170_000, 100.0, None),  # a history without attempts' starts (Prometheus' can lack them) keeps it
        ]
        for k in (0, 1)
    ]
    _history(tmp_path, rows)
    assert source_rates(tmp_path) == {"job": {"Source": [(90_000, 200.0), (160_000, 200.0), (170_000, 200.0)]}}
