"""The collector's I/O loop against a fake JobManager serving recorded Flink 2.3 answers.

A fake only for what a real cluster cannot be made to do on demand: answer 503 for a while (a JobManager under
failover or a proxy in front of it), fail for good mid-run, or finish the job at a chosen moment. Everything
else about the collector is tested against a real cluster in test_collect_flink.py.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pyarrow.dataset as ds
import pytest

from placement.cli import main
from placement.collect.collector import CollectOptions, Collector
from placement.collect.layout import find_manifests
from placement.errors import PlacementError

DATA = Path(__file__).parent / "data" / "flink-2.3"
JOB = json.loads((DATA / "job.json").read_text())
JID = JOB["jid"]
SUBTASKS = sum(v["parallelism"] for v in JOB["vertices"])


class FakeJobManager:
    """Serves the recorded answers; ``fail_metrics`` 503s before answering, ``broken_after`` rounds then 500s."""

    def __init__(
        self,
        *,
        fail_metrics: int = 0,
        broken_after: int | None = None,
        finish_after: int | None = None,
        nan_busy: bool = False,
        checkpointing: bool = True,
    ):
        self.checkpointing = checkpointing
        self.fail_metrics = fail_metrics
        self.broken_after = broken_after
        self.finish_after = finish_after
        self.nan_busy = nan_busy
        self.failed = 0
        self.metric_requests: list[float] = []  # monotonic time of every metric-values request (503s included)
        self.rounds = 0  # GET /jobs/<jid> calls made by the loop (one per round) after the first
        self.requests: list[str] = []
        names = {v["id"]: v["name"].replace(" ", "_").replace(":", "") for v in JOB["vertices"]}
        self.vertex = {vid: json.loads((DATA / f"vertex_{n}.json").read_text()) for vid, n in names.items()}
        self.metrics = {vid: json.loads((DATA / f"metrics_{n}.json").read_text()) for vid, n in names.items()}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                status, body = fake.answer(self.path)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, raw: str):
        url = urlparse(raw)
        path, query = url.path, parse_qs(url.query)
        self.requests.append(path)
        if self.broken_after is not None and self.rounds >= self.broken_after:
            return 500, {"errors": ["Internal server error.", "java.lang.IllegalStateException: broken"]}
        if path == f"/jobs/{JID}":
            self.rounds += 1
            state = "FINISHED" if self.finish_after is not None and self.rounds > self.finish_after else "RUNNING"
            return 200, {**JOB, "state": state}
        if path == f"/jobs/{JID}/plan":
            return 200, json.loads((DATA / "plan.json").read_text())
        if path == f"/jobs/{JID}/checkpoints":
            return 200, json.loads((DATA / "checkpoints.json").read_text())
        if path.startswith(f"/jobs/{JID}/checkpoints/details/"):
            return 200, json.loads((DATA / "checkpoint_details.json").read_text())
        if path == f"/jobs/{JID}/checkpoints/config":
            if not self.checkpointing:  # what Flink answers for a job without checkpointing
                return 404, {"errors": ["Checkpointing is not enabled for this job (" + JID + ")."]}
            return 200, json.loads((DATA / "checkpoint_config.json").read_text())
        if path == f"/jobs/{JID}/jobmanager/config":
            config = json.loads((DATA / "jobmanager_config.json").read_text())
            return 200, [*config, {"key": "execution.buffer-timeout.interval", "value": "20 ms"}]
        if path == "/taskmanagers":
            return 200, json.loads((DATA / "taskmanagers.json").read_text())
        if path == "/jobs/overview":
            return 200, {"jobs": [{"jid": JID, "name": JOB["name"], "state": "RUNNING"}]}
        parts = path.strip("/").split("/")
        if len(parts) >= 4 and parts[2] == "vertices" and parts[3] in self.vertex:
            vid = parts[3]
            if len(parts) == 4:
                return 200, self.vertex[vid]
            if parts[4] == "metrics":
                if "get" not in query:
                    return 200, [{"id": m["id"]} for m in self.metrics[vid]]
                self.metric_requests.append(time.monotonic())
                if self.failed < self.fail_metrics:
                    self.failed += 1
                    return 503, {"errors": ["Service temporarily unavailable"]}
                wanted = set(query["get"][0].split(","))
                out = [m for m in self.metrics[vid] if m["id"] in wanted]
                if self.nan_busy:
                    out = [{**m, "value": "NaN"} if m["id"].endswith("busyTimeMsPerSecond") else m for m in out]
                return 200, out
        return 404, {"errors": ["Not found: " + path]}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def options(fake: FakeJobManager, out: Path, **kw) -> CollectOptions:
    base = {
        "rest_url": fake.url,
        "out_dir": out,
        "job_id": JID,
        "duration_s": 2.5,
        "interval_s": 0.5,
        "flush_s": 1.0,
        "metrics_timeout_s": 2,
        "backoff_s": 0.01,
        "retries": 5,
    }
    base.update(kw)
    return CollectOptions(**base)


def table(out: Path):
    ((run_dir, manifest),) = find_manifests(out)
    return manifest, ds.dataset(run_dir, format="parquet").to_table().to_pandas()


BACKOFF_S = 0.25


def test_collect_fake_transient_503s_are_retried_with_backoff(tmp_path):
    schedule = (0.0, 2 * BACKOFF_S, 4 * BACKOFF_S, 8 * BACKOFF_S)
    with FakeJobManager(fail_metrics=4) as fake:
        m = Collector(options(fake, tmp_path, backoff_s=BACKOFF_S, duration_s=2.5 + sum(schedule))).run()
    assert fake.failed == 4  # four 503s were answered, and retried behind the scenes
    # The schedule (urllib3's Retry, backoff_factor = backoff_s): the first retry at once, then backoff_s x 2, x 4,
    # x 8 — the waits between the five tries of the first request. A wait is never shorter than asked (sleep does not
    # return early) and, with the request's own time on a loaded machine, stays short of the schedule's next step:
    # no backoff, a constant one or a wrong factor land outside.
    waits = [b - a for a, b in zip(fake.metric_requests[:5], fake.metric_requests[1:5])]
    for wait, want, step in zip(waits, schedule, (*schedule[1:], 2 * schedule[-1]), strict=True):
        assert want - 0.01 <= wait < step, (waits, want)
    manifest, df = table(tmp_path)
    assert m.stopped == "completed" and manifest.samples == len(df)
    rounds = len(df) // SUBTASKS
    assert len(df) == rounds * SUBTASKS and rounds >= 3
    assert df.groupby("ts_ms").size().min() >= 1
    assert len(manifest.files) >= 2 and manifest.ended_ms >= manifest.started_ms


def test_collect_fake_nan_busy_is_stored_as_null(tmp_path):
    with FakeJobManager(nan_busy=True) as fake:
        Collector(options(fake, tmp_path, duration_s=0.5)).run()
    _, df = table(tmp_path)
    assert df["busy_ms_per_s"].isna().all() and df["idle_ms_per_s"].notna().all()


def test_collect_fake_job_that_finishes_ends_the_run(tmp_path):
    with FakeJobManager(finish_after=2) as fake:
        m = Collector(options(fake, tmp_path, duration_s=60)).run()
    assert m.stopped == "job-ended" and "job became FINISHED" in m.notes
    manifest, df = table(tmp_path)
    assert manifest.stopped == "job-ended" and len(df) == manifest.samples > 0


def test_collect_fake_persistent_errors_stop_with_one_line_and_keep_the_samples(tmp_path, capsys):
    with FakeJobManager(broken_after=3) as fake, pytest.raises(SystemExit) as e:
        main(
            [
                "metrics",
                "collect",
                "--rest",
                fake.url,
                "--job",
                JID,
                "--duration",
                "60",
                "--interval",
                "0.3",
                "--out",
                str(tmp_path),
                "--quiet",
            ]
        )
    _, err = capsys.readouterr()
    assert e.value.code == 1
    assert err.startswith("error: Flink REST GET") and "HTTP 500" in err and err.strip().count("\n") == 0
    assert "kept" in err
    manifest, df = table(tmp_path)
    assert manifest.stopped == "interrupted" and len(df) == manifest.samples > 0
    assert any("stopped by an error" in n for n in manifest.notes)


def test_collect_fake_state_sizes_and_locations_in_the_manifest(tmp_path):
    with FakeJobManager() as fake:
        Collector(options(fake, tmp_path, duration_s=0.5)).run()
    manifest, _ = table(tmp_path)
    by_name = {v.name: v for v in manifest.vertices}
    assert by_name["Window Aggregate"].state_bytes == 11407 and by_name["Parse"].state_bytes == 0
    assert by_name["Window Aggregate"].checkpointed_bytes == 11407 and by_name["Parse"].checkpointed_bytes == 0
    assert manifest.checkpoints is not None and manifest.checkpoints.interval_ms == 10_000
    assert manifest.buffer_timeout_ms == 20.0
    assert len(manifest.locations) == SUBTASKS and {loc.taskmanager_id for loc in manifest.locations} <= {
        "server",
        "rpi1",
    }


def test_collect_fake_job_without_checkpointing_records_none(tmp_path):
    with FakeJobManager(checkpointing=False) as fake:
        Collector(options(fake, tmp_path, duration_s=0.5)).run()
    manifest, _ = table(tmp_path)
    assert manifest.checkpoints is None and manifest.buffer_timeout_ms == 20.0


def test_bad_collect_options_are_one_line_errors(tmp_path, capsys):
    for args, needle in (
        (["--job", "a", "--job-name", "b"], "exactly one of --job"),
        ([], "exactly one of --job"),
    ):
        with pytest.raises(SystemExit) as e:
            main(
                [
                    "metrics",
                    "collect",
                    "--rest",
                    "http://127.0.0.1:9",
                    "--duration",
                    "1",
                    "--out",
                    str(tmp_path / "o"),
                    *args,
                ]
            )
        _, err = capsys.readouterr()
        assert e.value.code == 2 and needle in err and err.strip().count("\n") == 0
    with FakeJobManager() as fake, pytest.raises(PlacementError, match="--interval"):
        Collector(options(fake, tmp_path, interval_s=0)).run()
    assert not list(tmp_path.glob("job_id=*"))


def test_collect_fake_wait_for_a_job_that_ended_says_it_ended_not_that_time_ran_out(tmp_path):
    from placement.flink.rest import FlinkRest

    with FakeJobManager(finish_after=0) as fake:  # FINISHED from the first answer
        started = time.monotonic()
        with pytest.raises(PlacementError) as err:
            FlinkRest(fake.url).wait_until_running(JID, timeout=60)
        waited = time.monotonic() - started
    assert f"job {JID} is FINISHED after" in str(err.value) and "60s" not in str(err.value), str(err.value)
    assert waited < 30  # the ended job stopped the wait; it did not run out the 60 s


def test_collect_fake_job_details_carry_the_start_time_the_watch_warms_up_from():
    from placement.flink.rest import FlinkRest

    with FakeJobManager() as fake:
        details = FlinkRest(fake.url).job(JID)
    assert details.start_ms == JOB["start-time"] and details.all_running
