"""The pure shaping layer on real Flink 2.3 REST answers (recorded from the lab IoT job, tests/collect/data)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest

from placement.collect import shaping
from placement.collect.layout import (
    METRIC_COLUMNS,
    OPTIONAL_COLUMNS,
    RATE_METRICS,
    SAMPLE_SCHEMA,
    missing_metric_notes,
    rows_to_table,
)

DATA = Path(__file__).parent / "data" / "flink-2.3"


def load(name: str):
    return json.loads((DATA / f"{name}.json").read_text())


def test_job_graph_takes_plain_names_from_the_job_and_ship_strategies_from_the_plan():
    vertices, edges = shaping.job_graph(load("job"), load("plan"))
    names = {v.id: v.name for v in vertices}
    assert list(names.values()) == [
        "Source: Sensors",
        "Parse",
        "Filter",
        "Enrich",
        "Window Aggregate",
        "Sink: Readings",
    ]
    assert [v.parallelism for v in vertices] == [2, 2, 2, 2, 1, 1]
    assert all(v.max_parallelism == 128 for v in vertices)
    assert sorted((names[e.source], names[e.target], e.ship_strategy) for e in edges) == sorted(
        [
            ("Source: Sensors", "Parse", "FORWARD"),
            ("Parse", "Filter", "FORWARD"),
            ("Filter", "Enrich", "FORWARD"),
            ("Enrich", "Window Aggregate", "HASH"),
            ("Window Aggregate", "Sink: Readings", "FORWARD"),
        ]
    )


def test_job_graph_without_the_2_3_plan_wrapper_and_without_a_job_body():
    plan = load("plan")["plan"]
    vertices, edges = shaping.job_graph({}, plan)  # older versions: no wrapper; names from the HTML descriptions
    names = {v.name for v in vertices}
    assert "Sink: Readings" in names and "Enrich" in names and len(edges) == 5
    assert all("<br/>" not in n for n in names)


def test_clean_vertex_name():
    assert shaping.clean_vertex_name("Source: Sensors -&gt; Parse<br/>") == "Source: Sensors -> Parse"


def test_subtask_states_carry_status_attempt_start_and_taskmanager():
    states = shaping.subtask_states(load("vertex_Parse"))
    assert [s.index for s in states] == [0, 1]
    s0 = states[0]
    assert s0.running and s0.attempt == 0 and s0.start_ms == 1795291687624
    assert s0.taskmanager_id == "rpi1" and s0.host == "localhost"


@pytest.mark.parametrize(
    "endpoint,host", [("10.0.0.5:41231", "10.0.0.5"), ("[::1]:6121", "::1"), ("rpi1", "rpi1"), (None, None)]
)
def test_host_of_endpoint(endpoint, host):
    assert shaping.host_of_endpoint(endpoint) == host


def test_metric_queries_cover_every_subtask_and_stay_under_the_request_line_limit():
    queries = shaping.metric_queries(200)
    asked = [n for q in queries for n in q.split(",")]
    assert len(asked) == 200 * len(RATE_METRICS) and len(set(asked)) == len(asked)
    assert "199.backPressuredTimeMsPerSecond" in asked
    assert all(len(q) <= shaping.MAX_QUERY_CHARS for q in queries) and len(queries) > 1
    assert len(shaping.metric_queries(2)) == 1


def test_parse_subtask_metrics_of_a_real_answer():
    m = shaping.parse_subtask_metrics(load("metrics_Source_Sensors"))
    assert set(m) == {0, 1}
    assert set(m[0]) == set(METRIC_COLUMNS) - OPTIONAL_COLUMNS  # recorded when the collector asked for no others
    assert m[0]["records_out_per_s"] == pytest.approx(57.733333333333334)
    assert m[1]["idle_ms_per_s"] == 1000.0
    assert m[0]["records_in_per_s"] == 0.0  # a source has no task input


def test_nan_and_garbage_values_become_none_and_unknown_metrics_are_ignored():
    answer = [
        {"id": "0.busyTimeMsPerSecond", "value": "NaN"},
        {"id": "0.idleTimeMsPerSecond", "value": "Infinity"},
        {"id": "0.numRecordsInPerSecond", "value": "12.5"},
        {"id": "0.numRecordsOutPerSecond", "value": "n/a"},
        {"id": "0.Map.numRecordsOutPerSecond", "value": "3"},  # operator-scoped: not a task metric
        {"id": "1.someOtherMetric", "value": "1"},
        {"id": "x.busyTimeMsPerSecond", "value": "1"},
    ]
    m = shaping.parse_subtask_metrics(answer)
    assert m == {0: {"busy_ms_per_s": None, "idle_ms_per_s": None, "records_in_per_s": 12.5, "records_out_per_s": None}}


def test_sample_rows_mark_missing_metrics_null_and_non_running_subtasks():
    states = shaping.subtask_states(load("vertex_Parse"))
    states[1] = shaping.SubtaskState(1, "DEPLOYING", 1, None, "server", "localhost")
    rows = shaping.sample_rows(1000, "v", states, {0: {"busy_ms_per_s": 5.0}})
    assert rows[0]["busy_ms_per_s"] == 5.0 and rows[0]["records_in_per_s"] is None and rows[0]["running"]
    assert not rows[1]["running"] and rows[1]["attempt"] == 1 and all(rows[1][c] is None for c in METRIC_COLUMNS)
    table = rows_to_table(rows)
    assert table.schema == SAMPLE_SCHEMA
    assert table.column("busy_ms_per_s").null_count == 1


def test_missing_metrics_are_a_gap_and_missing_buffer_metrics_what_the_profile_lacks():
    """A rate metric without values is noted as a gap in the record; the buffers in, which an older history or a
    reporter's filter leaves out as a matter of course, as what the profile then does without."""
    where = "not in Prometheus for this job"
    assert missing_metric_notes([], where) == []
    assert missing_metric_notes(
        ["busyTimeMsPerSecond", "numBuffersInLocalPerSecond", "numBuffersInRemotePerSecond"], where
    ) == [
        "not in Prometheus for this job (recorded as null): busyTimeMsPerSecond",
        "not in Prometheus for this job: numBuffersInLocalPerSecond, numBuffersInRemotePerSecond (recorded as null: "
        "the profile has no buffers_in_per_s)",
    ]
    assert missing_metric_notes(["numBuffersInRemotePerSecond"], where) == [
        "not in Prometheus for this job: numBuffersInRemotePerSecond (recorded as null: the profile counts the "
        "other alone in buffers_in_per_s)"
    ]


def test_rows_to_table_turns_nan_into_null():
    row = {
        "ts_ms": 1,
        "vertex_id": "v",
        "subtask": 0,
        "attempt": 0,
        "attempt_start_ms": 0,
        "running": True,
        **{c: math.nan for c in METRIC_COLUMNS},
    }
    t = rows_to_table([row])
    assert all(t.column(c).null_count == 1 for c in METRIC_COLUMNS)
    assert t.column("ts_ms").type == pa.int64()


def test_state_sizes_from_the_latest_completed_checkpoint():
    assert shaping.latest_checkpoint_id(load("checkpoints")) == 2
    sizes = shaping.state_sizes(load("checkpoint_details"))
    vertices, _ = shaping.job_graph(load("job"), load("plan"))
    by_name = {v.name: sizes[v.id] for v in vertices}
    assert by_name["Window Aggregate"] == 11407 and by_name["Parse"] == 0
    assert shaping.latest_checkpoint_id({"latest": {"completed": None}}) is None


def test_checkpointed_sizes_are_what_the_checkpoint_wrote():
    written = shaping.checkpointed_sizes(load("checkpoint_details"))
    vertices, _ = shaping.job_graph(load("job"), load("plan"))
    by_name = {v.name: written[v.id] for v in vertices}
    assert by_name["Window Aggregate"] == 11407 and by_name["Parse"] == 0  # full snapshots: all of the state
    incremental = {"tasks": {"w": {"checkpointed_size": 512, "state_size": 40960}, "x": {"state_size": "NaN"}}}
    assert shaping.checkpointed_sizes(incremental) == {"w": 512.0}  # the delta, not the whole state


def test_checkpoint_config_of_a_real_answer_and_when_checkpointing_is_off():
    cfg = shaping.checkpoint_config(load("checkpoint_config"))  # the lab cluster: every 10 s, hashmap backend
    assert cfg is not None and cfg.interval_ms == 10_000 and cfg.min_pause_ms == 0 and cfg.period_ms == 10_000
    assert cfg.state_backend == "HashMapStateBackend" and cfg.checkpoint_storage == "JobManagerCheckpointStorage"
    assert shaping.checkpoint_config({**load("checkpoint_config"), "min_pause": 30_000}).period_ms == 30_000
    assert shaping.checkpoint_config({"interval": 2**63 - 1, "min_pause": 0}) is None  # Flink's "never"
    assert shaping.checkpoint_config({"errors": ["Checkpointing is not enabled for this job"]}) is None


@pytest.mark.parametrize(
    "entries,ms",
    [
        ([], None),  # the recorded lab answer sets none: Flink's default applies
        ([{"key": "execution.buffer-timeout.interval", "value": "50 ms"}], 50.0),
        ([{"key": "execution.buffer-timeout.interval", "value": "1 s"}], 1000.0),
        ([{"key": "execution.buffer-timeout", "value": "10"}], 10.0),
        ([{"key": "execution.buffer-timeout", "value": "-1"}], float(shaping.NEVER_MS)),
        ([{"key": "execution.buffer-timeout.enabled", "value": "false"}], float(shaping.NEVER_MS)),
        ([{"key": "execution.buffer-timeout.interval", "value": "soon"}], None),
    ],
)
def test_buffer_timeout_from_the_job_configuration(entries, ms):
    assert shaping.buffer_timeout_ms(entries) == ms
    assert shaping.buffer_timeout_ms(load("jobmanager_config")) is None


def test_taskmanagers_resources_and_host():
    tms = {tm.id: tm for tm in shaping.taskmanagers(load("taskmanagers"))}
    assert set(tms) == {"server", "rpi1"}
    s = tms["server"]
    assert s.host == "127.0.0.1" and s.slots == 4 and s.cpu_cores == 4.0 and s.hardware_cpu_cores == 2
    assert s.physical_memory_bytes and s.physical_memory_bytes > 1e9 and s.task_heap_bytes == 201326592
