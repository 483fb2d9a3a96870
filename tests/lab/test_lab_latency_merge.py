"""`lab measure`'s latency figures from histogram rows (pure): markers rows as
:func:`placement.collect.shaping.latency_rows` gives them (Flink 2.3's REST answer recorded in
tests/collect/data/flink-2.3/latency_values_Sink.json), the lab sinks' ``eventTimeLatency`` histogram, and the one merge
rule (median of the histograms' p50, largest p99)."""

from __future__ import annotations

import json
from pathlib import Path

from placement.collect import shaping
from placement.lab.measure import (
    LatencyMeasurement,
    event_time_rows,
    marker_measurements,
    merge_histograms,
)

DATA = Path(__file__).resolve().parents[1] / "collect" / "data" / "flink-2.3"
SOURCE, SINK = "8a2463e067f272ed88cdff94e906cade", "07cb584f7ea5c4694b0bd5aaf19594fa"


def test_merge_takes_the_median_p50_and_the_worst_p99_and_skips_empty_histograms():
    rows = [
        {"p50_ms": 10.0, "p99_ms": 40.0},
        {"p50_ms": 30.0, "p99_ms": 35.0},
        {"p50_ms": 12.0, "p99_ms": 90.0},
        {"p50_ms": None, "p99_ms": None},
        {"p50_ms": 5.0, "p99_ms": None},
    ]  # markers not arrived; half a reading
    assert merge_histograms(rows) == (12.0, 90.0, 3)
    assert merge_histograms([{"p50_ms": 10.0, "p99_ms": 20.0}, {"p50_ms": 30.0, "p99_ms": 50.0}]) == (20.0, 50.0, 2)
    assert merge_histograms([]) == (None, None, 0)


def test_markers_of_the_recorded_sink_become_one_figure_named_by_the_source_vertex():
    rows = shaping.latency_rows(0, SINK, json.loads((DATA / "latency_values_Sink.json").read_text()))
    (fig,) = marker_measurements("Sink: Readings", rows, {SOURCE: "Source: Sensors", SINK: "Sink: Readings"})
    assert fig == LatencyMeasurement("Sink: Readings", "markers", "Source: Sensors", 254.0, 487.0, 1)


def test_copies_of_a_split_source_are_one_figure_and_an_unknown_source_keeps_its_id():
    rows = [
        {"source_id": "a1", "subtask": 0, "p50_ms": 10.0, "p99_ms": 20.0},
        {"source_id": "a2", "subtask": 0, "p50_ms": 14.0, "p99_ms": 70.0},
        {"source_id": "a1", "subtask": 1, "p50_ms": 12.0, "p99_ms": 25.0},
        {"source_id": "zz", "subtask": 0, "p50_ms": 1.0, "p99_ms": 2.0},
    ]
    figs = marker_measurements("Sink: X", rows, {"a1": "Source: A", "a2": "Source: A"})
    assert [(f.source, f.p50_ms, f.p99_ms, f.histograms) for f in figs] == [
        ("Source: A", 12.0, 70.0, 3),
        ("zz", 1.0, 2.0, 1),
    ]


def test_a_chained_sink_counts_its_last_operator_as_the_profile_does():
    """Two operators of one sink subtask (a chain) are one histogram, the larger (placement.profile.latency's rule),
    not two in the median."""
    rows = [
        {"source_id": "s", "subtask": 0, "source_subtask": 0, "operator_id": "map", "p50_ms": 100.0, "p99_ms": 200.0},
        {"source_id": "s", "subtask": 0, "source_subtask": 0, "operator_id": "sink", "p50_ms": 110.0, "p99_ms": 190.0},
        {"source_id": "s", "subtask": 1, "source_subtask": 0, "operator_id": "map", "p50_ms": 90.0, "p99_ms": 150.0},
        {"source_id": "s", "subtask": 1, "source_subtask": 0, "operator_id": "sink", "p50_ms": 95.0, "p99_ms": 160.0},
    ]
    (fig,) = marker_measurements("Sink: X", rows, {"s": "Source: S"})
    assert (fig.p50_ms, fig.p99_ms, fig.histograms) == (102.5, 200.0, 2)


def test_event_time_histogram_values_per_subtask():
    answer = [
        {"id": "0.Sink__Readings.eventTimeLatency_median", "value": "250.0"},
        {"id": "0.Sink__Readings.eventTimeLatency_p99", "value": "800.5"},
        {"id": "1.Sink__Readings.eventTimeLatency_median", "value": "NaN"},
        {"id": "1.Sink__Readings.eventTimeLatency_p99", "value": "NaN"},
        {"id": "1.Sink__Readings.eventTimeLatency_p75", "value": "400"},  # not read
        {"id": "0.latency.source_id.s.operator_id.o.operator_subtask_index.0.latency_median", "value": "9"},
    ]
    rows = event_time_rows(answer)
    assert rows == [{"p50_ms": 250.0, "p99_ms": 800.5}, {"p50_ms": None, "p99_ms": None}]
    assert merge_histograms(rows) == (250.0, 800.5, 1)


def test_lab_measure_prints_one_latency_row_per_sink_and_kind():
    from rich.console import Console

    from placement.cli.lab_cmd import _latency_table
    from placement.lab.measure import JobMeasurement

    job = JobMeasurement(
        "j1",
        "iot-sensors",
        1000.0,
        [],
        [
            LatencyMeasurement("Sink: Readings", "markers", "Source: Sensors", 231.0, 1547.25, 1),
            LatencyMeasurement("Sink: Readings", "event-time", None, None, None, 0),
        ],
    )  # no values yet
    console = Console(width=120, record=True)
    console.print(_latency_table(job))
    rows = [line for line in console.export_text().splitlines() if "Sink: Readings" in line]
    assert len(rows) == 2
    assert "markers" in rows[0] and "Source: Sensors" in rows[0] and "231.0" in rows[0] and "1,547.2" in rows[0]
    assert "event-time" in rows[1] and "(freshest record)" in rows[1] and rows[1].count(" - ") == 2
