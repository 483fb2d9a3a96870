"""Issue 23: measured TaskManager CPU -> per-TaskManager baselines and per-vertex calibration
(placement.profile.tm_cpu), and the cost model's CPU rows with the baseline (placement.costmodel). A recorded history,
written through the collector's own layout functions, with known process CPU and busy time; the figures below follow by
hand from the module's rules."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from placement.collect.layout import (
    COTENANT_BUSY,
    COTENANT_SUBTASKS,
    TASKMANAGER_METRICS,
    EdgeInfo,
    PartWriter,
    RunManifest,
    RunTaskManager,
    RunVertex,
    SubtaskLocation,
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
    """rpi1's Netty server costs nothing here (``netty_cores_per_delivery: 0``): the figures below are the baseline's
    and the calibration's, checked by hand; tests/planning/test_netty_cpu.py holds the planners to the Netty charge."""
    hosts = [
        {"name": "srv", "address": "10.0.0.1", "role": "server", "cores": 2, "memory": "4GiB"},
        {
            "name": "rpi1",
            "address": "10.0.1.2",
            "role": "edge",
            "model": "rpi4b",
            "cores": 1,
            "netty_cores_per_delivery": 0.0,
        },
        {"name": "rpi2", "address": "10.0.2.2", "role": "edge", "model": "rpi4b", "cores": 1},
        {"name": "rpi3", "address": "10.0.3.2", "role": "edge", "model": "rpi4b", "cores": 1, **(rpi3 or {})},
    ]
    return Inventory.model_validate(
        {
            "hosts": hosts,
            "links": [{"from": f"rpi{i}", "to": "srv", "bandwidth": "20mbit"} for i in (1, 2, 3)],
            "pins": {"sources": {"Source: Gen": "rpi1"}},
            "flink": {"rest_url": "http://10.0.0.1:8081"},
        }
    )


def write_history(root: Path, *, with_cpu: bool = True) -> None:
    write_job(
        root,
        "j1",
        "cpu-job",
        [
            RunVertex(id="src", name="Source: Gen", parallelism=1),
            RunVertex(id="map", name="Map", parallelism=2),
            RunVertex(id="sink", name="Sink: Out", parallelism=1),
        ],
        BUSY,
        WHERE,
        RATES,
        PROCESS if with_cpu else None,
    )


def write_job(
    root: Path,
    job_id: str,
    name: str,
    vertices: list[RunVertex],
    busy: dict,
    where: dict,
    rates: dict,
    process: dict | None,
    cotenant: dict[str, tuple[float, int]] | None = None,
    *,
    run_id: str = "r1",
    t0: int = T0,
) -> None:
    """One run of a job, its vertices in a chain; ``process``: each TaskManager's JVM cores (None: no TaskManager CPU
    recorded); ``cotenant``: TaskManager -> (other jobs' busy cores on it, their subtasks), recorded beside the CPU."""
    m = RunManifest(
        job_id=job_id,
        job_name=name,
        run_id=run_id,
        started_ms=t0,
        ended_ms=t0 + SECONDS * 1000,
        interval_s=1.0,
        stopped="completed",
        vertices=vertices,
        edges=[EdgeInfo(source=a.id, target=b.id, ship_strategy="REBALANCE") for a, b in pairwise(vertices)],
        locations=[
            SubtaskLocation(vertex_id=v, subtask=i, taskmanager_id=tm, host=f"host-{tm}")
            for (v, i), tm in where.items()
        ],
        taskmanagers=[
            RunTaskManager(id=tm, host=f"host-{tm}", hardware_cpu_cores=2 if tm == "srv" else 1)
            for tm in (process or PROCESS)
        ],
    )
    parallelism = {v.id: v.parallelism for v in vertices}
    writer = PartWriter(root, job_id, run_id)
    rows = []
    for k in range(SECONDS):
        for (v, i), b in busy.items():
            rin, rout = (r / parallelism[v] for r in rates[v])
            rows.append(
                {
                    "ts_ms": t0 + k * 1000,
                    "vertex_id": v,
                    "subtask": i,
                    "attempt": 0,
                    "attempt_start_ms": t0,
                    "running": True,
                    "busy_ms_per_s": b,
                    "idle_ms_per_s": 1000 - b,
                    "backpressured_ms_per_s": 0.0,
                    "records_in_per_s": rin,
                    "records_out_per_s": rout,
                    "bytes_in_per_s": rin * 50 * parallelism[v],
                    "bytes_out_per_s": rout * 50 * parallelism[v],
                }
            )
    writer.write(rows_to_table(rows))
    m.files, m.samples = list(writer.files), writer.rows
    if process is not None:
        tm_rows = [
            {
                "ts_ms": t0 + k * 1000,
                "taskmanager_id": tm,
                "cpu_time_ns": 5e9 + k * cores * 1e9,
                "cpu_load": cores / (2 if tm == "srv" else 1) if k % 10 else -1.0,  # -1: Flink's "unknown"
                **(
                    {COTENANT_BUSY: cotenant.get(tm, (0.0, 0))[0], COTENANT_SUBTASKS: cotenant.get(tm, (0.0, 0))[1]}
                    if cotenant is not None
                    else {}
                ),
            }
            for k in range(SECONDS)
            for tm, cores in process.items()
        ]
        tm_writer = taskmanager_writer(root, job_id, run_id)
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
        assert (
            v.cpu_calibration == pytest.approx(0.835 / 0.7, rel=1e-5)
            and v.stats["cpu_calibration_basis"] == "shared on srv"
        )
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
    bare = evaluate(
        build_problem(
            inv,
            calibrated.model_copy(
                update={
                    "taskmanagers": [],
                    "vertices": [v.model_copy(update={"cpu_calibration": None}) for v in calibrated.vertices],
                }
            ),
        ),
        WHERE,
    )
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
    assert hosts["rpi1"]["baseline_cores"] == pytest.approx(0.05) and hosts["rpi1"]["subtask_cores"] == pytest.approx(
        0.25
    )
    assert hosts["rpi1"]["predicted_cores"] == pytest.approx(0.30) and hosts["rpi1"]["cores_used"] == pytest.approx(
        0.25
    )
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
    assert any(
        "rpi1 needs 0.25 cores, has 0.20 usable of 1 beside its TaskManager's own 0.60" in v for v in cost.violations
    )


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
        # less only the Netty charge for the stream leaving an edge host (costmodel.deliveries), which is no baseline
        assert problem.usable_cores(h) == pytest.approx(h.cores * inv.policy.cpu_utilisation_target - h.netty_cores)
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


# ---- co-tenants: several jobs on one TaskManager ---------------------------------------------------------------------
# Job B (two vertices, 200 + 100 ms/s busy) shares the server with job A (the job above: 0.7 cores of busy time there);
# the server's JVM uses 1.2 cores for both. rpi1 runs A's source only, rpi2 nothing of either.
SHARED = {"srv": 1.2, "rpi1": 0.30, "rpi2": 0.05}
B_VERTICES = [
    RunVertex(id="osrc", name="Source: Other", parallelism=1),
    RunVertex(id="osink", name="Sink: Other", parallelism=1),
]
B_BUSY = {("osrc", 0): 200.0, ("osink", 0): 100.0}
B_WHERE = {("osrc", 0): "srv", ("osink", 0): "srv"}
B_RATES = {"osrc": (0.0, 400.0), "osink": (400.0, 0.0)}
A_VERTICES = [
    RunVertex(id="src", name="Source: Gen", parallelism=1),
    RunVertex(id="map", name="Map", parallelism=2),
    RunVertex(id="sink", name="Sink: Out", parallelism=1),
]


def _profile(tmp_path: Path, name: str, write) -> object:
    write(tmp_path / name)
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(inventory().model_dump(mode="json", by_alias=True)))
    return build_profile(tmp_path / name, engine="pandas", warmup_s=0, inventory=inv)


def test_two_jobs_on_one_taskmanager_each_calibrate_to_their_share_of_its_cpu(tmp_path):
    a = _profile(
        tmp_path,
        "a",
        lambda root: write_job(
            root,
            "j1",
            "cpu-job",
            A_VERTICES,
            BUSY,
            WHERE,
            RATES,
            SHARED,
            cotenant={"srv": (0.3, 2), "rpi1": (0.0, 0), "rpi2": (0.0, 0)},
        ),
    )
    b = _profile(
        tmp_path,
        "b",
        lambda root: write_job(
            root,
            "j2",
            "other-job",
            B_VERTICES,
            B_BUSY,
            B_WHERE,
            B_RATES,
            SHARED,
            cotenant={"srv": (0.7, 3), "rpi1": (0.5, 1), "rpi2": (0.0, 0)},
        ),
    )
    ta, tb = ({t.id: t for t in p.taskmanagers} for p in (a, b))
    # the server's subtasks used 1.2 - 0.015 (the idle Pi's baseline) = 1.185 cores for 0.7 + 0.3 charged: A's share
    # is 0.7 of it, B's 0.3 (before: each job took all 1.185 as its own, twice the server's CPU between them)
    assert ta["srv"].basis == tb["srv"].basis == "prior"
    assert ta["srv"].baseline_cores == pytest.approx(0.015) and tb["srv"].baseline_cores == pytest.approx(0.015)
    assert ta["srv"].calibrated_cores == pytest.approx(1.185 * 0.7)
    assert tb["srv"].calibrated_cores == pytest.approx(1.185 * 0.3)
    assert ta["srv"].calibrated_cores + tb["srv"].calibrated_cores == pytest.approx(1.2 - 0.015)
    assert (ta["srv"].cotenant_cores, ta["srv"].cotenant_subtasks) == (pytest.approx(0.3), 2)
    assert (tb["srv"].cotenant_cores, tb["srv"].cotenant_subtasks) == (pytest.approx(0.7), 3)
    for name in ("map", "sink"):
        assert a.vertex(name).cpu_calibration == pytest.approx(1.185, rel=1e-5)
    assert b.vertex("osrc").cpu_calibration == pytest.approx(1.185, rel=1e-5)
    # rpi1 had no co-tenant in A's history: as before (the source alone, k = 0.5)
    assert ta["rpi1"].calibrated_cores == pytest.approx(0.25) and a.vertex("src").cpu_calibration == pytest.approx(0.5)
    assert "srv 1.200 cores, baseline 0.015 (prior), co-tenants 0.300 busy (2 subtasks)" in (a.job.note or "")
    # planned together, the two jobs' subtasks on the server add up to what its JVM used beside its baseline
    inv = inventory()
    used = [evaluate(build_problem(inv, p), where).host("srv").cores_used for p, where in ((a, WHERE), (b, B_WHERE))]
    assert sum(used) == pytest.approx(1.185, rel=1e-4)


def test_a_taskmanager_running_only_another_jobs_subtasks_gives_no_idle_baseline(tmp_path):
    b = _profile(
        tmp_path,
        "b",
        lambda root: write_job(
            root,
            "j2",
            "other-job",
            B_VERTICES,
            B_BUSY,
            B_WHERE,
            B_RATES,
            SHARED,
            cotenant={"srv": (0.7, 3), "rpi1": (0.5, 1), "rpi2": (0.0, 0)},
        ),
    )
    tms = {t.id: t for t in b.taskmanagers}
    rpi1 = tms["rpi1"]
    assert (rpi1.basis, rpi1.subtasks, rpi1.baseline_cores, rpi1.confident) == ("co-tenant", 0, None, False)
    assert rpi1.process_cores == pytest.approx(0.30) and rpi1.calibrated_cores == 0.0
    assert (rpi1.cotenant_cores, rpi1.cotenant_subtasks) == (pytest.approx(0.5), 1)
    assert tms["rpi2"].basis == "idle"
    # the prior is rpi2's alone (with rpi1's 0.09 server cores as a second idle one the median was 0.0525)
    assert tms["srv"].baseline_cores == pytest.approx(0.015)
    # and the cost model takes no baseline from rpi1's CPU: the idle TaskManagers' median, as for an unmeasured host
    h = build_problem(inventory(), b).host_by_name["rpi1"]
    assert (h.baseline_cores, h.baseline_basis) == (pytest.approx(0.05), "profile median")
    assert "rpi1 0.300 cores, baseline none (co-tenant), co-tenants 0.500 busy (1 subtasks)" in (b.job.note or "")


def test_histories_without_the_cotenant_columns_calibrate_as_before(tmp_path, calibrated):
    """Parts written before the columns existed (no such column), parts with them null and parts saying nothing else
    ran all give today's profile: the figures test_profile_reports_each_taskmanagers_baseline... checks by hand."""
    import pyarrow.parquet as pq

    old = tmp_path / "old"
    write_history(old)
    for part in old.glob("job_id=*/run_id=*/_taskmanagers/*.parquet"):
        t = pq.read_table(part)
        pq.write_table(t.drop_columns([COTENANT_BUSY, COTENANT_SUBTASKS]), part)
        assert COTENANT_BUSY not in pq.read_schema(part).names
    none_else = tmp_path / "none-else"
    write_job(
        none_else,
        "j1",
        "cpu-job",
        A_VERTICES,
        BUSY,
        WHERE,
        RATES,
        PROCESS,
        cotenant={"srv": (0.0, 0), "rpi1": (0.0, 0), "rpi2": (0.0, 0)},
    )
    inv = tmp_path / "inventory.json"
    inv.write_text(json.dumps(inventory().model_dump(mode="json", by_alias=True)))
    from_old, from_none_else = (build_profile(d, engine="pandas", warmup_s=0, inventory=inv) for d in (old, none_else))
    assert from_old.dump() == calibrated.dump()  # byte for byte what a history with null columns gives
    assert all(t.cotenant_cores is None and t.cotenant_subtasks is None for t in from_old.taskmanagers)
    assert "co-tenant" not in from_old.dump()["taskmanagers"][0]
    for a, b in zip(from_none_else.taskmanagers, calibrated.taskmanagers, strict=True):
        assert (a.basis, a.baseline_cores, a.calibrated_cores) == (b.basis, b.baseline_cores, b.calibrated_cores)
        assert (a.cotenant_cores, a.cotenant_subtasks) == (0.0, 0)
    assert {t.id: t.calibrated_cores for t in from_old.taskmanagers} == {
        "srv": pytest.approx(0.835),
        "rpi1": pytest.approx(0.25),
        "rpi2": pytest.approx(0.0),
    }
    assert [v.cpu_calibration for v in from_none_else.vertices] == [v.cpu_calibration for v in calibrated.vertices]
