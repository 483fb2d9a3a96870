"""Issue 23: measured TaskManager CPU -> per-TaskManager baselines and per-vertex calibration (placement.profile.tm_cpu),
and the cost model's CPU rows with the baseline (placement.costmodel). A recorded history, written through the
collector's own layout functions, with known process CPU and busy time; the figures below follow by hand from the
module's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.collect.layout import (
    TASKMANAGER_METRICS,
    EdgeInfo,
    PartWriter,
    RunManifest,
    SubtaskLocation,
    TaskManagerInfo,
    VertexInfo,
    rows_to_table,
    taskmanager_rows_to_table,
    taskmanager_writer,
    write_manifest,
)
from placement.costmodel import build_problem, evaluate
from placement.inventory import Inventory
from placement.profile.format import load_profile
from placement.profile.pipeline import build_profile, write_profile

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000
SECONDS = 120
# process CPU per TaskManager, in cores of its host: the server's 0.85 against 0.7 of busy time (its subtasks work
# outside their busy time too); rpi1's rate-limited source reads 500 ms/s busy but its whole JVM uses 0.30 of a Pi
# core; rpi2 runs nothing of the job (its 0.05 Pi cores = 0.015 server cores: a TaskManager's own CPU)
PROCESS = {"srv": 0.85, "rpi1": 0.30, "rpi2": 0.05}
BUSY = {("src", 0): 500.0, ("map", 0): 300.0, ("map", 1): 300.0, ("sink", 0): 100.0}
WHERE = {("src", 0): "rpi1", ("map", 0): "srv", ("map", 1): "srv", ("sink", 0): "srv"}
RATES = {"src": (0.0, 1000.0), "map": (500.0, 500.0), "sink": (1000.0, 0.0)}


def inventory(rpi3: dict | None = None) -> Inventory:
    hosts = [{"name": "srv", "address": "10.0.0.1", "role": "server", "cores": 2, "memory": "4GiB"},
             {"name": "rpi1", "address": "10.0.1.2", "role": "edge", "model": "rpi4b", "cores": 1},
             {"name": "rpi2", "address": "10.0.2.2", "role": "edge", "model": "rpi4b", "cores": 1},
             {"name": "rpi3", "address": "10.0.3.2", "role": "edge", "model": "rpi4b", "cores": 1, **(rpi3 or {})}]
    return Inventory.model_validate({
        "hosts": hosts, "links": [{"from": f"rpi{i}", "to": "srv", "bandwidth": "20mbit"} for i in (1, 2, 3)],
        "pins": {"sources": {"Source: Gen": "rpi1"}}, "flink": {"rest_url": "http://10.0.0.1:8081"},
    })


def write_history(root: Path, *, with_cpu: bool = True) -> None:
    vertices = [VertexInfo(id="src", name="Source: Gen", parallelism=1), VertexInfo(id="map", name="Map", parallelism=2),
                VertexInfo(id="sink", name="Sink: Out", parallelism=1)]
    m = RunManifest(
        job_id="j1", job_name="cpu-job", run_id="r1", started_ms=T0, ended_ms=T0 + SECONDS * 1000, interval_s=1.0,
        stopped="completed", vertices=vertices,
        edges=[EdgeInfo(source="src", target="map", ship_strategy="REBALANCE"),
               EdgeInfo(source="map", target="sink", ship_strategy="HASH")],
        locations=[SubtaskLocation(vertex_id=v, subtask=i, taskmanager_id=tm, host=f"host-{tm}")
                   for (v, i), tm in WHERE.items()],
        taskmanagers=[TaskManagerInfo(id=tm, host=f"host-{tm}", hardware_cpu_cores=2 if tm == "srv" else 1)
                      for tm in PROCESS],
    )
    writer = PartWriter(root, "j1", "r1")
    rows = []
    for k in range(SECONDS):
        for (v, i), busy in BUSY.items():
            rin, rout = RATES[v]
            rows.append({"ts_ms": T0 + k * 1000, "vertex_id": v, "subtask": i, "attempt": 0, "attempt_start_ms": T0,
                         "running": True, "busy_ms_per_s": busy, "idle_ms_per_s": 1000 - busy,
                         "backpressured_ms_per_s": 0.0, "records_in_per_s": rin / (2 if v == "map" else 1),
                         "records_out_per_s": rout / (2 if v == "map" else 1), "bytes_in_per_s": rin * 50,
                         "bytes_out_per_s": rout * 50})
    writer.write(rows_to_table(rows))
    m.files, m.samples = list(writer.files), writer.rows
    if with_cpu:
        tm_rows = [{"ts_ms": T0 + k * 1000, "taskmanager_id": tm, "cpu_time_ns": 5e9 + k * cores * 1e9,
                    "cpu_load": cores / (2 if tm == "srv" else 1) if k % 10 else -1.0}  # -1: Flink's "unknown"
                   for k in range(SECONDS) for tm, cores in PROCESS.items()]
        tm_writer = taskmanager_writer(root, "j1", "r1")
        tm_writer.write(taskmanager_rows_to_table(tm_rows))
        m.taskmanager_files = tm_writer.files
        m.taskmanager_metrics = list(TASKMANAGER_METRICS)
    write_manifest(root, m)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    root = tmp_path_factory.mktemp("tmcpu")
    write_history(root / "metrics")
    inv = root / "inventory.json"
    inv.write_text(json.dumps(inventory().model_dump(mode="json", by_alias=True)))
    profile = build_profile(root / "metrics", engine="pandas", warmup_s=0, inventory=inv)
    out = write_profile(profile, root / "profile.json")
    return load_profile(out)  # through the file: what `plan` reads


def test_profile_reports_each_taskmanagers_baseline_and_calibrates_the_source(calibrated):
    tms = {t.id: t for t in calibrated.taskmanagers}
    assert set(tms) == {"srv", "rpi1", "rpi2"}
    srv, rpi1, rpi2 = tms["srv"], tms["rpi1"], tms["rpi2"]
    # the server: busy time charges 0.3 + 0.3 + 0.1 cores; the JVM uses 0.85. Its own CPU is the idle Pi's 0.015
    # server cores: the subtasks used the other 0.835 (what they spend outside busy time moves with them)
    assert srv.process_cores == pytest.approx(0.85) and srv.charged_cores == pytest.approx(0.7)
    assert srv.baseline_cores == pytest.approx(0.015) and srv.basis == "prior" and srv.confident
    assert srv.calibrated_cores == pytest.approx(0.835)
    assert srv.load_cores == pytest.approx(0.85)  # CPU.Load x 2 cores, the -1 readings left out
    # rpi2 runs nothing of the job: its process CPU is its baseline, measured directly
    assert rpi2.basis == "idle" and rpi2.subtasks == 0 and rpi2.baseline_cores == pytest.approx(0.05)
    assert rpi2.baseline_server_cores == pytest.approx(0.015) and rpi2.host_speed == pytest.approx(0.3)
    # rpi1: busy time charges the source 0.5 of a Pi core, the whole JVM uses 0.30 -> busy overstates; the baseline
    # comes from the idle Pi (0.015 server cores = 0.05 Pi cores), the source used 0.25: k = 0.5
    assert rpi1.process_cores == pytest.approx(0.30) and rpi1.charged_cores == pytest.approx(0.5)
    assert rpi1.basis == "prior" and rpi1.baseline_cores == pytest.approx(0.05)
    assert rpi1.calibrated_cores == pytest.approx(0.25)
    src = calibrated.vertex("src")
    assert src.cpu_calibration == pytest.approx(0.5) and src.stats["cpu_calibration_basis"] == "alone on rpi1"
    for name in ("map", "sink"):  # busy time understated on the server: shared alike, k = 0.835 / 0.7
        v = calibrated.vertex(name)
        assert v.cpu_calibration == pytest.approx(0.835 / 0.7, rel=1e-5) and v.stats["cpu_calibration_basis"] == "shared on srv"
    assert "TaskManager CPU: rpi1 0.300 cores, baseline 0.050 (prior)" in (calibrated.job.note or "")


def test_a_lab_hosts_cpu_time_counts_this_machines_cores_and_is_read_in_the_hosts_own(tmp_path):
    """A lab Pi is a CPU quota on this machine: its JVM's CPU time is in this machine's cores (the lab inventory says so
    with cpu_time_core_speed: 1.0). Read as Pi cores it looked 1/0.3 too small, so busy time seemed to overstate and
    the source was calibrated away (before: rpi1 read 0.30 Pi cores against 0.5 charged, k = 0.5)."""
    write_history(tmp_path / "metrics")
    lab = inventory().model_dump(mode="json", by_alias=True)
    for h in lab["hosts"]:
        if h["role"] == "edge":
            h["cpu_time_core_speed"] = 1.0
    inv = tmp_path / "lab-inventory.json"
    inv.write_text(json.dumps(lab))
    profile = build_profile(tmp_path / "metrics", engine="pandas", warmup_s=0, inventory=inv)
    tms = {t.id: t for t in profile.taskmanagers}
    rpi1, rpi2, srv = tms["rpi1"], tms["rpi2"], tms["srv"]
    assert rpi1.process_cores == pytest.approx(0.30 / 0.3) and rpi1.charged_cores == pytest.approx(0.5)
    assert rpi2.basis == "idle" and rpi2.baseline_cores == pytest.approx(0.05 / 0.3)
    # busy time no longer overstates: it understates (the source's thread works outside its busy time), so the factor
    # is above 1 and the baseline is the idle Pi's
    assert rpi1.basis == "prior" and rpi1.baseline_cores == pytest.approx(0.05 / 0.3)
    assert srv.process_cores == pytest.approx(0.85)  # the server's own cores: unchanged
    assert profile.vertex("src").cpu_calibration == pytest.approx((1.0 - 0.05 / 0.3) / 0.5, rel=1e-5)
    assert Inventory.model_validate(lab).digest() != inventory().digest()  # and the plain inventory hashes as before


def test_cost_model_predicts_baseline_plus_calibrated_subtasks_per_host(calibrated, tmp_path):
    inv = inventory({"taskmanager_baseline_cores": 0.08})
    problem = build_problem(inv, calibrated)
    h = problem.host_by_name
    assert (h["srv"].baseline_cores, h["srv"].baseline_basis) == (pytest.approx(0.015), "measured srv")
    assert h["rpi1"].baseline_cores == pytest.approx(0.05) and h["rpi2"].baseline_cores == pytest.approx(0.05)
    assert (h["rpi3"].baseline_cores, h["rpi3"].baseline_basis) == (pytest.approx(0.08), "inventory")
    # nothing measured, nothing in the inventory: the profile's median baseline (0.015 server cores) / speed
    bare = build_problem(inventory(), calibrated).host_by_name["rpi3"]
    assert (bare.baseline_cores, bare.baseline_basis) == (pytest.approx(0.05), "profile median")
    # the CPU rows' capacity: cores x rho less the baseline
    rho = inv.policy.cpu_utilisation_target
    assert problem.usable_cores(h["srv"]) == pytest.approx(2 * rho - 0.015)
    assert problem.usable_cores(h["rpi1"]) == pytest.approx(rho - 0.05)
    src = problem.subtask_by_key[("src", 0)]
    assert src.server_cores == pytest.approx(0.075) and src.cores_on(h["rpi1"]) == pytest.approx(0.25)
    # the prediction for the placement measured: every TaskManager's measured process CPU
    cost = evaluate(problem, WHERE | {("map", 1): "srv"})
    for name, measured in (("rpi1", 0.30), ("srv", 0.85), ("rpi2", 0.05)):
        assert cost.host(name).predicted_cores == pytest.approx(measured)
    # the WAN figures do not move: CPU calibration and baselines change no link's Mbit/s
    bare = evaluate(build_problem(inv, calibrated.model_copy(update={"taskmanagers": [], "vertices": [
        v.model_copy(update={"cpu_calibration": None}) for v in calibrated.vertices]})), WHERE)
    assert [(x.name, x.mbit) for x in bare.links] == [(x.name, x.mbit) for x in cost.links]
    assert bare.wan_mbit == cost.wan_mbit > 0


def test_the_baseline_takes_cpu_rows_capacity_and_plan_json_keeps_the_parts(calibrated, tmp_path, capsys):
    from placement.cli import main

    rho = 0.8
    # rpi1 has 1 core at rho 0.8: 0.75 usable beside its 0.05 baseline; a map subtask needs 0.3 / 0.3 = 1 Pi core on
    # it anyway, so it stays on the server; with a baseline of 0.6 the source's 0.25 alone no longer fits there
    inv_path = tmp_path / "inv.json"
    data = inventory().model_dump(mode="json", by_alias=True)
    data["policy"]["cpu_utilisation_target"] = rho
    inv_path.write_text(json.dumps(data))
    prof_path = tmp_path / "profile.json"
    write_profile(calibrated, prof_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "--inventory", str(inv_path), "--profile", str(prof_path), "--out", str(tmp_path / "plan")])
    out, err = capsys.readouterr()
    assert exit_info.value.code == 0, err
    assert "TM baseline" in out and "predicted" in out  # the hosts table shows the parts
    plan = json.loads((tmp_path / "plan" / "plan.json").read_text())
    hosts = {h["host"]: h for h in plan["hosts"]}
    assert hosts["rpi1"]["baseline_cores"] == pytest.approx(0.05) and hosts["rpi1"]["subtask_cores"] == pytest.approx(0.25)
    assert hosts["rpi1"]["predicted_cores"] == pytest.approx(0.30) and hosts["rpi1"]["cores_used"] == pytest.approx(0.25)
    assert hosts["rpi1"]["baseline_basis"] == "measured rpi1"
    assert hosts["rpi2"]["predicted_cores"] == pytest.approx(0.05) and hosts["rpi2"]["subtasks"] == 0
    srv = hosts["srv"]
    assert srv["predicted_cores"] == pytest.approx(srv["baseline_cores"] + srv["subtask_cores"])
    # an old plan.json (no prediction parts) still loads
    from placement.writers.planjson import load_plan

    for h in plan["hosts"]:
        for k in ("predicted_cores", "baseline_cores", "subtask_cores", "baseline_basis"):
            h.pop(k)
    (tmp_path / "old.json").write_text(json.dumps(plan))
    assert load_plan(tmp_path / "old.json").hosts[0].predicted_cores is None

    # a baseline that leaves no room for the source on its birth host: the CPU row makes the plan infeasible
    data["hosts"][1]["taskmanager_baseline_cores"] = 0.6  # inventory figure; the measured one wins ...
    problem = build_problem(Inventory.model_validate(data), calibrated)
    assert problem.host_by_name["rpi1"].baseline_cores == pytest.approx(0.05)
    bare = calibrated.model_copy(update={"taskmanagers": []})  # ... where something was measured
    problem = build_problem(Inventory.model_validate(data), bare)
    assert problem.usable_cores(problem.host_by_name["rpi1"]) == pytest.approx(0.2)
    from placement.solver.methods import solve_with

    assert solve_with(problem).assignment is None  # 0.25 Pi cores of the pinned source > 0.2 usable
    cost = evaluate(problem, WHERE | {("map", 1): "srv"})
    assert any("rpi1 needs 0.25 cores, has 0.20 usable of 1 beside its TaskManager's own 0.60" in v for v in cost.violations)


def test_a_history_and_profile_without_taskmanager_cpu_keep_todays_meaning(tmp_path):
    write_history(tmp_path / "metrics", with_cpu=False)
    profile = build_profile(tmp_path / "metrics", engine="pandas", warmup_s=0)
    assert profile.taskmanagers == [] and all(v.cpu_calibration is None for v in profile.vertices)
    dumped = profile.dump()
    assert "taskmanagers" not in dumped and all("cpu_calibration" not in v for v in dumped["vertices"])
    # a shipped v2 profile (written before issue 23): loads, no baseline anywhere, busy time as before
    old = load_profile(ROOT / "examples/profiles/branching-join.json")
    assert old.taskmanagers == []
    from placement.inventory import load_inventory

    inv = load_inventory(ROOT / "inventory/edge-lab.yaml")
    problem = build_problem(inv, old)
    for h in problem.hosts:
        assert h.baseline_cores == 0.0 and h.baseline_basis == "none"
        assert problem.usable_cores(h) == pytest.approx(h.cores * inv.policy.cpu_utilisation_target)
    for s in problem.subtasks:
        sp = old.vertex(s.vertex_id).subtasks[s.index]
        if sp.busy_ms_per_s:
            assert s.server_cores == pytest.approx(max(0.005, sp.busy_ms_per_s / 1000 * sp.host_speed))


def test_without_a_known_baseline_the_residual_stays_on_the_host_and_an_overstatement_is_floored(tmp_path, monkeypatch):
    """No idle TaskManager in the history and none stated in the inventory: a TaskManager whose JVM used more than
    busy time charged keeps the rest as its baseline (basis residual, its subtasks uncalibrated); one that used less
    has a baseline of 0 (floor, not confident) and its vertex takes the whole overstatement off."""
    monkeypatch.delitem(PROCESS, "rpi2")  # rpi2 was the idle TaskManager that gave the prior
    write_history(tmp_path / "metrics")
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(inventory().model_dump(mode="json", by_alias=True)))
    profile = build_profile(tmp_path / "metrics", engine="pandas", warmup_s=0, inventory=inv)
    tms = {t.id: t for t in profile.taskmanagers}
    assert set(tms) == {"srv", "rpi1"}
    assert (tms["srv"].basis, tms["srv"].baseline_cores) == ("residual", pytest.approx(0.15))
    assert profile.vertex("map").cpu_calibration is None and profile.vertex("sink").cpu_calibration is None
    assert (tms["rpi1"].basis, tms["rpi1"].baseline_cores, tms["rpi1"].confident) == ("floor", 0.0, False)
    assert profile.vertex("src").cpu_calibration == pytest.approx(0.30 / 0.5)
