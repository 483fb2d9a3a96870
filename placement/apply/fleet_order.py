"""The order in which several jobs are moved onto their new plans, as one change (pure, no I/O).

Moving a job is: stop it with a savepoint, resubmit it on its new placement, verify. Done one job after the other,
the fleet passes through mixed states — the jobs moved so far on their new placement, the others still on their old
one — and a mixed state can put more on an uplink than either the old or the new placement does (job A moves onto
the uplink before job B has moved off it). A job being moved is stopped, so its load is off every link meanwhile:
the only states to check are the ones after each move, where the moved jobs run new and the rest old.

:func:`choose_order` finds a sequential order whose every such state keeps each link within what the plans allow
(its usable Mbit/s), trying the fleet's own job order first. When none exists — or a job's old load is unknown, so
no mixed state can be judged — it falls back to stopping every job first and starting them all on their new
placement: then the fleet only ever runs a part of the new plans, which the plans allow. Sequential is preferred
when it is safe because each job is down only for its own redeploy; stop-all keeps the first job stopped while all
the others are stopped and started too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

EPS_MBIT = 1e-6  # rounding in the cost model's sums: a state exactly at the limit is within it

Loads = Mapping[str, float]  # link name -> Mbit/s


@dataclass(frozen=True)
class JobLoads:
    """One job's load per link: on the placement it runs now (``old``; None when it cannot be known) and planned."""

    job: str
    old: Loads | None
    new: Loads


@dataclass(frozen=True)
class FleetOrder:
    strategy: Literal["sequential", "stop-all"]
    jobs: tuple[str, ...]  # the order jobs are moved (sequential) or stopped and started (stop-all)
    reason: str  # one line: why this strategy
    peak: dict[str, float] = field(default_factory=dict)  # link -> the most any state of the chosen sequence puts on it


def state_load(jobs: Sequence[JobLoads], moved: frozenset[str]) -> dict[str, float]:
    """Per link: the moved jobs on their new placement plus the others on their old one (old loads must be known)."""
    total: dict[str, float] = {}
    for j in jobs:
        loads = j.new if j.job in moved else j.old
        assert loads is not None
        for link, mbit in loads.items():
            total[link] = total.get(link, 0.0) + mbit
    return total


def over_limit(load: Mapping[str, float], limits: Mapping[str, float]) -> list[str]:
    """Links where ``load`` exceeds its limit (links without a limit are not judged)."""
    return [link for link, mbit in sorted(load.items()) if link in limits and mbit > limits[link] + EPS_MBIT]


def _safe_sequence(jobs: Sequence[JobLoads], limits: Mapping[str, float]) -> tuple[str, ...] | None:
    """A sequential order whose every intermediate state is within the limits, or None. Depth-first over the jobs
    in their given order, so the fleet's own order wins when it is safe; whether a state is safe depends only on
    which jobs have moved, so a set found unsafe (or a dead end) is never tried twice."""
    names = [j.job for j in jobs]
    dead: set[frozenset[str]] = set()

    def extend(moved: frozenset[str], order: tuple[str, ...]) -> tuple[str, ...] | None:
        if len(order) >= len(names) - 1:  # the last move reaches the plans themselves: not a mixed state
            return order + tuple(n for n in names if n not in moved)
        for name in names:
            if name in moved:
                continue
            after = moved | {name}
            if after in dead:
                continue
            if not over_limit(state_load(jobs, after), limits):
                found = extend(after, order + (name,))
                if found is not None:
                    return found
            dead.add(after)
        return None

    return extend(frozenset(), ())


def _peak(jobs: Sequence[JobLoads], order: Sequence[str]) -> dict[str, float]:
    peak: dict[str, float] = {}
    for k in range(len(order) + 1):
        for link, mbit in state_load(jobs, frozenset(order[:k])).items():
            peak[link] = max(peak.get(link, 0.0), mbit)
    return peak


def _stop_all_peak(jobs: Sequence[JobLoads]) -> dict[str, float]:
    """Every job stopped, then started one by one on its new placement: the most is the plans' total."""
    return state_load(jobs, frozenset(j.job for j in jobs))


def choose_order(jobs: Sequence[JobLoads], limits: Mapping[str, float]) -> FleetOrder:
    """Sequential when an order exists that never puts more on a link than ``limits`` allow, else stop all, start all."""
    names = tuple(j.job for j in jobs)
    if len(jobs) <= 1:
        return FleetOrder("sequential", names, "one job: nothing runs beside it in a mixed state",
                          _stop_all_peak(jobs) if jobs else {})
    unknown = [j.job for j in jobs if j.old is None]
    if unknown:
        return FleetOrder("stop-all", names, f"the running placement's load of {', '.join(unknown)} is unknown, so no "
                          "mixed state can be checked: every job is stopped first, then all are started",
                          _stop_all_peak(jobs))
    order = _safe_sequence(jobs, limits)
    if order is not None:
        peak = _peak(jobs, order)
        tightest = max(((peak[link] / limits[link], link) for link in peak if limits.get(link)), default=None)
        at = f" (at most {tightest[0]:.0%} of {tightest[1]})" if tightest else ""
        return FleetOrder("sequential", order, "moving one job at a time in this order never puts more on a link "
                          f"than the plans allow{at}; each job is down only for its own redeploy", peak)
    for name in names:  # name one state that overloads, so the reason can be checked by hand
        state = state_load(jobs, frozenset({name}))
        worst = over_limit(state, limits)
        if worst:
            detail = "; ".join(f"{link} {state[link]:.2f} > {limits[link]:.2f} Mbit/s" for link in worst[:2])
            example = f" (e.g. {name} moved first: {detail})"
            break
    else:
        example = ""
    return FleetOrder("stop-all", names, "every order of moving one job at a time overloads a link in a mixed state"
                      f"{example}: every job is stopped first, then all are started", _stop_all_peak(jobs))
