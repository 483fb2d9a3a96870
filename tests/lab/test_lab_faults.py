"""A Pi lost under a placed job, for real (issue 43): the lab in custom mode with its edge failure-detection settings,
the ledger job placed by ``placement plan`` (with contingencies) and ``placement apply``, then on one lab run:

* rpi2's power lost (SIGKILL of every process in its namespace): the job never FAILED, the ledger takes rpi1's
  readings again within 30 s, every subtask where the plan's contingency for rpi2 says, no reading lost or doubled,
  rpi1's uplink within ±15 % of the contingency's prediction; power back, ``placement apply`` of the same plan: every
  subtask where the plan says, still exactly once;
* then rpi2's uplink cut (alive, no packet through): the same, and its TaskManager rejoins by itself when the link is
  back (nothing restarts it);
* then two ledger jobs planned together and applied as one change: rpi2's power lost, both recover into the fleet's
  joint contingency, both come back to the plan.

The scenario is :mod:`placement.lab.fault_scenario` (benchmarks/edge_faults.py repeats it for the README's table).
Run it under the lab lock: ``flock /tmp/placement-lab.lock .venv/bin/pytest -q tests/lab/test_lab_faults.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.lab import module_on_shared_lab

from placement.lab import fault_scenario as scenario

pytestmark = [pytest.mark.flink, pytest.mark.netns, pytest.mark.timeout(1200)]

RECOVERY_GOAL_S = 30.0


@pytest.fixture(scope="module")
def lab(request: pytest.FixtureRequest, shared_custom_lab) -> Iterator[dict]:
    with module_on_shared_lab(request, shared_custom_lab) as state:
        yield state


@pytest.fixture(scope="module")
def placed(lab: dict, tmp_path_factory) -> tuple[dict, scenario.Placed]:
    return lab, scenario.place(lab, tmp_path_factory.mktemp("faults"))


def check(run: scenario.FaultRun) -> None:
    print(scenario.as_json(run))
    assert run.never_failed, run.states
    assert run.recovery_s is not None and run.recovery_s <= RECOVERY_GOAL_S, run
    assert run.placed_as_contingency, run
    assert (run.gaps, run.repeats) == (0, 0), run
    measured, predicted = run.wan["rpi1"]
    assert predicted > 0 and abs(measured - predicted) <= 0.15 * predicted, run.wan
    assert run.restored, run
    assert (run.gaps_after_restore, run.repeats_after_restore) == (0, 0), run


def test_the_plan_has_a_contingency_for_each_pi(placed) -> None:
    _state, p = placed
    plan = p.plans[scenario.JOB_NAME]
    assert [c.lost for c in plan.contingencies] == ["rpi1", "rpi2"]
    rpi2 = plan.contingencies[1]
    assert rpi2.status == "optimal" and {m.to for m in rpi2.moves} == {"server"}
    assert {m.label for m in rpi2.moves} >= {"Source: Readings (2/2)"}
    assert (p.plan_dir / "schedulercfg").read_text().count("[lost ") == 2


@pytest.mark.parametrize("kind", ["power", "uplink"])
def test_a_lost_pi_does_not_stop_the_fleet_and_the_plan_comes_back(placed, kind: str) -> None:
    state, p = placed
    check(scenario.run_fault(state, p, kind, "rpi2"))


def test_the_watch_holds_in_the_contingency_and_restores_the_plan_once_the_pi_is_back(placed, tmp_path) -> None:
    state, p = placed
    watch = scenario.Watching(p, tmp_path)
    try:
        watch.wait_steady()
        run = scenario.run_fault(state, p, "power", "rpi2", watch=watch)
    finally:
        watch.stop()
    check(run)
    decisions = [(r["decision"]["action"], r["decision"].get("kind")) for r in watch.records()]
    held = [r for r in watch.records() if any(d["kind"] == "contingency" for d in r.get("drifts", []))]
    assert held and all(r["decision"]["action"] in ("hold", "wait", "apply") for r in held), decisions
    assert ("apply", "restore") in decisions and decisions.count(("apply", "restore")) == 1, decisions
    assert not any(a == "apply" and k != "restore" for a, k in decisions), decisions  # no re-plan moved it


def test_two_jobs_on_one_fleet_recover_into_their_joint_contingency(lab: dict, tmp_path_factory) -> None:
    p = scenario.place(lab, tmp_path_factory.mktemp("two-jobs"), jobs=("ledger-a", "ledger-b"))
    assert p.several and sorted(p.plans) == ["ledger-a", "ledger-b"]
    for plan in p.plans.values():  # each job's part of the one contingency for rpi2, the fleet's figures
        rpi2 = next(c for c in plan.contingencies if c.lost == "rpi2")
        assert {m.to for m in rpi2.moves} == {"server"} and rpi2.moves
    check(scenario.run_fault(lab, p, "power", "rpi2"))
