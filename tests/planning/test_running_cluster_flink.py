"""``placement plan --running-cluster`` on a real Flink 2.3 cluster (the shared test cluster: TaskManagers ``server``
and ``rpi1``, tests/support/flink.py): a job that was not planned by us runs pinned with its source and Parse on the
TaskManager the inventory calls the edge host rpi1, the rest on the server, so Parse's output goes up rpi1's uplink.
Another job planned around it finds that load taken off the uplink — read live: the job's window collected,
profiled and its placement priced — and a tight uplink's shortfall names it.

The expected figure is worked out here from the window the command collected (kept with ``--running-keep``), from
its raw samples: Parse's serialized bytes out per second, as Flink's meters report them, and Flink's framing (for a job
younger than a minute they average over its start as well: what the window says is what is priced)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from planning_factories import cli_run, vertex

from placement.collect.layout import find_manifests
from placement.errors import PlacementError
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.profile.format import JobProfile
from support.flink import cancel_job, submit_job

pytestmark = [pytest.mark.flink, pytest.mark.timeout(300)]

RUNNING = "live-a"
ON_RPI1 = ("Source: Sensors", "Parse")  # the rest of the IoT job on the server: Parse → Filter crosses the uplink
PINNED = {
    name: ["rpi1" if name in ON_RPI1 else "server"]
    for name in ("Source: Sensors", "Parse", "Filter", "Enrich", "Window Aggregate", "Sink: Readings")
}
B_MBIT = 0.5  # the planned job's raw stream, born on the edge host, its sink on the server
TIGHT = 0.6  # Mbit/s: 0.54 usable at 90 %, enough for B alone, not beside the running job
# Flink's network framing on the wire, beside the records (what the uplink carries): a 47-byte header per message, a
# message per flush of the 100 ms default buffer timeout (at most; the stream here is never idle that long) and per
# full 32 KiB buffer
HEADER_BYTES, FLUSHES_PER_S, SEGMENT_BYTES = 47, 10, 32 * 1024


def inventory(path: Path, rest_url: str, edge: str = "rpi1") -> str:
    path.write_text(
        yaml.safe_dump(
            {
                "version": 1,
                "name": "running-live",
                "hosts": [
                    {"name": "server", "address": "127.0.0.1", "role": "server", "cores": 4, "memory": "4GiB"},
                    {"name": edge, "address": "127.0.0.2", "role": "edge", "model": "rpi4b"},
                ],
                "links": [{"from": edge, "to": "server", "bandwidth": "50mbit"}],
                "pins": {"sources": {"Source: B": edge}},
                "flink": {"rest_url": rest_url},
            },
            sort_keys=False,
        )
    )
    return str(path)


def planned(path: Path, name: str = "job-b") -> str:
    ids = {"Source: B": "source-b", "Sink: B": "sink-b"}
    path.write_text(
        JobProfile.model_validate(
            {
                "job": {"name": name, "origin": "synthetic"},
                "vertices": [
                    vertex("Source: B", rin=0, rout=1000, busy=10, bpr=B_MBIT * 125),
                    vertex("Sink: B", rout=0, busy=10),
                ],
                "edges": [{"source": ids["Source: B"], "target": ids["Sink: B"], "ship_strategy": "FORWARD"}],
            }
        ).model_dump_json()
    )
    return str(path)


def window_mbit(metrics: Path, vertex_id: str) -> float:
    """Mean Mbit/s of records the vertex's subtask sent over the collected window, from the raw samples."""
    ((run, manifest),) = find_manifests(metrics)
    rows = pd.concat([pq.read_table(run / f).to_pandas() for f in manifest.files])
    mine = rows[rows["vertex_id"] == vertex_id]["bytes_out_per_s"].dropna()
    assert len(mine) >= 5, len(mine)
    return float(mine.mean()) * 8 / 1e6


def on_the_wire(payload_mbit: float) -> float:
    """The records and their framing (see HEADER_BYTES)."""
    messages = FLUSHES_PER_S + payload_mbit * 1e6 / 8 / SEGMENT_BYTES
    return payload_mbit + messages * HEADER_BYTES * 8 / 1e6


@pytest.fixture(scope="module")
def running_job(flink_rest, lab_jobs_jar):
    job = submit_job(
        flink_rest,
        lab_jobs_jar,
        IOT_SENSOR_JOB,
        ["--rate", "4000", "--parallelism", "1", "--job-name", RUNNING, "--placement", json.dumps(PINNED)],
    )
    try:
        yield job
    finally:
        with contextlib.suppress(PlacementError):
            cancel_job(job)


def test_a_job_is_planned_around_the_jobs_running_in_the_cluster_read_live(running_job, flink_rest, tmp_path, capsys):
    inv, b, keep = inventory(tmp_path / "inv.yaml", flink_rest.url), planned(tmp_path / "b.json"), tmp_path / "keep"
    live = ["--running-cluster", "--running-window", "10", "--running-warmup", "0"]
    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            inv,
            "--profile",
            b,
            "--out",
            tmp_path / "b",
            *live,
            "--running-keep",
            keep,
            "--link",
            f"rpi1:{TIGHT}mbit",
            "--json",
        ],
        capsys,
    )
    assert code == 3, err
    summary = json.loads(out)
    (entry,) = summary["running"]
    assert entry["job"] == RUNNING and entry["plan"].startswith(f"cluster {flink_rest.url} job {running_job.job_id}")
    # the running job's load on the uplink is what its own window says Parse sent
    payload = window_mbit(keep / running_job.job_id, running_job.vertex_ids["Parse"])
    expected = on_the_wire(payload)
    rpi1, server = entry["uses"]["rpi1"], entry["uses"]["server"]
    with capsys.disabled():
        print(
            f"\nrunning job on rpi1's uplink: {rpi1['mbit']:.4f} Mbit/s priced, {payload:.4f} of records in its "
            f"window's samples, {expected:.4f} with framing; "
            f"rpi1 {rpi1['cores']:.3f} cores, {rpi1['slots']} slot(s), {rpi1['memory_mib']:.0f} MiB; server "
            f"{server['cores']:.3f} cores"
        )
    assert payload > 0.05  # 4000 readings/s parsed on the Pi: a real stream, not noise (and enough to break B's fit)
    assert rpi1["mbit"] == pytest.approx(expected, rel=0.01)
    assert rpi1["slots"] == 1 and server["slots"] == 1  # each host's pinned vertices share one slot
    assert rpi1["cores"] > 0 and server["cores"] > 0 and server["mbit"] == 0
    # taken off the uplink: the shortfall names the running job and its figure
    (short,) = [s for s in summary["results"][0]["shortages"] if s["kind"] == "link"]
    assert short["usable"] == pytest.approx(TIGHT * 0.9 - rpi1["mbit"], abs=1e-6)
    assert f"after running job {RUNNING}'s {rpi1['mbit']:.3g} Mbit/s" in short["message"]
    assert short["needed"] == pytest.approx(B_MBIT, rel=0.02)  # alone B would fit (0.54 usable)

    # the window's profile is the running job's: a plan of it, given as --running too, would count it twice
    profile = keep / f"{running_job.job_id}.profile.json"
    code, _, err = cli_run(["plan", "--inventory", inv, "--profile", profile, "--out", tmp_path / "a", "-q"], capsys)
    assert code == 0, err
    code, _, err = cli_run(
        ["plan", "--inventory", inv, "--profile", b, "--out", tmp_path / "b2", *live, "--running", tmp_path / "a"],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1
    assert f"job '{RUNNING}' runs in the cluster and is given as --running {tmp_path / 'a'}" in err
    # several jobs planned together around it (a short window: the figures are checked above)
    code, out, err = cli_run(
        [
            "plan",
            "--inventory",
            inv,
            "--profile",
            b,
            "--profile",
            planned(tmp_path / "c.json", "job-c"),
            "--out",
            tmp_path / "fleet",
            "--running-cluster",
            "--running-window",
            "3",
            "--running-warmup",
            "0",
            "--json",
        ],
        capsys,
    )
    assert code == 0, err
    fleet = json.loads((tmp_path / "fleet" / "fleet.json").read_text())
    assert [(r["job"], r["plan"].split(",")[0]) for r in fleet["running"]] == [
        (RUNNING, f"cluster {flink_rest.url} job {running_job.job_id}")
    ]
    (uplink,) = fleet["links"]
    assert list(uplink["running"]) == [RUNNING] and uplink["running"][RUNNING] > 0.05
    assert uplink["usable_mbit"] == pytest.approx(50 * 0.9 - uplink["running"][RUNNING])
    # planning the running job itself: nothing else runs — a note, and the plan as usual
    code, out, err = cli_run(
        ["plan", "--inventory", inv, "--profile", profile, "--out", tmp_path / "a2", *live, "--json"], capsys
    )
    assert code == 0, err
    summary = json.loads(out)
    assert "running" not in summary and summary["running_notes"] == [
        f"--running-cluster: no other job runs at {flink_rest.url}: nothing to plan around"
    ]


def test_a_running_job_on_a_taskmanager_the_inventory_does_not_know(running_job, flink_rest, tmp_path, capsys):
    inv = inventory(tmp_path / "inv.yaml", flink_rest.url, edge="rpi2")  # TaskManager rpi1 is no host of it
    args = [
        "plan",
        "--inventory",
        inv,
        "--profile",
        planned(tmp_path / "b.json"),
        "--out",
        tmp_path / "b",
        "--running-cluster",
        "--running-window",
        "2",
        "--running-warmup",
        "0",
        "--json",
    ]
    code, out, err = cli_run(args, capsys)
    assert code == 2 and err.count("\n") == 1 and not out
    assert f"running job {RUNNING} has subtasks on TaskManager rpi1 (" in err and "--running-ignore-unknown" in err
    code, out, err = cli_run([*args, "--running-ignore-unknown"], capsys)
    assert code == 0, err
    assert f"running job {RUNNING} has subtasks on TaskManager rpi1" in err and "its load is left out" in err
    assert "running" not in json.loads(out)
