"""The watch's loop deciding on an in-memory cluster (``FakeFlinkRest``) in simulated time (``FakeClock``): each tick
through the observer, the assessment, the re-planner (``placement plan`` itself) and the actor (a ``FakeApply``) —
drift, re-plan, apply; and a hold while a planned TaskManager is lost. The same loop on a real Flink is
tests/watch/test_watch_fleet_flink.py, test_rolling_flink.py and test_watch_lab.py.

The world (as tests/watch/test_watch_fleet.py's, one job): rpi1 has one core (0.8 usable) and a 14 Mbit/s uplink (12.6
usable); job A's 1,000 records/s are born on rpi1, 10 Mbit/s raw, 1 Mbit/s once reduced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placement.profile.format import JobProfile
from placement.watch.options import WatchOptions
from placement.watch.record import read_log
from support import watch_world
from support.fake_clock import FakeClock
from support.fake_flink import FakeFlinkRest
from support.fake_watch import FakeApply, fake_cluster_watch
from support.watch_world import one_pi_inventory

INTERVAL_S = 30.0
ON_SERVER = {"Source: A": ["rpi1"], "Reduce A": ["server"], "Sink: A": ["server"]}  # raw records up the uplink


def reducing_job(rate: float) -> JobProfile:
    """Source (born on rpi1) → Reduce (90 ms/s per 1,000 records/s, 10:1) → Sink."""
    return watch_world.reducing_job("A", rate, 1250, reduce_ms_per_record=0.09)


@pytest.fixture
def inv_path(tmp_path) -> Path:
    return one_pi_inventory(tmp_path / "inv.yaml", ["A"], jobs=False)


class World:
    """A watch of job-A on the fake cluster, ticking every ``INTERVAL_S`` of simulated time."""

    def __init__(self, inv_path: Path, tmp_path: Path, placement: dict[str, list[str]]):
        self.clock = FakeClock()
        self.rest = FakeFlinkRest(clock_ms=lambda: int(self.clock.now() * 1000))
        self.rest.start("job-A", placement, start_ms=int((self.clock.now() - 3600) * 1000))
        self.profiles = {"job-A": reducing_job(1000)}
        self.apply = FakeApply(self.rest, self.profiles, "job-A")
        self.planned: list[float] = []
        self.watch = fake_cluster_watch(
            WatchOptions(
                inventory_path=inv_path,
                job_name="job-A",
                work_dir=tmp_path / "w",
                engine="pandas",
                apply="auto",
                log_path=tmp_path / "w" / "decisions.jsonl",
            ),
            rest=self.rest,
            clock=self.clock,
            profiles=self.profiles,
            apply=self.apply,
            planned=self.planned,
        )

    def tick(self, rate: float | None = None) -> dict:
        if rate is not None:
            self.profiles["job-A"] = reducing_job(rate)
        self.clock.advance(INTERVAL_S)
        return self.watch.tick()


def test_a_drift_is_re_planned_and_the_plan_applied_then_the_new_job_warms_up(inv_path, tmp_path):
    world = World(inv_path, tmp_path, ON_SERVER)
    first = world.tick()
    assert first["decision"]["action"] == "steady"
    assert first["notes"] == ["baseline: this window's source rates and TaskManagers"]
    assert world.planned == [] and world.apply.applied == []

    rec = world.tick(rate=1500)  # 15 Mbit/s of raw records: more than the uplink carries
    assert [d["kind"] for d in rec["drifts"]] == ["rate", "link"]
    assert world.planned == [1.0]
    assert (rec["decision"]["action"], rec["decision"]["kind"]) == ("apply", "relief")
    assert rec["proposal"]["moves"] == 1 and not rec["proposal"]["planned_violations"]
    assert world.apply.applied == [Path(rec["proposal"]["plan_dir"])]
    assert rec["apply"]["status"] == "applied" and rec["apply"]["took_s"] == 0.0  # no time passed: simulated
    assert world.rest.running_job("job-A").placement["Reduce A"] == ["rpi1"]  # reduced on the Pi now
    assert rec["plan_in_effect"] == rec["proposal"]["plan_dir"] and world.watch.status.applies == 1

    after = world.tick()  # the new job started 30 s ago: a whole window past --warmup is 150 s
    assert after["decision"]["action"] == "wait"
    assert after["decision"]["reason"] == "warming up: 120 s until a whole window past --warmup"
    assert [r["tick"] for r in read_log(world.watch.o.log_path)] == [1, 2, 3]


def test_a_lost_taskmanager_holds_the_job_in_its_contingency_without_a_re_plan(inv_path, tmp_path):
    world = World(inv_path, tmp_path, {"Source: A": ["rpi1"], "Reduce A": ["rpi1"], "Sink: A": ["server"]})
    assert world.tick()["decision"]["action"] == "steady"
    # rpi1's power is cut: the scheduler extension runs its subtasks on the server (the plan's contingency)
    world.rest.lose("rpi1")
    world.rest.running_job("job-A").placement = {"Source: A": ["server"], "Reduce A": ["server"], "Sink: A": ["server"]}
    rec = world.tick()
    assert [(d["kind"], d["subject"]) for d in rec["drifts"]] == [("contingency", "rpi1")]
    assert (rec["decision"]["action"], rec["decision"]["kind"]) == ("hold", "restore")
    assert rec["decision"]["reason"].startswith("contingency in effect: the plan is restored once rpi1 has been back")
    assert world.planned == [] and world.apply.applied == []
    world.rest.tms.append("rpi1")  # back, the job still on the server: the restore waits for rpi1 to stay up
    back = world.tick()
    assert (back["decision"]["action"], back["decision"]["kind"]) == ("hold", "restore")
    assert back["decision"]["reason"].startswith("rpi1 back for 0/")
    assert world.planned == [] and world.apply.applied == []


def test_the_loop_ticks_every_interval_of_the_injected_clock(inv_path, tmp_path):
    """``run`` itself in simulated time: --duration 90 with a 30 s interval is three decisions, and no real wait
    (the collector threads find no REST endpoint and retry until the loop stops them)."""
    import time

    world = World(inv_path, tmp_path, ON_SERVER)
    world.watch.o.duration_s = 90.0
    started = time.monotonic()
    status = world.watch.run()
    assert status.ticks == 3 and status.phase == "stopped"
    assert [r["decision"]["action"] for r in read_log(world.watch.o.log_path)] == ["steady"] * 3
    assert world.clock.slept == pytest.approx(90.0, abs=0.5) and time.monotonic() - started < 30


def test_a_watch_restarted_on_its_work_dir_numbers_its_ticks_on(inv_path, tmp_path):
    """Windows and plans are named by tick and written once: a second watch on the same WORK_DIR starting again at
    tick 1 met its predecessor's names (and pruned its own new windows as the oldest)."""
    first = World(inv_path, tmp_path, ON_SERVER)
    first.tick()
    assert first.tick(rate=1500)["decision"]["action"] == "apply"  # its plan is tick-00002
    again = World(inv_path, tmp_path, ON_SERVER)
    rec = again.tick()
    assert rec["tick"] == 3 and again.watch.windows.read_ticks == [3]
    assert [r["tick"] for r in read_log(again.watch.o.log_path) if r.get("record") == "decision"] == [1, 2, 3]
