"""The order in which several jobs are moved onto their new plans, as one change (pure, no I/O).

Moving a job is: stop it with a savepoint, resubmit it on its new placement, verify. Done one job after the other,
the fleet passes through mixed states — the jobs moved so far on their new placement, the others still on their old
one — and a mixed state can put more on an uplink or a host than either the old or the new placement does (job A
moves onto the uplink, or into a Pi's slots, before job B has moved off it). A job being moved is stopped, so its load
is off every link and host meanwhile: the only states to check are the ones after each move, where the moved jobs run
new and the rest old.

What a state is checked on (:class:`Resource`), each as the cost model counts it, and each a sum over the jobs:

* an uplink's Mbit/s, against its usable Mbit/s;
* a host's cores — its subtasks', against its usable cores: the TaskManager's own baseline is already off the
  usable figure, once per host, since one TaskManager runs every job there;
* a host's task slots — jobs never share a slot, so what a host fills is the sum over jobs of each job's largest
  vertex there (slot sharing within a job), against its slots;
* a host's memory — its subtasks' MiB (each a fixed share plus its part of its vertex's state, as the planner's
  memory rows sum them), against its usable MiB (under the memory target, less what other running jobs hold): a job
  with large state moving onto a Pi before another has left it can overfill its memory while CPU and slots still fit.

:func:`choose_order` finds a sequential order whose every such state keeps each of them within what the plans allow,
trying the fleet's own job order first. When none exists — or a job's old load is unknown, so no mixed state can be
judged — it falls back to stopping every job first and starting them all on their new placement: then the fleet only
ever runs a part of the new plans, which the plans allow. Sequential is preferred when it is safe because each job is
down only for its own redeploy; stop-all keeps the first job stopped while all the others are stopped and started too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from placement.units import figures_apart

EPS = 1e-6  # rounding in the cost model's sums: a state exactly at the limit is within it

Kind = Literal["uplink", "cores", "slots", "memory"]


@dataclass(frozen=True, order=True)
class Resource:
    """What a state is checked on: an uplink (``name`` is the link, ``rpi1→server``) or a host's cores, slots or
    memory (``name`` is the host)."""

    kind: Kind
    name: str

    def describe(self) -> str:
        return self.name if self.kind == "uplink" else f"{self.name}'s {self.kind}"


def uplink(link: str) -> Resource:
    return Resource("uplink", link)


def cores(host: str) -> Resource:
    return Resource("cores", host)


def slots(host: str) -> Resource:
    return Resource("slots", host)


def memory(host: str) -> Resource:
    return Resource("memory", host)


Loads = Mapping[Resource, float]  # Mbit/s on an uplink; cores, slots or MiB on a host


@dataclass(frozen=True)
class JobLoads:
    """One job's load per resource: on the placement it runs now (``old``; None when it cannot be known) and
    planned."""

    job: str
    old: Loads | None
    new: Loads


@dataclass(frozen=True)
class FleetOrder:
    strategy: Literal["sequential", "stop-all"]
    jobs: tuple[str, ...]  # the order jobs are moved (sequential) or stopped and started (stop-all)
    reason: str  # one line: why this strategy (a sequential one names the resource it comes closest to filling)


def state_load(jobs: Sequence[JobLoads], moved: frozenset[str], steady: Loads | None = None) -> dict[Resource, float]:
    """Per resource: the moved jobs on their new placement plus the others on their old one (old loads must be
    known), plus ``steady`` (the fleet's jobs whose plan is in effect already: they run through every state). Every
    resource adds up over jobs — slots too, since jobs never share one."""
    total: dict[Resource, float] = dict(steady or {})
    for j in jobs:
        loads = j.new if j.job in moved else j.old
        assert loads is not None
        for res, amount in loads.items():
            total[res] = total.get(res, 0.0) + amount
    return total


def over_limit(load: Mapping[Resource, float], limits: Mapping[Resource, float]) -> list[Resource]:
    """Resources where ``load`` exceeds its limit (resources without a limit are not judged)."""
    return [res for res, amount in sorted(load.items()) if res in limits and amount > limits[res] + EPS]


def overload_sentence(res: Resource, amount: float, limit: float) -> str:
    """How one overloaded resource reads in a reason: ``rpi1's slots would be 5 of 4``."""
    if res.kind == "uplink":
        return f"{res.name} would carry {amount:.2f} Mbit/s of {limit:.2f} usable"
    if res.kind == "cores":
        return f"{res.describe()} would be {amount:.2f} of {limit:.2f} usable"
    if res.kind == "memory":
        need, usable = figures_apart(amount, limit, 0)  # 0.4 MiB over must not read "1024 of 1024"
        return f"{res.describe()} would be {need} of {usable} MiB usable"
    return f"{res.describe()} would be {amount:.0f} of {limit:.0f}"


def _safe_sequence(jobs: Sequence[JobLoads], limits: Mapping[Resource, float], steady: Loads) -> tuple[str, ...] | None:
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
            if not over_limit(state_load(jobs, after, steady), limits):
                found = extend(after, (*order, name))
                if found is not None:
                    return found
            dead.add(after)
        return None

    return extend(frozenset(), ())


def _peak(jobs: Sequence[JobLoads], order: Sequence[str], steady: Loads) -> dict[Resource, float]:
    """The most any state of moving ``order`` one at a time puts on each resource (what the reason's "at most"
    reads)."""
    peak: dict[Resource, float] = {}
    for k in range(len(order) + 1):
        for res, amount in state_load(jobs, frozenset(order[:k]), steady).items():
            peak[res] = max(peak.get(res, 0.0), amount)
    return peak


def _tightest(peak: Mapping[Resource, float], limits: Mapping[Resource, float]) -> str:
    """`` (at most 80% of rpi1's slots)``: the resource the chosen sequence comes closest to filling."""
    tightest = max(((peak[res] / limits[res], res) for res in peak if limits.get(res)), default=None)
    return f" (at most {tightest[0]:.0%} of {tightest[1].describe()})" if tightest else ""


def _overload_example(jobs: Sequence[JobLoads], limits: Mapping[Resource, float], steady: Loads) -> str:
    """One mixed state that overloads, named so the reason can be checked by hand: a first move when one overloads,
    else the fleet's own order as far as its first overloading state (when no order is safe, that one is not
    either)."""
    names = [j.job for j in jobs]
    candidates = [(name,) for name in names] + [tuple(names[:k]) for k in range(2, len(names))]
    for moved in candidates:
        state = state_load(jobs, frozenset(moved), steady)
        worst = over_limit(state, limits)
        if worst:
            detail = "; ".join(overload_sentence(res, state[res], limits[res]) for res in worst[:2])
            how = f"{moved[0]} first" if len(moved) == 1 else " then ".join(moved)
            return f" (e.g. {detail} after moving {how})"
    return ""


def choose_order(jobs: Sequence[JobLoads], limits: Mapping[Resource, float], steady: Loads | None = None) -> FleetOrder:
    """Sequential when an order exists that never puts more on an uplink or a host than ``limits`` allow, else stop
    all, start all. ``steady``: what the fleet's jobs that are not moved (their plan is in effect) put on each
    resource, in every state."""
    steady = steady or {}
    names = tuple(j.job for j in jobs)
    if len(jobs) <= 1:
        return FleetOrder("sequential", names, "one job: nothing runs beside it in a mixed state")
    unknown = [j.job for j in jobs if j.old is None]
    if unknown:
        return FleetOrder(
            "stop-all",
            names,
            f"the running placement's load of {', '.join(unknown)} is unknown, so no "
            "mixed state can be checked: every job is stopped first, then all are started",
        )
    order = _safe_sequence(jobs, limits, steady)
    if order is not None:
        peak = _peak(jobs, order, steady)
        return FleetOrder(
            "sequential",
            order,
            "moving one job at a time in this order never puts more on a link or "
            f"host than the plans allow{_tightest(peak, limits)}; each job is down only for its own "
            "redeploy",
        )
    return FleetOrder(
        "stop-all",
        names,
        "every order of moving one job at a time overloads a link or host in a mixed "
        f"state{_overload_example(jobs, limits, steady)}: every job is stopped first, then all are "
        "started",
    )


def stop_all_asked(jobs: Sequence[JobLoads]) -> FleetOrder:
    """Stop all, start all because the user asked for it (``apply --fleet-order stop-all``): no mixed state ever
    runs, so there is nothing to check; each job is down from the first stop to its own restart."""
    return FleetOrder(
        "stop-all",
        tuple(j.job for j in jobs),
        "asked for (--fleet-order stop-all): every job is stopped first, then all are started",
    )
