"""``placement watch`` of several jobs (issue 24 item 6), offline: the loop's own steps after the cluster was read —
each job's window priced together with the others' (:meth:`Watch._assess`), then the set's drifts, one joint re-plan
through ``placement plan --profile A --profile B`` itself, one decision and its record (:meth:`Watch._conclude`,
``--apply never``) — on constructed profiles of two jobs that share a Pi and its uplink. One job: the record as ever.

The world (as tests/planning's contested jobs): rpi1 has one core (0.8 usable: one reducer) and a 14 Mbit/s uplink
(12.6 usable). Job A: 1,000 records/s born on rpi1, 10 Mbit/s raw, 1 Mbit/s once reduced (its reducer: 0.6 of the
Pi). Job B: the same shape with records three times the size — 10 Mbit/s raw at 333 records/s, 30 at 1,000.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.cli.watch_cmd import plan_command, plan_jobs_command
from placement.costmodel import build_problem, evaluate
from placement.costmodel.jobs import build_joint
from placement.inventory import load_inventory
from placement.loading import load_model
from placement.profile.format import JobProfile, load_profile
from placement.solver.methods import solve_with
from placement.watch.loop import Observed, Seen, Watch
from placement.watch.options import WatchOptions
from placement.watch.record import DecisionLog, read_log, window_json
from placement.watch.replanning import plan_for_demand
from placement.watch.signals import window_from_profile
from placement.writers.fleetjson import FleetDocument
from placement.writers.planjson import load_plan
from support import watch_world
from support.cli import run_main
from support.fake_clock import FakeClock
from support.watch_world import one_pi_inventory

REPO = Path(__file__).resolve().parents[2]
TMS = frozenset({"server", "rpi1"})
# where the jobs run when the watch starts: A reduces on the Pi, B ships its raw records to the server
RUNNING = {
    "job-A": {("source-a", 0): "rpi1", ("reduce-a", 0): "rpi1", ("sink-a", 0): "server"},
    "job-B": {("source-b", 0): "rpi1", ("reduce-b", 0): "server", ("sink-b", 0): "server"},
}


def reducing_job(tag: str, rate: float, record_bytes: float) -> JobProfile:
    """Source (born on rpi1) → Reduce (180 ms/s per 1,000 records/s, 10:1) → Sink."""
    return watch_world.reducing_job(tag, rate, record_bytes, reduce_ms_per_record=0.18)


A = reducing_job("A", 1000, 1250)
B_BEFORE, B_AFTER = reducing_job("B", 1000 / 3, 3750), reducing_job("B", 1000, 3750)


@pytest.fixture
def inv_path(tmp_path) -> Path:
    return one_pi_inventory(tmp_path / "inv.yaml", ["A", "B"], jobs=True)


def fleet_watch(inv_path: Path, tmp_path: Path) -> Watch:
    return Watch(
        WatchOptions(
            inventory_path=inv_path,
            job_name="job-A",
            job_names=("job-A", "job-B"),
            work_dir=tmp_path / "w",
            engine="pandas",
            log_path=tmp_path / "w" / "decisions.jsonl",
        ),
        plan_jobs_fn=plan_jobs_command(inv_path),
    )


def tick(
    watch: Watch,
    n: int,
    profiles: dict[str, JobProfile],
    blockers: dict[str, list[str]] | None = None,
    running: dict | None = None,
    job_ids: dict[str, str] | None = None,
    fresh: dict[str, dict[str, float]] | None = None,
) -> dict:
    """One tick as the loop makes it once the cluster was read: each job's window snapshot (its profile, where its
    subtasks ran, the TaskManagers, ``fresh``: its sources' records/s over the last tick), or — a job in
    ``blockers`` — what ``_blockers`` said of it and no window. The decision record as the log holds it."""
    now_ms = n * 30_000 + 90_000
    seen, observed = [], {}
    for track in watch.tracks:
        why = (blockers or {}).get(track.name, [])
        seen.append(Seen(track, list(why), []))
        if why:
            continue
        snapshot = track.windows_dir / f"tick-{n:05d}"
        snapshot.mkdir(parents=True, exist_ok=True)
        observed[track.name] = Observed(
            snapshot,
            profiles[track.name],
            (running or RUNNING)[track.name],
            now_ms - 90_000,
            (job_ids or {}).get(track.name, f"flink-{track.name}"),
            TMS,
            (fresh or {}).get(track.name, {}),
        )
    watch.status.ticks = n
    watch.clock = FakeClock(now=now_ms / 1000)  # the tick's time is the loop's clock
    made = watch._conclude(n, now_ms, seen, watch._assess(seen, observed, now_ms))
    logged = read_log(watch.o.log_path)[-1]  # as written: JSON, one line
    assert logged == json.loads(json.dumps(made))
    return logged


def test_a_drift_of_one_job_re_plans_both_together_within_the_capacities_they_share(inv_path, tmp_path):
    watch = fleet_watch(inv_path, tmp_path)
    first = tick(watch, 1, {"job-A": A, "job-B": B_BEFORE})
    # the first windows are each job's baseline; together the two placements put 1 + 10 Mbit/s on the uplink: steady
    assert first["decision"]["action"] == "steady" and first["window"] is None and first["drifts"] == []
    assert [(j["job"], j["window"]["links"][0]["mbit"]) for j in first["jobs"]] == [
        ("job-A", pytest.approx(1.0)),
        ("job-B", pytest.approx(10.0)),
    ]

    rec = tick(watch, 2, {"job-A": A, "job-B": B_AFTER})  # B's sources: 333 -> 1,000 records/s
    # B's own drift names it; the uplink they share is detected once, with each job's part
    assert [(d["kind"], d["subject"], d.get("job")) for d in rec["drifts"]] == [
        ("rate", "Source: B", "job-B"),
        ("link", "rpi1", None),
    ]
    assert rec["drifts"][0]["message"].startswith("job job-B: source Source: B: 1,000 records/s vs 333 planned")
    assert rec["drifts"][1]["message"] == (
        "uplink rpi1: 31.00 Mbit/s of job data (job-A 1.00, job-B 30.00), usable 12.60 (of 14)"
    )
    jobs = {j["job"]: j for j in rec["jobs"]}
    assert jobs["job-A"]["drifts"] == [] and [d["kind"] for d in jobs["job-B"]["drifts"]] == ["rate"]
    assert jobs["job-B"]["window"]["source_rates"] == {"Source: B": 1000.0}

    # one joint re-plan: the running placements together (31 Mbit/s) against the plan of both (11 Mbit/s)
    p = rec["proposal"]
    assert p["current_wan_mbit"] == pytest.approx(31.0) and p["planned_wan_mbit"] == pytest.approx(11.0)
    assert p["current_violations"] == ["link rpi1→server needs 31.0 Mbit/s, has 14 (12.6 usable at 90%)"]
    assert p["current_peak"] == pytest.approx(31 / 14) and p["planned_peak"] == pytest.approx(11 / 14)
    assert p["moves"] == 2  # A's reducer to the server, B's to the Pi
    assert (rec["decision"]["action"], rec["decision"]["kind"]) == ("apply", "relief")
    assert rec["apply"] == {"status": "not-applied", "message": "--apply never: recorded only"}

    # the plan is a fleet directory of both jobs (what `placement apply --plan DIR` applies as one change) ...
    fleet_dir = Path(p["plan_dir"])
    fleet = load_model(fleet_dir / "fleet.json", FleetDocument)
    assert [j.job for j in fleet.jobs] == ["job-A", "job-B"]
    (link,) = fleet.links
    assert link.mbit == pytest.approx(11.0) and link.jobs == pytest.approx({"job-A": 10.0, "job-B": 1.0})
    planned = {
        j.job: {(a.vertex_id, a.subtask): a.host for a in load_plan(fleet_dir / j.dir).assignment} for j in fleet.jobs
    }
    assert planned["job-A"][("reduce-a", 0)] == "server" and planned["job-B"][("reduce-b", 0)] == "rpi1"
    # ... planned for the fresh profiles, and within what the jobs share: priced together, it fits
    inv = load_inventory(inv_path)
    assert (
        load_profile(fleet_dir / ".." / ".." / "job-B" / "windows" / "tick-00002" / "profile.json").dump()
        == B_AFTER.dump()
    )
    joint = build_joint(
        inv,
        [("job-A", A), ("job-B", B_AFTER)],
        1.0,
        placement_mode="custom",
        inventory_source=str(inv_path),
        policies={},
    )
    together = evaluate(joint.problem, joint.join(planned))
    assert together.feasible and together.link("rpi1").mbit == pytest.approx(11.0)
    # B planned alone would take the Pi's CPU that A's reducer uses: with A where it runs, the Pi is oversubscribed
    alone = solve_with(build_problem(inv, B_AFTER)).assignment
    assert alone[("reduce-b", 0)] == "rpi1"
    beside_a = evaluate(joint.problem, joint.join({"job-A": RUNNING["job-A"], "job-B": alone}))
    assert not beside_a.feasible and any(v.startswith("host rpi1 needs 1.27 cores") for v in beside_a.violations)

    # the log holds the two decisions, one record each for the set
    assert [r["tick"] for r in read_log(tmp_path / "w" / "decisions.jsonl")] == [1, 2]


def test_the_joint_re_plan_plans_each_job_at_its_own_demand(inv_path, tmp_path):
    """B's sources send 1.2x what its window profiled (the counters lead the 60 s meters), A's what it profiled: the
    joint re-plan asks `placement plan` for each job's own scale (--rate-scale job-A=1 --rate-scale job-B=1.2). At
    that, B reduces on the Pi and A's raw 10 Mbit/s goes up: 11.2 of 12.6 fits. One scale for the set (1.2 for both,
    as before) does not fit — A's 12 Mbit/s raw beside B's reduced 1.2 — and fell back to the measured rates,
    under-planning B."""
    calls = []
    planner = plan_jobs_command(inv_path)

    def recording(profiles, out_dir, scales):
        calls.append(dict(scales))
        return planner(profiles, out_dir, scales)

    watch = Watch(
        WatchOptions(
            inventory_path=inv_path,
            job_name="job-A",
            job_names=("job-A", "job-B"),
            work_dir=tmp_path / "w",
            engine="pandas",
            log_path=tmp_path / "w" / "decisions.jsonl",
        ),
        plan_jobs_fn=recording,
    )
    tick(watch, 1, {"job-A": A, "job-B": B_BEFORE})
    rec = tick(watch, 2, {"job-A": A, "job-B": B_AFTER}, fresh={"job-B": {"Source: B": 1200.0}})
    assert calls == [{"job-A": pytest.approx(1.0), "job-B": pytest.approx(1.2)}]  # fitted at once: no fallback
    p = rec["proposal"]
    assert p["planned_violations"] == [] and p["planned_wan_mbit"] == pytest.approx(10 + 1.2)
    assert "planned job job-B for 1.20x its window's profiled rates (its sources' demand now)" in rec["notes"]
    assert not any("job job-A for" in n for n in rec["notes"])
    fleet_dir = Path(p["plan_dir"])
    fleet = load_model(fleet_dir / "fleet.json", FleetDocument)
    plans = {j.job: load_plan(fleet_dir / j.dir) for j in fleet.jobs}
    assert plans["job-A"].rate_scale == pytest.approx(1.0) and plans["job-B"].rate_scale == pytest.approx(1.2)
    assert watch.tracks[1].planned_rates == pytest.approx({"Source: B": 1200.0})
    assert watch.tracks[0].planned_rates == pytest.approx({"Source: A": 1000.0})
    # the old way, one scale for the set: nothing fits at 1.2 for both
    inv = load_inventory(inv_path)
    uniform = build_joint(
        inv,
        [("job-A", A), ("job-B", B_AFTER)],
        1.2,
        placement_mode="custom",
        inventory_source=str(inv_path),
        policies={},
    )
    assert solve_with(uniform.problem).assignment is None


def test_a_job_not_running_makes_no_joint_decision(inv_path, tmp_path):
    """B is gone (a redeploy in progress): A is still observed and its drift recorded, but nothing is planned — not A
    alone as if B were gone, nor the set."""
    watch = fleet_watch(inv_path, tmp_path)
    tick(watch, 1, {"job-A": A, "job-B": B_BEFORE})
    rec = tick(
        watch,
        2,
        {"job-A": reducing_job("A", 2000, 1250)},
        blockers={"job-B": ["no running job named 'job-B' (a redeploy in progress?)"]},
    )
    assert rec["decision"]["action"] == "wait" and rec["proposal"] is None
    assert rec["decision"]["reason"] == "job job-B: no running job named 'job-B' (a redeploy in progress?)"
    assert [(d["kind"], d["job"]) for d in rec["drifts"]] == [("rate", "job-A")]
    jobs = {j["job"]: j for j in rec["jobs"]}
    assert jobs["job-B"]["window"] is None and jobs["job-A"]["window"]["source_rates"] == {"Source: A": 2000.0}
    # unpriced: B's load on the shared uplink is unknown this tick, so A's window carries no link figures either
    assert jobs["job-A"]["window"]["links"] == []
    assert not (watch.plans_dir / "tick-00002").exists()


def test_one_job_keeps_its_record(tmp_path):
    """One --job-name: the record of a tick is exactly the v1 decision record (no ``jobs``, no ``job`` on a drift,
    the window at the top), its window priced by the job alone."""
    inv = REPO / "inventory" / "edge-lab.yaml"
    profile = load_profile(REPO / "examples" / "profiles" / "iot-sensors.json")
    problem = build_problem(load_inventory(inv), profile)
    running = solve_with(problem).assignment
    watch = Watch(
        WatchOptions(
            inventory_path=inv,
            job_name="iot-sensors",
            work_dir=tmp_path / "w",
            engine="pandas",
            log_path=tmp_path / "log.jsonl",
        ),
        plan_fn=plan_command(inv, rescale=False),
    )
    assert watch.windows_dir == tmp_path / "w" / "windows"  # one job: WORK_DIR itself, as ever
    snapshot = watch.windows_dir / "tick-00001"
    snapshot.mkdir(parents=True)
    seen = [Seen(watch.tracks[0], [], [])]
    observed = {"iot-sensors": Observed(snapshot, profile, running, 0, "flink-1", TMS, {})}
    watch.status.ticks = 1
    rec = watch._conclude(1, 90_000, seen, watch._assess(seen, observed, 90_000))
    assert list(rec) == [
        "format",
        "record",
        "tick",
        "at_ms",
        "plan_in_effect",
        "window",
        "drifts",
        "proposal",
        "decision",
        "apply",
        "notes",
    ]
    window = window_from_profile(
        profile,
        evaluate(problem, running),
        start_ms=0,
        end_ms=90_000,
        job_id="flink-1",
        taskmanagers=TMS,
        latency_bounds=problem.latency_bounds,
    )
    assert rec["window"] == json.loads(json.dumps(window_json(window, str(snapshot))))
    assert rec["drifts"] == [] and rec["notes"] == ["baseline: this window's source rates and TaskManagers"]
    assert rec["decision"] == {"action": "steady", "kind": None, "reason": "no drift: the plan in effect fits the load"}
    assert read_log(tmp_path / "log.jsonl") == [rec]
    assert (snapshot / "profile.json").is_file()
    DecisionLog(None).write(rec)  # JSON-clean (no infinity) as written


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--job-name", "job-A", "--job-name", "job-A"], "error: --job-name: job 'job-A' is named twice"),
        (
            ["--job-name", "job-A", "--job-name", "job-C"],
            "error: --job-name: job 'job-C' has no entry in {inv}'s jobs: (what apply resubmits it with when the jobs "
            "are applied together; listed: job-A, job-B)",
        ),
        (["--fleet", "--job-name", "job-A"], "error: --fleet: --fleet watches every job of the inventory's jobs: list"),
        ([], "error: --job-name: name the job to watch"),
        (["--fleet", "--rescale"], "error: --rescale: chooses one job's parallelism"),
    ],
)
def test_bad_job_lists_are_one_line_and_start_nothing(args, message, inv_path, capsys, tmp_path):
    code, out, err = run_main(["watch", "--inventory", str(inv_path), "--work-dir", str(tmp_path / "w"), *args], capsys)
    assert code == 2 and message.format(inv=inv_path) in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and out == ""
    assert not (tmp_path / "w").exists()


def test_fleet_is_every_job_of_the_inventory(inv_path, tmp_path):
    from placement.cli.watch_cmd import _job_names

    assert _job_names(inv_path, (), True, False) == ("job-A", "job-B")
    assert _job_names(inv_path, ("anything",), False, False) == ("anything",)  # one job: no jobs: entry needed


def test_the_live_view_shows_each_job(inv_path, tmp_path):
    """The status of a watch of two jobs after the tick that re-planned both: each job's running id and collector,
    each one's window (its source and its part of the uplink), the drifts naming their job, the joint re-plan."""
    from rich.console import Console

    from placement.cli.watch_cmd import _line, render

    watch = fleet_watch(inv_path, tmp_path)
    tick(watch, 1, {"job-A": A, "job-B": B_BEFORE})
    tick(watch, 2, {"job-A": A, "job-B": B_AFTER})
    watch.status.job_ids.update({"job-A": "flink-job-A", "job-B": "flink-job-B"})
    watch.status.collectors.update({"job-A": "collecting (120 samples)", "job-B": "waiting for the job"})
    console = Console(record=True, width=200)
    console.print(render(watch.status, watch.o))
    text = console.export_text()
    assert "placement watch job-A, job-B · apply never" in text
    assert "job-A: job flink-job-A · collector: collecting (120 samples)" in text
    assert "job-B: job flink-job-B · collector: waiting for the job" in text
    assert "job-A: window 90 s" in text and "job-B: window 90 s" in text
    assert "source Source: B" in text and "1,000 rec/s" in text and "30.00 Mbit/s" in text
    assert "drift: job job-B: source Source: B: 1,000 records/s vs 333 planned (+200%)" in text
    assert "drift: uplink rpi1: 31.00 Mbit/s of job data (job-A 1.00, job-B 30.00)" in text
    assert "re-plan (every job together): running 31.00 Mbit/s (breaks capacity) → plan 11.00 Mbit/s, 2 moves" in text
    assert "decision: apply: relief" in text
    assert _line(watch.status, several=True) == (
        "tick 2: apply: relief: the running placement breaks link rpi1→server needs 31.0 Mbit/s, has 14 (12.6 usable "
        "at 90%) [job-A: Source: A 1,000/s; job-B: Source: B 1,000/s]"
    )


def test_an_apply_of_the_set_goes_through_placement_apply_of_the_fleet(inv_path, tmp_path):
    """``--apply auto`` of the joint re-plan: the fleet directory through ``placement apply --plan DIR``'s own load
    and preflight of every job — here the cluster does not answer, so the whole change is refused before anything
    changed, the log says so, and the policy's clocks do not start (no change was made)."""
    watch = Watch(
        WatchOptions(
            inventory_path=inv_path,
            job_name="job-A",
            job_names=("job-A", "job-B"),
            work_dir=tmp_path / "w",
            engine="pandas",
            apply="auto",
            log_path=tmp_path / "w" / "decisions.jsonl",
        ),
        plan_jobs_fn=plan_jobs_command(inv_path),
    )
    tick(watch, 1, {"job-A": A, "job-B": B_BEFORE})
    rec = tick(watch, 2, {"job-A": A, "job-B": B_AFTER})
    assert (rec["decision"]["action"], rec["decision"]["kind"]) == ("apply", "relief")
    apply = rec["apply"]
    assert apply["status"] == "refused" and apply["changed"] is False and apply["jobs"] == {}
    # every job's preflight ran before anything changed, each problem naming its job
    assert apply["message"].startswith("preflight refused, nothing was changed: job job-A: ")
    assert "; job job-B: " in apply["message"] and apply["took_s"] < 30
    assert apply["audit"] == str(Path(rec["proposal"]["plan_dir"]) / "apply-audit.jsonl")
    assert watch.state.last_change_ms is None and watch.status.applies == 0


def test_after_a_change_each_redeployed_job_logs_its_effect(inv_path, tmp_path):
    """The first window of a job the change redeployed: the plan's predicted Mbit/s per uplink beside what the new
    placement carries, one ``effect`` record naming the job; a job the change left running logs none."""
    watch = fleet_watch(inv_path, tmp_path)
    tick(watch, 1, {"job-A": A, "job-B": B_BEFORE})
    plan = tick(watch, 2, {"job-A": A, "job-B": B_AFTER})["proposal"]["plan_dir"]
    fleet = load_model(Path(plan) / "fleet.json", FleetDocument)
    planned = {
        j.job: {(a.vertex_id, a.subtask): a.host for a in load_plan(Path(plan) / j.dir).assignment} for j in fleet.jobs
    }
    # as _act leaves it after `placement apply --plan` redeployed job-B only
    watch.tracks[1].pending_effect = (2, "flink-job-B", dict(watch.tracks[1].planned_links))
    assert watch.tracks[1].planned_links == pytest.approx({"rpi1": 1.0})
    tick(
        watch,
        3,
        {"job-A": A, "job-B": B_AFTER},
        running={"job-A": RUNNING["job-A"], "job-B": planned["job-B"]},
        job_ids={"job-B": "flink-job-B-2"},
    )
    (effect,) = [r for r in read_log(watch.o.log_path) if r["record"] == "effect"]
    assert (effect["job"], effect["decision"]) == ("job-B", 2)
    assert effect["links"]["rpi1"]["predicted_mbit"] == pytest.approx(1.0)
    assert effect["links"]["rpi1"]["measured_mbit"] == pytest.approx(1.0)  # B's part of the uplink, reduced on the Pi
    assert effect["window"]["job_id"] == "flink-job-B-2" and watch.tracks[1].pending_effect is None


@pytest.mark.parametrize(
    ("demand", "measured", "above", "fits", "asked", "unmet"),
    [
        (1.6, 1.0, True, {1.6: True}, [("tick-00007", 1.6)], False),
        (1.6, 1.0, True, {1.6: False, 1.0: True}, [("tick-00007", 1.6), ("tick-00007-measured", 1.0)], True),
        (
            {"a": 1.6, "b": 1.0},
            {"a": 1.0, "b": 1.0},
            True,
            {1.6: False, 1.0: False},
            [("tick-00007", {"a": 1.6, "b": 1.0}), ("tick-00007-measured", {"a": 1.0, "b": 1.0})],
            True,
        ),
        (1.0, 1.0, False, {1.0: False}, [("tick-00007", 1.0)], False),  # at the measured rates already: no second plan
    ],
)
def test_the_plan_for_the_demand_falls_back_to_the_measured_rates_only_when_it_does_not_fit(
    tmp_path, demand, measured, above, fits, asked, unmet
):
    """One job's scale or each job's: the planner is asked at the demand, and again at the measured rates (its own
    directory) only when nothing fits the demand; the outcome says whether the demand went unmet."""
    calls = []

    def plan(out, scales):
        calls.append((out.name, scales))
        key = max(scales.values()) if isinstance(scales, dict) else scales
        return type("Outcome", (), {"fits": fits[key], "scales": scales})()

    outcome, scales, demand_unmet = plan_for_demand(plan, tmp_path, 7, demand, measured, above)
    assert calls == asked and outcome.scales == scales == asked[-1][1] and demand_unmet is unmet
