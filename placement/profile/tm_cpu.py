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
  after the refresh that brought it), not the poll times of repeated readings. Without ``CPU.Time``: mean ``CPU.Load``
  × the machine's cores. Where the history has t's threads (``metrics collect --inventory``), their CPU summed
  instead: the kernel's figure for the process, read every round (over a 30 s window CPU.Time gives two or three
  pairs: an idle lab Pi read 0.054 cores from it against 0.087 from its threads, and 0.087 is what it went on using).
* ``B_t = Σ_v B_{t,v}``: what the cost model charges the job's subtasks on t — the busy-time rule of
  :func:`placement.profile.cpu_demand.server_cores` (floor and NaN rule included) divided by ``σ_t``.
* ``C_t``: the co-tenants' charge — the other running jobs' subtasks on t (several pipelines share an edge fleet's
  TaskManagers), their ``busyTimeMsPerSecond`` summed / 1000, as the collectors record it beside t's CPU
  (:data:`placement.collect.layout.COTENANT_BUSY`); 0 where nothing else ran *or nothing was recorded* (histories
  from before the column keep their meaning: the whole JVM is the job's and its baseline's).
* ``R_t = P_t - B_t - C_t``, the residual.

**Baseline** ``b_t`` (the TaskManager's own CPU, a constant: not proportional to records):

* ``idle`` — t runs no subtask of the job nor of another: ``b_t = P_t``, measured directly.
* ``co-tenant`` — t runs no subtask of the job but other jobs' subtasks: its CPU is theirs and its baseline's, not a
  baseline (no ``b_t``, and no prior from it); nothing of the job to calibrate.
* ``prior`` — t runs subtasks of the job and a baseline is known from elsewhere: the inventory's
  ``taskmanager_baseline_cores`` for t's host, else the median baseline of this history's idle TaskManagers in
  server cores (``b·σ``) converted to t's cores (``b_t ≤ P_t``);
* ``residual`` — no prior, ``R_t ≥ 0``: the whole residual is t's baseline (CPU the subtasks spend outside their
  busy time, e.g. serialising in the output flusher, is in it too: it stays on t when they move, and does not grow
  with a rescaled rate — the limit of this rule, which is why a prior is preferred);
* ``floor`` — no prior, ``R_t < 0``: busy time overstates on t, so the residual says nothing of the baseline
  (``b_t = 0``, not confident).

**Calibration** (``prior`` and ``floor``): the subtasks on t used ``P_t - b_t`` cores where ``B_t + C_t`` was
charged; the job's share of it is ``U_t = (P_t - b_t)·B_t / (B_t + C_t)`` (:func:`own_share`: in proportion to the
busy-time charges — busy time is the only per-subtask figure both jobs have, the JVM's CPU being one number for all
its threads, so it is the least-bad key; it errs as busy time does), and the factors of the job's vertices make
their charges add up to ``U_t``. Without the split each job sharing a TaskManager took the others' CPU as its own:
two jobs on a lab Pi were predicted at 0.81 of its cores where 0.42 was used. Busy time errs both ways: it overstates a
rate-limited source waiting in its limiter (and any thread waiting for a CPU it shares: busy time is wall-clock),
and it understates what a subtask spends outside its busy time (serialising records in the output flusher, netty,
timers) — work that moves with the subtask when a plan moves it, so it belongs to the subtask, not to t.

* the threads' CPU recorded on t (``metrics collect --inventory``; :mod:`placement.profile.threads`): each vertex gets
  its task threads' share of ``U_t`` (``threads``) — the one per-vertex CPU figure; busy time is only the key where
  that was not recorded. (With a ``residual`` baseline the charge ``B_t`` is shared out so, unchanged in total.)
  On the lab a rate-limited source's busy time read 3× its thread's CPU while the operators' read 0.8–1.1×;
* one vertex alone on t: ``k_{v,t} = U_t / B_{t,v}`` (``alone``);
* an overstatement ``D_t = B_t - U_t > 0`` with sources on t whose charge covers it — the known case, a rate-limited
  source whose busy time reads high: ``k_{src,t} = (B_{t,src} - D_t) / B_{t,src}``, the others 1 (``source``);
* otherwise every vertex on t gets ``U_t / B_t`` (``shared``).

A vertex's factor is the charge-weighted mean over the TaskManagers it ran on (1 where t was not calibrated):
``k_v = Σ_t k_{v,t}·B_{t,v} / Σ_t B_{t,v}``, within [:data:`MIN_FACTOR`, :data:`MAX_FACTOR`]; the cost model
multiplies its busy-time cores by ``k_v``.

Only the runs whose subtasks ran where the newest run with TaskManager CPU says are pooled (another placement puts
other subtasks on each TaskManager). A history without TaskManager CPU leaves the profile as it was.

**Rate** (:class:`~placement.profile.format.RateFit`). Part of what a TaskManager spends does not grow with the rate:
a task thread's wake-ups, a remote channel's netty work, a rate limiter's timer. On a lab Pi the source's thread used
104 µs per record at 498 records/s and 42 µs at 3,600-5,300/s while netty and the pacer stayed at 0.02-0.05 of its
core; a model that scales all of it with the rate predicted 0.80 of the Pi's core at 5,213/s where 0.33 was used.
Where the pooled runs ran the job at different source rates ``R_j`` (the fastest at least :data:`MIN_RATE_SPREAD` ×
the slowest: nearer rates fit noise), each TaskManager t without co-tenants gets a line ``P_t(R) = F_t + G_t·R``
through its per-run process cores (measured as above, run by run), where the fitted slope is positive:

* each run's figure has a standard error, from its spread over :data:`BATCHES` consecutive windows of the run (batch
  means), at least :data:`SE_FLOOR`; a run without one (too few readings) leaves t without a line;
* the slope is the weighted least-squares one (weights 1/se², its error widened where the runs lie further off the
  line than their errors say), and the line planned on is :data:`SLOPE_MARGIN` errors steeper, through the runs'
  weighted centroid: noise errs towards a low capacity. On the lab Pi two two-run fits of one job at 400-850/s gave
  114 and 26 µs per reading; the flatter one answered a capacity 35× beyond its runs.

Then:

* ``P_t`` is the line at the profile's source rate ``R̄`` (the runs' rates pooled as the profile pools them),
  not the newest run's figure — the vertices' cores at 1× belong to the profile's rates (the thread figures listed
  beside it, and the vertices' shares of it, stay the newest run's);
* ``θ_t = (F_t − b_t) / (P_t − b_t)``, within [0, :data:`MAX_FIXED_SHARE`]: the share of what the job's subtasks
  used on t beyond the baseline that stays when the rate changes;
* a vertex's ``cpu_fixed_share`` is ``θ_t`` charge-weighted over the TaskManagers it ran on (0 where t had no line),
  and the cost model charges it ``c·(θ + (1 − θ)·X)`` at ``X ×`` the rates
  (:func:`placement.profile.cpu_demand.at_scale`).

One rate (every history before this, or runs of one rate) leaves ``cpu_fixed_share`` unset: all of a subtask's CPU
grows with the rate, as before. Three or more rates are fitted by least squares; a line is only as good as the
rates it spans, so ``plan --max-rate`` compares its answer with the fastest run, not the pooled rate.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from placement.collect.layout import COTENANT_BUSY, COTENANT_SUBTASKS, RunManifest, RunTaskManager
from placement.inventory import Inventory
from placement.profile import cpu_demand
from placement.profile.format import JobProfile, RateFit, TaskManagerCpu, VertexProfile
from placement.profile.rules import cpu_time_to_host_cores
from placement.profile.threads import ThreadCpu, thread_cpu

MIN_CONFIDENT_PAIRS = 5  # sample pairs of the CPU counter behind a confident figure
MIN_FACTOR = 0.01  # a factor below this is a measurement problem, not a calibration
MAX_FACTOR = 10.0  # nor one above this (the profile format's bound)
MIN_RATE_SPREAD = 1.5  # the fastest run's rate at least this × the slowest's before a line is fitted through them
MAX_FIXED_SHARE = 0.9  # part of a subtask's CPU always grows with its rate: a flatter line is noise, not capacity
SOURCE_RATE_COLUMNS = ("ts_ms", "vertex_id", "subtask", "records_out_per_s")  # what run_source_rate reads
BATCHES = 5  # windows of a run whose figures' spread is its process cores' standard error
SE_FLOOR = 0.002  # cores: no run's figure is known better than this (a 2 s reading of a Pi's CPU is 10 ms of ticks)
SLOPE_MARGIN = 2.0  # standard errors the planned per-record CPU lies above the fitted: capacity errs low, not high


@dataclass
class _Measured:
    cpu_s: float = 0.0  # Σ Δcpu_time over usable pairs, seconds
    wall_s: float = 0.0
    pairs: int = 0
    loads: list[float] | None = None
    samples: int = 0
    cotenant: list[float] = field(default_factory=list)  # other jobs' busy cores on it, per row that recorded them
    cotenant_subtasks: int | None = None  # the most of their subtasks seen on it at once


def _measure(rows: dict[str, np.ndarray], since_ms: int, into: dict[str, _Measured]) -> None:
    """Add one run's TaskManager rows at or after ``since_ms`` (all of them if that leaves fewer than 3 per TM)."""
    for tm in np.unique(rows["taskmanager_id"]):
        mine = rows["taskmanager_id"] == tm
        ts, cpu, load = rows["ts_ms"][mine], rows["cpu_time_ns"][mine], rows["cpu_load"][mine]
        nothing = np.full(len(ts), np.nan)  # a history without the co-tenant columns: not known
        busy, others = (rows[c][mine] if c in rows else nothing for c in (COTENANT_BUSY, COTENANT_SUBTASKS))
        order = np.argsort(ts, kind="stable")
        ts, cpu, load, busy, others = ts[order], cpu[order], load[order], busy[order], others[order]
        late = ts >= since_ms
        if late.sum() >= 3:
            ts, cpu, load, busy, others = ts[late], cpu[late], load[late], busy[late], others[late]
        m = into.setdefault(str(tm), _Measured(loads=[]))
        m.samples += len(ts)
        m.cotenant.extend(float(x) for x in busy[np.isfinite(busy)])
        if np.isfinite(others).any():
            m.cotenant_subtasks = max(m.cotenant_subtasks or 0, int(np.nanmax(others)))
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


def _cpu_rows(table: pa.Table) -> dict[str, np.ndarray]:
    """A run's TaskManager CPU rows as columns for :func:`_measure`, the nullable figures as floats (null: NaN)."""
    rows = {c: table.column(c).to_numpy(zero_copy_only=False) for c in table.column_names}
    for c in ("cpu_time_ns", "cpu_load", COTENANT_BUSY, COTENANT_SUBTASKS):
        if c in rows:
            rows[c] = rows[c].astype(np.float64)
    return rows


def _mapping(m: RunManifest) -> dict[tuple[str, int], str | None]:
    return {(loc.vertex_id, loc.subtask): loc.taskmanager_id for loc in m.locations}


def calibrate(
    profile: JobProfile,
    runs: Sequence[tuple[RunManifest, pa.Table]],
    *,
    warmup_s: float = 60.0,
    inventory: Inventory | None = None,
    threads: Sequence[pa.Table] = (),
    source_samples: Sequence[pa.Table] = (),
) -> JobProfile:
    """The profile with each TaskManager's measured CPU and baseline (``profile.taskmanagers``) and its vertices'
    ``cpu_calibration`` (and ``cpu_fixed_share``), from each run's TaskManager CPU rows (``read_taskmanager_cpu``; the
    caller reads them), where recorded its per-thread CPU rows (``threads``, one table per run: ``read_thread_cpu``)
    and its sources' samples (``source_samples``, one table per run: ``read_samples`` of
    :data:`SOURCE_RATE_COLUMNS`, for the rate line); the profile unchanged when no run recorded TaskManager CPU."""
    thread_tables = {m.run_id: t for (m, _), t in zip(runs, threads)}
    source_tables = {m.run_id: t for (m, _), t in zip(runs, source_samples)}
    pool = _pool(runs, warmup_s)
    if pool is None:
        return profile
    obs = _observe(profile, pool, inventory, thread_tables, source_tables, warmup_s)
    sources = {v.id for v in profile.sources()}
    factors: dict[str, dict[str, float]] = {}  # vertex -> tm -> k
    bases: dict[str, str] = {}
    fixed: dict[str, float] = {}  # tm -> θ_t, where a line was fitted
    out: list[TaskManagerCpu] = []
    for tm in sorted(obs.measured):
        cpu, split, basis, share = _taskmanager_cpu(tm, obs, inventory, sources)
        out.append(cpu)
        for vid, k in split.items():
            factors.setdefault(vid, {})[tm] = k
            bases.setdefault(vid, basis)
        if share is not None:
            fixed[tm] = share
    vertices = _calibrated_vertices(profile, obs.charge, factors, bases, fixed)
    note = "TaskManager CPU: " + ", ".join(_noted(t) for t in out)
    job = profile.job.model_copy(update={"note": "; ".join(x for x in (profile.job.note, note) if x)})
    return profile.model_copy(update={"vertices": vertices, "taskmanagers": out, "job": job})


@dataclass(frozen=True)
class _Pool:
    """The runs pooled for the figures: those with TaskManager CPU that placed the job as the newest of them did,
    that placement, and each TaskManager's CPU measured over them."""

    runs: list[tuple[RunManifest, pa.Table]]
    placement: dict[tuple[str, int], str | None]
    measured: dict[str, _Measured]


def _pool(runs: Sequence[tuple[RunManifest, pa.Table]], warmup_s: float) -> _Pool | None:
    """None when no run recorded TaskManager CPU (or none has a row of it)."""
    with_cpu = [(m, table) for m, table in runs if m.taskmanager_files]
    if not with_cpu:
        return None
    placement = _mapping(with_cpu[-1][0])
    pooled = [(m, table) for m, table in with_cpu if _mapping(m) == placement]
    measured: dict[str, _Measured] = {}
    for m, table in pooled:
        if table.num_rows == 0:
            continue
        _measure(_cpu_rows(table), m.started_ms + int(warmup_s * 1000), measured)
    return _Pool(pooled, placement, measured) if measured else None


@dataclass(frozen=True)
class _Observed:
    """Per measured TaskManager, in its host's cores: what the cost model charges each vertex there, the host's speed
    and inventory name, host cores per CPU-time core, the job's task threads, the process cores (from the threads,
    CPU.Time or CPU.Load; on the rate line at the profile's rate where one was fitted), the mean CPU.Load cores and
    the other jobs' busy cores."""

    measured: dict[str, _Measured]
    placement: dict[tuple[str, int], str | None]
    infos: dict[str, RunTaskManager]
    charge: dict[str, dict[str, float]]
    speeds: dict[str, float]
    hosts: dict[str, str | None]
    to_host_of: dict[str, float]
    by_thread: dict[str, ThreadCpu]
    process: dict[str, float]
    load_cores: dict[str, float | None]
    cotenant: dict[str, float | None]
    lines: dict[str, _Line]

    def idle_prior(self) -> float | None:
        """The median process cores of the idle TaskManagers, in server cores (a TaskManager running another job's
        subtasks is not idle: its CPU is no baseline)."""
        idle_server = [
            self.process[tm] * self.speeds[tm] for tm in self.process if not self.charge[tm] and not self.cotenant[tm]
        ]
        return statistics.median(idle_server) if idle_server else None


def _observe(
    profile: JobProfile,
    pool: _Pool,
    inventory: Inventory | None,
    thread_tables: dict[str, pa.Table],
    source_tables: dict[str, pa.Table],
    warmup_s: float,
) -> _Observed:
    measured = pool.measured
    infos = {tm.id: tm for m, _ in pool.runs for tm in m.taskmanagers}
    speeds, hosts = _hosts(measured, infos, inventory)
    charge = _charges(profile, pool, speeds)
    # the job's task threads per TaskManager, from the newest pooled run that recorded them
    by_thread = _thread_cores(profile, pool.runs, thread_tables, pool.placement, charge, warmup_s)
    # host cores per core-second of CPU time measured on each TaskManager (a lab host's counts this machine's cores)
    to_host_of = {tm: cpu_time_to_host_cores(inventory, hosts[tm]) for tm in measured}
    process, load_cores = _process_cores(measured, infos, by_thread, to_host_of)
    # other jobs' busy time on each TaskManager, in its host's cores (None: not recorded, read as none)
    cotenant = {tm: statistics.fmean(m.cotenant) if m.cotenant else None for tm, m in measured.items()}
    profile_rate = sum(v.records_out_per_s for v in profile.sources())
    lines = {
        tm: line
        for tm, line in _rate_lines(pool.runs, thread_tables, source_tables, to_host_of, warmup_s).items()
        if tm in process and not cotenant[tm]
    }  # a co-tenant's CPU follows its own rate, not the job's
    for tm, line in lines.items():
        process[tm] = max(line.at(profile_rate), 0.0)
    return _Observed(
        measured,
        pool.placement,
        infos,
        charge,
        speeds,
        hosts,
        to_host_of,
        by_thread,
        process,
        load_cores,
        cotenant,
        lines,
    )


def _hosts(
    measured: dict[str, _Measured], infos: dict[str, RunTaskManager], inventory: Inventory | None
) -> tuple[dict[str, float], dict[str, str | None]]:
    """Each TaskManager's host speed and inventory host name (1.0 and None where no inventory host matches)."""
    speeds: dict[str, float] = {}
    hosts: dict[str, str | None] = {}
    for tm in measured:
        h = inventory.host_of_taskmanager(tm, infos[tm].host if tm in infos else None) if inventory else None
        speeds[tm], hosts[tm] = (float(h.speed or 1.0), h.name) if h is not None else (1.0, None)
    return speeds, hosts


def _charges(profile: JobProfile, pool: _Pool, speeds: dict[str, float]) -> dict[str, dict[str, float]]:
    """What the cost model charges each vertex on each TaskManager, in that host's cores."""
    charge: dict[str, dict[str, float]] = {tm: {} for tm in pool.measured}
    for v in profile.vertices:
        for s in v.subtasks:
            tm = pool.placement.get((v.id, s.index))
            if tm in charge:
                charge[tm][v.id] = charge[tm].get(v.id, 0.0) + cpu_demand.server_cores(v, s).server_cores / speeds[tm]
    return charge


def _process_cores(
    measured: dict[str, _Measured],
    infos: dict[str, RunTaskManager],
    by_thread: dict[str, ThreadCpu],
    to_host_of: dict[str, float],
) -> tuple[dict[str, float], dict[str, float | None]]:
    """Each TaskManager's process cores (where any reading gives them) and mean CPU.Load × the machine's cores, both
    in the host's cores."""
    process: dict[str, float] = {}
    load_cores: dict[str, float | None] = {}
    for tm, m in measured.items():
        to_host = to_host_of[tm]
        info = infos.get(tm)
        load_cores[tm] = (
            statistics.fmean(m.loads) * float(info.hardware_cpu_cores) * to_host
            if m.loads and info is not None and info.hardware_cpu_cores
            else None
        )
        # the kernel's figure, read every round (CPU.Time comes from a store refreshed every 10 s), without the JIT
        # compiler's warm-up and the Netty server's work (profile.threads)
        if tm in by_thread:
            process[tm] = by_thread[tm].steady * to_host
        elif m.pairs > 0 and m.wall_s > 0:
            process[tm] = m.cpu_s / m.wall_s * to_host
        elif (load := load_cores[tm]) is not None:
            process[tm] = load
    return process, load_cores


def _prior(tm: str, obs: _Observed, inventory: Inventory | None) -> float | None:
    """The baseline a TaskManager is given rather than measured: its inventory host's ``taskmanager_baseline_cores``,
    else the idle TaskManagers' median at its host's speed."""
    h = obs.hosts[tm]
    if inventory is not None and h is not None:
        given = inventory.host(h).taskmanager_baseline_cores
        if given is not None:
            return float(given)
    idle_prior = obs.idle_prior()
    return None if idle_prior is None else idle_prior / obs.speeds[tm]


def _taskmanager_cpu(
    tm: str, obs: _Observed, inventory: Inventory | None, sources: set[str]
) -> tuple[TaskManagerCpu, dict[str, float], str, float | None]:
    """One TaskManager's CPU record, the calibration factors it gives the vertices it ran (and on what basis), and
    its fixed share where a rate line was fitted."""
    m, info = obs.measured[tm], obs.infos.get(tm)
    p = obs.process.get(tm)
    charge = obs.charge[tm]
    b_charge = sum(charge.values())
    enough = m.pairs >= MIN_CONFIDENT_PAIRS
    placed = _count(obs.placement, tm)
    if p is None:
        return (
            TaskManagerCpu(
                id=tm,
                host=info.host if info else None,
                inventory_host=obs.hosts[tm],
                host_speed=obs.speeds[tm],
                samples=m.samples,
                subtasks=placed,
                charged_cores=b_charge,
                load_cores=obs.load_cores[tm],
                basis="unmeasured",
                confident=False,
                cotenant_cores=obs.cotenant[tm],
                cotenant_subtasks=m.cotenant_subtasks,
            ),
            {},
            "",
            None,
        )
    calibrated = b_charge
    baseline: float | None
    split: dict[str, float] = {}
    split_basis = ""
    given = _prior(tm, obs, inventory)
    to_host = obs.to_host_of[tm]
    threads_here = obs.by_thread.get(tm)
    shares = _thread_shares(threads_here, charge)
    others = obs.cotenant[tm] or 0.0
    if not charge and others > 0:  # only other jobs' subtasks: its CPU is theirs and its baseline's, unsplit
        baseline, basis, confident = None, "co-tenant", False
    elif not charge:
        baseline, basis, confident = p, "idle", enough
    elif given is None and p - b_charge - others >= 0:
        baseline, basis, confident = p - b_charge - others, "residual", enough
        if shares is not None:  # the charge as it is, shared out as the threads used it
            split, split_basis = _split_by_threads(charge, shares, b_charge), f"threads on {tm}"
    else:
        baseline, basis, confident = (min(given, p), "prior", enough) if given is not None else (0.0, "floor", False)
        used = (p - baseline) * own_share(b_charge, others)
        calibrated = used
        split = _split_by_threads(charge, shares, used) if shares is not None else _split(charge, sources, used)
        split_basis = ("threads" if shares is not None else _which(charge, sources, used)) + f" on {tm}"
    fit = share = None
    if tm in obs.lines and baseline is not None:
        share = obs.lines[tm].fixed_share(baseline, p)
        fit = obs.lines[tm].summary(share)
    return (
        TaskManagerCpu(
            id=tm,
            host=info.host if info else None,
            inventory_host=obs.hosts[tm],
            host_speed=obs.speeds[tm],
            samples=m.samples,
            subtasks=placed,
            process_cores=p,
            load_cores=obs.load_cores[tm],
            charged_cores=b_charge,
            calibrated_cores=calibrated,
            baseline_cores=baseline,
            baseline_server_cores=None if baseline is None else baseline * obs.speeds[tm],
            basis=basis,
            confident=confident,
            cotenant_cores=obs.cotenant[tm],
            cotenant_subtasks=m.cotenant_subtasks,
            task_thread_cores=None if threads_here is None else sum(threads_here.vertices.values()) * to_host,
            other_thread_cores=None if threads_here is None else threads_here.other * to_host,
            compiler_thread_cores=None if threads_here is None else threads_here.compiler * to_host,
            netty_server_thread_cores=None if threads_here is None else threads_here.netty_server * to_host,
            rate_fit=fit,
        ),
        split,
        split_basis,
        share,
    )


def _calibrated_vertices(
    profile: JobProfile,
    charge: dict[str, dict[str, float]],
    factors: dict[str, dict[str, float]],
    bases: dict[str, str],
    fixed: dict[str, float],
) -> list[VertexProfile]:
    """The profile's vertices with their ``cpu_calibration`` (weighted over their TaskManagers by charge) and
    ``cpu_fixed_share`` where their TaskManagers gave them one."""
    vertices = []
    for v in profile.vertices:
        update: dict[str, object] = {}
        if v.id in factors:
            stats = dict(v.stats)
            stats["cpu_calibration_basis"] = bases[v.id]
            k = max(MIN_FACTOR, min(MAX_FACTOR, _weighted(charge, v.id, factors[v.id], 1.0)))
            update.update(cpu_calibration=round(k, 6), stats=stats)
        if any(v.id in charge[tm] for tm in fixed):
            update["cpu_fixed_share"] = round(_weighted(charge, v.id, fixed, 0.0), 6)
        vertices.append(v.model_copy(update=update) if update else v)
    return vertices


def _weighted(charge: dict[str, dict[str, float]], vid: str, per_tm: dict[str, float], missing: float) -> float:
    """A vertex's figure from its TaskManagers' (``missing`` where one has none), weighted by its charge on each."""
    weight = total = 0.0
    for tm, per in charge.items():
        if vid in per:
            weight += per[vid]
            total += per[vid] * per_tm.get(tm, missing)
    return total / weight if weight > 0 else missing


@dataclass(frozen=True)
class _Line:
    """A TaskManager's process cores against the job's source rate: ``fixed + per_record × R`` (its host's cores)."""

    fixed: float  # of the planned line: through the runs' weighted centroid with the planned slope
    per_record: float  # planned: the fitted slope + SLOPE_MARGIN standard errors
    runs: int
    low: float
    high: float
    fitted: float  # the least-squares slope
    se: float  # its standard error

    def at(self, rate: float) -> float:
        return self.fixed + self.per_record * rate

    def fixed_share(self, baseline: float, process: float) -> float:
        """``θ_t``: the share of what the subtasks used beyond the baseline at ``process`` cores that the line keeps at
        rate 0."""
        used = process - baseline
        return min(MAX_FIXED_SHARE, max(0.0, (self.fixed - baseline) / used)) if used > 0 else 0.0

    def summary(self, share: float) -> RateFit:
        return RateFit(
            runs=self.runs,
            rate_low=round(self.low, 3),
            rate_high=round(self.high, 3),
            fixed_cores=round(self.fixed, 6),
            per_record_us=round(self.per_record * 1e6, 6),
            fitted_per_record_us=round(self.fitted * 1e6, 6),
            per_record_se_us=round(self.se * 1e6, 6),
            fixed_share=round(share, 6),
        )


def run_source_rate(samples: pa.Table, since_ms: int) -> float | None:
    """The job's source records/s in one run: each source subtask's mean ``records_out_per_s`` after ``since_ms``
    (all of the run's readings when none is that late), summed; None without a reading."""
    readings = samples.filter(pc.is_finite(samples["records_out_per_s"]))
    late = readings.filter(pc.greater_equal(readings["ts_ms"], since_ms))
    per_subtask = (
        (late if late.num_rows else readings)
        .group_by(["vertex_id", "subtask"])
        .aggregate([("records_out_per_s", "mean")])
    )
    return float(pc.sum(per_subtask["records_out_per_s_mean"]).as_py()) if per_subtask.num_rows else None


def _run_cores(
    table: pa.Table, threads: pa.Table | None, since_ms: int, until_ms: int | None = None
) -> dict[str, float]:
    """Per TaskManager, one run's process cores (CPU-time cores) from ``since_ms`` (the whole run when that leaves too
    few readings) or, given ``until_ms``, within that window only: its threads' (the JIT compiler left out) where
    recorded, else its CPU.Time pairs."""
    if until_ms is not None:
        table, threads = (
            None
            if t is None
            else t.filter(pc.and_(pc.greater_equal(t["ts_ms"], since_ms), pc.less_equal(t["ts_ms"], until_ms)))
            for t in (table, threads)
        )
    listed = thread_cpu(threads, since_ms, {}, {}) if threads is not None else {}
    out = {tm: t.steady for tm, t in listed.items()}
    if table.num_rows:
        measured: dict[str, _Measured] = {}
        _measure(_cpu_rows(table), since_ms, measured)
        for tm, one in measured.items():
            if tm not in out and one.pairs > 0 and one.wall_s > 0:
                out[tm] = one.cpu_s / one.wall_s
    return out


def _run_figures(
    m: RunManifest, table: pa.Table, threads: pa.Table | None, warmup_s: float
) -> dict[str, tuple[float, float | None]]:
    """Per TaskManager, one run's process cores and their standard error: the spread of the figure over
    :data:`BATCHES` consecutive windows of the run (batch means: the readings of one window are not independent of
    the next), None where fewer than two windows had a figure."""
    since = m.started_ms + int(warmup_s * 1000)
    whole = _run_cores(table, threads, since)
    if not whole:
        return {}
    stamps = np.concatenate([t["ts_ms"].to_numpy() for t in (table, threads) if t is not None and t.num_rows])
    late = np.unique(stamps[stamps >= since])
    # as the run's own figure does: the whole run when the warm-up leaves too few readings (a 60 s collection of a
    # job warmed up before it, profiled with the default 60 s warm-up, has one or two)
    start, end = (late.min(), late.max()) if len(late) >= 2 * BATCHES else (stamps.min(), stamps.max())
    edges = np.linspace(start, end, BATCHES + 1)
    windows = [_run_cores(table, threads, int(a), int(b)) for a, b in itertools.pairwise(edges)]
    out: dict[str, tuple[float, float | None]] = {}
    for tm, cores in whole.items():
        batch = [w[tm] for w in windows if tm in w]
        out[tm] = (cores, float(np.std(batch, ddof=1) / np.sqrt(len(batch))) if len(batch) >= 2 else None)
    return out


def _rate_lines(
    pooled: Sequence[tuple[RunManifest, pa.Table]],
    threads: dict[str, pa.Table],
    sources: dict[str, pa.Table],
    to_host_of: dict[str, float],
    warmup_s: float,
) -> dict[str, _Line]:
    """Per TaskManager, the weighted least-squares line of its process cores (host cores) over the pooled runs'
    source rates, where the rates spread by :data:`MIN_RATE_SPREAD`, every run's figure has a standard error and
    the fitted line rises; planned on the steeper line :data:`SLOPE_MARGIN` standard errors above it."""
    points: dict[str, list[tuple[float, float, float | None]]] = {}
    for m, table in pooled:
        samples = sources.get(m.run_id)
        rate = run_source_rate(samples, m.started_ms + int(warmup_s * 1000)) if samples is not None else None
        if rate is None or rate <= 0:
            continue
        for tm, (cores, se) in _run_figures(m, table, threads.get(m.run_id), warmup_s).items():
            if tm in to_host_of:
                points.setdefault(tm, []).append(
                    (rate, cores * to_host_of[tm], None if se is None else se * to_host_of[tm])
                )
    lines: dict[str, _Line] = {}
    for tm, pts in points.items():
        if len(pts) < 2 or any(se is None for _, _, se in pts):
            continue
        x, y = np.array([p[0] for p in pts]), np.array([p[1] for p in pts])
        if x.max() < MIN_RATE_SPREAD * x.min():
            continue
        w = 1.0 / np.maximum([se for _, _, se in pts if se is not None], SE_FLOOR) ** 2
        xw, yw = np.average(x, weights=w), np.average(y, weights=w)
        sxx = float(np.sum(w * (x - xw) ** 2))
        slope = float(np.sum(w * (x - xw) * (y - yw)) / sxx)
        residual = np.sum(w * (y - yw - slope * (x - xw)) ** 2) / (len(pts) - 2) if len(pts) > 2 else 1.0
        se = float(np.sqrt(max(1.0, residual) / sxx))  # runs further off the line than their errors: wider
        if slope > 0:
            planned = slope + SLOPE_MARGIN * se
            lines[tm] = _Line(float(yw - planned * xw), planned, len(pts), float(x.min()), float(x.max()), slope, se)
    return lines


def _thread_cores(
    profile: JobProfile,
    pooled: Sequence[tuple[RunManifest, pa.Table]],
    tables: dict[str, pa.Table],
    placement: dict[tuple[str, int], str | None],
    charge: dict[str, dict[str, float]],
    warmup_s: float,
) -> dict[str, ThreadCpu]:
    """The job's task threads' CPU per TaskManager (CPU-time cores), from the newest pooled run with thread rows."""
    recorded = [m for m, _ in pooled if tables.get(m.run_id) is not None and tables[m.run_id].num_rows]
    if not recorded:
        return {}
    m = recorded[-1]
    subtasks: dict[str, list[tuple[str, str, int, int]]] = {}
    for v in profile.vertices:
        for s in v.subtasks:
            tm = placement.get((v.id, s.index))
            if tm is not None:
                subtasks.setdefault(tm, []).append((v.id, v.name, s.index, v.parallelism))
    return thread_cpu(tables[m.run_id], m.started_ms + int(warmup_s * 1000), subtasks, charge)


def _thread_shares(threads: ThreadCpu | None, charge: dict[str, float]) -> dict[str, float] | None:
    """Each vertex's share of the job's task-thread CPU on a TaskManager; None (keep busy time as the key) when the
    threads were not recorded there, a vertex's task thread was not found, or they used nothing measurable."""
    if threads is None or threads.unmatched or not charge:
        return None
    total = sum(threads.vertices.get(v, 0.0) for v in charge)
    if total <= 0:
        return None
    return {v: threads.vertices.get(v, 0.0) / total for v in charge}


def _split_by_threads(charge: dict[str, float], shares: dict[str, float], used: float) -> dict[str, float]:
    """Per vertex on one TaskManager, the factor that gives it its threads' share of ``used``."""
    return {v: max(MIN_FACTOR, min(MAX_FACTOR, used * shares[v] / c)) if c > 0 else 1.0 for v, c in charge.items()}


def own_share(charged: float, cotenant: float) -> float:
    """The job's share of what subtasks used on a TaskManager beyond its baseline: ``B_t / (B_t + C_t)``, 1 without
    co-tenants (why busy time is the key: the module doc). It errs as busy time does: a rate-limited source's busy
    wait takes a share its thread did not burn."""
    total = charged + cotenant
    return charged / total if total > 0 else 1.0


def _noted(t: TaskManagerCpu) -> str:
    """One TaskManager in the profile's note."""
    if t.process_cores is None:
        return f"{t.id} unmeasured"
    base = "none" if t.baseline_cores is None else f"{t.baseline_cores:.3f}"
    others = (
        f", co-tenants {t.cotenant_cores:.3f} busy ({t.cotenant_subtasks or 0} subtasks)" if t.cotenant_cores else ""
    )
    threads = (
        f", task threads {t.task_thread_cores:.3f} + other {t.other_thread_cores:.3f}"
        f" (JIT compiler {t.compiler_thread_cores or 0.0:.3f}, Netty server "
        f"{t.netty_server_thread_cores or 0.0:.3f} left out)"
        if t.task_thread_cores is not None and t.other_thread_cores is not None
        else ""
    )
    fit = t.rate_fit
    line = (
        f", {fit.fixed_cores:.3f} + {fit.per_record_us:.1f} µs × records/s (fitted {fit.fitted_per_record_us:.1f} "
        f"± {fit.per_record_se_us:.1f}) over {fit.runs} runs ({fit.rate_low:,.0f}-{fit.rate_high:,.0f}/s): "
        f"{fit.fixed_share:.0%} fixed"
        if fit is not None
        else ""
    )
    return f"{t.id} {t.process_cores:.3f} cores, baseline {base} ({t.basis}){others}{threads}{line}"


def _count(placement: dict[tuple[str, int], str | None], tm: str) -> int:
    return sum(1 for t in placement.values() if t == tm)


def _which(charge: dict[str, float], sources: set[str], used: float) -> str:
    if len(charge) == 1:
        return "alone"
    src = sum(c for v, c in charge.items() if v in sources)
    over = sum(charge.values()) - used  # > 0: busy time overstated on this TaskManager
    return "source" if over > 0 and src >= over else "shared"


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
