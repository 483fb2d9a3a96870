"""The synthetic history generator: the collector's layout, the shapes it promises, and its truth."""

from __future__ import annotations

import numpy as np
import pyarrow.dataset as ds
import pytest

from placement.collect.layout import SAMPLE_SCHEMA, find_manifests
from support.synthetic import (
    IOT_JOB,
    HistoryShape,
    SynthJob,
    SynthVertex,
    scaled_job,
    truth,
    write_run,
)


def load(root):
    ((run_dir, m),) = find_manifests(root)
    return m, ds.dataset(run_dir, format="parquet").to_table()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("synth")
    shape = HistoryShape(duration_s=600, restarts=1, backpressure_episodes=2, seed=5)
    write_run(IOT_JOB, shape, root, rows_per_part=3000)
    m, t = load(root)
    return shape, m, t, t.to_pandas()


def test_layout_and_schema_match_the_collector(run):
    _, m, t, df = run
    assert t.schema.remove_metadata() == SAMPLE_SCHEMA.remove_metadata() or set(SAMPLE_SCHEMA.names) <= set(
        t.schema.names
    )
    subtasks = sum(v.parallelism for v in IOT_JOB.vertices)
    assert len(df) == m.samples == 600 * subtasks
    assert len(m.files) == -(-len(df) // (3000 // subtasks * subtasks))
    assert m.origin == "synthetic" and m.truth == truth(IOT_JOB)
    assert {loc.taskmanager_id for loc in m.locations if loc.vertex_id == IOT_JOB.vertex("Source: Sensors").id} == {
        "rpi1",
        "rpi2",
        "rpi3",
    }


def test_restart_makes_subtasks_not_running_then_a_new_attempt(run):
    shape, _, _, df = run
    down = df[~df["running"]]
    assert len(down) == shape.restart_downtime_s * len(df) / 600
    assert down[[c for c in df.columns if c.endswith("_per_s")]].isna().all().all()
    assert set(df["attempt"]) == {0, 1}
    after = df[(df["attempt"] == 1) & df["running"]]
    assert (after["attempt_start_ms"] > shape.start_ms).all()


def test_warmup_has_no_metrics_then_ramps(run):
    shape, _, _, df = run
    age = (df["ts_ms"] - df["attempt_start_ms"]) / 1000
    assert df.loc[age < shape.metrics_delay_s, "records_in_per_s"].isna().all()
    src = IOT_JOB.vertex("Source: Sensors").id
    early = df[(df["vertex_id"] == src) & age.between(shape.metrics_delay_s, 15)]["records_out_per_s"].mean()
    late = df[(df["vertex_id"] == src) & (age > shape.warmup_s)]["records_out_per_s"].mean()
    assert early < 0.7 * late


def test_times_add_up_and_backpressure_is_upstream_of_the_bottleneck(run):
    _, _, _, df = run
    ok = df.dropna(subset=["busy_ms_per_s", "idle_ms_per_s", "backpressured_ms_per_s"])
    total = ok["busy_ms_per_s"] + ok["idle_ms_per_s"] + ok["backpressured_ms_per_s"]
    assert np.allclose(total, 1000.0) and (ok["busy_ms_per_s"] <= 1000).all()
    bp = ok.groupby("vertex_id")["backpressured_ms_per_s"].max()
    win, sink, src, parse = (
        IOT_JOB.vertex(n).id for n in ("Window Aggregate", "Sink: Readings", "Source: Sensors", "Parse")
    )
    assert bp[win] == 0 and bp[sink] == 0  # the window operator is the bottleneck: backpressure is upstream of it
    assert bp[parse] > 300 and bp[src] > 50
    assert ok.groupby("vertex_id")["busy_ms_per_s"].max()[win] > 900


def test_nan_busy_readings(run):
    shape, _, _, df = run
    has_metrics = df["idle_ms_per_s"].notna()
    share = df.loc[has_metrics, "busy_ms_per_s"].isna().mean()
    assert share == pytest.approx(shape.nan_fraction, abs=0.005)


def test_same_seed_same_history(tmp_path):
    shape = HistoryShape(duration_s=100, seed=9, restarts=0, backpressure_episodes=1)
    write_run(IOT_JOB, shape, tmp_path / "a")
    write_run(IOT_JOB, shape, tmp_path / "b")
    assert load(tmp_path / "a")[1].equals(load(tmp_path / "b")[1])


def test_scaled_job_and_truth():
    big = scaled_job(IOT_JOB, 4)
    assert [v.parallelism for v in big.vertices] == [12, 12, 12, 12, 8, 4]
    t = truth(big)
    assert t["Filter"]["selectivity"] == pytest.approx(0.3)
    assert t["Source: Sensors"]["records_out_per_s"] == pytest.approx(4 * 90_000)


def test_saturated_job_is_rejected():
    job = SynthJob("hot", (SynthVertex("Source: X", 1, true_rate=100.0, source_rate=200.0),), ())
    with pytest.raises(ValueError, match="saturated"):
        truth(job)
