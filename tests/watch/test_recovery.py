"""The way back from a contingency (issue 43): hold while a planned host is lost, restore once it has been back for
the cooldown, and never move back and forth with a Pi that flaps. Pure decisions (placement.watch.recovery); the
real run — a Pi's TaskManager killed under a placed job, then back — is the lab's."""

from __future__ import annotations

from placement.watch.policy import PolicyConfig, PolicyState
from placement.watch.recovery import back_since, contingency_decision

PLAN = {("src", 0): "rpi1", ("src", 1): "rpi2", ("parse", 0): "rpi1", ("parse", 1): "rpi2", ("agg", 0): "server"}
DEGRADED = {**PLAN, ("src", 1): "server", ("parse", 1): "server"}  # rpi2's contingency
CONFIG = PolicyConfig(cooldown_s=60)
ALL = frozenset({"server", "rpi1", "rpi2"})
S = 1000  # ms


def step(registered: frozenset[str], at_s: float, since: dict[str, int], running=DEGRADED, state=PolicyState()):
    since = back_since(since, frozenset(PLAN.values()), registered, int(at_s * S))
    return contingency_decision(PLAN, running, registered, since, state, int(at_s * S), CONFIG), since


def test_as_planned_is_none_of_its_business():
    assert step(ALL, 0, {}, running=PLAN)[0] is None


def test_holds_while_the_host_is_lost_and_says_why():
    (decision, drift), _ = step(ALL - {"rpi2"}, 0, {})
    assert decision.action == "hold" and decision.kind == "restore"
    assert drift.kind == "contingency" and drift.subject == "rpi2"
    assert drift.message == "TaskManager rpi2 lost: 2 subtasks run in the plan's contingency"


def test_restores_once_the_host_has_been_back_for_the_cooldown():
    since: dict[str, int] = {}
    actions = []
    for t, registered in ((0, ALL - {"rpi2"}), (10, ALL), (40, ALL), (69, ALL), (70, ALL)):
        (decision, _drift), since = step(registered, t, since)
        actions.append(decision.action)
    assert actions == ["hold", "hold", "hold", "hold", "apply"]
    assert decision.reason == "restore: rpi2 back for 60 s; the plan in effect puts 2 subtasks back"


def test_a_flapping_pi_restarts_its_clock_and_the_job_stays_in_its_contingency():
    since: dict[str, int] = {}
    timeline = [(0, ALL - {"rpi2"})] + [(t, ALL if (t // 20) % 2 else ALL - {"rpi2"}) for t in range(10, 300, 10)]
    actions = []
    for t, registered in timeline:  # back 20 s, lost 20 s, back 20 s ...: never 60 s without a break
        (decision, _), since = step(registered, t, since)
        actions.append(decision.action)
    assert "apply" not in actions


def test_the_cooldown_after_the_last_change_still_holds_a_restore():
    since = {"rpi1": 0, "rpi2": 0, "server": 0}
    (decision, _), _ = step(ALL, 100, since, state=PolicyState(last_change_ms=90 * S))
    assert decision.action == "hold" and decision.reason == "restore ready, cooldown 50 s left"


def test_any_move_off_the_plan_with_every_host_up_is_put_back():
    running = {**PLAN, ("agg", 0): "rpi1"}  # not where any contingency puts it: Flink moved it some other way
    since = {"rpi1": 0, "rpi2": 0, "server": 0}
    decision, drift = contingency_decision(PLAN, running, ALL, since, PolicyState(), 100 * S, CONFIG)
    assert decision.action == "apply" and drift.subject == "server"
    assert contingency_decision(PLAN, PLAN, ALL, since, PolicyState(), 100 * S, CONFIG) is None
