"""The cost model against the wire, link by link, on the real lab (issue 12 §1).

One lab session (inventory/lab-3pi.yaml: a server and three 2 Mbit/s "Pis", vanilla mode, on Flink 2.0 — its newest
release, fetched once into the cache: the lab jobs and the collector on another line than this machine's 2.3, whose
job graphs, metrics and REST answers must give the same figures) runs every lab job and
the shapes job, each placed so that the edges under test cross an uplink, in two rounds (jobs of one round use
different uplinks, so each link's bytes belong to one job):

1. the shapes job (ShapesJob): rpi1 carries a fan-out (one FORWARD, one HASH edge with skewed keys) and a side
   output; rpi2 a broadcast to two subtasks and a pointwise RESCALE from two subtasks to one. Beside it the IoT job
   (rpi3: a FORWARD edge crosses);
2. the branching job (two sources on rpi1 and rpi2, HASH-joined on the server: a two-input consumer) and the Nexmark
   bids job (rpi3: a HASH edge).

Each round: submit with ``--placement``, wait out Flink's 60 s rate averaging, then for the same 24 s
``placement metrics collect`` every job and count each uplink's job data (``lab measure``'s data plane: TCP payload on
the edge TaskManager's data connections). Profile each history (rules shared by both engines; pandas here, the Spark
engine is held to the same figures in tests/profile), build the problem from the running lab inventory and price the
placement that ran (``evaluate``). Every link's measured job data must be within ±10 % of the predicted (the error
column is the issue's convention: predicted / measured − 1).

The same profiles priced the way the planner did before per-edge figures (task-level ``numBytesOut/numRecordsOut``
charged on every edge, no framing) are printed beside them, and must over-predict by more than 30 % where a fan-out,
a side output or a broadcast crosses — so the test tells the two models apart.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from placement.costmodel import build_problem, evaluate
from placement.flink.rest import FlinkRest
from placement.inventory import Inventory
from placement.lab import chain
from placement.lab.jobs import BRANCHING_JOB, IOT_SENSOR_JOB, NEXMARK_BIDS_JOB
from placement.lab.measure import measure_window
from placement.lab.runner import read_state
from placement.netns import netns_available
from placement.profile.format import JobProfile
from placement.profile.pipeline import build_profile
from support import real_parts
from support.lab import assert_nothing_left

NO_NETNS = netns_available()
pytestmark = [
    pytest.mark.flink,
    pytest.mark.netns,
    pytest.mark.timeout(1500),
    real_parts.needs(NO_NETNS),
]

ROOT = Path(__file__).resolve().parents[2]
PLACEMENT = [str(Path(sys.executable).with_name("placement"))]
SHAPES_JOB = "placement.lab.ShapesJob"
TOLERANCE = 0.10
WINDOW_S = 24  # collect and count bytes over the same window
SETTLE_S = chain.METER_SETTLE_S + 5  # Flink's per-second meters average over 60 s
FLINK_LINE = "2.0"  # the first 2.x line (the end-to-end test runs 1.20, every other lab test this machine's 2.3)


@dataclass(frozen=True)
class LabJob:
    name: str
    entry_class: str
    args: tuple[str, ...]
    placement: dict[str, list[str]]  # vertex name -> host of each subtask

    @property
    def births(self) -> dict[str, list[str]]:
        return {v: hosts for v, hosts in self.placement.items() if v.startswith("Source: ")}


IOT = LabJob(
    "iot-sensors",
    IOT_SENSOR_JOB,
    ("--rate", "800", "--parallelism", "1", "--job-name", "iot-sensors"),
    {
        "Source: Sensors": ["rpi3"],
        "Parse": ["rpi3"],
        "Filter": ["rpi3"],
        "Enrich": ["server"],
        "Window Aggregate": ["server"],
        "Sink: Readings": ["server"],
    },
)
NEXMARK = LabJob(
    "nexmark-bids",
    NEXMARK_BIDS_JOB,
    ("--rate", "600", "--parallelism", "1", "--job-name", "nexmark-bids"),
    {
        "Source: Bids": ["rpi3"],
        "Parse Bids": ["rpi3"],
        "Currency Convert": ["rpi3"],
        "Filter Auctions": ["rpi3"],
        "Hot Items": ["server"],
        "Sink: HotItems": ["server"],
    },
)
BRANCHING = LabJob(
    "cameras-meters",
    BRANCHING_JOB,
    ("--camera-rate", "200", "--meter-rate", "500", "--join-parallelism", "2", "--job-name", "cameras-meters"),
    {
        "Source: Cameras": ["rpi1"],
        "Detect Objects": ["rpi1"],
        "Source: Meters": ["rpi2"],
        "Parse Meters": ["rpi2"],
        "Join Frames Meters": ["server", "server"],
        "Sink: Alerts": ["server", "server"],
    },
)
SHAPES = LabJob(
    "shapes",
    SHAPES_JOB,
    ("--rate", "300", "--job-name", "shapes"),
    {
        "Source: Clicks": ["rpi1"],
        "Parse Clicks": ["rpi1"],
        "Sink: Click Archive": ["server"],
        "Click Counts": ["server", "server"],
        "Sink: Counts": ["server", "server"],
        "Source: Orders": ["rpi1"],
        "Split Orders": ["rpi1"],
        "Sink: Summaries": ["server"],
        "Sink: Large Orders": ["server"],
        "Source: Rules": ["rpi2"],
        "Parse Rules": ["rpi2"],
        "Apply Rules": ["server", "server"],
        "Sink: Rule Hits": ["server", "server"],
        "Source: Ticks": ["rpi2", "rpi2"],
        "Parse Ticks": ["rpi2", "rpi2"],
        "Sink: Ticks": ["server"],
    },
)
ROUNDS = ((SHAPES, IOT), (BRANCHING, NEXMARK))
# links whose old prediction must be far off: fan-out + side output (rpi1), broadcast (rpi2)
OLD_MODEL_OFF = {("shapes", "rpi1"), ("shapes", "rpi2")}


def cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*PLACEMENT, *args], check=False, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, f"placement {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-2000:]}"
    return proc


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = tmp_path_factory.mktemp("cost-lab") / "lab"
    try:
        up = cli(
            "lab",
            "up",
            "--inventory",
            str(ROOT / "inventory" / "lab-3pi.yaml"),
            "--workdir",
            str(work),
            "--mode",
            "vanilla",
            "--flink-version",
            FLINK_LINE,
        )
        assert f", Flink {FLINK_LINE}." in up.stdout, up.stdout
        yield work
    finally:
        subprocess.run(
            [*PLACEMENT, "lab", "down", "--workdir", str(work)], check=False, capture_output=True, timeout=300
        )
        assert_nothing_left(work)


def job_inventory(lab_inventory: Path, job: LabJob) -> Inventory:
    """The running lab's inventory with the job's sources born where it placed them."""
    data = yaml.safe_load(lab_inventory.read_text())
    data["pins"] = {"sources": job.births}
    return Inventory.model_validate(data)


def before_per_edge_figures(prof: JobProfile) -> JobProfile:
    """The profile as the planner read it before (v1): bytes per record = numBytesOut / numRecordsOut of the task,
    charged on every outgoing edge (once per receiver on a broadcast), no network framing."""
    data = prof.model_dump(mode="json")
    for v in data["vertices"]:
        rout, bout = v["stats"].get("records_out_per_s"), v["stats"].get("bytes_out_per_s")
        v["bytes_per_record_out"] = bout / rout if rout and bout else 0.0
    for e in data["edges"]:
        e.update(records_per_s=None, bytes_per_s=None, receiver_shares=None, basis=None)
    data["job"]["buffer_timeout_ms"] = None
    return JobProfile.model_validate(data)


def predicted(inv: Inventory, prof: JobProfile, assignment: dict[tuple[str, int], str]) -> dict[str, float]:
    cost = evaluate(build_problem(inv, prof), assignment)
    hosts = set(assignment.values())
    return {link.host: link.data_mbit for link in cost.links if link.host in hosts}


def crossing_edges(inv: Inventory, prof: JobProfile, assignment: dict[tuple[str, int], str]) -> list[str]:
    """What each job edge puts on each uplink (for the report: which edge a link's bytes come from)."""
    pr = build_problem(inv, prof)
    edge_hosts = {h.name for h in pr.edges}
    out = []
    for ch in pr.channels:
        per_host: dict[str, float] = {}
        for i, j, mbit in ch.pairs():
            up, down = assignment[(ch.source, i)], assignment[(ch.target, j)]
            if up in edge_hosts and down != up:
                per_host[up] = per_host.get(up, 0.0) + mbit
        for host, mbit in per_host.items():
            basis = next(e.basis for e in prof.edges if (e.source, e.target) == (ch.source, ch.target))
            out.append(
                f"| {prof.job.name} | {host} | {pr.vertex_names[ch.source]} → {pr.vertex_names[ch.target]} "
                f"| {ch.strategy.value} | {basis} | {mbit:.4f} |"
            )
    return out


def submit_at_once(state: dict, jobs: tuple[LabJob, ...]) -> dict[str, str]:
    """Job name -> id, the round's jobs submitted side by side (each until it runs): the settle counts from the last
    start, so a round waits one submission rather than one per job. One REST client per thread."""

    def submit(job: LabJob) -> str:
        rest = FlinkRest(state["rest_url"])
        return chain.submit(rest, state["jar"], job.entry_class, [*job.args, *chain.mapping_args(job.placement)])

    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {job.name: pool.submit(submit, job) for job in jobs}
    return {name: future.result() for name, future in futures.items()}


def run_round(work: Path, jobs: tuple[LabJob, ...], out: Path) -> list[dict]:
    state = read_state(work)
    assert state and state.get("status") == "up", state
    rest = FlinkRest(state["rest_url"])
    ids = {}
    try:
        ids = submit_at_once(state, jobs)
        for job in jobs:
            assert rest.placement_counts(ids[job.name]) == chain.planned_counts(job.placement)
        time.sleep(SETTLE_S)
        collectors = {
            job.name: subprocess.Popen(
                [
                    *PLACEMENT,
                    "metrics",
                    "collect",
                    "--rest",
                    state["rest_url"],
                    "--job",
                    ids[job.name],
                    "--duration",
                    str(WINDOW_S),
                    "--interval",
                    "2",
                    "--out",
                    str(out / job.name),
                    "--quiet",
                ],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for job in jobs
        }
        links = {lk.host: lk for lk in measure_window(state, WINDOW_S)[0]}
        for name, proc in collectors.items():
            _, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, f"collect {name}: {err[-2000:]}"
    finally:
        with contextlib.suppress(Exception):
            chain.cancel_all(rest)
    rows = []
    for job in jobs:
        prof = build_profile(out / job.name, engine="pandas", warmup_s=60)
        (out / f"{job.name}.profile.json").write_text(json.dumps(prof.model_dump(mode="json"), indent=1))
        names = {v.name: v.id for v in prof.vertices}
        assignment = {(names[v], i): host for v, hosts in job.placement.items() for i, host in enumerate(hosts)}
        inv = job_inventory(Path(state["lab_inventory"]), job)
        new, old = predicted(inv, prof, assignment), predicted(inv, before_per_edge_figures(prof), assignment)
        print("\n".join(crossing_edges(inv, prof, assignment)))
        for host, want in sorted(new.items()):
            got = links[host].data_mbit
            rows.append(
                {
                    "job": job.name,
                    "link": f"{host}→server",
                    "host": host,
                    "predicted": want,
                    "measured": got,
                    "error": want / got - 1,
                    "before": old[host],
                    "before_error": old[host] / got - 1,
                    "wire": links[host].mbit,
                }
            )
    return rows


def test_every_link_of_every_lab_job_within_ten_percent(lab, tmp_path):
    rows = []
    print("\n| job | uplink of | edge | ship strategy | basis | predicted Mbit/s |\n|---|---|---|---|---|---|")
    for n, jobs in enumerate(ROUNDS):
        rows += run_round(lab, jobs, tmp_path / f"round-{n}")
    table = [
        "| job | link | predicted Mbit/s | measured Mbit/s | error | before: predicted | before: error |",
        "|---|---|---|---|---|---|---|",
    ]
    table += [
        f"| {r['job']} | {r['link']} | {r['predicted']:.4f} | {r['measured']:.4f} | {r['error']:+.1%} | "
        f"{r['before']:.4f} | {r['before_error']:+.1%} |"
        for r in rows
    ]
    print("\n" + "\n".join(table))  # the table of the closing note (pytest -s)
    (tmp_path / "cost-model-links.md").write_text("\n".join(table) + "\n")
    assert {(r["job"], r["host"]) for r in rows} == {
        ("shapes", "rpi1"),
        ("shapes", "rpi2"),
        ("iot-sensors", "rpi3"),
        ("cameras-meters", "rpi1"),
        ("cameras-meters", "rpi2"),
        ("nexmark-bids", "rpi3"),
    }
    for r in rows:
        assert abs(r["measured"] - r["predicted"]) <= TOLERANCE * r["predicted"], (r, table)
        assert r["wire"] >= r["measured"]  # the wire carries the data plus headers and RPC
        if (r["job"], r["host"]) in OLD_MODEL_OFF:
            assert r["before_error"] > 0.3, (r, "the old model over-predicts this link")
    # the skewed click users (60 % from one user) show in the measured receiver shares of the keyed edge
    shapes = JobProfile.model_validate_json((tmp_path / "round-0" / "shapes.profile.json").read_text())
    name = {v.id: v.name for v in shapes.vertices}
    counts = next(e for e in shapes.edges if (name[e.source], name[e.target]) == ("Parse Clicks", "Click Counts"))
    assert counts.receiver_shares is not None and max(counts.receiver_shares) > 0.6, counts
