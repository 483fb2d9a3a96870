"""Measured TaskManager CPU against busy time: each TaskManager's own baseline, and per-vertex calibration factors.

Busy time (``busyTimeMsPerSecond``) is what the cost model charges a subtask, but it is not the CPU the host spends:
a TaskManager JVM burns CPU no subtask carries (GC, netty, metric reporting, heartbeats), and a rate-limited or
mostly idle source reads busy while its thread waits in the rate limiter. The collectors record each TaskManager's
JVM process CPU (``Status.JVM.CPU.Time``, cumulative ns of all its threads) beside the samples
(:data:`placement.collect.layout.TASKMANAGER_METRICS`); this module sets the two against each other.

**Per TaskManager t** (all figures in cores *of t's host* until said otherwise; ``σ_t`` its host speed):

* ``P_t`` = the process's cores: ``Σ Δcpu_time / Σ Δt`` over consecutive samples after the warm-up (times the
  inventory's ``cpu_time_core_speed / speed`` where the host's CPU time counts faster cores than its own: a lab host
  is a CPU quota on this machine, so its JVM's CPU time is in this machine's cores) (a counter
  that goes down — a restarted TaskManager — drops that pair). Flink's REST API answers from the JobManager's
  metric store, refreshed every ``metrics.fetcher.update-interval`` (10 s by default), so the same value comes back
  for several polls: only the samples at which the value changed are paired (each is at most one poll interval
  after the refresh that brought it), not the poll times of repeated readings. Without ``CPU.Time``: mean ``CPU.Load`` × the
  machine's cores.
* ``B_t = Σ_v B_{t,v}``: what the cost model charges the job's subtasks on t — the busy-time rule of
  :func:`placement.costmodel.demand.server_cores` (floor and NaN rule included) divided by ``σ_t``.
* ``R_t = P_t - B_t``, the residual.

**Baseline** ``b_t`` (the TaskManager's own CPU, a constant: not proportional to records):

* ``idle`` — t runs no subtask of the job: ``b_t = P_t``, measured directly.
* ``residual`` — ``R_t ≥ 0``: busy time does not overstate; the whole residual is t's baseline (CPU the subtasks
  spend outside their busy time, e.g. serialising in the output flusher, is in it too: it does not grow with a
  rescaled rate — a limit of this rule).
* ``prior`` — ``R_t < 0``: busy time overstates on t, so the residual says nothing of the baseline. It is taken
  from elsewhere: the inventory's ``taskmanager_baseline_cores`` for t's host, else the median idle baseline of this
  history's idle TaskManagers in server cores (``b·σ``) converted to t's cores; ``floor`` when neither is known
  (``b_t = 0``, not confident).

**Calibration** (only when ``R_t < 0``): the job's subtasks on t used ``P_t - b_t`` cores where ``B_t`` was charged.
The overstatement ``D_t = B_t - (P_t - b_t)`` is identifiable per vertex only in two cases, and only then assigned:

* one vertex alone on t: ``k_{v,t} = (P_t - b_t) / B_{t,v}`` (``alone``);
* several, with sources among them whose charge covers ``D_t`` — the known case, a rate-limited source whose busy
  time reads high: ``k_{src,t} = (B_{t,src} - D_t) / B_{t,src}``, the others 1 (``source``);
* otherwise every vertex on t gets ``(P_t - b_t) / B_t`` (``shared``, not confident).

A vertex's factor is the charge-weighted mean over the TaskManagers it ran on (1 where t was not calibrated):
``k_v = Σ_t k_{v,t}·B_{t,v} / Σ_t B_{t,v}``; the cost model multiplies its busy-time cores by ``k_v`` (so k ≤ 1:
only an overstatement is calibrated away; an understatement stays in the baseline, which is the conservative side).

Only the runs whose subtasks ran where the newest run with TaskManager CPU says are pooled (another placement puts
other subtasks on each TaskManager). A history without TaskManager CPU leaves the profile as it was.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from placement.collect.layout import RunManifest
from placement.costmodel import demand
from placement.inventory import Inventory
from placement.profile.format import JobProfile, TaskManagerCpu
from placement.profile.rules import cpu_time_to_host_cores, inventory_host_of

MIN_CONFIDENT_PAIRS = 5  # sample pairs of the CPU counter behind a confident figure
MIN_FACTOR = 0.01  # a factor below this is a measurement problem, not a calibration


@dataclass
class _Measured:
    cpu_s: float = 0.0  # Σ Δcpu_time over usable pairs, seconds
    wall_s: float = 0.0
    pairs: int = 0
    loads: list[float] | None = None
    samples: int = 0


def _measure(rows: dict[str, np.ndarray], since_ms: int, into: dict[str, _Measured]) -> None:
    """Add one run's TaskManager rows at or after ``since_ms`` (all of them if that leaves fewer than 3 per TM)."""
    for tm in np.unique(rows["taskmanager_id"]):
        mine = rows["taskmanager_id"] == tm
        ts, cpu, load = rows["ts_ms"][mine], rows["cpu_time_ns"][mine], rows["cpu_load"][mine]
        order = np.argsort(ts, kind="stable")
        ts, cpu, load = ts[order], cpu[order], load[order]
        late = ts >= since_ms
        if late.sum() >= 3:
            ts, cpu, load = ts[late], cpu[late], load[late]
        m = into.setdefault(str(tm), _Measured(loads=[]))
        m.samples += len(ts)
        ok = np.isfinite(cpu)
        t_ok, c_ok = ts[ok], cpu[ok]
        changed = np.flatnonzero(np.diff(c_ok) != 0) + 1
        if len(changed) >= 2:  # pair the first readings of each new value: see the module doc
            t_ok, c_ok = t_ok[changed], c_ok[changed]
        dt = np.diff(t_ok) / 1000.0
        dc = np.diff(c_ok) / 1e9
        good = (dt > 0) & (dc >= 0)
        m.cpu_s += float(dc[good].sum())
        m.wall_s += float(dt[good].sum())
        m.pairs += int(good.sum())
        m.loads.extend(float(x) for x in load[np.isfinite(load)])  # type: ignore[union-attr]


def _mapping(m: RunManifest) -> dict[tuple[str, int], str | None]:
    return {(loc.vertex_id, loc.subtask): loc.taskmanager_id for loc in m.locations}


def calibrate(profile: JobProfile, runs: Sequence[tuple[RunManifest, pa.Table]], *, warmup_s: float = 60.0,
              inventory: Inventory | None = None) -> JobProfile:
    """The profile with each TaskManager's measured CPU and baseline (``profile.taskmanagers``) and its vertices'
    ``cpu_calibration``, from each run's TaskManager CPU rows (``read_taskmanager_cpu``; the caller reads them);
    the profile unchanged when no run recorded TaskManager CPU."""
    with_cpu = [(m, table) for m, table in runs if m.taskmanager_files]
    if not with_cpu:
        return profile
    newest = with_cpu[-1][0]
    placement = _mapping(newest)
    pooled = [(m, table) for m, table in with_cpu if _mapping(m) == placement]
    measured: dict[str, _Measured] = {}
    for m, table in pooled:
        if table.num_rows == 0:
            continue
        rows = {c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names}
        rows["cpu_time_ns"] = rows["cpu_time_ns"].astype(np.float64)
        rows["cpu_load"] = rows["cpu_load"].astype(np.float64)
        _measure(rows, m.started_ms + int(warmup_s * 1000), measured)
    if not measured:
        return profile
    infos = {tm.id: tm for m, _ in pooled for tm in m.taskmanagers}

    # what the cost model charges each vertex on each TaskManager, in that host's cores
    charge: dict[str, dict[str, float]] = {tm: {} for tm in measured}
    speeds: dict[str, float] = {}
    hosts: dict[str, str | None] = {}
    for tm in measured:
        h = inventory_host_of(tm, infos[tm].host if tm in infos else None, inventory)
        speeds[tm], hosts[tm] = (float(h.speed or 1.0), h.name) if h is not None else (1.0, None)
    sources = {v.id for v in profile.sources()}
    for v in profile.vertices:
        for s in v.subtasks:
            tm = placement.get((v.id, s.index))
            if tm in charge:
                charge[tm][v.id] = charge[tm].get(v.id, 0.0) + demand.server_cores(v, s).server_cores / speeds[tm]

    process: dict[str, float] = {}
    load_cores: dict[str, float | None] = {}  # mean CPU.Load x the machine's cores, in the host's cores
    for tm, m in measured.items():
        to_host = cpu_time_to_host_cores(inventory, hosts[tm])  # a lab host's CPU time counts this machine's cores
        info = infos.get(tm)
        load_cores[tm] = (statistics.fmean(m.loads) * float(info.hardware_cpu_cores) * to_host
                          if m.loads and info is not None and info.hardware_cpu_cores else None)
        if m.pairs > 0 and m.wall_s > 0:
            process[tm] = m.cpu_s / m.wall_s * to_host
        elif load_cores[tm] is not None:
            process[tm] = load_cores[tm]
    idle_server = [process[tm] * speeds[tm] for tm in process if not charge[tm]]
    idle_prior = statistics.median(idle_server) if idle_server else None

    def prior(tm: str) -> float | None:
        h = hosts[tm]
        if inventory is not None and h is not None:
            given = inventory.host(h).taskmanager_baseline_cores
            if given is not None:
                return float(given)
        return None if idle_prior is None else idle_prior / speeds[tm]

    factors: dict[str, dict[str, float]] = {}  # vertex -> tm -> k
    bases: dict[str, str] = {}
    out: list[TaskManagerCpu] = []
    for tm in sorted(measured):
        m, info = measured[tm], infos.get(tm)
        p = process.get(tm)
        b_charge = sum(charge[tm].values())
        enough = m.pairs >= MIN_CONFIDENT_PAIRS
        if p is None:
            out.append(TaskManagerCpu(id=tm, host=info.host if info else None, inventory_host=hosts[tm],
                                      host_speed=speeds[tm], samples=m.samples, subtasks=_count(placement, tm),
                                      charged_cores=b_charge, load_cores=load_cores[tm], basis="unmeasured",
                                      confident=False))
            continue
        calibrated = b_charge
        if not charge[tm]:
            baseline, basis, confident = p, "idle", enough
        elif p - b_charge >= 0:
            baseline, basis, confident = p - b_charge, "residual", enough
        else:
            given = prior(tm)
            baseline, basis, confident = (min(given, p), "prior", enough) if given is not None else (0.0, "floor", False)
            used = p - baseline
            calibrated = used
            for vid, k in _split(charge[tm], sources, used).items():
                factors.setdefault(vid, {})[tm] = k
                bases.setdefault(vid, _which(charge[tm], sources, used) + f" on {tm}")
        out.append(TaskManagerCpu(
            id=tm, host=info.host if info else None, inventory_host=hosts[tm], host_speed=speeds[tm],
            samples=m.samples, subtasks=_count(placement, tm), process_cores=p, load_cores=load_cores[tm],
            charged_cores=b_charge, calibrated_cores=calibrated, baseline_cores=baseline,
            baseline_server_cores=baseline * speeds[tm], basis=basis, confident=confident,
        ))

    vertices = []
    for v in profile.vertices:
        if v.id not in factors:
            vertices.append(v)
            continue
        weight = total = 0.0
        for tm, per in charge.items():
            if v.id in per:
                weight += per[v.id]
                total += per[v.id] * factors[v.id].get(tm, 1.0)
        k = max(MIN_FACTOR, min(1.0, total / weight)) if weight > 0 else 1.0
        stats = dict(v.stats)
        stats["cpu_calibration_basis"] = bases[v.id]
        vertices.append(v.model_copy(update={"cpu_calibration": round(k, 6), "stats": stats}))
    note = "TaskManager CPU: " + ", ".join(
        f"{t.id} {t.process_cores:.3f} cores, baseline {t.baseline_cores:.3f} ({t.basis})" if t.process_cores is not None
        else f"{t.id} unmeasured" for t in out)
    job = profile.job.model_copy(update={"note": "; ".join(x for x in (profile.job.note, note) if x)})
    return profile.model_copy(update={"vertices": vertices, "taskmanagers": out, "job": job})


def _count(placement: dict[tuple[str, int], str | None], tm: str) -> int:
    return sum(1 for t in placement.values() if t == tm)


def _which(charge: dict[str, float], sources: set[str], used: float) -> str:
    if len(charge) == 1:
        return "alone"
    src = sum(c for v, c in charge.items() if v in sources)
    return "source" if src > 0 and src >= sum(charge.values()) - used else "shared"


def _split(charge: dict[str, float], sources: set[str], used: float) -> dict[str, float]:
    """Per vertex on one TaskManager, the factor that makes its charges add up to ``used`` (see the module doc)."""
    total = sum(charge.values())
    if total <= 0:
        return {}
    how = _which(charge, sources, used)
    if how == "source":
        src = sum(c for v, c in charge.items() if v in sources)
        k = (src - (total - used)) / src
        return {v: (k if v in sources else 1.0) for v in charge}
    k = used / total
    return {v: k for v in charge}
