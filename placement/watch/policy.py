"""When a re-plan is acted on: predicted gain, cooldown, stabilization, blockers. Pure.

Modelled on what Flink's Kubernetes autoscaler does for parallelism (``job.autoscaler.stabilization.interval``,
``scale-down.interval``, ``restart.time``): moving *towards* capacity is quick, moving back to something cheaper is
slow, and nothing moves while the last change is still settling.

Every tick the loop hands :func:`decide` the drifts of the newest window (:mod:`placement.watch.signals`), a
:class:`Proposal` when it re-planned (the placement running now and the new plan, priced by the cost model under the
same window), and what blocks a change right now. The decision is one of:

* ``steady`` — no drift: the plan in effect fits the load;
* ``wait`` — a blocker (a checkpoint in progress, a redeploy in progress, the job not RUNNING, no usable window yet);
* ``hold`` — a re-plan was made but is not acted on, with the reason: already in effect, nothing fits, the gain is
  under ``min_gain``, the cooldown has not passed, or a cheaper plan is still in its stabilization window;
* ``apply`` — ``relief`` (the placement running now breaks a capacity under the measured load, the new plan does not)
  once ``cooldown_s`` has passed since the last change; or ``cheaper`` (both fit, the new plan's WAN is lower by at
  least ``min_gain``): at once after the cooldown when the new plan also leaves at least as much room on its busiest
  uplink or host (nothing to come back from), else only once it has been proposed, without a break, for
  ``stabilization_s`` — a cheaper but tighter plan is the "scale down" that must wait.

A cheaper proposal's stabilization clock restarts whenever a tick does not confirm it (no drift, a smaller gain, a
relief), so a load that oscillates faster than the stabilization window never takes the loop back and forth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from placement.watch.signals import Drift

Action = Literal["steady", "wait", "hold", "apply"]
Kind = Literal["relief", "cheaper", "restore"]


@dataclass(frozen=True)
class PolicyConfig:
    min_gain: float = 0.15  # relative WAN reduction a cheaper plan must bring
    cooldown_s: float = 120.0  # after a change: no other change for this long
    stabilization_s: float = 300.0  # a cheaper plan must be proposed continuously this long before it is applied

    def __post_init__(self) -> None:
        if not 0 <= self.min_gain < 1:
            raise ValueError("min_gain must be in [0, 1)")
        if self.cooldown_s < 0 or self.stabilization_s < 0:
            raise ValueError("cooldown and stabilization must be >= 0")


@dataclass(frozen=True)
class Proposal:
    """A re-plan's prediction: the running placement and the new plan, priced under the same window."""

    current_wan_mbit: float
    current_violations: tuple[str, ...]
    planned_wan_mbit: float | None  # None: no placement fits the window's load
    planned_violations: tuple[str, ...] = ()
    moves: int = 0  # subtasks the new plan puts elsewhere (0: the plan is what runs)
    plan_dir: str | None = None
    # the busiest uplink or host, as a share of its capacity (1.0: full), running placement vs new plan; None: unknown
    current_peak: float | None = None
    planned_peak: float | None = None
    # the part of current_violations that is a broken latency bound (predicted or measured): what the view names
    current_latency_breaches: tuple[str, ...] = ()
    # the sources want more than the window's (60 s meter) rates and no plan carries that demand, so this plan was
    # made for the measured rates: it may relieve what breaks at those rates, but it is no cheaper answer to the load
    demand_unmet: bool = False

    @property
    def roomier(self) -> bool:
        """The new plan leaves at least as much room on its busiest resource as the running placement does."""
        return (
            self.current_peak is not None and self.planned_peak is not None and self.planned_peak <= self.current_peak
        )

    @property
    def current_fits(self) -> bool:
        return not self.current_violations

    @property
    def planned_fits(self) -> bool:
        return self.planned_wan_mbit is not None and not self.planned_violations

    @property
    def gain(self) -> float | None:
        """Relative WAN reduction of the new plan (None when either side has no figure)."""
        if self.planned_wan_mbit is None or self.current_wan_mbit <= 0:
            return None
        return (self.current_wan_mbit - self.planned_wan_mbit) / self.current_wan_mbit


@dataclass(frozen=True)
class PolicyState:
    last_change_ms: int | None = None  # end of the last apply (or its roll back): the cooldown runs from here
    cheaper_since_ms: int | None = None  # first tick of the current unbroken run of cheaper proposals


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    state: PolicyState
    kind: Kind | None = None


def cooldown_left_s(state: PolicyState, now_ms: int, config: PolicyConfig) -> float:
    if state.last_change_ms is None:
        return 0.0
    return max(0.0, config.cooldown_s - (now_ms - state.last_change_ms) / 1000)


def decide(
    state: PolicyState,
    now_ms: int,
    drifts: Sequence[Drift],
    proposal: Proposal | None,
    blockers: Sequence[str] = (),
    config: PolicyConfig = PolicyConfig(),
) -> Decision:
    if blockers:  # a blocker pauses the clocks' verdicts but does not reset a stabilizing proposal
        return Decision("wait", "; ".join(blockers), state)
    calm = replace(state, cheaper_since_ms=None)
    if not drifts:
        return Decision("steady", "no drift: the plan in effect fits the load", calm)
    if proposal is None:
        return Decision("hold", "drift, but no re-plan was made", calm)
    if not proposal.planned_fits:
        why = "; ".join(proposal.planned_violations) or "no placement fits the measured load"
        return Decision("hold", f"re-planned: {why}", calm)
    if proposal.moves == 0:
        return Decision("hold", "re-planned: the plan is already in effect", calm)
    left = cooldown_left_s(state, now_ms, config)
    if proposal.demand_unmet and proposal.current_fits:
        return Decision(
            "hold",
            "re-planned: no placement carries the sources' demand now, and the plan for the "
            "window's measured rates would not carry it either",
            calm,
        )
    if not proposal.current_fits:
        if left > 0:
            return Decision("hold", f"relief ready, cooldown {left:.0f} s left", calm, "relief")
        return Decision(
            "apply", "relief: the running placement breaks " + "; ".join(proposal.current_violations), calm, "relief"
        )
    gain = proposal.gain
    if gain is None or gain < config.min_gain:
        shown = "n/a" if gain is None else f"{gain:.0%}"
        return Decision("hold", f"predicted gain {shown} is under {config.min_gain:.0%}", calm)
    if proposal.roomier:  # cheaper and no tighter: nothing to come back from, so no stabilization window
        if left > 0:
            return Decision(
                "hold", f"cheaper by {gain:.0%} with more room: cooldown {left:.0f} s left", calm, "cheaper"
            )
        return Decision(
            "apply",
            f"cheaper by {gain:.0%} with more room (busiest resource "
            f"{proposal.current_peak:.0%} -> {proposal.planned_peak:.0%})",
            calm,
            "cheaper",
        )
    since = state.cheaper_since_ms if state.cheaper_since_ms is not None else now_ms
    stabilizing = replace(state, cheaper_since_ms=since)
    waited = (now_ms - since) / 1000
    if waited < config.stabilization_s:
        return Decision(
            "hold",
            f"cheaper by {gain:.0%}: stabilizing {waited:.0f}/{config.stabilization_s:.0f} s",
            stabilizing,
            "cheaper",
        )
    if left > 0:
        return Decision("hold", f"cheaper by {gain:.0%}: cooldown {left:.0f} s left", stabilizing, "cheaper")
    return Decision("apply", f"cheaper by {gain:.0%}, stable for {waited:.0f} s", stabilizing, "cheaper")


def after_change(state: PolicyState, end_ms: int) -> PolicyState:
    """The state after an apply ended (applied, or rolled back: either way the job was redeployed)."""
    return PolicyState(last_change_ms=end_ms, cheaper_since_ms=None)
