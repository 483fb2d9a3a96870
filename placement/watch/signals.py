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
* ``latency`` — a source → sink latency bound (``policy.max_latency_ms``) broken: **predicted**, a path whose latency
  the cost model gives for the running placement under the window's load is over its bound (like ``link``, no
  sustained windows: the model already averages the window), or **measured**, where the profile carries Flink's latency
  markers, a source → sink pair's p50 over its bound in each of the last ``sustained_windows`` windows of the same job
  (one window's spike is no drift). A job without a bound has no latency drift;
* ``taskmanager-lost`` / ``taskmanager-added`` — the registered TaskManagers differ from the baseline's;
* ``forecast`` — ``watch --forecast`` only, not detected here: the plan in effect is predicted to break within the
  lead time (:mod:`placement.watch.foresight`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from placement.costmodel.evaluate import LinkLoad, PlanCost
from placement.costmodel.latency import PathLatency
from placement.profile.format import JobProfile

KINDS = (
    "rate",
    "backpressure",
    "link",
    "latency",
    "taskmanager-lost",
    "taskmanager-added",
    "contingency",
    "forecast",
)
LatencyBasis = Literal["predicted", "measured"]  # the cost model's figure, or Flink's latency markers'


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
    # the cost model's source → sink paths of the running placement under this load, each with its bound (if any)
    paths: tuple[PathLatency, ...] = ()
    # measured p50 ms per source → sink pair (pair_key: "source name → sink name"), from Flink's latency markers
    latency: Mapping[str, float] = field(default_factory=dict)
    latency_bounds: Mapping[str, float] = field(default_factory=dict)  # pair_key -> policy.max_latency_ms

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
    basis: LatencyBasis | None = None  # a latency drift's (None: any other kind)
    job: str | None = None  # watching several jobs: whose drift (None: one job watched, or a capacity they share)


def source_rates(profile: JobProfile) -> dict[str, float]:
    """Records/s out of each source vertex (no edge leads into it), all its subtasks together."""
    return {v.name: float(v.records_out_per_s) for v in profile.sources()}


def pair_key(source: str, sink: str) -> str:
    """How a source → sink pair is named in a window: "Source: Sensors → Sink: Readings" (vertex names)."""
    return f"{source} → {sink}"


def measured_latency(profile: JobProfile) -> dict[str, float]:
    """The measured p50 ms of each source → sink pair the profile's latency markers cover (empty: not tracked).

    The p50, not the p99: the bound is on the *mean* path latency the cost model predicts, and the median is the
    robust measured figure closest to a mean (markers' tails carry GC pauses and checkpoint alignments the model
    does not price)."""
    names = {v.id: v.name for v in profile.vertices}
    return {
        pair_key(names.get(m.source, m.source), names.get(m.sink, m.sink)): float(m.p50_ms)
        for m in profile.latency
        if m.p50_ms is not None
    }


def latency_bounds_by_name(
    profile: JobProfile, bounds: Mapping[tuple[str, str], float] | None, cost: PlanCost | None
) -> dict[str, float]:
    """``policy.max_latency_ms`` per source → sink pair, by name: ``bounds`` (the problem's ``latency_bounds``,
    (source id, sink id) -> ms) where given, else what the cost model's paths carry."""
    names = {v.id: v.name for v in profile.vertices}
    if bounds is None:
        bounds = {
            (p.vertices[0], p.vertices[-1]): p.bound_ms for p in (cost.paths if cost else ()) if p.bound_ms is not None
        }
    return {pair_key(names.get(s, s), names.get(t, t)): float(ms) for (s, t), ms in bounds.items()}


def window_from_profile(
    profile: JobProfile,
    cost: PlanCost | None,
    *,
    start_ms: int,
    end_ms: int,
    job_id: str,
    taskmanagers: frozenset[str] = frozenset(),
    fresh_source_rates: Mapping[str, float] | None = None,
    latency_bounds: Mapping[tuple[str, str], float] | None = None,
) -> Window:
    """A window from its profile and the running placement priced under it (``cost``: the cost model's
    :func:`~placement.costmodel.evaluate.evaluate` of the assignment that ran; None when it could not be priced).
    ``latency_bounds``: the problem's ``latency_bounds`` ((source id, sink id) -> ms; None: those ``cost``'s paths
    carry — a window whose placement could not be priced still holds measured latency to the bound that way)."""
    backpressure = {}
    for v in profile.vertices:
        values = [s.backpressured_ms_per_s for s in v.subtasks if s.backpressured_ms_per_s is not None]
        if values:
            backpressure[v.name] = sum(values) / len(values)
    links = tuple(cost.links) if cost else ()
    return Window(
        start_ms=start_ms,
        end_ms=end_ms,
        job_id=job_id,
        source_rates=source_rates(profile),
        backpressure=backpressure,
        links=links,
        taskmanagers=taskmanagers,
        violations=tuple(cost.violations) if cost else (),
        fresh_source_rates=dict(fresh_source_rates or {}),
        paths=tuple(cost.paths) if cost else (),
        latency=measured_latency(profile),
        latency_bounds=latency_bounds_by_name(profile, latency_bounds, cost),
    )


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


def detect(
    baseline: Baseline, windows: Sequence[Window], thresholds: DriftThresholds = DriftThresholds()
) -> list[Drift]:
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
            drifts.append(
                Drift(
                    "rate",
                    name,
                    measured,
                    reference,
                    f"source {name}: {measured:,.0f} records/s vs {reference:,.0f} planned ({moved:+.0%})"
                    if reference > 0
                    else f"source {name}: {measured:,.0f} records/s vs 0 planned",
                )
            )
    same_job = [w for w in windows if w.job_id == now.job_id][-thresholds.sustained_windows :]
    if len(same_job) == thresholds.sustained_windows:
        for name in sorted(now.backpressure):
            values = [w.backpressure.get(name) for w in same_job]
            if all(v is not None and v > thresholds.backpressure_ms for v in values):
                drifts.append(
                    Drift(
                        "backpressure",
                        name,
                        now.backpressure[name],
                        thresholds.backpressure_ms,
                        f"{name}: back-pressured {now.backpressure[name]:.0f} ms/s in each of the last "
                        f"{len(same_job)} windows (limit {thresholds.backpressure_ms:.0f})",
                    )
                )
    drifts += link_drifts(now.links)
    drifts += predicted_latency_drifts(now) + measured_latency_drifts(same_job, thresholds)
    return drifts + taskmanager_drifts(baseline, now.taskmanagers)


def link_drifts(links: Sequence[LinkLoad], shares: Mapping[str, Mapping[str, float]] | None = None) -> list[Drift]:
    """Uplinks whose use is above their usable bandwidth. ``shares`` (several jobs: job -> uplink host -> its Mbit/s)
    names each job's part of a shared uplink's use in the message."""
    out = []
    for link in links:
        if link.mbit <= link.usable_mbit:
            continue
        parts = {job: mine[link.host] for job, mine in (shares or {}).items() if mine.get(link.host, 0.0) > 0}
        whose = f" ({', '.join(f'{job} {mbit:.2f}' for job, mbit in parts.items())})" if parts else ""
        out.append(
            Drift(
                "link",
                link.host,
                link.mbit,
                link.usable_mbit,
                f"uplink {link.host}: {link.mbit:.2f} Mbit/s of job data{whose}, usable {link.usable_mbit:.2f} "
                f"(of {link.bandwidth_mbit:g})",
            )
        )
    return out


def of_job(drifts: Sequence[Drift], job: str) -> list[Drift]:
    """Several jobs watched: ``job``'s drifts, each naming it (field and message)."""
    return [replace(d, job=job, message=f"job {job}: {d.message}" if d.message else f"job {job}") for d in drifts]


def predicted_latency_drifts(now: Window) -> list[Drift]:
    """Paths whose predicted latency under the window's load (the cost model's, for the running placement) is over
    their bound. ``inf``: a crossed uplink is past the utilisation whose queue has a bound."""
    out = []
    for p in now.paths:
        if p.bound_ms is None or not p.over_bound:
            continue
        figure = f"{p.latency_ms:.1f} ms" if math.isfinite(p.latency_ms) else "no bound (an uplink past 99 %)"
        where = f" ({p.link} at {p.utilisation:.0%})" if p.link and p.utilisation is not None else ""
        out.append(
            Drift(
                "latency",
                p.name,
                p.latency_ms,
                p.bound_ms,
                f"path {p.name}: predicted {figure} under the measured load{where}, bound {p.bound_ms:g} ms",
                basis="predicted",
            )
        )
    return out


def measured_latency_drifts(same_job: Sequence[Window], thresholds: DriftThresholds) -> list[Drift]:
    """Source → sink pairs whose measured p50 is over their bound in each of the last ``sustained_windows`` windows
    of the job (``same_job``: the newest last): one window's spike is no drift."""
    if len(same_job) < thresholds.sustained_windows:
        return []
    now = same_job[-1]
    out = []
    for key in sorted(now.latency_bounds):
        bound = now.latency_bounds[key]
        values = [w.latency.get(key) for w in same_job]
        if all(v is not None and v > bound for v in values):
            out.append(
                Drift(
                    "latency",
                    key,
                    now.latency[key],
                    bound,
                    f"{key}: measured p50 {now.latency[key]:.1f} ms in each of the last {len(same_job)} "
                    f"windows, bound {bound:g} ms",
                    basis="measured",
                )
            )
    return out


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
    return [
        Drift("taskmanager-lost", tm, message=f"TaskManager {tm} is gone")
        for tm in sorted(baseline.taskmanagers - registered)
    ] + [
        Drift("taskmanager-added", tm, message=f"TaskManager {tm} registered")
        for tm in sorted(registered - baseline.taskmanagers)
    ]
