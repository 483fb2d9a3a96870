"""The watch's lab scenario, shared by ``tests/watch/test_watch_lab.py`` and ``benchmarks/watch_recovery.py``.

The lab is ``inventory/lab.yaml`` with 400 kbit/s uplinks (:func:`lab_inventory`): at :data:`HIGH` readings/s per
source the raw readings (~200-byte JSON, 0.48 Mbit/s) overfill an uplink, while the Pi (0.3 of a server core) that
the better plan gives the parse and the filter keeps up with room to spare. The rates are this low because a lab
source's every record costs its Pi CPU outside its busy time (the rate limiter's hand-off to a timer thread per
record, netty's send): at 250 readings/s per source the Pi's TaskManager measured 0.5–0.7 of its core on an idle
machine, at quota on a loaded one, so at 750/s (1 Mbit/s uplinks) the sources alone filled the Pi and the watch
rightly found no placement with room — the Pi, not the loop under test, decided the outcome. At 2 Mbit/s and twice
those rates the sources stayed at two thirds of the step's rate after the move.

The IoT job runs all-on-server (its sources on the Pis where the data is born, everything else on the server: raw
readings cross the uplinks) and changes its rate on its own schedule (``--rate-schedule``, the clock
started when the inventory is written, so ``placement apply`` resubmits it on the same clock). The scenario puts it
there through the real stages: the job submitted, a short collection, a profile (pandas), the all-on-server plan
written as ``placement plan`` writes plans, and ``placement apply``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from placement.collect.collector import CollectOptions, Collector
from placement.costmodel.model import PlanOptions, build_problem
from placement.flink.rest import FlinkRest
from placement.inventory import load_inventory
from placement.lab import chain
from placement.lab.jobs import IOT_SENSOR_JOB
from placement.lab.plans import write_lab_plan
from placement.profile.pipeline import build_profile, write_profile
from placement.solver.baselines import all_on_server

JOB_NAME = "iot-sensors"
SOURCE = "Source: Sensors"
UPLINK = "400kbit"
LOW, HIGH = 100, 300  # readings/s per source subtask: 0.16 and 0.48 Mbit/s of raw readings per 0.4 Mbit/s uplink
BASE_ARGS = ("--parallelism", "2", "--job-name", JOB_NAME)


@dataclass(frozen=True)
class Placed:
    inventory: Path  # the lab inventory with the job's program_args (what apply resubmits)
    clock_ms: int  # the rate schedule's second 0
    profile: Path


def schedule(steps: Sequence[tuple[float, float]]) -> str:
    """``[(0, 500), (170, 1500)]`` -> ``"0:500,170:1500"``."""
    return ",".join(f"{s:g}:{r:g}" for s, r in steps)


def lab_inventory(base: str | Path, out: Path, uplink: str = UPLINK) -> Path:
    """``base`` (a lab inventory such as inventory/lab.yaml) with every link at ``uplink``, written to ``out``."""
    doc = yaml.safe_load(Path(base).read_text())
    doc["links"] = [{**link, "bandwidth": uplink} for link in doc["links"]]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def write_inventory(lab_inventory: str | Path, out: Path, steps: Sequence[tuple[float, float]], clock_ms: int) -> Path:
    doc = yaml.safe_load(Path(lab_inventory).read_text())
    doc["job"] = {
        **doc["job"],
        "name": JOB_NAME,
        "entry_class": IOT_SENSOR_JOB,
        "program_args": [*BASE_ARGS, "--rate-schedule", schedule(steps), "--rate-schedule-start-ms", str(clock_ms)],
    }
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    return out


def all_on_server_plan(inventory: Path, profile_path: Path, out: Path) -> Path:
    from placement.profile.format import load_profile

    inv, profile = load_inventory(inventory), load_profile(profile_path)
    problem = build_problem(inv, profile, PlanOptions(placement_mode="custom"), inventory_source=str(inventory))
    return write_lab_plan(
        out,
        problem,
        all_on_server(problem),
        job=JOB_NAME,
        inventory=inv,
        inventory_path=inventory,
        profile=profile,
        profile_path=profile_path,
    )


def place_all_on_server(
    state: dict,
    work: Path,
    steps: Sequence[tuple[float, float]],
    *,
    profile: Path | None = None,
    clock_ms: int | None = None,
) -> Placed:
    """Cancel what runs, submit the job at the schedule's first rate, profile it (unless ``profile`` is given: the
    job graph does not change), write the inventory with the schedule (its clock starts now, or at ``clock_ms``: a
    schedule already under way, placed back mid-way) and apply the all-on-server plan with ``placement apply``'s own
    functions. Raises on any failure."""
    from placement.apply import execute, prepare
    from placement.apply.request import load_request

    rest = FlinkRest(state["rest_url"])
    chain.cancel_all(rest)
    chain.submit(rest, state["jar"], IOT_SENSOR_JOB, [*BASE_ARGS, "--rate", f"{steps[0][1]:g}"])
    work.mkdir(parents=True, exist_ok=True)
    if profile is None:
        metrics = work / "metrics"
        Collector(
            CollectOptions(rest_url=state["rest_url"], out_dir=metrics, job_name=JOB_NAME, duration_s=12, interval_s=2)
        ).run()
        profile = write_profile(build_profile(metrics, engine="pandas", warmup_s=0), work / "profile.json")
    clock_ms = int(time.time() * 1000) if clock_ms is None else clock_ms
    inventory = write_inventory(state["lab_inventory"], work / "lab-inventory.yaml", steps, clock_ms)
    plan_dir = all_on_server_plan(inventory, profile, work / f"all-on-server-{clock_ms}")
    prepared = prepare(load_request(plan_dir, inventory, job_name=JOB_NAME, settle_s=5))
    try:
        execute(prepared, audit_path=plan_dir / "apply-audit.jsonl", echo=lambda s: None)
    finally:
        prepared.close()
    return Placed(inventory, clock_ms, profile)


def source_rate(rest: FlinkRest, seconds: float = 10.0, vertex: str = SOURCE) -> float:
    """Records/s the running job's source sends now, from its counter (not the 60 s meter), each end dated when a
    metric fetch landed (:meth:`FlinkRest.fetched_counters`)."""
    job = next(j.id for j in rest.running_jobs() if j.name == JOB_NAME)
    vid = rest.job(job).vertex_named(vertex).id
    wait = rest.metric_fetch_interval_s() + 2.0
    a_at, a = rest.fetched_counters(job, [vid], "numRecordsOut", wait_s=wait)
    time.sleep(seconds)
    b_at, b = rest.fetched_counters(job, [vid], "numRecordsOut", wait_s=wait)
    return ((b[vid] or 0.0) - (a[vid] or 0.0)) / (b_at - a_at)
