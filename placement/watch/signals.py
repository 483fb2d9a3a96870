"""What a window showed, and how it drifted from what the plan in effect was made for. Pure.

A :class:`Window` is built from the window's profile (the same rules as ``placement profile``) priced by the cost
model under the placement that actually ran (:func:`window_from_profile`), so "a link's measured use" is the job data
the measured records and bytes put on each uplink — the figure the cost model matched on the wire within a few per
cent (README, the lab). A :class:`Baseline` is what the plan in effect was made for: its profile's source rates and
the TaskManagers registered then. :func:`detect` compares them:

* ``rate`` — a source's records/s (over the last tick from its counter where known, else the window's) moved by
  more than ``rate_change`` (relative) from the baseline — after a change, the first warm window is held to the rates
  the applied plan was made for within the tighter ``reprice_change``: a plan made while a saturated link held the
  sources back is made for less than they send once it is lifted, and its prediction is then re-made for the load
  the new placement carries;
* ``backpressure`` — a vertex back-pressured above ``backpressure_ms`` ms/s in each of the last ``sustained_windows``
  windows of the same job (one window's spike is no drift);
* ``link`` — an uplink's use above its usable bandwidth (bandwidth × the inventory's ``wan_headroom``);
* ``taskmanager-lost`` / ``taskmanager-added`` — the registered TaskManagers differ from the baseline's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from placement.costmodel.evaluate import LinkLoad, PlanCost
from placement.profile.format import JobProfile

KINDS = ("rate", "backpressure", "link", "taskmanager-lost", "taskmanager-added")


@dataclass(frozen=True)
class Window:
    """One window of the running job, as plain numbers."""

    start_ms: int
    end_ms: int
    job_id: str
    source_rates: Mapping[str, float]  # source vertex name -> records/s out, all its subtasks
    backpressure: Mapping[str, float]  # vertex name -> back-pressured ms/s, mean over its subtasks that reported it
    links: tuple[LinkLoad, ...] = ()  # the cost model's uplink loads of the running placement under this load
    taskmanagers: frozenset[str] = frozenset()
    violations: tuple[str, ...] = ()  # the cost model's capacity breaches of the running placement under this load
    # records/s of each source over the last tick, from its numRecordsOut counter: Flink's *PerSecond meters (and so
    # the profile) average 60 s, a counter's difference follows a step within one tick
    fresh_source_rates: Mapping[str, float] = field(default_factory=dict)

    def rates_now(self) -> Mapping[str, float]:
        """The freshest source rates known: the counters' where there are, else the window's."""
        return {**self.source_rates, **self.fresh_source_rates}

    def max_backpressure(self) -> float:
        return max(self.backpressure.values(), default=0.0)


@dataclass(frozen=True)
class Baseline:
    """What the plan in effect was made for."""

    source_rates: Mapping[str, float]
    taskmanagers: frozenset[str] = frozenset()
    plan_dir: str | None = None  # the plan in effect (None: the placement that ran when the watch started)
    rate_change: float | None = None  # this baseline's own tolerance for a rate drift (None: the thresholds')


@dataclass(frozen=True)
class DriftThresholds:
    rate_change: float = 0.25
    backpressure_ms: float = 100.0
    sustained_windows: int = 2
    reprice_change: float = 0.10  # the first warm window after a change vs the rates its plan was made for

    def __post_init__(self) -> None:
        if self.rate_change <= 0 or self.reprice_change <= 0:
            raise ValueError("rate_change and reprice_change must be > 0")
        if not 0 < self.backpressure_ms <= 1000:
            raise ValueError("backpressure_ms must be in (0, 1000]")
        if self.sustained_windows < 1:
            raise ValueError("sustained_windows must be >= 1")


@dataclass(frozen=True)
class Drift:
    kind: str  # one of KINDS
    subject: str  # source or vertex name, edge host, TaskManager id
    measured: float | None = None
    reference: float | None = None
    message: str = field(default="", compare=False)


def source_rates(profile: JobProfile) -> dict[str, float]:
    """Records/s out of each source vertex (no edge leads into it), all its subtasks together."""
    return {v.name: float(v.records_out_per_s) for v in profile.sources()}


def window_from_profile(profile: JobProfile, cost: PlanCost | None, *, start_ms: int, end_ms: int, job_id: str,
                        taskmanagers: frozenset[str] = frozenset(),
                        fresh_source_rates: Mapping[str, float] | None = None) -> Window:
    """A window from its profile and the running placement priced under it (``cost``: the cost model's
    :func:`~placement.costmodel.evaluate.evaluate` of the assignment that ran; None when it could not be priced)."""
    backpressure = {}
    for v in profile.vertices:
        values = [s.backpressured_ms_per_s for s in v.subtasks if s.backpressured_ms_per_s is not None]
        if values:
            backpressure[v.name] = sum(values) / len(values)
    links = tuple(cost.links) if cost else ()
    return Window(start_ms=start_ms, end_ms=end_ms, job_id=job_id, source_rates=source_rates(profile),
                  backpressure=backpressure, links=links, taskmanagers=taskmanagers,
                  violations=tuple(cost.violations) if cost else (), fresh_source_rates=dict(fresh_source_rates or {}))


def demand_scale(window: Window, limit: float) -> float:
    """The multiple of the window's profiled rates the sources want now, capped at ``limit``: the larger of what
    their counters show over the last tick (a step the 60 s meters have not caught up with yet) and, for a source
    back-pressured a share b of the time, 1/(1-b) (it sends that much less than it would)."""
    scale = 1.0
    for name, profiled in window.source_rates.items():
        fresh = window.fresh_source_rates.get(name)
        if fresh is not None and profiled > 0:
            scale = max(scale, fresh / profiled)
        bp = window.backpressure.get(name, 0.0)
        scale = max(scale, 1.0 / max(1e-3, 1.0 - bp / 1000.0))
    return min(limit, scale)


def detect(baseline: Baseline, windows: Sequence[Window], thresholds: DriftThresholds = DriftThresholds()) -> list[Drift]:
    """The drifts of the newest window (``windows[-1]``; the ones before it only count for sustained backpressure)."""
    if not windows:
        return []
    now = windows[-1]
    drifts: list[Drift] = []
    rates = now.rates_now()
    limit = baseline.rate_change if baseline.rate_change is not None else thresholds.rate_change
    for name, reference in sorted(baseline.source_rates.items()):
        measured = rates.get(name)
        if measured is None:
            continue
        moved = (measured - reference) / reference if reference > 0 else (1.0 if measured > 0 else 0.0)
        if abs(moved) > limit:
            drifts.append(Drift("rate", name, measured, reference,
                                f"source {name}: {measured:,.0f} records/s vs {reference:,.0f} planned ({moved:+.0%})"
                                if reference > 0 else f"source {name}: {measured:,.0f} records/s vs 0 planned"))
    same_job = [w for w in windows if w.job_id == now.job_id][-thresholds.sustained_windows:]
    if len(same_job) == thresholds.sustained_windows:
        for name in sorted(now.backpressure):
            values = [w.backpressure.get(name) for w in same_job]
            if all(v is not None and v > thresholds.backpressure_ms for v in values):
                drifts.append(Drift("backpressure", name, now.backpressure[name], thresholds.backpressure_ms,
                                    f"{name}: back-pressured {now.backpressure[name]:.0f} ms/s in each of the last "
                                    f"{len(same_job)} windows (limit {thresholds.backpressure_ms:.0f})"))
    for link in now.links:
        if link.mbit > link.usable_mbit:
            drifts.append(Drift("link", link.host, link.mbit, link.usable_mbit,
                                f"uplink {link.host}: {link.mbit:.2f} Mbit/s of job data, usable {link.usable_mbit:.2f} "
                                f"(of {link.bandwidth_mbit:g})"))
    return drifts + taskmanager_drifts(baseline, now.taskmanagers)


def still_moving(windows: Sequence[Window], tolerance: float = 0.15) -> str | None:
    """Why a re-plan should wait for the sources' rates to settle: a source whose counter rate moved by more than
    ``tolerance`` since the previous tick of the same job (a step under way: the first tick after it sees part of
    it, and a plan made for that part would be made for the wrong load). None when settled or unknown."""
    if len(windows) < 2 or windows[-1].job_id != windows[-2].job_id:
        return None
    now, before = windows[-1].fresh_source_rates, windows[-2].fresh_source_rates
    for name in sorted(now):
        a, b = before.get(name), now[name]
        if a is not None and max(a, b) > 0 and abs(b - a) / max(a, b) > tolerance:
            return f"source {name} is still moving ({a:,.0f} -> {b:,.0f} records/s over the last tick)"
    return None


def taskmanager_drifts(baseline: Baseline, registered: frozenset[str]) -> list[Drift]:
    """TaskManagers lost or added since the baseline (also while the job cannot be observed: a lost TaskManager
    with pinned subtasks keeps the job from running)."""
    if not baseline.taskmanagers or not registered:
        return []
    return ([Drift("taskmanager-lost", tm, message=f"TaskManager {tm} is gone")
             for tm in sorted(baseline.taskmanagers - registered)]
            + [Drift("taskmanager-added", tm, message=f"TaskManager {tm} registered")
               for tm in sorted(registered - baseline.taskmanagers)])
