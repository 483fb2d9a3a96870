"""The sequence of a fleet's change (placement.apply.fleet, pure parts) and its bad input, offline: each job's steps
as the one-job planner makes them, interleaved by the order; one lock; the roll back; a file shared by every job
installed once."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import yaml
from apply_support import ALL_SERVER, MOVED, PLACED, run_cli

from placement.apply.fleet import deduplicate_uploads, describe_fleet, fleet_sequence, load_fleet
from placement.apply.fleet_order import FleetOrder, cores, memory, slots, uplink
from placement.apply.model import (
    AcquireLock,
    ApplyPlan,
    RecordState,
    ReleaseLock,
    RestoreFile,
    Step,
    StopWithSavepoint,
    SubmitJob,
    UploadFile,
    UploadJar,
    VerifyPlacement,
    WaitRunning,
)
from placement.apply.request import load_request
from placement.errors import BadInput
from placement.inventory import load_inventory
from placement.profile.format import JobProfile
from support.plan_dirs import write_fleet_dir

LOCK = "/opt/flink/placement/apply.lock"
TABLE = "/opt/flink/placement/scheduler/taskmanagers.cfg"


def job_plan(job: str) -> ApplyPlan:
    """A custom-mode plan as plan_apply makes it: lock, jar, stop, taskmanagers.cfg + the job's schedulercfg, resubmit,
    verify, record, unlock; the roll back restores both files and resubmits the previous placement."""
    cfg = f"/opt/flink/placement/scheduler/{job}.schedulercfg"
    steps = (
        Step(AcquireLock("server", LOCK, "me", 1800), "prepare"),
        Step(UploadJar(f"/jars/{job}.jar"), "prepare"),
        Step(StopWithSavepoint(f"id-{job}", "file:///sp"), "stop"),
        Step(UploadFile("server", TABLE, "server 10.0.0.1 4\n", "the TaskManager table"), "install"),
        Step(UploadFile("server", cfg, f"{job} lines\n", "schedulercfg"), "install"),
        Step(SubmitJob(None, "Main", ("--job-name", job), False, "the planned placement"), "redeploy"),
        Step(WaitRunning(), "redeploy"),
        Step(VerifyPlacement(()), "verify"),
        Step(RecordState("server", "/opt/flink/placement/state.json", {}), "finish"),
        Step(ReleaseLock("server", LOCK), "finish"),
    )
    rollback = (
        Step(RestoreFile("server", cfg, "undo"), "install"),
        Step(RestoreFile("server", TABLE, "undo"), "install"),
        Step(SubmitJob(None, "Main", ("--job-name", job), False, "roll back"), "redeploy"),
        Step(WaitRunning(), "redeploy"),
    )
    return ApplyPlan(job_id=f"id-{job}", mode="custom", steps=steps, rollback=rollback, notes=())


def kinds(sequence) -> list[str]:
    return [f"{fs.job}:{fs.step.action.kind}" for fs in sequence]


def test_sequential_moves_one_job_after_the_other_under_one_lock():
    plans = {"a": job_plan("a"), "b": job_plan("b")}
    seq = fleet_sequence(FleetOrder("sequential", ("b", "a"), "safe"), plans)
    assert kinds(seq) == [
        "b:lock",
        "b:upload-jar",
        "a:upload-jar",  # one lock; every jar uploaded before any stop
        "b:stop",
        "b:upload",
        "b:upload",
        "b:submit",
        "b:wait",
        "b:verify",
        "b:record",
        "a:stop",
        "a:upload",
        "a:upload",
        "a:submit",
        "a:wait",
        "a:verify",
        "a:record",
        "b:unlock",
    ]


def test_stop_all_stops_every_job_before_any_redeploy():
    plans = {"a": job_plan("a"), "b": job_plan("b")}
    seq = fleet_sequence(FleetOrder("stop-all", ("a", "b"), "unsafe"), plans)
    assert kinds(seq) == [
        "a:lock",
        "a:upload-jar",
        "b:upload-jar",
        "a:stop",
        "b:stop",
        "a:upload",
        "a:upload",
        "a:submit",
        "a:wait",
        "a:verify",
        "a:record",
        "b:upload",
        "b:upload",
        "b:submit",
        "b:wait",
        "b:verify",
        "b:record",
        "a:unlock",
    ]
    # the runner addresses each step by its index in the job's own plan
    assert all(plans[fs.job].steps[fs.index] is fs.step for fs in seq)


def test_a_file_every_job_installs_alike_is_installed_and_restored_by_the_first_only():
    plans = deduplicate_uploads({"a": job_plan("a"), "b": job_plan("b")}, ["a", "b"])
    uploads = {j: [s.action.path for s in p.steps if isinstance(s.action, UploadFile)] for j, p in plans.items()}
    assert uploads == {
        "a": [TABLE, "/opt/flink/placement/scheduler/a.schedulercfg"],
        "b": ["/opt/flink/placement/scheduler/b.schedulercfg"],
    }
    restored = {j: [s.action.path for s in p.rollback if isinstance(s.action, RestoreFile)] for j, p in plans.items()}
    assert restored == {
        "a": ["/opt/flink/placement/scheduler/a.schedulercfg", TABLE],
        "b": ["/opt/flink/placement/scheduler/b.schedulercfg"],
    }


def test_the_dry_run_text_shows_the_whole_sequence_and_every_roll_back():
    plans = {"a": job_plan("a"), "b": job_plan("b")}
    lines = describe_fleet(
        FleetOrder("stop-all", ("a", "b"), "every order overloads rpi1→server"),
        plans,
        {"a": "its profile (test mapping) is not found"},
    )
    text = "\n".join(lines)
    assert lines[0] == "order: stop-all: every order overloads rpi1→server"
    assert "note: job a: running load unknown: its profile (test mapping) is not found" in text
    assert "   4. a [stop] REST POST /jobs/id-a/stop" in text and "   5. b [stop] REST POST /jobs/id-b/stop" in text
    assert text.index("b [stop]") < text.index("a [redeploy] REST POST /jars/<jar>/run")
    assert text.count("sh -c 'set -C") == 1 and text.count("rm -f /opt/flink/placement/apply.lock") == 1
    # the roll back: the last changed first
    assert text.index("b r3. [redeploy]") < text.index("a r1. [install]")


# ---- bad input: one line naming file and field, exit 2, nothing read from a cluster ---------------------------


def inventory(tmp_path: Path, jobs: list[dict] | None = None) -> Path:
    doc = {
        "version": 1,
        "name": "fleet",
        "hosts": [
            {"name": "server", "address": "10.9.0.1", "role": "server", "cores": 4, "memory": "4GiB", "task_slots": 4},
            {"name": "rpi1", "address": "10.9.0.2", "role": "edge", "model": "rpi4b"},
        ],
        "links": [{"from": "rpi1", "to": "server", "bandwidth": "50mbit"}],
        "flink": {"rest_url": "http://127.0.0.1:9", "placement_mode": "vanilla"},
        "job": {"name": "a", "entry_class": "Main", "program_args": ["--job-name", "a"]},
        **({"jobs": jobs} if jobs is not None else {}),
    }
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_each_job_is_resubmitted_with_its_own_inventory_entry(tmp_path):
    inv = inventory(tmp_path, jobs=[{"name": "b", "program_args": ["--job-name", "b"]}])
    fleet = write_fleet_dir(tmp_path / "out", inv, {"a": PLACED, "b": MOVED})
    freq = load_fleet(fleet, inv)
    by_job = {
        r.plan.job: (r.selector.job_name, r.inventory.job.program_args, r.inventory.job.entry_class)
        for r in freq.requests
    }
    assert by_job == {"a": ("a", ["--job-name", "a"], "Main"), "b": ("b", ["--job-name", "b"], "Main")}
    assert freq.limits == {uplink("rpi1→server"): pytest.approx(45.0)}  # the hand-made fleet.json lists no host


def test_one_job_of_a_fleet_applied_alone_is_resubmitted_with_its_own_entry(tmp_path):
    """`apply OUT/b` (one job of the fleet) resubmits b's program, not the one `job:` describes (the lab's fleet
    benchmark resubmitted b's savepoint into a's program: Flink refused its state)."""
    inv = inventory(
        tmp_path, jobs=[{"name": "b", "entry_class": "B", "program_args": ["--job-name", "b", "--rate", "7"]}]
    )
    fleet = write_fleet_dir(tmp_path / "out", inv, {"a": PLACED, "b": MOVED})
    alone = {job: load_request(fleet / job, inv) for job in ("a", "b")}
    assert (
        alone["b"].inventory.job.name,
        alone["b"].inventory.job.entry_class,
        alone["b"].inventory.job.program_args,
    ) == ("b", "B", ["--job-name", "b", "--rate", "7"])
    assert alone["a"].inventory.job == load_inventory(inv).job  # job: names a: unchanged


def test_a_job_the_inventory_does_not_name_is_bad_input(tmp_path):
    inv = inventory(tmp_path)
    fleet = write_fleet_dir(tmp_path / "out", inv, {"a": PLACED, "c": ALL_SERVER})
    with pytest.raises(BadInput, match=r"inventory.yaml: jobs: no entry named 'c'"):
        load_fleet(fleet, inv)
    result = run_cli("apply", "--plan", str(fleet), "--inventory", str(inv), "--dry-run")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "jobs: no entry named 'c'" in result.stderr
    result = run_cli("apply", "--plan", str(fleet), "--inventory", str(inv), "--job-name", "a")
    assert result.returncode == 2 and "--job-name: --job-name names one job" in result.stderr


def test_a_fleet_json_without_a_jobs_plan_directory_is_bad_input(tmp_path):
    inv = inventory(tmp_path, jobs=[{"name": "b", "program_args": []}])
    fleet = write_fleet_dir(tmp_path / "out", inv, {"a": PLACED, "b": MOVED})
    (fleet / "b" / "plan.json").unlink()
    with pytest.raises(BadInput, match=r"fleet.json: jobs\[1\].dir: 'b': no plan.json there"):
        load_fleet(fleet, inv)
    fleet = write_fleet_dir(tmp_path / "out2", inv, {"a": PLACED, "b": MOVED})
    fleet_json = fleet / "fleet.json"
    doc = json.loads(fleet_json.read_text())
    doc["jobs"].append(doc["jobs"][0])
    fleet_json.write_text(json.dumps(doc))
    with pytest.raises(BadInput, match=r"fleet.json: jobs\[2\].job: job 'a' is listed twice"):
        load_fleet(fleet, inv)
    dup = inventory(tmp_path, jobs=[{"name": "b"}, {"name": "b"}])
    result = run_cli("apply", "--plan", str(fleet), "--inventory", str(dup), "--dry-run")
    assert result.returncode == 2 and "jobs[1].name" in result.stderr and "duplicate job name 'b'" in result.stderr


# ---- the running load: what the order compares the plans against ---------------------------------------------


def profiled(name: str, parallelism: int, *, rin: float, rout: float) -> dict:
    """A profiled vertex (ids as the hand-made plans make them up): every subtask alike, 500-byte records."""
    return {
        "id": name.lower().replace(" ", "-").replace(":", ""),
        "name": name,
        "parallelism": parallelism,
        "stateful": False,
        "state_bytes": 0.0,
        "bytes_per_record_out": 500,
        "subtasks": [
            {"index": i, "records_in_per_s": rin, "records_out_per_s": rout, "busy_ms_per_s": 50}
            for i in range(parallelism)
        ],
    }


def test_the_running_load_is_the_running_placement_under_the_profiles_cost_model(tmp_path):
    from placement.apply.fleet import running_loads
    from placement.apply.model import ClusterView
    from placement.apply.request import load_request
    from placement.flink.rest import VertexInfo

    inv = inventory(tmp_path)
    mapping = {"Source: S": ["rpi1", "rpi1"], "Sink: T": ["server"]}
    req = load_request(write_fleet_dir(tmp_path / "out", inv, {"a": mapping}) / "a", inv)
    job = JobProfile.model_validate(
        {
            "job": {"name": "a", "origin": "synthetic"},
            "vertices": [profiled("Source: S", 2, rin=0, rout=1000), profiled("Sink: T", 1, rin=2000, rout=0)],
            "edges": [{"source": "source-s", "target": "sink-t", "ship_strategy": "REBALANCE"}],
        }
    )

    def view(hosts: dict[str, tuple[str, ...]]) -> ClusterView:
        running = (VertexInfo("source-s", "Source: S", 2, "RUNNING"), VertexInfo("sink-t", "Sink: T", 1, "RUNNING"))
        return ClusterView(
            job_id="j",
            job_name="a",
            job_state="RUNNING",
            vertices={},
            actual={},
            taskmanagers={},
            other_jobs=(),
            jar_ids=(),
            state_record=None,
            schedulercfg=None,
            jobmanager_config=None,
            running_vertices=running,
            subtask_hosts=hosts,
        )

    # the sources on the Pi, the sink on the server: both sources' 2 x 1000 records/s of 500 bytes cross the uplink
    loads, why = running_loads(req, view({"source-s": ("rpi1", "rpi1"), "sink-t": ("server",)}), {"a": job})
    assert why is None and loads[uplink("rpi1→server")] == pytest.approx(8.0, rel=0.1)
    # and per host: its subtasks' cores, and the slots it fills (slot sharing: the most subtasks of one vertex there)
    assert (loads[slots("rpi1")], loads[slots("server")]) == (2.0, 1.0)
    assert loads[cores("rpi1")] > 0 and loads[cores("server")] > 0
    # and the memory its subtasks need there, as the planner counts it (no state: the policy's 256 MiB a subtask)
    assert (loads[memory("rpi1")], loads[memory("server")]) == (512.0, 256.0)
    # everything on the server: nothing on the uplink
    loads, _ = running_loads(req, view({"source-s": ("server", "server"), "sink-t": ("server",)}), {"a": job})
    assert loads[uplink("rpi1→server")] == 0.0
    # a TaskManager that is no inventory host: unknown, with the reason
    loads, why = running_loads(req, view({"source-s": ("tm-7", "server"), "sink-t": ("server",)}), {"a": job})
    assert loads is None and "cannot be evaluated" in why


def test_the_limits_and_each_jobs_planned_load_cover_every_link_and_host(tmp_path):
    """fleet.json's hosts give the order the CPU, slots and memory to check, beside the links: usable cores (the
    TaskManager baseline already off, once), slots and usable memory, and each job's share of them."""
    from placement.writers.fleetjson import HostShare

    inv = inventory(tmp_path, jobs=[{"name": "b", "program_args": []}])
    fleet = write_fleet_dir(tmp_path / "out", inv, {"a": PLACED, "b": MOVED})
    freq = load_fleet(fleet, inv)
    rpi1 = HostShare(
        host="rpi1",
        role="edge",
        cores=4,
        cores_used=1.5,
        cores_usable=2.6,
        slots_used=3,
        slots=4,
        memory_mib_used=768,
        memory_mib_usable=3276.8,
        jobs={
            "a": {"cores": 1.0, "slots": 2, "memory_mib": 512, "subtasks": 2},
            "b": {"cores": 0.5, "slots": 1, "memory_mib": 256, "subtasks": 1},
        },
    )
    with_hosts = dataclasses.replace(freq, fleet=freq.fleet.model_copy(update={"hosts": [rpi1]}))
    limits = with_hosts.limits
    assert (limits[cores("rpi1")], limits[slots("rpi1")], limits[memory("rpi1")]) == (2.6, 4.0, 3276.8)
    assert {k: v for k, v in with_hosts.new_loads("b").items() if k.kind != "uplink"} == {
        cores("rpi1"): 0.5,
        slots("rpi1"): 1.0,
        memory("rpi1"): 256.0,
    }
    # a fleet.json from before its hosts' usable memory was recorded: memory is not judged (nothing to judge it by)
    older = rpi1.model_copy(update={"memory_mib_usable": None})
    assert (
        memory("rpi1") not in dataclasses.replace(freq, fleet=freq.fleet.model_copy(update={"hosts": [older]})).limits
    )


def test_a_job_whose_plan_is_in_effect_counts_in_every_state_of_the_order(tmp_path, monkeypatch):
    """prepare_fleet hands the order what an unmoved (noop) job uses: it runs beside every mixed state."""
    import types

    import placement.apply.fleet as fleet_mod
    import placement.apply.fleet_order as fleet_order

    inv = inventory(tmp_path, jobs=[{"name": "b", "program_args": []}])
    fleet = write_fleet_dir(
        tmp_path / "out", inv, {"a": PLACED, "b": MOVED}, link_mbit={"rpi1→server": {"a": 3.0, "b": 4.0}}
    )

    def fake_prepare(req, **_):
        noop = req.plan.job == "a"
        return types.SimpleNamespace(
            plan=types.SimpleNamespace(noop=noop, restarts=()),
            unchecked=(),
            request=req,
            view=types.SimpleNamespace(job_id=f"id-{req.plan.job}"),
            close=lambda: None,
        )

    handed = []

    def choose_order(jobs, limits, steady=None):
        handed.append(steady)
        return fleet_order.choose_order(jobs, limits, steady)

    monkeypatch.setattr(fleet_mod, "prepare", fake_prepare)
    monkeypatch.setattr(fleet_mod, "choose_order", choose_order)
    fp = fleet_mod.prepare_fleet(load_fleet(fleet, inv))
    assert fp.order.jobs == ("b", "a") and fp.changing == ["b"]
    assert handed[0][uplink("rpi1→server")] == pytest.approx(3.0)  # a's plan, in effect, beside every state of b's


def test_jobs_whose_names_differ_keep_their_own_state_files(tmp_path):
    """`a b` and `a_b` are two jobs: one record must not overwrite the other's (the names are encoded as the
    schedulercfg files are, not folded onto `_`)."""
    paths = load_request(
        write_fleet_dir(tmp_path / "out", inventory(tmp_path), {"a": PLACED}) / "a", inventory(tmp_path)
    ).paths
    files = {name: paths.state_for(name) for name in ("a b", "a_b", "a/b", "iot-sensors")}
    assert len(set(files.values())) == 4, files
    assert files["iot-sensors"].endswith("/state.iot-sensors.json")
