"""``placement plan --running PLAN``: the plans of jobs that keep running, read as fixed load
(:mod:`placement.costmodel.running`) — a plan.json, a plan directory, or a fleet's directory (all its jobs). Their
figures are the plans' own predictions (plan.json ``hosts`` and ``links``), checked against the inventory the new plan
is made for."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from placement.costmodel.model import RunningUse
from placement.costmodel.running import merged, uses_of
from placement.errors import BadInput
from placement.inventory import Inventory
from placement.loading import read_document
from placement.writers.planjson import load_plan


@dataclass(frozen=True)
class RunningPlans:
    uses: dict[str, list[RunningUse]] = field(default_factory=dict)  # host -> the running jobs' use of it
    jobs: list[tuple[str, str]] = field(default_factory=list)  # (job, the path given)
    warnings: list[str] = field(default_factory=list)
    vertices: frozenset[str] = frozenset()  # their vertex names and ids: pins naming them are no typo of the new job's
    notes: list[str] = field(default_factory=list)  # said with the plan (no warning: --strict does not fail on them)

    def uses_of_job(self, job: str) -> dict[str, dict[str, float]]:
        """One running job's use of each host it uses (cores, memory_mib, slots, mbit on its uplink): --json's
        figures."""
        return {
            host: {"cores": r.cores, "memory_mib": r.memory_mib, "slots": r.slots, "mbit": r.mbit}
            for host, here in self.uses.items()
            for r in here
            if r.job == job
        }


def _expanded(paths: Sequence[str]) -> list[str]:
    """A fleet's directory (``fleet.json`` beside its jobs' plan directories) stands for every job in it."""
    from placement.writers.fleetjson import FLEET_FILE, is_fleet_dir  # fleet.json's models: only with --running

    out: list[str] = []
    for path in paths:
        fleet = Path(path) / FLEET_FILE
        if is_fleet_dir(Path(path)):
            doc = read_document(fleet)
            jobs = doc.get("jobs") if isinstance(doc, dict) else None
            if not isinstance(jobs, list) or not all(
                isinstance(j, dict) and isinstance(j.get("dir"), str) for j in jobs
            ):
                raise BadInput("is no list of jobs with their plan directories", source=str(fleet), field="jobs")
            out.extend(str(Path(path) / j["dir"]) for j in jobs)
        else:
            out.append(path)
    return out


def load_running(paths: Sequence[str], inv: Inventory, planned: Sequence[str]) -> RunningPlans:
    """Read every ``--running`` plan; bad input names the file and field (a host the inventory does not have, a job
    this plan places, the same job twice)."""
    if not paths:
        return RunningPlans()
    hosts = {h.name: h for h in inv.hosts}
    uses: dict[str, list[RunningUse]] = {}
    jobs: list[tuple[str, str]] = []
    warnings: list[str] = []
    digest = inv.digest()
    vertices: set[str] = set()
    for path in _expanded(paths):
        doc = load_plan(path)
        if doc.job in planned:
            raise BadInput(
                f"is job {doc.job!r}, which this plan places (its load would count twice): drop it from "
                "--running to re-plan it",
                source=str(path),
                field="job",
            )
        if any(doc.job == j for j, _ in jobs):
            raise BadInput(f"job {doc.job!r} is given twice with --running", source=str(path), field="job")
        for i, h in enumerate(doc.hosts):
            if h.host not in hosts:
                raise BadInput(f"host {h.host!r} is not in the inventory", source=str(path), field=f"hosts[{i}].host")
        for i, link in enumerate(doc.links):
            if link.source not in hosts or hosts[link.source].role != "edge":
                raise BadInput(
                    f"{link.source!r} is not an edge host of the inventory", source=str(path), field=f"links[{i}].from"
                )
        if doc.inventory.digest != digest:
            warnings.append(
                f"{path}: inventory.digest: the running plan was made for another version of the inventory; "
                "its predicted use of hosts and links is taken as it is"
            )
        uses = merged(
            uses,
            uses_of(
                doc.job,
                {link.source: link.mbit for link in doc.links},
                [(h.host, h.cores_used, h.memory_mib_used, h.slots_used) for h in doc.hosts],
            ),
        )
        jobs.append((doc.job, str(path)))
        vertices |= {k for a in doc.assignment for k in (a.vertex, a.vertex_id)}
    return RunningPlans(uses, jobs, warnings, frozenset(vertices))


def running_json(runs: RunningPlans) -> list[dict]:
    """--json's ``running``: each job, where its figures come from, and its use of each host (and uplink)."""
    return [{"job": j, "plan": p, "uses": runs.uses_of_job(j)} for j, p in runs.jobs]
