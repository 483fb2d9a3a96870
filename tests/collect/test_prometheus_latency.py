"""Flink's latency tracking from Prometheus (issue 25 §1): a cluster of its own with the Prometheus reporter, the
Debian package's Prometheus scraping every second, and the lab IoT job with ``metrics.latency.interval: 200``. The same
stretch is collected over REST while it runs and from Prometheus afterwards: both record the sink's histograms, and
the profiles' percentiles from source to sink agree."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from support.flink import IOT_ARGS, TASKMANAGERS, cancel_job, start_flink, submit_job
from support.prometheus import start_prometheus, with_prometheus_reporter

from placement.cli import main
from placement.collect.layout import find_manifests, read_latency
from placement.flink.rest import FlinkRest
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.profile.pipeline import build_profile

pytestmark = [pytest.mark.flink, pytest.mark.timeout(600)]
REST_SECONDS = 30


@pytest.fixture(scope="module")
def scraped(tmp_path_factory, lab_jobs_jar):
    work = tmp_path_factory.mktemp("prometheus-latency")
    taskmanagers, targets = with_prometheus_reporter(TASKMANAGERS, work)
    with start_flink(work / "flink", taskmanagers) as cluster, \
            start_prometheus(work / "prometheus", targets, scrape_interval="1s") as prom:
        rest = FlinkRest(cluster.rest_url)
        job = submit_job(rest, lab_jobs_jar, IOT_SENSOR_JOB, IOT_ARGS,
                         flink_configuration={"metrics.latency.interval": "200"})
        try:
            prom.wait_for_targets()
            rest_dir = work / "rest-history"
            with pytest.raises(SystemExit) as e:
                main(["metrics", "collect", "--rest", cluster.rest_url, "--job", job.job_id, "--duration",
                      str(REST_SECONDS), "--interval", "1", "--flush", "10", "--out", str(rest_dir), "--quiet"])
            assert e.value.code == 0
            (_, manifest), = find_manifests(rest_dir)
            prom_dir = work / "prom-history"
            with pytest.raises(SystemExit) as e:
                main(["metrics", "collect", "--prometheus", prom.url, "--job", job.job_id,
                      "--since", f"{manifest.started_ms / 1000:.3f}", "--until", f"{manifest.ended_ms / 1000:.3f}",
                      "--rest", cluster.rest_url, "--out", str(prom_dir), "--quiet"])
            assert e.value.code == 0
            yield SimpleNamespace(job=job, rest_dir=rest_dir, prom_dir=prom_dir)
        finally:
            cancel_job(job)


def test_prometheus_records_the_sink_s_latency_summaries(scraped):
    (run, m), = find_manifests(scraped.prom_dir)
    assert m.latency_files == ["_latency/part-00000.parquet"]
    rows = read_latency(run, m).to_pandas()
    ids = scraped.job.vertex_ids
    assert set(rows["source_id"]) == {ids["Source: Sensors"]}
    sink = rows[rows["vertex_id"] == ids["Sink: Readings"]].dropna(subset=["p50_ms"])
    assert set(sink["operator_id"]) == {ids["Sink: Readings"]} and sink["source_subtask"].isna().all()
    assert sink["ts_ms"].nunique() >= REST_SECONDS // 2  # one per scrape (1 s) once markers arrived
    assert (sink["p50_ms"] > 0).all() and (sink["p50_ms"] <= sink["p95_ms"] + 1e-9).all()
    assert (sink["p95_ms"] <= sink["p99_ms"] + 1e-9).all()
    assert sink["max_ms"].isna().all() and sink["mean_ms"].isna().all()  # a Prometheus summary has neither


def test_both_sources_give_the_same_percentiles_from_source_to_sink(scraped, capsys):
    rest = build_profile(scraped.rest_dir, engine="pandas", warmup_s=0).latency
    prom = build_profile(scraped.prom_dir, engine="pandas", warmup_s=0).latency
    assert [(m.source, m.sink) for m in rest] == [(m.source, m.sink) for m in prom] and len(rest) == 1
    (r,), (p,) = rest, prom
    with capsys.disabled():
        print(f"\nlatency source → sink, REST p50/p95/p99 {r.p50_ms:.1f}/{r.p95_ms:.1f}/{r.p99_ms:.1f} ms, "
              f"Prometheus {p.p50_ms:.1f}/{p.p95_ms:.1f}/{p.p99_ms:.1f} ms")
    # the same histograms, read at other instants (REST: the JobManager's 10 s fetches; Prometheus: every scrape)
    assert p.p50_ms == pytest.approx(r.p50_ms, rel=0.15)
    assert p.p99_ms == pytest.approx(r.p99_ms, rel=0.25)
    assert p.max_ms is None
