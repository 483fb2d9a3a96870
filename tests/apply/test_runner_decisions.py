"""The runner's decisions on an in-memory cluster (``FakeFlinkRest``) in simulated time (``FakeClock``): the order of
savepoint → stop → submit → verify, the roll back when the verify fails, and the waits measured on the injected clock.
The same runner against a real Flink and real sshd is tests/apply/test_apply_vanilla.py and its neighbours."""

from __future__ import annotations

import pytest

from placement.apply.audit import AuditLog
from placement.apply.model import (
    ApplyPlan,
    Step,
    StopWithSavepoint,
    SubmitJob,
    VerifyPlacement,
    WaitRunning,
    WatchStable,
)
from placement.apply.runner import Runner
from support.fake_clock import FakeClock
from support.fake_flink import FakeFlinkRest

BEFORE = {"Source: S": ["rpi1"], "Map": ["rpi1", "rpi1"], "Sink: K": ["server"]}
PLANNED = {"Source: S": ["rpi1"], "Map": ["server", "server"], "Sink: K": ["server"]}


def submit(*args: str) -> SubmitJob:
    return SubmitJob(jar_id="7_jobs.jar", entry_class=None, program_args=args, allow_non_restored_state=False, why="")


def apply_plan(job_id: str, *, stable_s: float = 0.0) -> ApplyPlan:
    planned = tuple((v, tm, n) for v, tms in PLANNED.items() for tm in set(tms) for n in [tms.count(tm)])
    steps = [
        Step(StopWithSavepoint(job_id, "file:/savepoints"), "stop"),
        Step(submit("--map-on", "server"), "redeploy"),
        Step(WaitRunning(), "redeploy"),
        Step(VerifyPlacement(planned), "verify"),
    ]
    if stable_s:
        steps.append(Step(WatchStable(stable_s), "verify"))
    rollback = (Step(submit("--map-on", "rpi1"), "redeploy"), Step(WaitRunning(), "redeploy"))
    return ApplyPlan(job_id, "vanilla", tuple(steps), rollback, notes=())


def placer(honoured: bool):
    """Where a submitted job runs: ``--map-on HOST`` puts Map there when ``honoured``, else Map stays on rpi1."""

    def place(resumed, args):
        host = args[args.index("--map-on") + 1] if honoured else "rpi1"
        return {**resumed.placement, "Map": [host] * len(resumed.placement["Map"])}

    return place


def run(fake: FakeFlinkRest, plan: ApplyPlan, clock: FakeClock):
    audit = AuditLog(None, "test")
    outcome = Runner(plan, fake, {}, audit, echo=lambda s: None, clock=clock).run()
    return outcome, audit


def test_an_apply_stops_with_a_savepoint_then_submits_from_it_then_verifies():
    clock = FakeClock()
    fake = FakeFlinkRest(placer=placer(honoured=True), savepoint_polls=2)
    old = fake.start("iot", BEFORE)
    outcome, audit = run(fake, apply_plan(old), clock)
    assert outcome.status == "applied" and outcome.job_id == "job-2"
    assert outcome.savepoint == f"file:/savepoints/savepoint-{old}"
    assert fake.calls == [
        ("stop", old, "file:/savepoints"),
        ("savepoint", old, outcome.savepoint),
        ("submit", "job-2", "--map-on server", outcome.savepoint),
        ("verify", "job-2"),
    ]
    assert [r["kind"] for r in audit.records if r["event"] == "ok"] == ["stop", "submit", "wait", "verify"]
    assert fake.running_job("iot").placement == PLANNED
    # two status reads IN_PROGRESS, 0.2 s apart, on the injected clock: the downtime is simulated time
    assert outcome.downtime_s == pytest.approx(0.4) and clock.slept == pytest.approx(0.4)


def test_a_failed_verify_cancels_the_new_job_and_resubmits_the_previous_arguments_from_the_same_savepoint():
    fake = FakeFlinkRest(placer=placer(honoured=False))
    old = fake.start("iot", BEFORE)
    outcome, audit = run(fake, apply_plan(old), FakeClock())
    assert outcome.status == "rolled-back"
    savepoint = f"file:/savepoints/savepoint-{old}"
    assert fake.calls == [
        ("stop", old, "file:/savepoints"),
        ("savepoint", old, savepoint),
        ("submit", "job-2", "--map-on server", savepoint),
        ("verify", "job-2"),
        ("cancel", "job-2"),
        ("submit", "job-3", "--map-on rpi1", savepoint),
    ]
    assert outcome.job_id == "job-3" and fake.running_job("iot").placement == BEFORE
    assert outcome.message.startswith(
        "apply failed (verify failed: Map@rpi1 planned 0 actual 2; Map@server planned 2 actual 0)"
    )
    assert f"rolled back: job job-3 RUNNING from savepoint {savepoint} with the previous placement" in outcome.message
    assert [r["event"] for r in audit.records][-1] == "done" and audit.records[-1]["status"] == "rolled-back"


def test_a_stop_that_never_completes_fails_after_its_timeout_in_simulated_time():
    clock = FakeClock()
    fake = FakeFlinkRest(savepoint_polls=10**9)
    old = fake.start("iot", BEFORE)
    outcome, _ = run(fake, apply_plan(old), clock)
    assert outcome.status == "stop-failed" and outcome.job_id == old
    assert outcome.message == (
        "the stop with savepoint failed (stop-with-savepoint of job job-1 did not complete "
        "within 180s); nothing was installed; job job-1 is RUNNING"
    )
    # 180 s of status reads, then 5 s of quiet before a RUNNING job counts as settled: all of it simulated
    assert clock.slept == pytest.approx(185.0, abs=0.5)
    assert [c[0] for c in fake.calls] == ["stop"]


def test_a_job_that_restarts_while_watched_is_rolled_back():
    clock = FakeClock()
    fake = FakeFlinkRest(placer=placer(honoured=True))
    old = fake.start("iot", BEFORE)

    def restart_at_20_s(seconds: float) -> None:  # the placed job restarts 20 s into the watch
        FakeClock.sleep(clock, seconds)
        if clock.slept >= 20 and "job-2" in fake.jobs_by_id and fake.jobs_by_id["job-2"].state == "RUNNING":
            fake.jobs_by_id["job-2"].restarting_since_ms = 1

    clock.sleep = restart_at_20_s  # type: ignore[method-assign]
    outcome, _ = run(fake, apply_plan(old, stable_s=60), clock)
    assert outcome.status == "rolled-back"
    assert "job job-2 did not stay RUNNING after it was placed (now RUNNING, it restarted)" in outcome.message
    assert 20 <= clock.slept < 21
