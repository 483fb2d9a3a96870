"""The profiling rules as pure functions: hand-made per-subtask aggregates in, a validated profile out (no Spark)."""

from __future__ import annotations

import pandas as pd
import pytest
from profile_support import INVENTORY

from placement.collect.layout import (
    METRIC_COLUMNS,
    EdgeInfo,
    RunManifest,
    RunVertex,
    SubtaskLocation,
)
from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.profile.rules import (
    AGGREGATE_COLUMNS,
    MIN_CONFIDENT_BUSY_MS,
    Options,
    assemble,
    host_speed_for,
    percentile_fraction,
)


def manifest(state: dict[str, float | None] | None = None, locations=(), run_id="r1") -> RunManifest:
    state = state or {}
    return RunManifest(
        job_id="j1",
        job_name="job",
        run_id=run_id,
        started_ms=0,
        interval_s=1.0,
        vertices=[
            RunVertex(id="src", name="Source: S", parallelism=2, state_bytes=state.get("src")),
            RunVertex(id="map", name="Map", parallelism=1, state_bytes=state.get("map")),
            RunVertex(id="win", name="Window", parallelism=1, state_bytes=state.get("win")),
        ],
        edges=[
            EdgeInfo(source="src", target="map", ship_strategy="REBALANCE"),
            EdgeInfo(source="map", target="win", ship_strategy="HASH[key]"),
        ],
        locations=list(locations),
    )


def agg_row(
    vertex: str,
    subtask: int,
    *,
    n: int = 100,
    busy: float | None = 100.0,
    rin: float = 1000.0,
    rout: float = 500.0,
    nan: int = 0,
    local: float | None = None,
    remote: float | None = None,
) -> dict:
    valid = n - nan if busy is not None else 0
    row = {c: None for c in AGGREGATE_COLUMNS}
    row.update(
        vertex_id=vertex,
        subtask=subtask,
        rows=n + 20,
        samples=n,
        warmup_trimmed=15,
        not_running=5,
        busy_nan=nan,
        valid=valid,
        sum_busy_valid=(busy or 0.0) * valid if busy is not None else None,
        sum_in_valid=rin * valid,
        sum_out_valid=rout * valid,
    )
    means = {
        "busy_ms_per_s": busy,
        "idle_ms_per_s": None if busy is None else 1000 - busy,
        "backpressured_ms_per_s": 0.0,
        "records_in_per_s": rin,
        "records_out_per_s": rout,
        "bytes_in_per_s": rin * 10,
        "bytes_out_per_s": rout * 40,
        "buffers_in_local_per_s": local,
        "buffers_in_remote_per_s": remote,
    }
    for m in METRIC_COLUMNS:
        row[f"{m}_mean"] = means[m]
        row[f"{m}_p50"] = means[m]
        row[f"{m}_p95"] = None if means[m] is None else means[m] * 1.2
    return row


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=list(AGGREGATE_COLUMNS))


def standard() -> pd.DataFrame:
    return frame(
        agg_row("src", 0, rin=0.0, rout=1000.0, busy=50.0),
        agg_row("src", 1, rin=0.0, rout=3000.0, busy=150.0),
        agg_row("map", 0, rin=4000.0, rout=2000.0, busy=200.0),
        agg_row("win", 0, rin=2000.0, rout=10.0, busy=400.0),
    )


def test_true_rates_selectivity_and_bytes_per_record():
    p = assemble([manifest()], standard(), Options())
    src, mp, win = p.vertices
    assert src.stats["true_processing_rate"] is None  # sources have no input: only an output rate
    assert src.stats["true_output_processing_rate"] == pytest.approx(4000 / 0.2)  # sum out / sum busy seconds
    assert src.stats["selectivity"] is None
    assert mp.stats["true_processing_rate"] == pytest.approx(4000 / 0.2)
    assert mp.stats["selectivity"] == pytest.approx(0.5)
    assert mp.bytes_per_record_out == pytest.approx(40)
    assert win.stats["true_output_processing_rate"] == pytest.approx(10 / 0.4)
    assert mp.stats["records_in_per_s_p95_sum"] == pytest.approx(4800)
    assert win.stats["busy_ms_per_s_p95_max"] == pytest.approx(480)
    assert mp.stats["busy_share"] == pytest.approx(0.2)
    assert src.records_out_per_s == 4000 and [s.samples for s in src.subtasks] == [100, 100]
    assert p.job.note.startswith("1 run(s), 400 of 480 samples used")


def test_low_busy_time_is_not_confident_and_zero_busy_is_unbounded():
    rows = standard()
    rows.loc[2] = agg_row("map", 0, rin=4000.0, rout=2000.0, busy=MIN_CONFIDENT_BUSY_MS / 2)
    rows.loc[3] = agg_row("win", 0, rin=2000.0, rout=10.0, busy=0.0)
    p = assemble([manifest()], rows, Options())
    _, mp, win = p.vertices
    assert not mp.subtasks[0].confident and not mp.stats["confident"]
    assert mp.stats["true_processing_rate"] == pytest.approx(4000 / (MIN_CONFIDENT_BUSY_MS / 2000))
    assert win.subtasks[0].busy_ms_per_s == 0.0 and not win.subtasks[0].confident
    assert win.stats["true_processing_rate"] is None and win.stats["true_rate_unbounded"] is True


def test_nan_busy_subtask_keeps_its_rates_but_has_no_busy_time():
    rows = standard()
    rows.loc[1] = agg_row("src", 1, rin=0.0, rout=3000.0, busy=None)
    p = assemble([manifest()], rows, Options())
    s1 = p.vertices[0].subtasks[1]
    assert s1.busy_ms_per_s is None and s1.idle_ms_per_s is None and s1.records_out_per_s == 3000 and not s1.confident
    # the vertex's true rate comes from the subtask that has busy time
    assert p.vertices[0].stats["true_output_processing_rate"] == pytest.approx(1000 / 0.05)


def test_buffers_in_are_the_mean_local_plus_remote_one_alone_or_absent():
    """A subtask's buffers_in_per_s: its mean local plus mean remote buffers in a second; the one recorded when the
    other was not (a filtered series); null when neither was — and then absent from the JSON, so a profile of a
    history recorded before them dumps and hashes as it did."""
    rows = frame(
        agg_row("src", 0, rin=0.0, rout=1000.0, busy=50.0, local=0.0, remote=0.0),
        agg_row("src", 1, rin=0.0, rout=3000.0, busy=150.0),
        agg_row("map", 0, rin=4000.0, rout=2000.0, busy=200.0, local=12.5, remote=7.25),
        agg_row("win", 0, rin=2000.0, rout=10.0, busy=400.0, local=None, remote=20.0),
    )
    p = assemble([manifest()], rows, Options())
    src, mp, win = p.vertices
    assert [s.buffers_in_per_s for s in src.subtasks] == [0.0, None]
    assert mp.subtasks[0].buffers_in_per_s == 19.75 and win.subtasks[0].buffers_in_per_s == 20.0
    dumped = p.dump()["vertices"]
    assert dumped[0]["subtasks"][0]["buffers_in_per_s"] == 0.0 and "buffers_in_per_s" not in dumped[0]["subtasks"][1]
    before = assemble([manifest()], standard(), Options())  # no deliveries recorded anywhere
    assert not any("buffers_in_per_s" in s for v in before.dump()["vertices"] for s in v["subtasks"])
    # a warm-up under the meters' minute: the rates read ramped, the deliveries are left out (rules.METER_SPAN_S)
    young = assemble([manifest()], rows, Options(warmup_s=59.0))
    assert all(s.buffers_in_per_s is None for v in young.vertices for s in v.subtasks)
    assert young.vertices[1].subtasks[0].records_in_per_s == 4000.0


def test_subtask_without_any_sample_is_reported_empty_not_dropped():
    rows = standard().iloc[[0, 2, 3]]
    p = assemble([manifest()], rows, Options())
    s1 = p.vertices[0].subtasks[1]
    assert s1.samples == 0 and s1.records_out_per_s == 0 and s1.busy_ms_per_s is None and not s1.confident


def test_statefulness_from_checkpoints_keyed_inputs_and_overrides():
    p = assemble([manifest({"src": 0.0, "map": 0.0, "win": 5e6})], standard(), Options())
    assert [v.stateful for v in p.vertices] == [False, False, True] and p.vertices[2].state_bytes == 5e6
    assert p.vertices[2].stats["stateful_basis"] == "checkpoint"
    # no checkpoint at all: the vertex behind a HASH edge is taken as stateful
    p = assemble([manifest()], standard(), Options())
    assert [v.stateful for v in p.vertices] == [False, False, True]
    assert p.vertices[2].stats["stateful_basis"] == "keyed input (no checkpoint)"
    p = assemble(
        [manifest({"win": 5e6})], standard(), Options(stateful=frozenset({"Map"}), stateless=frozenset({"win"}))
    )
    assert [v.stateful for v in p.vertices] == [False, True, False]
    assert p.vertices[2].state_bytes == 5e6  # the measured size stays; only the flag is overridden


def test_state_comes_from_the_newest_run_that_has_a_checkpoint():
    older = manifest({"win": 1e6}, run_id="r1")
    newer = manifest({}, run_id="r2")
    p = assemble([older, newer], standard(), Options())
    assert p.vertices[2].state_bytes == 1e6


def test_host_speed_matching_by_resource_id_host_or_address():
    inv = load_inventory(INVENTORY)
    assert host_speed_for(SubtaskLocation(vertex_id="v", subtask=0, taskmanager_id="rpi2", host="localhost"), inv) == (
        0.3,
        "rpi2",
    )
    assert host_speed_for(
        SubtaskLocation(vertex_id="v", subtask=0, taskmanager_id="10.1.1.1:4000-abc", host="192.168.1.183"), inv
    ) == (0.3, "rpi3")
    assert host_speed_for(
        SubtaskLocation(vertex_id="v", subtask=0, taskmanager_id="192.168.1.180:4000-abc", host=None), inv
    ) == (1.0, "server")
    assert host_speed_for(SubtaskLocation(vertex_id="v", subtask=0, taskmanager_id="x", host="elsewhere"), inv) == (
        1.0,
        None,
    )
    assert host_speed_for(SubtaskLocation(vertex_id="v", subtask=0, taskmanager_id="rpi2"), None) == (1.0, None)


def test_inventory_host_speeds_apply_and_unmatched_taskmanagers_are_noted():
    locs = [
        SubtaskLocation(vertex_id="src", subtask=0, taskmanager_id="rpi1"),
        SubtaskLocation(vertex_id="src", subtask=1, taskmanager_id="tm-unknown", host="10.9.9.9"),
    ]
    p = assemble(
        [manifest(locations=locs)],
        standard(),
        Options(inventory=load_inventory(INVENTORY), inventory_source="inv.yaml"),
    )
    assert [s.host_speed for s in p.vertices[0].subtasks] == [0.3, 1.0]
    assert "TaskManagers not in inv.yaml (host_speed 1.0): tm-unknown" in p.job.note
    # server-core rate: busy seconds scaled by the speed of where they were spent
    assert p.vertices[0].stats["true_output_processing_rate_server_core"] == pytest.approx(
        4000 / (0.05 * 0.3 + 0.15 * 1.0)
    )


def test_moved_subtasks_are_flagged():
    a = manifest(locations=[SubtaskLocation(vertex_id="map", subtask=0, taskmanager_id="rpi1")], run_id="r1")
    b = manifest(locations=[SubtaskLocation(vertex_id="map", subtask=0, taskmanager_id="server")], run_id="r2")
    p = assemble([a, b], standard(), Options())
    assert p.vertices[1].stats["moved_between_runs"] is True and "different TaskManagers" in p.job.note


def test_unknown_ship_strategy_is_planned_as_rebalance():
    m = manifest()
    m.edges[0] = EdgeInfo(source="src", target="map", ship_strategy="CUSTOM")
    p = assemble([m], standard(), Options())
    assert p.edges[0].ship_strategy.value == "REBALANCE" and "'CUSTOM' planned as REBALANCE" in p.job.note


def test_errors_for_no_usable_samples_and_absent_busy_time():
    empty = frame(
        *[{**agg_row(v, i), "samples": 0, "valid": 0} for v, i in (("src", 0), ("src", 1), ("map", 0), ("win", 0))]
    )
    with pytest.raises(BadInput, match="no usable samples"):
        assemble([manifest()], empty, Options())
    no_busy = frame(*[agg_row(v, i, busy=None) for v, i in (("src", 0), ("src", 1), ("map", 0), ("win", 0))])
    with pytest.raises(BadInput, match="busyTimeMsPerSecond is absent"):
        assemble([manifest()], no_busy, Options())


def test_percentile_fraction_bounds_the_subset():
    assert percentile_fraction(1_000, 10) == 1.0
    assert percentile_fraction(100_000_000, 120, per_subtask=10_000) == pytest.approx(0.012)
    assert percentile_fraction(0, 10) == 1.0
