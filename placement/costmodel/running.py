"""Jobs already running as fixed load (``placement plan --running PLAN.json``): what their plans predicted they take of
each host and uplink comes off the capacities, so a new or changed job is planned around them and never takes what
they need.

A running job's figures are its plan's (``plan.json`` ``hosts`` and ``links``): the subtasks' cores, memory and slots
per host, the Mbit/s per uplink. The TaskManager's own baseline is not in them — it is the host's, counted once
(:attr:`HostSpec.baseline_cores`). Slots come off :attr:`HostSpec.slots` (every planner reads it); cores, memory and
Mbit/s off :meth:`PlacementProblem.usable_cores` and its siblings, which read :attr:`HostSpec.running`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from placement.costmodel.evaluate import PlanCost, evaluate
from placement.costmodel.model import Assignment, HostSpec, PlacementProblem, RunningUse


def with_running(problem: PlacementProblem, uses: Mapping[str, Sequence[RunningUse]]) -> PlacementProblem:
    """``problem`` with the running jobs' use of each host (host name -> uses) taken off its capacities."""
    if not any(uses.values()):
        return problem
    hosts = []
    for h in problem.hosts:
        here = tuple(uses.get(h.name, ()))
        if here:
            taken = sum(r.slots for r in here)
            h = replace(h, running=h.running + here, slots=max(0, h.slots - taken))
        hosts.append(h)
    return replace(problem, hosts=tuple(hosts))


def running_note(h: HostSpec, what: str, unit: str) -> str:
    """ " after running job B's 33.1 Mbit/s" — the running jobs that take ``what`` (``mbit``, ``cores``, ``memory_mib``,
    ``slots``) of ``h``, the largest first: what a shortfall says when another job is what fills the host or link."""
    users = sorted((r for r in h.running if getattr(r, what) > 0), key=lambda r: -getattr(r, what))
    if not users:
        return ""
    spec = ".0f" if what in ("slots", "memory_mib") else ".3g"

    def fmt(x: float) -> str:
        return format(x, spec)

    named = ", ".join(f"{r.job}'s {fmt(getattr(r, what))}{unit}" for r in users)
    return f" after running job{'s' if len(users) > 1 else ''} {named}"


def uses_of(
    job: str, links: Mapping[str, float], hosts: Sequence[tuple[str, float, float, int]]
) -> dict[str, list[RunningUse]]:
    """A job's plan as running load: ``links`` edge host -> Mbit/s on its uplink, ``hosts`` (host, cores, MiB, slots)
    — the figures a plan.json or a :class:`~placement.costmodel.evaluate.PlanCost` carries. Hosts it does not use are
    left out."""
    out: dict[str, list[RunningUse]] = {}
    for host, cores, memory, slots in hosts:
        mbit = links.get(host, 0.0)
        if cores > 0 or memory > 0 or slots > 0 or mbit > 0:
            out.setdefault(host, []).append(RunningUse(job, cores=cores, memory_mib=memory, slots=slots, mbit=mbit))
    for host, mbit in links.items():  # an uplink carrying its data while the host itself holds nothing: not possible
        if mbit > 0 and host not in out:  # in a plan, but a hand-edited one may say so
            out[host] = [RunningUse(job, mbit=mbit)]
    return out


def cost_uses(job: str, cost: PlanCost) -> dict[str, list[RunningUse]]:
    """A priced placement of ``job`` (its own problem's :class:`PlanCost`) as running load: what a plan.json of it
    would say, taken the same way."""
    return uses_of(
        job,
        {link.host: link.mbit for link in cost.links},
        [(h.host, h.cores_used, h.memory_mib_used, h.slots_used) for h in cost.hosts],
    )


def running_cost(problem: PlacementProblem, running: Assignment | None) -> PlanCost | None:
    """A running placement (where its subtasks run now) under the cost model; None when it is unknown or does not
    place every subtask of the problem (a profile of another parallelism than the job's now)."""
    if running is None or not {s.key for s in problem.subtasks} <= set(running):
        return None
    return evaluate(problem, running)


def merged(*uses: Mapping[str, Sequence[RunningUse]]) -> dict[str, list[RunningUse]]:
    out: dict[str, list[RunningUse]] = {}
    for u in uses:
        for host, here in u.items():
            out.setdefault(host, []).extend(here)
    return out
