"""The decision policy (pure): relief after the cooldown, cheaper only after its stabilization window, blockers,
and no flapping when the load oscillates — on constructed windows from a small two-placement world."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from placement.watch.policy import (
    PolicyConfig,
    PolicyState,
    Proposal,
    after_change,
    decide,
)
from placement.watch.signals import Baseline, DriftThresholds, Window, detect

S = 1000  # ms per second


@dataclass
class World:
    """Two placements of one job: 'edge' does the work on a Pi (WAN 0.002 Mbit per record/s, the Pi saturates above
    300 records/s) and 'server' ships raw records (0.01 Mbit per record/s; fits up to 1,000 records/s on the link).
    The planner picks the cheapest placement that fits, as the ILP would."""

    running: str = "edge"

    @staticmethod
    def wan(placement: str, rate: float) -> float:
        return rate * (0.002 if placement == "edge" else 0.01)

    @staticmethod
    def violations(placement: str, rate: float) -> tuple[str, ...]:
        if placement == "edge" and rate > 300:
            return (f"host rpi1 CPU {rate / 300:.2f} of 1 cores",)
        if placement == "server" and rate > 1000:
            return ("link rpi1→server over",)
        return ()

    def best(self, rate: float) -> str:
        return "edge" if rate <= 300 else "server"

    @staticmethod
    def peak(placement: str, rate: float) -> float:
        """The busiest resource: the Pi's CPU (edge) or the uplink (server, 10 Mbit/s)."""
        return rate / 300 if placement == "edge" else rate * 0.01 / 10

    def proposal(self, rate: float) -> Proposal:
        best = self.best(rate)
        return Proposal(
            self.wan(self.running, rate),
            self.violations(self.running, rate),
            self.wan(best, rate),
            self.violations(best, rate),
            moves=0 if best == self.running else 4,
            plan_dir=best,
            current_peak=self.peak(self.running, rate),
            planned_peak=self.peak(best, rate),
        )


def window(t_s: float, rate: float, job: str = "j1", bp: float = 0.0) -> Window:
    return Window(int((t_s - 30) * S), int(t_s * S), job, {"Source: Sensors": rate}, {"Source: Sensors": bp})


def run(
    rates: list[tuple[float, float]],
    config: PolicyConfig,
    *,
    tick_s: float = 30.0,
    blocked_at: set[float] = frozenset(),
):
    """Drive the policy through a rate schedule [(until_s, rate), ...]; returns the applies [(t, kind, placement)]."""
    world = World()
    baseline = Baseline({"Source: Sensors": 200.0})
    state = PolicyState()
    applies = []
    t = tick_s
    for until, rate in rates:
        while t <= until:
            w = window(t, rate)
            drifts = detect(baseline, [w], DriftThresholds(rate_change=0.25))
            proposal = world.proposal(rate) if drifts else None
            blockers = ["a checkpoint is in progress"] if t in blocked_at else []
            d = decide(state, int(t * S), drifts, proposal, blockers, config)
            state = d.state
            if d.action == "apply":
                world.running = proposal.plan_dir
                baseline = Baseline({"Source: Sensors": rate})
                state = after_change(state, int((t + 20) * S))  # the redeploy took 20 s
                applies.append((t, d.kind, world.running))
            t += tick_s
    return applies


def test_no_flapping_over_three_oscillations():
    config = PolicyConfig(min_gain=0.15, cooldown_s=120, stabilization_s=300)
    # 200 and 400 records/s, 150 s each, three times: 400 needs the server placement, 200 could go back to the edge
    schedule = []
    for k in range(3):
        schedule += [(300 * k + 150, 200.0), (300 * k + 300, 400.0)]
    applies = run(schedule, config)
    assert applies == [(180, "relief", "server")]  # the first step up, at once; never back and forth


def test_returns_to_the_cheaper_plan_only_after_its_stabilization_window():
    config = PolicyConfig(min_gain=0.15, cooldown_s=120, stabilization_s=300)
    applies = run([(150, 200.0), (300, 400.0), (1200, 200.0)], config)
    assert [a[1:] for a in applies] == [("relief", "server"), ("cheaper", "edge")]
    back = applies[1][0]
    # the rate fell at 300 s: the first 200/s window ends at 330 s; 300 s of unbroken cheaper proposals after it
    assert back == 330 + 300


def test_relief_waits_for_the_cooldown_and_blockers_pause_it():
    config = PolicyConfig(cooldown_s=120, stabilization_s=300)
    world = World(running="edge")
    state = after_change(PolicyState(), 100 * S)  # a change ended at 100 s
    drifts = detect(Baseline({"Source: Sensors": 200.0}), [window(150, 400)])
    d = decide(state, 150 * S, drifts, world.proposal(400), config=config)
    assert (d.action, d.kind) == ("hold", "relief") and "cooldown 70 s left" in d.reason
    d = decide(state, 230 * S, drifts, world.proposal(400), ["a redeploy is in progress"], config)
    assert d.action == "wait" and "redeploy" in d.reason
    d = decide(state, 230 * S, drifts, world.proposal(400), config=config)
    assert (d.action, d.kind) == ("apply", "relief") and "rpi1 CPU" in d.reason


def test_a_blocker_keeps_a_stabilizing_proposal_but_never_applies():
    config = PolicyConfig(cooldown_s=0, stabilization_s=60)
    applies = run([(60, 200.0), (120, 400.0), (600, 200.0)], config, blocked_at={210.0, 240.0})
    # cheaper from 150 s on; ticks at 210 and 240 are blocked (no apply then) but do not restart the clock: 270 s
    assert [(t, kind) for t, kind, _ in applies] == [(90, "relief"), (270, "cheaper")]


def test_hold_reasons():
    config = PolicyConfig(min_gain=0.3)
    state = PolicyState()
    drifts = detect(Baseline({"S": 100.0}), [Window(0, 30 * S, "j", {"S": 200.0}, {})])
    assert drifts and drifts[0].kind == "rate"
    small = Proposal(10.0, (), 8.0, moves=3)
    assert decide(state, 0, drifts, small, config=config).reason == "predicted gain 20% is under 30%"
    assert "already in effect" in decide(state, 0, drifts, Proposal(10.0, (), 2.0, moves=0), config=config).reason
    nothing = Proposal(10.0, ("link rpi1→server",), None, ("link rpi1→server needs 12 Mbit/s",), moves=0)
    assert decide(state, 0, drifts, nothing, config=config).reason == "re-planned: link rpi1→server needs 12 Mbit/s"
    assert decide(state, 0, [], None, config=config).action == "steady"


def test_bad_config_is_refused():
    with pytest.raises(ValueError):
        PolicyConfig(min_gain=1.5)
    with pytest.raises(ValueError):
        DriftThresholds(rate_change=0)


def test_a_cheaper_plan_with_more_room_needs_no_stabilization_window():
    config = PolicyConfig(min_gain=0.15, cooldown_s=60, stabilization_s=300)
    drifts = detect(Baseline({"S": 100.0}), [Window(0, 30 * S, "j", {"S": 200.0}, {})])
    roomier = Proposal(2.0, (), 0.2, moves=4, current_peak=0.8, planned_peak=0.3)
    d = decide(PolicyState(), 10 * S, drifts, roomier, config=config)
    assert (d.action, d.kind) == ("apply", "cheaper") and "80% -> 30%" in d.reason
    d = decide(after_change(PolicyState(), 0), 10 * S, drifts, roomier, config=config)
    assert d.action == "hold" and "cooldown 50 s left" in d.reason
    tighter = Proposal(2.0, (), 0.2, moves=4, current_peak=0.3, planned_peak=0.8)
    assert "stabilizing" in decide(PolicyState(), 10 * S, drifts, tighter, config=config).reason


def test_a_plan_for_the_measured_rates_is_no_cheaper_answer_to_a_demand_no_plan_carries():
    """Seen on the lab (the watch lab test, 2026-11-27): a tick after a step, the sources' counters showed 1.65x the
    window's 60 s meters, no plan carried that, and the plan made for the meters' rates was offered as "cheaper" —
    applied, it could not carry the sources. Such a plan may still relieve what breaks at the measured rates."""
    config = PolicyConfig(min_gain=0.15, cooldown_s=60, stabilization_s=300)
    drifts = detect(Baseline({"S": 100.0}), [Window(0, 30 * S, "j", {"S": 200.0}, {})])
    stale = Proposal(2.0, (), 0.2, moves=4, current_peak=0.8, planned_peak=0.3, demand_unmet=True)
    d = decide(PolicyState(), 10 * S, drifts, stale, config=config)
    assert d.action == "hold" and "no placement carries the sources' demand now" in d.reason
    relief = Proposal(2.0, ("link rpi1→server over",), 0.2, moves=4, demand_unmet=True)
    assert (decide(PolicyState(), 10 * S, drifts, relief, config=config).action, "relief") == ("apply", "relief")
    fresh = Proposal(2.0, (), 0.2, moves=4, current_peak=0.8, planned_peak=0.3)
    assert decide(PolicyState(), 10 * S, drifts, fresh, config=config).kind == "cheaper"


def test_a_latency_drift_is_decided_like_a_link_drift():
    """A bound the running placement breaks (predicted by the cost model, or measured) is a broken capacity: the same
    relief, cooldown and hold reasons as an uplink over its bandwidth."""
    from placement.watch.pricing import measured_breaches
    from placement.watch.signals import Drift

    path = "Source: Sensors → Parse → Sink: Readings"
    cases = {
        "link": (
            [Drift("link", "rpi1", 52.8, 45.0)],
            ("link rpi1→server needs 52.8 Mbit/s, has 50 (45.0 usable at 90%)",),
        ),
        "latency": (
            [Drift("latency", path, 176.1, 170.0, basis="predicted")],
            (f"path {path}: predicted 176.1 ms, bound 170 ms (flush 122.2)",),
        ),
    }
    measured = [
        Drift(
            "latency",
            "Source: Sensors → Sink: Readings",
            190.0,
            180.0,
            "Source: Sensors → Sink: Readings: measured p50 190.0 ms in each of the last 2 windows, bound 180 ms",
            basis="measured",
        )
    ]
    cases["measured latency"] = (measured, measured_breaches(measured))  # what the loop adds to the running's breaches
    assert measured_breaches(cases["latency"][0]) == ()  # a predicted breach is in the cost model's violations already
    outcomes = {}
    for name, (drifts, breaks) in cases.items():
        fits = Proposal(40.0, breaks, 10.0, moves=4, plan_dir="p", current_peak=1.05, planned_peak=0.3)
        nothing = Proposal(40.0, breaks, None, ("path X needs 176.1 ms, its bound is 170 ms",), moves=0)
        same = Proposal(40.0, breaks, 10.0, moves=0)
        cooling = after_change(PolicyState(), 100 * S)
        got = [
            decide(PolicyState(), 300 * S, drifts, fits),
            decide(cooling, 150 * S, drifts, fits),
            decide(PolicyState(), 300 * S, drifts, nothing),
            decide(PolicyState(), 300 * S, drifts, same),
            decide(PolicyState(), 300 * S, drifts, None),
        ]
        outcomes[name] = [(d.action, d.kind) for d in got]
        assert got[0].reason == "relief: the running placement breaks " + breaks[0]
        assert "cooldown 70 s left" in got[1].reason and "its bound is 170 ms" in got[2].reason
    assert outcomes["link"] == [("apply", "relief"), ("hold", "relief"), ("hold", None), ("hold", None), ("hold", None)]
    assert outcomes["latency"] == outcomes["link"] == outcomes["measured latency"]
