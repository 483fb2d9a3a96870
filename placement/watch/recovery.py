"""The way back from a contingency (issue 43). Pure.

While a planned TaskManager is lost, the scheduler extension runs the job in the plan's contingency for it: the
running placement differs from the plan in effect, and that is no drift to re-plan on — the plan is still right, one
host is missing. :func:`contingency_decision` holds then, and once every planned TaskManager has been back, without a
break, for ``cooldown_s`` (and the cooldown after the last change has passed), it decides to restore the plan in
effect (an apply: savepoint, redeploy, verify). A Pi that flaps — lost and back within the cooldown — restarts its
clock each time it is lost, so the job does not move back and forth with it.
"""

from __future__ import annotations

from collections.abc import Mapping

from placement.costmodel.model import Assignment
from placement.watch.policy import Decision, PolicyConfig, PolicyState, cooldown_left_s
from placement.watch.signals import Drift


def back_since(
    before: Mapping[str, int], planned_hosts: frozenset[str], registered: frozenset[str], now_ms: int
) -> dict[str, int]:
    """Each planned host registered now -> since when without a break (a host not registered now drops out)."""
    return {h: before.get(h, now_ms) for h in sorted(planned_hosts & registered)}


def differs(planned: Assignment, running: Assignment) -> int:
    """How many subtasks run elsewhere than the plan in effect puts them."""
    return sum(1 for key, host in planned.items() if running.get(key, host) != host)


def contingency_decision(
    planned: Assignment,
    running: Assignment,
    registered: frozenset[str],
    since: Mapping[str, int],
    state: PolicyState,
    now_ms: int,
    config: PolicyConfig = PolicyConfig(),
) -> tuple[Decision, Drift] | None:
    """None when the job runs as planned; else the hold (a planned host is lost) or the restore (every planned host is
    up: whatever moved the job off its plan, the plan in effect is put back), with the drift that says why."""
    moved = differs(planned, running)
    if not moved:
        return None
    planned_hosts = frozenset(planned.values())
    lost = sorted(planned_hosts - registered)
    away = sorted({planned[k] for k, h in running.items() if k in planned and planned[k] != h})
    if lost:
        drift = Drift(
            "contingency",
            ", ".join(lost),
            message=f"TaskManager {', '.join(lost)} lost: {moved} subtasks run in the plan's contingency",
        )
        return Decision(
            "hold",
            f"contingency in effect: the plan is restored once {', '.join(lost)} has been back "
            f"for {config.cooldown_s:.0f} s",
            state,
            "restore",
        ), drift
    drift = Drift(
        "contingency",
        ", ".join(away),
        message=f"TaskManager {', '.join(away)} is back: {moved} subtasks still run in the plan's contingency",
    )
    waited = min((now_ms - since.get(h, now_ms)) / 1000 for h in away)
    if waited < config.cooldown_s:
        return Decision(
            "hold",
            f"{', '.join(away)} back for {waited:.0f}/{config.cooldown_s:.0f} s before the plan is restored",
            state,
            "restore",
        ), drift
    left = cooldown_left_s(state, now_ms, config)
    if left > 0:
        return Decision("hold", f"restore ready, cooldown {left:.0f} s left", state, "restore"), drift
    return Decision(
        "apply",
        f"restore: {', '.join(away)} back for {waited:.0f} s; the plan in effect puts {moved} subtasks back",
        state,
        "restore",
    ), drift
