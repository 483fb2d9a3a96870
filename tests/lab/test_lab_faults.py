"""A Pi lost under a placed job, for real (issue 43): the lab in custom mode with its edge failure-detection settings,
the ledger job placed by ``placement plan`` (with contingencies) and ``placement apply``, then on one lab run:

* rpi2's power lost (SIGKILL of every process in its namespace): the job never FAILED, the ledger takes rpi1's
  readings again within 30 s, every subtask where the plan's contingency for rpi2 says, no reading lost or doubled,
  rpi1's uplink within ±15 % of the contingency's prediction; power back, ``placement apply`` of the same plan: every
  subtask where the plan says, still exactly once;
* then rpi2's uplink cut (alive, no packet through): the same, and its TaskManager rejoins by itself when the link is
  back (nothing restarts it).

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
def placed(request: pytest.FixtureRequest, shared_custom_lab, tmp_path_factory) -> Iterator[tuple[dict, scenario.Placed]]:
    with module_on_shared_lab(request, shared_custom_lab) as state:
        placed = scenario.place(state, tmp_path_factory.mktemp("faults"))
        yield state, placed


def test_the_plan_has_a_contingency_for_each_pi(placed) -> None:
    _state, p = placed
    assert [c.lost for c in p.plan.contingencies] == ["rpi1", "rpi2"]
    rpi2 = p.plan.contingencies[1]
    assert rpi2.status == "optimal" and {m.to for m in rpi2.moves} == {"server"}
    assert {m.label for m in rpi2.moves} >= {"Source: Readings (2/2)"}
    assert (p.plan_dir / "schedulercfg").read_text().count("[lost ") == 2


@pytest.mark.parametrize("kind", ["power", "uplink"])
def test_a_lost_pi_does_not_stop_the_fleet_and_the_plan_comes_back(placed, kind: str) -> None:
    state, p = placed
    run = scenario.run_fault(state, p, kind, "rpi2")
    print(scenario.as_json(run))
    assert run.never_failed, run.states
    assert run.recovery_s is not None and run.recovery_s <= RECOVERY_GOAL_S, run
    assert run.placed_as_contingency, run
    assert (run.gaps, run.repeats) == (0, 0), run
    measured, predicted = run.wan["rpi1"]
    assert predicted > 0 and abs(measured - predicted) <= 0.15 * predicted, run.wan
    assert run.restored, run
    assert (run.gaps_after_restore, run.repeats_after_restore) == (0, 0), run
