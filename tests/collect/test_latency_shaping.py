"""Latency tracking names and values as Flink 2.3's REST API gives them (recorded from the lab IoT job with
``metrics.latency.interval: 200``, tests/collect/data/flink-2.3/latency_*_Sink.json)."""

from __future__ import annotations

import json
from pathlib import Path

from placement.collect import shaping
from placement.collect.layout import LATENCY_SCHEMA, latency_rows_to_table

DATA = Path(__file__).parent / "data" / "flink-2.3"
SOURCE, SINK = "8a2463e067f272ed88cdff94e906cade", "07cb584f7ea5c4694b0bd5aaf19594fa"


def load(name: str):
    return json.loads((DATA / f"{name}.json").read_text())


def test_the_sink_lists_eleven_statistics_of_one_histogram_and_we_keep_five():
    listing = load("latency_listing_Sink")
    latency = [m["id"] for m in listing if ".latency." in m["id"]]
    assert len(latency) == 11  # min max mean median stddev p75 p90 p95 p98 p99 p999
    names = shaping.latency_metric_names(listing)
    prefix = f"0.latency.source_id.{SOURCE}.operator_id.{SINK}.operator_subtask_index.0.latency_"
    assert names == sorted(prefix + s for s in ("max", "mean", "median", "p95", "p99"))
    assert not any("mailboxLatency" in n for n in names)  # a task metric with "Latency" in its name is not tracking


def test_values_become_one_row_per_histogram():
    (row,) = shaping.latency_rows(1234, SINK, load("latency_values_Sink"))
    assert (row["ts_ms"], row["vertex_id"], row["subtask"], row["source_id"], row["operator_id"]) == (
        1234,
        SINK,
        0,
        SOURCE,
        SINK,
    )
    assert row["source_subtask"] is None
    assert row["p50_ms"] == 254.0 and row["p99_ms"] == 487.0 and row["mean_ms"] > 0
    assert row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]
    table = latency_rows_to_table([row])
    assert table.schema.equals(LATENCY_SCHEMA) and table.num_rows == 1


def test_granularity_subtask_and_single_and_nan():
    answer = [
        {
            "id": "1.latency.source_id.s.source_subtask_index.2.operator_id.o.operator_subtask_index.1.latency_p99",
            "value": "9",
        },
        {
            "id": "1.latency.source_id.s.source_subtask_index.2.operator_id.o.operator_subtask_index.1.latency_median",
            "value": "NaN",
        },
        {"id": "0.latency.latency_median", "value": "3"},  # granularity single: no ids at all
        {"id": "0.latency.source_id.s.operator_id.o.operator_subtask_index.0.latency_stddev", "value": "1"},  # not kept
    ]
    rows = shaping.latency_rows(5, "v", answer)
    by_subtask = {r["subtask"]: r for r in rows}
    assert by_subtask[1]["source_subtask"] == 2 and by_subtask[1]["p99_ms"] == 9.0 and by_subtask[1]["p50_ms"] is None
    assert by_subtask[0]["source_id"] is None and by_subtask[0]["p50_ms"] == 3.0
    assert len(rows) == 2


def test_many_names_are_split_into_short_queries():
    names = [
        f"{i}.latency.source_id.{SOURCE}.operator_id.{SINK}.operator_subtask_index.{i}.latency_p99" for i in range(200)
    ]
    queries = shaping.name_queries(names)
    assert len(queries) > 1 and all(len(q) <= shaping.MAX_QUERY_CHARS for q in queries)
    assert ",".join(queries).split(",") == names


def test_latency_interval_from_a_configuration():
    assert shaping.latency_interval_ms([{"key": "metrics.latency.interval", "value": "200 ms"}]) == 200.0
    assert shaping.latency_interval_ms(load("jobmanager_config")) is None  # not set: Flink's default, off
