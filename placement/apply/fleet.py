"""``placement apply --plan FLEET``: every job of a fleet (``placement plan --profile a --profile b --out FLEET``)
put into effect as one change.

Stages, each job's own being the one-job apply's (:func:`placement.apply.prepare`, :class:`Runner`):

* :func:`load_fleet` — fleet.json and every job's plan directory; what each job is resubmitted with comes from the
  inventory's ``jobs:`` entry of its name (or ``job:``). Bad input: one line naming file and field.
* :func:`prepare_fleet` — every job's preflight, all of them before anything changes; any problem of any job refuses
  the whole change, naming the job. Then the order (:mod:`placement.apply.fleet_order`, pure) from each job's
  loads: what the running placement puts on each uplink and each host's cores, slots and memory (the job's profile
  under the cost model) and what its plan does (fleet.json).
* :func:`fleet_sequence` (pure) — the one ordered list of (job, step) both ``--dry-run`` prints and the run follows:
  one lock for the whole change; then per job stop → install → redeploy → verify (sequential), or every stop first
  and then every redeploy (stop-all).
* :func:`execute_fleet` — runs that list; any failure of any job rolls every job that was stopped back to where it
  ran, from its own savepoint (each job's own roll back, :meth:`Runner.roll_back`), the failing job first.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from placement.apply import Prepared, prepare
from placement.apply.audit import AuditLog, new_apply_id
from placement.apply.fleet_order import (
    FleetOrder,
    JobLoads,
    Resource,
    choose_order,
    cores,
    memory,
    slots,
    state_load,
    stop_all_asked,
    uplink,
)
from placement.apply.model import AcquireLock, ApplyPlan, ClusterView, ReleaseLock, RestoreFile, Step, UploadFile
from placement.apply.preflight import PreflightFailed
from placement.apply.request import ApplyRequest, JobSelector, load_request
from placement.apply.runner import ApplyOutcome, Runner
from placement.apply.vertices import match_vertices, planned_vertices, running_subtask_hosts
from placement.errors import BadInput, PlacementError
from placement.loading import load_model
from placement.profile.format import JobProfile, load_profile
from placement.writers.fleetjson import FLEET_FILE, FleetDocument

if TYPE_CHECKING:
    from placement.costmodel.evaluate import PlanCost


@dataclass(frozen=True)
class FleetRequest:
    fleet_dir: Path
    fleet: FleetDocument
    requests: tuple[ApplyRequest, ...]  # fleet.json's job order

    @property
    def limits(self) -> dict[Resource, float]:
        """What the plans allow: per link its usable Mbit/s (under the headroom, less what other running jobs send);
        per host its usable cores (the TaskManager's baseline off once), its slots and its usable memory (less the
        running jobs'). A fleet.json from before memory was recorded has no usable memory: memory is not judged."""
        out = {uplink(link.link): link.usable_mbit for link in self.fleet.links}
        for host in self.fleet.hosts:
            out[cores(host.host)] = host.cores_usable
            out[slots(host.host)] = float(host.slots)
            if host.memory_mib_usable is not None:
                out[memory(host.host)] = host.memory_mib_usable
        return out

    def new_loads(self, job: str) -> dict[Resource, float]:
        """What ``job``'s plan puts on each link and host (fleet.json's per-job shares)."""
        out = {uplink(link.link): link.jobs.get(job, 0.0) for link in self.fleet.links}
        for host in self.fleet.hosts:
            mine = host.jobs.get(job, {})
            out[cores(host.host)] = mine.get("cores", 0.0)
            out[slots(host.host)] = mine.get("slots", 0.0)
            out[memory(host.host)] = mine.get("memory_mib", 0.0)
        return out


def load_fleet(fleet_dir: Path, inventory_path: Path, *, consent: bool = False, settle_s: float = 10.0) -> FleetRequest:
    fleet_file = fleet_dir / FLEET_FILE
    fleet = load_model(fleet_file, FleetDocument)
    if not fleet.jobs:
        raise BadInput("lists no job", source=str(fleet_file), field="jobs")
    requests = []
    for i, job in enumerate(fleet.jobs):
        job_dir = fleet_dir / job.dir
        if not (job_dir / "plan.json").is_file():
            raise BadInput(f"{job.dir!r}: no plan.json there", source=str(fleet_file), field=f"jobs[{i}].dir")
        if any(job.job == other.job for other in fleet.jobs[:i]):
            raise BadInput(f"job {job.job!r} is listed twice", source=str(fleet_file), field=f"jobs[{i}].job")
        req = load_request(job_dir, inventory_path, consent=consent, settle_s=settle_s)
        if req.plan.job != job.job:
            raise BadInput(
                f"is job {req.plan.job!r}, fleet.json says {job.job!r}", source=str(job_dir / "plan.json"), field="job"
            )
        requests.append(for_job(req, inventory_path))
    return FleetRequest(fleet_dir, fleet, tuple(requests))


def for_job(req: ApplyRequest, inventory_path: Path) -> ApplyRequest:
    """The request as the one-job apply of this job would be: the running job of the plan's name, resubmitted with
    the inventory's settings for that name (:func:`load_request` put its ``jobs:`` entry in ``job:``'s place)."""
    if req.inventory.job_named(req.plan.job) is None:
        raise BadInput(
            f"no entry named {req.plan.job!r} (what apply resubmits for that job: name, program_args, and "
            "jar/entry_class where they differ from job:'s)",
            source=str(inventory_path),
            field="jobs",
        )
    return dataclasses.replace(
        req, selector=JobSelector(job_name=req.plan.job), state_file=req.paths.state_for(req.plan.job)
    )


# ---- preflight of every job, and the order ---------------------------------------------------------------------


@dataclass
class FleetPrepared:
    request: FleetRequest
    jobs: dict[str, Prepared]  # fleet.json's order
    order: FleetOrder
    load_notes: dict[str, str]  # job -> why its running load is unknown

    @property
    def changing(self) -> list[str]:
        """The jobs whose plan is not in effect yet, in the chosen order."""
        return [j for j in self.order.jobs if not self.jobs[j].plan.noop]

    def plans(self) -> dict[str, ApplyPlan]:
        """The changing jobs' plans as the fleet runs them (a shared file installed once)."""
        return deduplicate_uploads({j: self.jobs[j].plan for j in self.changing}, self.changing)

    def close(self) -> None:
        for p in self.jobs.values():
            p.close()


def prepare_fleet(
    freq: FleetRequest,
    *,
    dry_run: bool = False,
    accept_new_host_keys: bool = False,
    fleet_order: Literal["auto", "stop-all"] = "auto",
) -> FleetPrepared:
    """Every job's preflight; raises :class:`PreflightFailed` naming each job and check that failed (nothing changed).
    ``fleet_order``: "auto" moves one job at a time where an order is safe, else stops all; "stop-all" always stops
    all first."""
    prepared: dict[str, Prepared] = {}
    problems: list[str] = []
    stale = False  # a plan that does not fit its running job: exit 2, as for one job
    try:
        for req in freq.requests:
            try:
                prepared[req.plan.job] = prepare(req, dry_run=dry_run, accept_new_host_keys=accept_new_host_keys)
            except PreflightFailed as exc:
                problems += [f"job {req.plan.job}: {p}" for p in exc.problems]
                stale = stale or exc.exit_code == BadInput.exit_code
            except BadInput as exc:
                raise BadInput(f"job {req.plan.job}: {exc}") from None
        problems += fleet_problems(prepared)
        if problems:
            raise PreflightFailed(problems, bad_input=stale)
        loads, notes = [], {}
        profiles, unknown = load_profiles(freq)
        for name, p in prepared.items():
            if p.plan.noop:
                continue
            old, why = running_loads(p.request, p.view, profiles) if profiles is not None else (None, unknown)
            if why:
                notes[name] = why
            loads.append(JobLoads(name, old, freq.new_loads(name)))
        # a job whose plan is in effect is not moved, but it runs through every mixed state on what it uses now
        steady = state_load(
            [JobLoads(n, None, freq.new_loads(n)) for n in prepared if prepared[n].plan.noop], frozenset(prepared)
        )
        order = stop_all_asked(loads) if fleet_order == "stop-all" else choose_order(loads, freq.limits, steady)
        order = dataclasses.replace(order, jobs=order.jobs + tuple(n for n in prepared if prepared[n].plan.noop))
    except BaseException:
        for p in prepared.values():
            p.close()
        raise
    return FleetPrepared(freq, prepared, order, notes)


def fleet_problems(prepared: dict[str, Prepared]) -> list[str]:
    """What one job's preflight cannot see: two plans for one running job, and restarts (a JobManager or
    TaskManager restart stops every job on it, so it cannot be part of moving one job while the others run)."""
    problems = []
    by_id: dict[str, str] = {}
    for name, p in prepared.items():
        other = by_id.setdefault(p.view.job_id, name) if not p.unchecked else name  # unchecked: the id is presumed
        if other != name:
            problems.append(f"job {name}: it and job {other} are the same running job {p.view.job_id}")
        if p.plan.restarts:
            problems.append(
                f"job {name}: its apply restarts the {', '.join(p.plan.restarts)}, which stops the fleet's "
                "other jobs too: apply that job alone first, then the fleet"
            )
    return problems


def load_profiles(freq: FleetRequest) -> tuple[dict[str, JobProfile] | None, str | None]:
    """Every job's profile, the one its plan was made from (None, with the reason, when one cannot be read: then
    no job's running load is known, since pins are told apart across the jobs' vertices)."""
    profiles = {}
    for req in freq.requests:
        path = _profile_path(req, freq.fleet_dir)
        if path is None:
            return None, f"the profile of job {req.plan.job} ({req.plan.profile.path}) is not found"
        try:
            profiles[req.plan.job] = load_profile(path)
        except PlacementError as exc:
            return None, f"the profile of job {req.plan.job} could not be read: {exc}"
    return profiles, None


def running_loads(
    req: ApplyRequest, view: ClusterView, profiles: dict[str, JobProfile]
) -> tuple[dict[Resource, float] | None, str | None]:
    """What the job puts on each link and host where it runs now (pure): its running placement, subtask by subtask,
    under the cost model of its profile — Mbit/s per uplink, its subtasks' cores, the slots it fills and its subtasks'
    memory per host (the TaskManager's baseline is not the job's: the limits take it off once). None, with the
    reason, where that cannot be known."""
    match = match_vertices(planned_vertices(req.plan.assignment), view.running_vertices)
    if match.missing:
        return None, "the running job's vertices do not all match its plan's"
    running = running_subtask_hosts(match, view.subtask_hosts)
    assignment = {(vid, i): host for vid, hosts in running.items() for i, host in enumerate(hosts)}
    # the cost model (and networkx) is loaded here, where it is used: every `placement apply` imports this module
    from placement.costmodel.evaluate import evaluate
    from placement.costmodel.jobs import fleet_vertex_keys
    from placement.costmodel.model import PlanOptions, build_problem

    options = PlanOptions(rate_scale=req.plan.rate_scale, placement_mode=req.mode)
    try:
        problem = build_problem(
            req.inventory,
            profiles[req.plan.job],
            options,
            inventory_source=str(req.inventory_path),
            other_jobs=fleet_vertex_keys(profiles.values()),
        )
        cost = evaluate(problem, assignment)
    except (PlacementError, ValueError, KeyError) as exc:  # e.g. a TaskManager that is no inventory host
        return None, f"its running placement cannot be evaluated: {str(exc).splitlines()[0]}"
    return cost_loads(cost), None


def cost_loads(cost: PlanCost) -> dict[Resource, float]:
    """One job's evaluation as the order's loads."""
    out = {uplink(link.name): link.mbit for link in cost.links}
    for host in cost.hosts:
        out[cores(host.host)] = host.cores_used
        out[slots(host.host)] = float(host.slots_used)
        out[memory(host.host)] = host.memory_mib_used
    return out


def _profile_path(req: ApplyRequest, fleet_dir: Path) -> Path | None:
    """The profile as `placement plan` was given it: relative to where it ran, which is unknown; the fleet's
    directory and its parent are tried too."""
    given = Path(req.plan.profile.path)
    for candidate in (given, fleet_dir / given, fleet_dir.parent / given):
        if candidate.is_file():
            return candidate
    return None


# ---- the sequence -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetStep:
    job: str
    index: int  # 0-based, in the job's own plan
    step: Step


def _segments(plan: ApplyPlan) -> tuple[list[int], list[int], list[int]]:
    """A job's steps split where a fleet interleaves them: before the stop (uploads), the stop, and after it;
    its own lock and unlock are left out (the fleet holds one lock for the whole change)."""
    before: list[int] = []
    stop: list[int] = []
    after: list[int] = []
    for i, step in enumerate(plan.steps):
        if isinstance(step.action, (AcquireLock, ReleaseLock)):
            continue
        (before if step.phase == "prepare" else stop if step.phase == "stop" else after).append(i)
    return before, stop, after


def fleet_sequence(order: FleetOrder, plans: dict[str, ApplyPlan]) -> list[FleetStep]:
    """Every step of the change in the order it runs (pure): the first job's lock, every job's uploads (before any
    stop, so nothing is stopped waiting for one), then sequential: stop → install → redeploy → verify → record per
    job; or stop-all: every stop, then every job's install → … → record; the unlock last."""
    jobs = [j for j in order.jobs if j in plans and not plans[j].noop]
    if not jobs:
        return []
    segments = {j: _segments(plans[j]) for j in jobs}
    first = plans[jobs[0]]
    lock = next(i for i, s in enumerate(first.steps) if isinstance(s.action, AcquireLock))
    unlock = next(i for i, s in enumerate(first.steps) if isinstance(s.action, ReleaseLock))
    out = [FleetStep(jobs[0], lock, first.steps[lock])]

    def add(job: str, indices: list[int]) -> None:
        out.extend(FleetStep(job, i, plans[job].steps[i]) for i in indices)

    for j in jobs:
        add(j, segments[j][0])
    if order.strategy == "sequential":
        for j in jobs:
            add(j, segments[j][1] + segments[j][2])
    else:
        for j in jobs:
            add(j, segments[j][1])
        for j in jobs:
            add(j, segments[j][2])
    out.append(FleetStep(jobs[0], unlock, first.steps[unlock]))
    return out


def deduplicate_uploads(plans: dict[str, ApplyPlan], order: Sequence[str]) -> dict[str, ApplyPlan]:
    """A file every job's plan installs with the same content (custom mode's taskmanagers.cfg) is installed by the
    first job only, and restored by its roll back only: installed twice, its ``.prev`` would hold the first job's
    copy, and a roll back of every job would not bring the original back."""
    seen: set[tuple[str, str, bytes]] = set()
    out = {}
    for name in order:
        plan = plans[name]
        dropped: set[tuple[str, str]] = set()
        steps = []
        for s in plan.steps:
            a = s.action
            if isinstance(a, UploadFile) and s.phase == "install":
                key = (a.host, a.path, a.content.encode() if isinstance(a.content, str) else a.content)
                if key in seen:
                    dropped.add((a.host, a.path))
                    continue
                seen.add(key)
            steps.append(s)
        rollback = tuple(
            s
            for s in plan.rollback
            if not (isinstance(s.action, RestoreFile) and (s.action.host, s.action.path) in dropped)
        )
        out[name] = dataclasses.replace(plan, steps=tuple(steps), rollback=rollback) if dropped else plan
    return out


def describe_fleet(order: FleetOrder, plans: dict[str, ApplyPlan], load_notes: dict[str, str]) -> list[str]:
    """What ``--dry-run`` prints (pure): the strategy and why, every step of the change in order, and the roll back."""
    lines = [f"order: {order.strategy}: {order.reason}"]
    lines += [f"  note: job {job}: running load unknown: {why}" for job, why in load_notes.items()]
    lines.append("steps (one lock for the whole change):")
    for n, fs in enumerate(fleet_sequence(order, plans), 1):
        lines.append(f"  {n:2d}. {fs.job} [{fs.step.phase}] {fs.step.describe()}")
    changing = [j for j in order.jobs if j in plans and not plans[j].noop]
    lines.append(
        "on a failure of any job after a stop: every job stopped so far is rolled back from its own savepoint, "
        "the last changed first (a job stopped but not yet redeployed only resubmits):"
    )
    for job in reversed(changing):
        for i, step in enumerate(plans[job].rollback, 1):
            lines.append(f"  {job} r{i}. [{step.phase}] {step.describe()}")
    return lines


# ---- the run ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetOutcome:
    status: str  # applied | rolled-back | rollback-failed | failed-before-stop | noop
    message: str
    outcomes: dict[str, ApplyOutcome]  # per job that ran any step
    seconds: float = 0.0  # the whole change: first step to last


class FleetFailed(PlacementError):
    def __init__(self, outcome: FleetOutcome):
        self.outcome = outcome
        super().__init__(outcome.message)


def execute_fleet(fp: FleetPrepared, *, audit_path: Path | None, echo: Callable[[str], None] = print) -> FleetOutcome:
    """Run the fleet's sequence; raises :class:`FleetFailed` (every stopped job rolled back) when it did not take
    effect."""
    audit = AuditLog(audit_path, new_apply_id())
    order = fp.order
    changing = fp.changing
    plans = fp.plans()
    sequence = fleet_sequence(order, plans)
    audit.write(
        "fleet",
        jobs=list(fp.jobs),
        strategy=order.strategy,
        order=list(order.jobs),
        reason=order.reason,
        sequence=[f"{fs.job} [{fs.step.phase}] {fs.step.describe()}" for fs in sequence],
    )
    if not changing:
        audit.write("done", status="noop")
        return FleetOutcome("noop", "every job's plan is already in effect; nothing to do", {})
    runners = {
        j: Runner(plans[j], fp.jobs[j].rest, fp.jobs[j].executors, audit, echo, jar_id=fp.jobs[j].request.jar_id)
        for j in changing
    }
    t0 = time.monotonic()
    failed: FleetOutcome | None = None
    try:
        for fs in sequence:
            if isinstance(fs.step.action, ReleaseLock):
                continue  # released below, whatever happened: a failing unlock is no reason to roll back
            failure = runners[fs.job].run_steps([fs.index])
            if failure is not None:
                failed = _fail(fs.job, failure, runners, audit, echo, t0)
                break
        else:
            outcomes = {j: runners[j].applied() for j in changing}
    finally:
        runners[changing[0]].release_lock()
    if failed is not None:
        raise FleetFailed(failed)
    seconds = time.monotonic() - t0
    audit.write("done", status="applied", jobs={j: o.job_id for j, o in outcomes.items()}, seconds=round(seconds, 3))
    return FleetOutcome(
        "applied",
        f"applied: {len(outcomes)} job(s) run every subtask on its planned TaskManager "
        f"({order.strategy}, {seconds:.1f} s)",
        outcomes,
        seconds,
    )


def _fail(
    job: str, failure: ApplyOutcome, runners: dict[str, Runner], audit: AuditLog, echo: Callable[[str], None], t0: float
) -> FleetOutcome:
    """``job`` failed (its own runner handled it: rolled back, or never stopped): every other job that was stopped
    goes back to where it ran, from its own savepoint, the last changed first (a job stopped but not yet installed
    only resubmits: its runner restores only the files it replaced)."""
    reason = f"job {job}: {failure.message}"
    outcomes = {job: failure}
    audit.write("fleet-rollback", failed=job, reason=failure.message)
    for name in reversed(list(runners)):
        runner = runners[name]
        if name == job or not runner.ctx.stopped:
            continue
        echo(f"rolling back job {name} (another job of the change failed)")
        outcomes[name] = runner.roll_back(f"the fleet's change failed ({reason})")
    failed_back = [n for n, o in outcomes.items() if o.status == "rollback-failed"]
    seconds = time.monotonic() - t0
    if failed_back:
        status = "rollback-failed"
        message = f"apply of the fleet failed ({reason}); ROLL BACK FAILED for {', '.join(failed_back)}: " + " | ".join(
            f"{n}: {outcomes[n].message}" for n in failed_back
        )
    elif len(outcomes) == 1 and failure.status in ("failed-before-stop", "stop-failed"):
        status = "failed-before-stop"
        message = f"apply of the fleet failed ({reason}); no other job had been stopped"
    else:
        status = "rolled-back"
        back = ", ".join(f"{n} → job {o.job_id}" for n, o in outcomes.items())
        message = f"apply of the fleet failed ({reason}); every stopped job rolled back to where it ran: {back}"
    audit.write("done", status=status, jobs={n: o.job_id for n, o in outcomes.items()}, seconds=round(seconds, 3))
    return FleetOutcome(status, message, outcomes, seconds)
