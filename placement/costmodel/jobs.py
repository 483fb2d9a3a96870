"""Several jobs on one fleet as one :class:`PlacementProblem`, and its assignment split back per job.

Each job's problem is built as for one job (:func:`placement.costmodel.model.build_problem`: its own pins, forbids,
source births, sink and stateful rules); :func:`combine` puts their subtasks and channels side by side over the hosts
they share, so every planner (the exact model, the fleet decomposition, the greedy baseline, ``--max-rate``) sees the
shared capacities — uplinks, CPU, memory, slots — once, and the objective is the fleet's: WAN summed over all jobs,
then server CPU, then the jobs' latency terms added up.

* Vertex ids are namespaced by job (``j<n>_<id>``, the job's position): two jobs built from one program share ids.
  Vertex names get the job's name in front, so a shortfall or a thread names the job as well as the operator.
* A host runs one TaskManager whatever jobs it carries: its baseline CPU is counted once (the largest any job's
  profile measured: they watched the same JVM).
* Jobs never share a task slot: :attr:`PlacementProblem.vertex_job` tells the slot rows which vertices are whose.
* A job's priority and budget (the inventory's ``jobs:`` entry of its name, :func:`job_policies`) ride along as
  :attr:`PlacementProblem.job_policies`: the objective ranks by priority, the budgets are rows of the model.

:meth:`JointProblem.split` gives each job its own keys back, so its plan directory is exactly what planning it alone
would write for that assignment (and ``apply`` of one job reads it as today).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.model import (
    Assignment,
    Channel,
    HostSpec,
    JobPolicy,
    PlacementProblem,
    PlanOptions,
    Subtask,
    SubtaskKey,
    build_problem,
)
from placement.errors import BadInput
from placement.inventory import Inventory
from placement.profile.format import JobProfile


@dataclass(frozen=True)
class Job:
    name: str  # unique among the jobs planned together (see unique_names)
    problem: PlacementProblem  # the job alone, as build_problem made it
    prefix: str  # its vertex ids in the joint problem start with this


@dataclass(frozen=True)
class JointProblem:
    problem: PlacementProblem  # all jobs' subtasks over the shared hosts
    jobs: tuple[Job, ...]

    @cached_property
    def job_of_vertex(self) -> dict[str, Job]:
        return {job.prefix + vid: job for job in self.jobs for vid in job.problem.vertex_order}

    def split(self, assignment: Assignment) -> dict[str, dict[SubtaskKey, str]]:
        """The joint assignment as each job's own: job name -> (its vertex id, index) -> host."""
        out: dict[str, dict[SubtaskKey, str]] = {job.name: {} for job in self.jobs}
        for (vid, i), host in assignment.items():
            job = self.job_of_vertex[vid]
            out[job.name][(vid[len(job.prefix) :], i)] = host
        return out

    def join(self, per_job: Mapping[str, Assignment]) -> dict[SubtaskKey, str]:
        """The inverse of :meth:`split`."""
        by_name = {job.name: job for job in self.jobs}
        return {(by_name[name].prefix + vid, i): host for name, a in per_job.items() for (vid, i), host in a.items()}


def unique_names(names: Sequence[str]) -> list[str]:
    """Job names made unique in order: a second ``iot`` is ``iot-2`` (two profiles of one job are two jobs)."""
    out: list[str] = []
    for name in names:
        candidate, n = name, 1
        while candidate in out:
            n += 1
            candidate = f"{name}-{n}"
        out.append(candidate)
    return out


def dir_name(job: str) -> str:
    """A job's name as a directory name: characters other than letters, digits, ``.``, ``_`` and ``-`` become ``-``."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", job).strip("-.") or "job"
    return cleaned


def dir_names(jobs: Sequence[str]) -> list[str]:
    """:func:`dir_name` of each job, made unique (``a/b`` and ``a b`` would both be ``a-b``)."""
    return unique_names([dir_name(j) for j in jobs])


def fleet_vertex_keys(profiles: Iterable[JobProfile]) -> frozenset[str]:
    """Every profile's vertex names and ids, one set: each job's ``other_jobs``
    (:func:`placement.costmodel.model.build_problem`: pins naming one of them are no typo of this job's). One set built
    once serves every job — linear in the profiles — because a job's own keys in it change nothing: ``build_problem``
    asks ``other_jobs`` only about a pin that names none of the job's own vertices."""
    return frozenset(k for p in profiles for v in p.vertices for k in (v.name, v.id))


def _shared_hosts(problems: Sequence[PlacementProblem]) -> tuple[HostSpec, ...]:
    """The hosts once, each with the largest TaskManager baseline any job's profile gave it (one JVM per host) and
    every job's Netty charge (each job's subtasks flush on their own cycles: costmodel.deliveries)."""
    first = problems[0].hosts
    names = [h.name for h in first]
    for p in problems[1:]:
        if [h.name for h in p.hosts] != names:
            raise ValueError("jobs planned together must be built from one inventory")
    hosts = []
    for n, h in enumerate(first):
        busiest = max((p.hosts[n] for p in problems), key=lambda spec: spec.baseline_cores)
        hosts.append(
            replace(
                h,
                baseline_cores=busiest.baseline_cores,
                baseline_basis=busiest.baseline_basis,
                netty_cores=sum(p.hosts[n].netty_cores for p in problems),
            )
        )
    return tuple(hosts)


def job_policies(inv: Inventory, jobs: Sequence[tuple[str, str]]) -> dict[str, JobPolicy]:
    """Each planned job's priority and budget from the inventory's ``jobs:`` entry of its Flink name (``jobs``: (name
    in the fleet, the profile's job name) — two copies of one job both take its entry), with a ``budget.uplinks`` of
    ``'*'`` spread over every edge host it does not name. Jobs that set nothing are left out."""
    edges = [h.name for h in inv.edges]
    out = {}
    for name, flink_name in jobs:
        entry = inv.fleet_job(flink_name)
        if entry is None or (entry.priority is None and entry.budget is None):
            continue
        budget = entry.budget
        shares = dict(budget.uplinks) if budget else {}
        default = shares.pop("*", None)
        if default is not None:
            shares = {h: shares.get(h, default) for h in edges}
        out[name] = JobPolicy(
            priority=entry.priority, uplink_shares=shares, min_rate_scale=budget.min_rate_scale if budget else None
        )
    return out


def job_scale(policy: JobPolicy | None, scale: float) -> float:
    """The rate scale a job is planned at when the fleet's is ``scale``: never below its ``min_rate_scale``."""
    floor = policy.min_rate_scale if policy is not None else None
    return max(scale, floor) if floor is not None else scale


def check_rate_scale(
    policies: Mapping[str, JobPolicy], scale: float, job_scales: Mapping[str, float] | None = None
) -> None:
    """A plain plan at ``scale`` (``--rate-scale``; a job's own where ``job_scales`` gives one) below a job's minimum
    is refused: the user asked for a rate the job's budget says it must not drop to (``--max-rate`` is where the
    minimum takes part)."""
    for name, p in policies.items():
        asked = (job_scales or {}).get(name, scale)
        if p.min_rate_scale is not None and asked < p.min_rate_scale:
            raise BadInput(
                f"{asked:g} is below job {name!r}'s budget.min_rate_scale {p.min_rate_scale:g}: plan at "
                f"--rate-scale {p.min_rate_scale:g} or more, or use --max-rate",
                field="--rate-scale",
            )


def combine(
    named: Sequence[tuple[str, PlacementProblem]],
    policies: Mapping[str, JobPolicy] | None = None,
    scales: Mapping[str, float] | None = None,
) -> JointProblem:
    """One problem over every job's subtasks (see the module doc). ``named``: (unique job name, its problem); the
    problems must come from one inventory, policy and rate scale — or, with ``policies``, a job's rate scale may be
    its ``min_rate_scale`` above the others' (:func:`job_scale`; the joint problem's is the lowest); ``scales``: job
    name -> the rate scale asked of that job where it has its own (``--rate-scale JOB=X``), before any minimum.
    ``policies``: job name -> its priority and budget (:func:`job_policies`)."""
    problems = [p for _, p in named]
    first = problems[0]
    policies = dict(policies or {})
    fleet_scale = min(p.rate_scale for p in problems)

    def as_asked(name: str, p: PlacementProblem) -> bool:
        asked = (scales or {}).get(name, fleet_scale)
        return p.rate_scale in (asked, job_scale(policies.get(name), asked))

    if any(p.policy != first.policy or p.slot_sharing != first.slot_sharing for p in problems) or not all(
        as_asked(name, p) for name, p in named
    ):
        raise ValueError(
            "jobs planned together must share the inventory's policy and the rate scale (or the scale asked of each)"
        )
    jobs = tuple(Job(name, p, f"j{n}_") for n, (name, p) in enumerate(named))
    subtasks: list[Subtask] = []
    channels: list[Channel] = []
    order: list[str] = []
    names: dict[str, str] = {}
    whole: set[str] = set()
    vertex_job: dict[str, str] = {}
    warnings: list[str] = []
    input_warnings: list[str] = []
    latency_bounds: dict[tuple[str, str], float] = {}
    for job in jobs:
        p, pre = job.problem, job.prefix
        subtasks.extend(
            replace(s, vertex_id=pre + s.vertex_id, vertex_name=f"{job.name}: {s.vertex_name}") for s in p.subtasks
        )
        channels.extend(_renamed(ch, pre) for ch in p.channels)
        order.extend(pre + v for v in p.vertex_order)
        names.update({pre + v: f"{job.name}: {name}" for v, name in p.vertex_names.items()})
        whole.update(pre + v for v in p.whole_vertices)
        vertex_job.update({pre + v: job.name for v in p.vertex_order})
        latency_bounds.update({(pre + a, pre + b): ms for (a, b), ms in p.latency_bounds.items()})
        warnings.extend(f"{job.name}: {w}" for w in p.warnings)
        input_warnings.extend(f"{job.name}: {w}" for w in p.input_warnings)
    problem = PlacementProblem(
        hosts=_shared_hosts(problems),
        subtasks=tuple(subtasks),
        channels=tuple(channels),
        vertex_order=tuple(order),
        vertex_names=names,
        policy=first.policy,
        slot_sharing=first.slot_sharing,
        rate_scale=fleet_scale,
        warnings=tuple(warnings),
        input_warnings=tuple(input_warnings),
        whole_vertices=frozenset(whole),
        vertex_job=vertex_job,
        latency_bounds=latency_bounds,
        job_policies={job.name: policies[job.name] for job in jobs if job.name in policies},
    )
    return JointProblem(problem, jobs)


def _renamed(ch: Channel, prefix: str) -> Channel:
    return replace(ch, source=prefix + ch.source, target=prefix + ch.target)


def build_joint(
    inv: Inventory,
    named: Sequence[tuple[str, JobProfile]],
    scale: float,
    *,
    placement_mode: str,
    inventory_source: str,
    policies: Mapping[str, JobPolicy],
    known: frozenset[str] = frozenset(),
    adjust: Callable[[PlacementProblem], PlacementProblem] = lambda p: p,
    job_scales: Mapping[str, float] | None = None,
) -> JointProblem:
    """The joint problem of ``named`` ((unique job name, its profile)) at the fleet's rate ``scale``: each job built
    as for one job at that scale — or at its own in ``job_scales`` (job name -> scale: ``--rate-scale JOB=X``, the
    watch's per-job demand) — or at its ``min_rate_scale`` when higher (:func:`job_scale`), then :func:`combine`-d.
    ``known``: vertex names and ids of jobs not planned (running ones: their pins are no typo); ``adjust``: what is
    done to each job's problem before combining (``placement plan --running``'s fixed load). ``placement plan`` with
    several profiles and ``placement watch`` of several jobs both build it here."""
    others = fleet_vertex_keys(p for _, p in named) | known
    asked = {name: (job_scales or {}).get(name, scale) for name, _ in named}

    def options(name: str) -> PlanOptions:
        return PlanOptions(rate_scale=job_scale(policies.get(name), asked[name]), placement_mode=placement_mode)

    return combine(
        [
            (name, adjust(build_problem(inv, p, options(name), inventory_source=inventory_source, other_jobs=others)))
            for name, p in named
        ],
        policies,
        asked,
    )


def job_costs(joint: JointProblem, assignment: Assignment, total: PlanCost | None) -> dict[str, PlanCost]:
    """Each job's part of a joint ``assignment`` evaluated as its own (its links, hosts and objective), with its path
    latencies queued behind every job's traffic on a shared uplink (``total``: the joint evaluation; None: its own
    traffic alone)."""
    split = joint.split(assignment)
    shared = {link.host: link.mbit for link in total.links} if total is not None else None
    return {
        job.name: with_shared_queues(job.problem, split[job.name], evaluate(job.problem, split[job.name]), shared)
        for job in joint.jobs
    }


def with_shared_queues(
    problem: PlacementProblem, assignment: Assignment, cost: PlanCost, shared: Mapping[str, float] | None
) -> PlanCost:
    """A job's path latencies queue behind every job's traffic on a shared uplink (the joint link loads), not its own
    alone (costmodel.latency)."""
    if shared is None or not cost.paths:
        return cost
    from placement.costmodel.latency import path_latencies

    return replace(
        cost,
        paths=path_latencies(problem, assignment, {link.host: shared.get(link.host, link.mbit) for link in cost.links}),
    )
