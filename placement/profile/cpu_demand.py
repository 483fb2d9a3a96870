"""The CPU one subtask needs, from its profile: the busy-time rule, its calibration and its rate scaling (pure).

The cost model charges it (:mod:`placement.costmodel.demand`) and the profile calibrates against it
(:mod:`placement.profile.tm_cpu`), so it lives in the profile, which the cost model sits above.

**The busy-time rule.** Flink reports ``busyTimeMsPerSecond`` per subtask. Two readings cannot be used as they are:

* **NaN / missing** (Flink cannot tell, e.g. the metric was not yet sampled): the Flink autoscaler skips such
  readings. We do the same within a vertex: the subtask borrows the vertex's busy time per input record from its
  measured siblings (``busy_per_record · records_in``). If no sibling was measured, it falls back to
  :data:`MIN_CORES` and the plan marks the figure as an estimate.
* **0 while records flow** (the operator was so lightly loaded that busy time rounds to 0): the autoscaler reads this
  as infinite capacity. A plan must not: the subtask is charged :data:`MIN_CORES`.

Every subtask's busy-time figure is at least :data:`MIN_CORES` server cores — thread scheduling, timers and watermarks
are never free — until its CPU was measured (below).

**Calibration.** Where the profile measured TaskManager CPU (:mod:`placement.profile.tm_cpu`), a vertex may carry a
``cpu_calibration`` factor ``k_v``: below 1 where busy time overstated its CPU (a rate-limited source waiting in its
limiter reads busy), above 1 where it understated it (work outside busy time: serialising in the output flusher,
netty, timers — which moves with the subtask). ``k_v`` is what the vertex used over what this module charged it, and
that charge is floored (:func:`placement.profile.tm_cpu.calibrate` asks :func:`server_cores` for it), so ``k_v``
multiplies the floored figure: ``k_v · max(busy, MIN_CORES)`` is what the vertex used while profiled. Floored after
``k_v`` instead, a light operator's measured thread was charged the floor again: on the lab's Zoo job five such
subtasks on one Pi (0.001-0.004 of its cores each, measured) were charged 0.0167 each, a third of its prediction.
The TaskManager's own CPU is not a subtask's: :func:`placement.costmodel.demand.baseline_cores` gives it per host, and
the cost model takes it off the host's usable cores.

**Rate.** A subtask's CPU at ``X ×`` the profiled rates is ``c·(θ_v + (1 − θ_v)·X)``: ``c`` its calibrated cores at the
profiled rate and ``θ_v`` the vertex's ``cpu_fixed_share``, the part that does not grow with the rate (a thread's
wake-ups, a remote channel's netty work, a pacer's timer), fitted where the profile saw runs at different rates
(:mod:`placement.profile.tm_cpu`); 0 otherwise, when all of it scales. On a lab Pi the source's CPU per record fell
from 104 µs at 498 records/s to 42 µs at 3,600-5,300/s: scaled in proportion, a plan at 6.6× predicted 0.80 of the
Pi's core where 0.33 was used.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.profile.format import SubtaskProfile, VertexProfile

MIN_CORES = 0.005  # half a percent of a server core


@dataclass(frozen=True)
class CpuDemand:
    server_cores: float  # cores of a speed-1.0 host
    estimated: bool  # True when the busy-time rule had to fill in


def calibration(vertex: VertexProfile) -> float:
    """The vertex's measured-CPU factor on busy time (1 when the profile has none)."""
    return vertex.cpu_calibration if vertex.cpu_calibration is not None else 1.0


def fixed_share(vertex: VertexProfile) -> float:
    """``θ_v``: the share of the vertex's CPU at the profiled rate that does not grow with the rate (0 when unknown)."""
    return vertex.cpu_fixed_share or 0.0


def at_scale(cores: float, vertex: VertexProfile, rate_scale: float) -> float:
    """Cores measured at the profiled rate, at ``rate_scale ×`` it: ``c·(θ + (1 − θ)·X)``."""
    theta = fixed_share(vertex)
    return cores * (theta + (1.0 - theta) * rate_scale)


def _busy_per_record(vertex: VertexProfile) -> float | None:
    """Mean busy server-core-seconds per input record over subtasks with a usable reading (None if there are none)."""
    busy = records = 0.0
    for s in vertex.subtasks:
        rate = s.records_in_per_s or s.records_out_per_s
        if s.busy_ms_per_s and rate > 0:
            busy += s.busy_ms_per_s / 1000 * s.host_speed
            records += rate
    return busy / records if records > 0 else None


def _calibrated(vertex: VertexProfile, cores: float) -> float:
    """``k_v · max(cores, MIN_CORES)``: a busy-time figure floored, then calibrated (the module doc)."""
    return calibration(vertex) * max(cores, MIN_CORES)


def floor_cores(vertex: VertexProfile) -> float:
    """The least a subtask of ``vertex`` costs, in server cores: :data:`MIN_CORES`, calibrated (the module doc)."""
    return _calibrated(vertex, 0.0)


def server_cores(vertex: VertexProfile, subtask: SubtaskProfile, rate_scale: float = 1.0) -> CpuDemand:
    """Server cores subtask needs at ``rate_scale`` × the measured rate (the busy-time rule above), calibrated."""
    if subtask.busy_ms_per_s is not None and subtask.busy_ms_per_s > 0:
        cores = subtask.busy_ms_per_s / 1000 * subtask.host_speed
        return CpuDemand(_calibrated(vertex, at_scale(cores, vertex, rate_scale)), estimated=not subtask.confident)
    rate = subtask.records_in_per_s or subtask.records_out_per_s
    if subtask.busy_ms_per_s is None:
        per_record = _busy_per_record(vertex)
        if per_record is not None and rate > 0:
            return CpuDemand(_calibrated(vertex, at_scale(per_record * rate, vertex, rate_scale)), estimated=True)
        return CpuDemand(floor_cores(vertex), estimated=True)
    # busy == 0: lightly loaded; charge the floor. Only an estimate if records actually flowed.
    return CpuDemand(floor_cores(vertex), estimated=rate > 0)
