"""Metric histories from Prometheus (placement/collect/prometheus.py), for real: a Flink 2.3 cluster of its own with
the Prometheus reporter on each TaskManager, the Debian package's Prometheus scraping them every second, and the lab
IoT job. The same stretch of the job is collected twice — by the REST collector while it runs, and afterwards from
Prometheus — and the two profiles must agree per vertex."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from placement.cli import main
from placement.collect.layout import find_manifests, read_latency, read_taskmanager_cpu
from placement.collect.prometheus import label_value, parse_duration, parse_time
from placement.errors import BadInput
from placement.flink.rest import FlinkRest
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.profile.pipeline import build_profile
from placement.profile.rules import MIN_CONFIDENT_BUSY_MS
from support.flink import TASKMANAGERS, cancel_job, start_flink, submit_job
from support.prometheus import start_prometheus, with_prometheus_reporter

REST_SECONDS = 100  # after the warm-up, 25 s of samples: the figures compared agree to < 1 % (5 % allowed)
# Flink's rates and busy times are 60 s averages, so 60 s after a start they drop off a cliff (the start-up leaves the
# window). REST's attempt start is its deployment; Prometheus' is its initialization (deployment took 1-5 s here):
# a warm-up of exactly 60 s would put the two cut-offs on either side of that cliff. 75 s covers it, as docs/profile.md
# advises.
WARMUP_S = 75
AGREEMENT = 0.05
# 1,000 readings/s per source subtask: enough work that most vertices are busy above the profile's confidence floor
IOT_ARGS = ("--rate", "1000", "--parallelism", "2", "--window-ms", "2000")


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main(args)
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


# ---- pure parts ----------------------------------------------------------------------------------------------------


def test_times_durations_and_label_values():
    now = 1_750_000_000.0
    assert parse_time("now", now=now, field="--since") == now
    assert parse_time("now-2h", now=now, field="--since") == now - 7200
    assert parse_time("now - 1m30s", now=now, field="--since") == now - 90
    assert parse_time("1749990000.5", now=now, field="--since") == 1749990000.5
    assert parse_time("2025-06-15T12:00:00Z", now=now, field="--since") == 1749988800.0
    assert parse_time("2025-06-15T12:00:00", now=now, field="--since") == 1749988800.0  # no zone: UTC
    assert parse_time("2025-06-15T14:00:00+02:00", now=now, field="--since") == 1749988800.0
    assert parse_duration("500ms", field="--step") == 0.5 and parse_duration("1m30s", field="--step") == 90
    assert parse_duration("15", field="--step") == 15.0
    for bad in ("yesterday", "now-2x"):
        with pytest.raises(BadInput, match="--since"):
            parse_time(bad, now=now, field="--since")
    with pytest.raises(BadInput, match="--step: '1 minute' is not a duration"):
        parse_duration("1 minute", field="--step")
    # what Flink's reporter does to names in labels (seen on a real scrape: "Source: Sensors" -> "Source:_Sensors")
    assert label_value("Source: Sensors") == "Source:_Sensors" and label_value("127.0.0.1") == "127_0_0_1"


def test_unreachable_prometheus_and_missing_graph_are_one_line_errors(tmp_path, capsys):
    from placement.lab.flink import free_port

    url = f"http://127.0.0.1:{free_port()}"
    base = [
        "metrics",
        "collect",
        "--prometheus",
        url,
        "--job-name",
        "iot-sensors",
        "--since",
        "now-1h",
        "--out",
        str(tmp_path / "m"),
    ]
    code, _, err = run_cli(base, capsys)
    assert code == 2 and err.count("\n") == 1 and "--graph: Prometheus has no job graph: give --rest URL" in err
    code, _, err = run_cli([*base, "--graph", str(tmp_path / "none.json")], capsys)
    assert code == 2 and err.strip() == f"error: {tmp_path / 'none.json'}: --graph: not found"
    graph = tmp_path / "g.json"
    graph.write_text("{}")
    code, _, err = run_cli([*base, "--graph", str(graph)], capsys)
    assert code == 1 and err.count("\n") == 1 and f"Prometheus {url}/api/v1/series: cannot reach it" in err
    assert "Connection refused" in err and "Traceback" not in err
    code, _, err = run_cli([*base, "--graph", str(graph), "--duration", "5"], capsys)
    assert code == 2 and "--duration: applies to REST polling, not --prometheus" in err
    code, _, err = run_cli(["metrics", "collect", "--job-name", "x", "--out", str(tmp_path / "m")], capsys)
    assert code == 2 and "--rest: give --rest URL (or --prometheus URL" in err
    assert not (tmp_path / "m").exists()


# ---- against a real Flink and a real Prometheus ------------------------------------------------------------------


@pytest.fixture(scope="module")
def scraped(tmp_path_factory, lab_jobs_jar):
    """The IoT job on a cluster with the reporter, Prometheus scraping every second, and a REST collection of
    ``REST_SECONDS`` of the job, taken while Prometheus scraped the same seconds. The job tracks latency
    (``metrics.latency.interval: 200``, for this job only) so the latency histograms are read from both as well
    (issue 25 §1)."""
    work = tmp_path_factory.mktemp("prometheus-flink")
    taskmanagers, targets = with_prometheus_reporter(TASKMANAGERS, work)
    with (
        start_flink(work / "flink", taskmanagers) as cluster,
        start_prometheus(work / "prometheus", targets, scrape_interval="1s") as prom,
    ):
        rest = FlinkRest(cluster.rest_url)
        job = submit_job(
            rest, lab_jobs_jar, IOT_SENSOR_JOB, IOT_ARGS, flink_configuration={"metrics.latency.interval": "200"}
        )
        try:
            prom.wait_for_targets()
            rest_dir = work / "rest-history"
            with pytest.raises(SystemExit) as e:
                main(
                    [
                        "metrics",
                        "collect",
                        "--rest",
                        cluster.rest_url,
                        "--job",
                        job.job_id,
                        "--duration",
                        str(REST_SECONDS),
                        "--interval",
                        "1",
                        "--out",
                        str(rest_dir),
                        "--quiet",
                    ]
                )
            assert e.value.code == 0
            ((_, manifest),) = find_manifests(rest_dir)
            yield SimpleNamespace(
                cluster=cluster, prom=prom, job=job, rest=rest, rest_dir=rest_dir, manifest=manifest, work=work
            )
        finally:
            cancel_job(job)
    assert not prom.data_dir.exists() and prom.proc.poll() is not None  # stopped, its TSDB removed


def _starts(history: Path) -> dict[tuple[str, int], int]:
    ((run, _),) = find_manifests(history)
    t = pq.read_table(run, columns=["vertex_id", "subtask", "attempt_start_ms"]).to_pylist()
    return {(r["vertex_id"], r["subtask"]): r["attempt_start_ms"] for r in t}


def _rel(x: float, y: float) -> float:
    return 0.0 if max(abs(x), abs(y)) < 1e-12 else (y - x) / max(abs(x), abs(y))


def _window(s) -> list[str]:
    return ["--since", f"{s.manifest.started_ms / 1000:.3f}", "--until", f"{s.manifest.ended_ms / 1000:.3f}"]


@pytest.mark.flink
@pytest.mark.timeout(900)
def test_profile_from_prometheus_agrees_with_rest_collection_per_vertex(scraped, tmp_path, capsys):
    s = scraped
    out = tmp_path / "from-prometheus"
    code, stdout, err = run_cli(
        [
            "metrics",
            "collect",
            "--prometheus",
            s.prom.url,
            "--job-name",
            "iot-sensors",
            *_window(s),
            "--rest",
            s.cluster.rest_url,
            "--out",
            str(out),
            "--quiet",
        ],
        capsys,
    )
    assert code == 0, err
    ((_, manifest),) = find_manifests(out)
    assert manifest.job_id == s.job.job_id and manifest.run_id.startswith("prom-")
    assert manifest.interval_s == 1.0  # no --step: the scrape interval Prometheus reports for the job's targets
    assert [(v.id, v.name, v.parallelism) for v in manifest.vertices] == [
        (v.id, v.name, v.parallelism) for v in s.manifest.vertices
    ]
    assert manifest.edges == s.manifest.edges
    # every subtask ran where REST says it ran (the tm_id label is the TaskManager's resource id)
    where = {(loc.vertex_id, loc.subtask): loc.taskmanager_id for loc in s.manifest.locations}
    assert {(loc.vertex_id, loc.subtask): loc.taskmanager_id for loc in manifest.locations} == where
    assert f"read: {manifest.samples} samples" in stdout
    # attempts start (Prometheus: scrape time minus the accumulated busy/idle/back-pressured ms, minus the
    # initialization time) a little after REST's start (the attempt's deployment)
    rest_start = _starts(s.rest_dir)
    prom_start = _starts(out)
    assert rest_start.keys() == prom_start.keys()
    for key, t in rest_start.items():
        assert 0 <= prom_start[key] - t <= 10_000, (key, t, prom_start[key])

    from_rest = build_profile(s.rest_dir, engine="pandas", warmup_s=WARMUP_S)
    from_prom = build_profile(out, engine="pandas", warmup_s=WARMUP_S)
    compared, busy_compared = 0, 0
    for a, b in zip(from_rest.vertices, from_prom.vertices, strict=True):
        assert (a.name, a.parallelism, a.stateful) == (b.name, b.parallelism, b.stateful)
        # about the same usable samples: one per second after warm-up, in both
        assert b.stats["samples"] == pytest.approx(a.stats["samples"], rel=0.1), a.name
        keys = ["records_in_per_s", "records_out_per_s", "bytes_in_per_s", "bytes_out_per_s"]
        busy = (a.stats["busy_share"] * 1000, b.stats["busy_share"] * 1000)
        if min(busy) >= MIN_CONFIDENT_BUSY_MS:
            keys += ["busy_share", "true_output_processing_rate"]
            busy_compared += 1
        else:
            # below the profile's confidence floor (10 ms/s) busy time is a few integer milliseconds per second and a
            # rate per busy second is noise (the profile marks it so): they agree to the gauge's resolution
            assert abs(busy[0] - busy[1]) <= 1.0, (a.name, busy)
        for key in keys:
            x, y = a.stats.get(key), b.stats.get(key)
            if x is None and y is None:
                continue
            assert x is not None and y is not None, (a.name, key, x, y)
            if max(abs(x), abs(y)) < 1e-9:
                continue
            assert abs(y - x) <= AGREEMENT * max(abs(x), abs(y)), (a.name, key, x, y)
            compared += 1
    assert compared >= 2 * len(from_rest.vertices) and busy_compared >= 1  # figures of every vertex were compared
    # the buffers delivered to each subtask (numBuffersInLocal/RemotePerSecond, local + remote): recorded by both, and
    # the same 60 s meters, so they agree as the record rates do; a source has no input channel: 0
    assert {"numBuffersInLocalPerSecond", "numBuffersInRemotePerSecond"} <= set(manifest.metrics)
    assert not [n for n in manifest.notes if "not in Prometheus" in n], manifest.notes
    for a, b in zip(from_rest.vertices, from_prom.vertices, strict=True):
        for x, y in zip(a.subtasks, b.subtasks, strict=True):
            assert x.buffers_in_per_s is not None and y.buffers_in_per_s is not None, (a.name, x.index)
            assert y.buffers_in_per_s == pytest.approx(x.buffers_in_per_s, rel=AGREEMENT, abs=0.05), (a.name, x.index)
        print(
            f"{a.name:18s} buffers in a second, per subtask: REST {[round(x.buffers_in_per_s, 2) for x in a.subtasks]}"
            f" Prometheus {[round(y.buffers_in_per_s, 2) for y in b.subtasks]}"
        )
        if a.name.startswith("Source:"):
            assert all(x.buffers_in_per_s == 0 for x in (*a.subtasks, *b.subtasks))
    # issue 23: each TaskManager's JVM CPU (flink_taskmanager_Status_JVM_CPU_Time / _Load) for the same seconds,
    # agreeing with what REST recorded (the JobManager's metric store vs the reporter: other instants, same counter)
    assert manifest.taskmanager_metrics == ["Status.JVM.CPU.Time", "Status.JVM.CPU.Load"]
    assert manifest.taskmanager_files == ["_taskmanagers/part-00000.parquet"]
    assert manifest.flink_version == s.manifest.flink_version and (manifest.flink_version or "").startswith("2.")
    rest_tms = {t.id: t for t in from_rest.taskmanagers}
    prom_tms = {t.id: t for t in from_prom.taskmanagers}
    assert set(rest_tms) == set(prom_tms) == {tm.id for tm in s.manifest.taskmanagers}
    for tm, a in rest_tms.items():
        b = prom_tms[tm]
        print(
            f"TaskManager {tm}: REST {a.process_cores:.3f} cores (baseline {a.baseline_cores:.3f}, {a.basis}), "
            f"Prometheus {b.process_cores:.3f} (baseline {b.baseline_cores:.3f}, {b.basis}), load x cores "
            f"{b.load_cores if b.load_cores is None else round(b.load_cores, 3)}"
        )
        assert b.process_cores == pytest.approx(a.process_cores, rel=0.3, abs=0.02)
        assert (a.subtasks, a.basis) == (b.subtasks, b.basis)
        assert b.samples >= 10
        # no other job runs on this cluster: both record, for every TaskManager, that none of theirs ran there (0, not
        # the null of "not known" — the Prometheus figure is the other job ids' busyTimeMsPerSecond series by tm_id)
        assert (a.cotenant_cores, a.cotenant_subtasks) == (b.cotenant_cores, b.cotenant_subtasks) == (0.0, 0)
    ((prom_run, _),) = find_manifests(out)
    prom_cpu = read_taskmanager_cpu(prom_run, manifest).to_pydict()
    assert set(prom_cpu["cotenant_busy_cores"]) == {0.0} and set(prom_cpu["cotenant_subtasks"]) == {0}
    for a, b in zip(from_rest.vertices, from_prom.vertices, strict=True):  # the figures, for the record (pytest -s)
        print(
            f"{a.name:18s}"
            + "  ".join(
                f"{key} REST {a.stats[key]:.4g} Prometheus {b.stats[key]:.4g} ({_rel(a.stats[key], b.stats[key]):+.2%})"
                for key in ("records_out_per_s", "bytes_out_per_s", "busy_share")
            )
        )


@pytest.mark.flink
@pytest.mark.timeout(900)
def test_graph_from_an_earlier_run_or_a_saved_job_answer_reads_the_same_history(scraped, tmp_path, capsys):
    s = scraped
    with_rest, from_manifest, from_job = tmp_path / "rest", tmp_path / "manifest", tmp_path / "job"
    saved = tmp_path / "job.json"
    saved.write_text(json.dumps(s.rest.job_raw(s.job.job_id)))  # curl $FLINK/jobs/<id> > job.json
    common = ["metrics", "collect", "--prometheus", s.prom.url, "--job", s.job.job_id, *_window(s), "--step", "2s"]
    for out, graph in (
        (with_rest, ["--rest", s.cluster.rest_url]),
        (from_manifest, ["--graph", str(s.rest_dir)]),
        (from_job, ["--graph", str(saved)]),
    ):
        code, said, err = run_cli([*common, *graph, "--out", str(out), "--quiet", "--json"], capsys)
        assert code == 0, err
        doc = json.loads(said)  # stdout the summary alone; the closing line, which --quiet keeps, on stderr
        ((run, manifest),) = find_manifests(out)
        assert (doc["format"], doc["source"], doc["url"]) == ("placement.metrics-summary/v1", "prometheus", s.prom.url)
        assert [(r["run_id"], r["samples"], r["dir"]) for r in doc["runs"]] == [
            (manifest.run_id, manifest.samples, str(run))
        ]
        assert all(Path(f).is_file() for f in doc["runs"][0]["files"]) and f"read: {manifest.samples} samples" in err
    tables = {}
    for out in (with_rest, from_manifest, from_job):
        ((run, manifest),) = find_manifests(out)
        assert manifest.interval_s == 2.0
        assert [(v.id, v.name, v.parallelism) for v in manifest.vertices] == [
            (v.id, v.name, v.parallelism) for v in s.manifest.vertices
        ]
        assert manifest.edges == s.manifest.edges
        tables[out] = pq.read_table(run).sort_by(
            [("ts_ms", "ascending"), ("vertex_id", "ascending"), ("subtask", "ascending")]
        )
    assert tables[with_rest].equals(tables[from_manifest]) and tables[with_rest].equals(tables[from_job])
    t = tables[with_rest].to_pydict()
    assert len(t["ts_ms"]) > 0 and all(
        b - a in (0, 2000) for a, b in zip(sorted(set(t["ts_ms"])), sorted(set(t["ts_ms"]))[1:])
    )
    # the job started inside the lookback: every attempt's start is known and precedes its samples
    assert all(st is not None and st <= ts for st, ts in zip(t["attempt_start_ms"], t["ts_ms"]))
    assert all(t["running"]) and not any(v is None or math.isnan(v) for v in t["busy_ms_per_s"])

    # collecting the same window again replaces the run whole (no second run, no stale part files)
    before = sorted(p.name for p in next(iter(find_manifests(from_job)))[0].iterdir())
    code, _, err = run_cli([*common, "--graph", str(saved), "--out", str(from_job), "--quiet"], capsys)
    assert code == 0, err
    ((run, _),) = find_manifests(from_job)
    assert sorted(p.name for p in run.iterdir()) == before
    assert not [p for p in from_job.iterdir() if p.name.startswith(".")]  # no staging left behind


@pytest.mark.flink
@pytest.mark.timeout(900)
def test_bad_job_and_foreign_graph_are_one_line_errors_that_write_nothing(scraped, tmp_path, capsys):
    s = scraped
    out = tmp_path / "m"
    common = ["metrics", "collect", "--prometheus", s.prom.url, *_window(s), "--out", str(out)]
    code, _, err = run_cli([*common, "--job-name", "no-such-job", "--rest", s.cluster.rest_url], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "--job-name: no flink_taskmanager_job_task_busyTimeMsPerSecond series of a job named 'no-such-job'" in err
    assert "(jobs there: iot_sensors)" in err  # as the reporter writes the name into its label
    foreign = Path(__file__).resolve().parents[2] / "examples" / "metrics" / "iot-sensors"  # another job's runs
    code, _, err = run_cli([*common, "--job", s.job.job_id, "--graph", str(foreign)], capsys)
    assert code == 2 and err.count("\n") == 1 and f"{foreign}: --graph: holds no run of job {s.job.job_id}" in err
    manifest = next(foreign.glob("job_id=*/run_id=*/_manifest.json"))
    code, _, err = run_cli([*common, "--job", s.job.job_id, "--graph", str(manifest)], capsys)
    assert code == 2 and f"{manifest}: --graph: job {s.job.job_id} has vertices the graph lacks" in err
    assert not out.exists()


# ---- latency tracking (issue 25 §1): the same job's histograms over REST and from Prometheus -------------------------


@pytest.fixture(scope="module")
def latency_from_prometheus(scraped, tmp_path_factory) -> Path:
    """Prometheus' record of the REST collection's seconds, read once for the latency tests."""
    out = tmp_path_factory.mktemp("prometheus-latency") / "prom-history"
    with pytest.raises(SystemExit) as e:
        main(
            [
                "metrics",
                "collect",
                "--prometheus",
                scraped.prom.url,
                "--job",
                scraped.job.job_id,
                *_window(scraped),
                "--rest",
                scraped.cluster.rest_url,
                "--out",
                str(out),
                "--quiet",
            ]
        )
    assert e.value.code == 0
    return out


@pytest.mark.flink
def test_prometheus_records_the_sink_s_latency_summaries(scraped, latency_from_prometheus):
    ((run, m),) = find_manifests(latency_from_prometheus)
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


@pytest.mark.flink
def test_both_sources_give_the_same_latency_percentiles_from_source_to_sink(scraped, latency_from_prometheus, capsys):
    rest = build_profile(scraped.rest_dir, engine="pandas", warmup_s=0).latency
    prom = build_profile(latency_from_prometheus, engine="pandas", warmup_s=0).latency
    assert [(m.source, m.sink) for m in rest] == [(m.source, m.sink) for m in prom] and len(rest) == 1
    (r,), (p,) = rest, prom
    with capsys.disabled():
        print(
            f"\nlatency source → sink, REST p50/p95/p99 {r.p50_ms:.1f}/{r.p95_ms:.1f}/{r.p99_ms:.1f} ms, "
            f"Prometheus {p.p50_ms:.1f}/{p.p95_ms:.1f}/{p.p99_ms:.1f} ms"
        )
    # the same histograms, read at other instants (REST: the JobManager's 10 s fetches; Prometheus: every scrape)
    assert p.p50_ms == pytest.approx(r.p50_ms, rel=0.15)
    assert p.p99_ms == pytest.approx(r.p99_ms, rel=0.25)
    assert p.max_ms is None
