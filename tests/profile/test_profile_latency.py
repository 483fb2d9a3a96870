"""``profile``'s measured latency per source → sink (:mod:`placement.profile.latency`) on a recorded history: the lab
IoT job on real Flink 2.3 with ``metrics.latency.interval: 200`` for this job, 20 s collected by ``metrics collect``
(tests/profile/data/latency-iot)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from placement.collect.layout import find_manifests, latency_rows_to_table, latency_writer, read_latency
from placement.profile.format import load_profile
from placement.profile.latency import measured_latency
from placement.profile.pipeline import build_profile

HISTORY = Path(__file__).parent / "data" / "latency-iot"
SOURCE, SINK = "8a2463e067f272ed88cdff94e906cade", "07cb584f7ea5c4694b0bd5aaf19594fa"


def test_the_recorded_history_gives_the_sink_s_percentiles():
    prof = build_profile(HISTORY, engine="pandas", warmup_s=0)
    (m,) = prof.latency
    assert (m.source, m.sink) == (SOURCE, SINK)
    assert m.paths == ["Source: Sensors → Parse → Filter → Enrich → Window Aggregate → Sink: Readings"]
    ((run, manifest),) = find_manifests(HISTORY)
    sink = read_latency(run, manifest).to_pandas().query("vertex_id == @SINK")
    assert m.samples == sink["ts_ms"].nunique() == 21
    assert m.p50_ms == pytest.approx(sink["p50_ms"].median()) == pytest.approx(279.0)
    assert (m.p95_ms, m.p99_ms, m.max_ms) == pytest.approx((376.0, 394.04, 401.0))
    data = prof.dump()
    assert data["latency"][0]["p99_ms"] == pytest.approx(394.04)


def test_the_warm_up_drops_what_came_before_it():
    ((run, manifest),) = find_manifests(HISTORY)
    samples = pd.read_parquet(run / manifest.files[0])
    began = samples["attempt_start_ms"].max()  # the job's subtasks started before the collection did
    sink = read_latency(run, manifest).to_pandas().query("vertex_id == @SINK")
    warmup = (sink["ts_ms"].median() - began) / 1000  # halfway through the collection
    (m,) = build_profile(HISTORY, engine="pandas", warmup_s=warmup).latency
    kept = sink[sink["ts_ms"] - began >= warmup * 1000]
    assert 0 < m.samples == kept["ts_ms"].nunique() < 21
    assert m.p50_ms == pytest.approx(kept["p50_ms"].median())


def test_a_profile_without_latency_reads_and_hashes_as_before():
    prof = load_profile("examples/profiles/iot-sensors.json")
    assert prof.latency == [] and "latency" not in prof.dump()
    # main's digest of the shipped example before profile.latency existed
    assert prof.digest() == "sha256:23e3a887bf40a31dbec408b42b555a841171929ac2b4cde4332142fa906bfd36"


def test_chained_operators_take_the_largest_subtasks_the_median_p50_and_the_largest_tails(tmp_path):
    """Two sink subtasks, the sink chained behind a map (two operators per subtask), two instants."""
    shutil.copytree(HISTORY, tmp_path / "h")
    ((run, manifest),) = find_manifests(tmp_path / "h")
    for f in manifest.latency_files:
        (run / f).unlink()
    rows = []
    for ts in (manifest.started_ms + 1000, manifest.started_ms + 2000):
        for subtask, (p50, p99) in enumerate(((100.0, 200.0), (300.0, 250.0))):
            for op, extra in (("head", 0.0), ("chained", 5.0)):
                rows.append(
                    {
                        "ts_ms": ts,
                        "vertex_id": SINK,
                        "subtask": subtask,
                        "source_id": SOURCE,
                        "source_subtask": None,
                        "operator_id": op,
                        "p50_ms": p50 + extra,
                        "p95_ms": p99 + extra,
                        "p99_ms": p99 + extra,
                        "mean_ms": p50,
                        "max_ms": p99 + 10 + extra,
                    }
                )
    rows.append({**rows[0], "vertex_id": "a0bcbe636c3291fd3f45c25deb2b0823", "p50_ms": 1.0})  # Parse: not a sink
    writer = latency_writer(tmp_path / "h", manifest.job_id, manifest.run_id)
    writer.write(latency_rows_to_table(rows))
    manifest.latency_files = writer.files
    (m,) = measured_latency(load_profile_from(tmp_path / "h"), [(run, manifest)], warmup_s=0)
    assert m.samples == 2
    assert m.p50_ms == pytest.approx((105 + 305) / 2)  # the median of the chain's last operator's medians
    assert m.p99_ms == pytest.approx(255.0) and m.max_ms == pytest.approx(265.0)  # the worst subtask


def load_profile_from(history: Path):
    return build_profile(history, engine="pandas", warmup_s=0)


@pytest.mark.spark
def test_spark_and_pandas_profiles_carry_the_same_latency(spark):
    assert (
        build_profile(HISTORY, engine="spark", spark=spark, warmup_s=0).latency
        == build_profile(HISTORY, engine="pandas", warmup_s=0).latency
    )


def test_profile_prints_the_percentiles(tmp_path, capsys):
    from placement.cli import main

    with pytest.raises(SystemExit) as e:
        main(["profile", str(HISTORY), "--engine", "pandas", "--warmup", "0", "--out", str(tmp_path / "p.json")])
    out = capsys.readouterr().out
    assert e.value.code == 0
    assert "Latency per source → sink (measured, ms" in out
    row = next(line for line in out.splitlines() if "Source: Sensors → Sink: Readings" in line)
    assert [c.strip() for c in row.split("│")[2:7]] == ["279.0", "376.0", "394.0", "401.0", "21"]
