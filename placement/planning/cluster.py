"""``--running-cluster``: the jobs running in the cluster now, read live, as fixed load — for jobs that were not
planned by ``placement plan`` and so have no plan.json for ``--running``. The reading is :class:`LiveCluster`, which
the command line hands the request (a test hands it a fake: planning needs no cluster).

Each job RUNNING at the JobManager (``--rest`` or the inventory's ``flink.rest_url``) other than the ones being
planned (by the profiles' job names) is measured the way ``placement watch`` measures its window: a short collection
of every such job at once (:func:`placement.collect.collector.collect_jobs`), profiled by ``placement profile``'s own
function with the pandas engine (no Spark start for a window of seconds), its subtasks' hosts from the run's
locations (:func:`placement.profile.rules.subtask_hosts`), that placement priced by the cost model
(:func:`placement.costmodel.running.running_cost`), and the price taken as running load exactly as a plan.json's
predictions are (:func:`placement.costmodel.running.cost_uses`). One cost model: the same figures a plan of that
placement would predict, from what the job does now.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from placement.costmodel.model import PlanOptions, RunningUse, build_problem
from placement.costmodel.running import cost_uses, merged, running_cost
from placement.errors import BadInput
from placement.inventory import Inventory
from placement.planning.request import FIELD, ClusterRead, ClusterReader
from placement.planning.running import RunningPlans, load_running
from placement.profile.format import JobProfile

# What reads the cluster (the collector, requests, the profile pipeline and pandas, pyarrow) is imported only when
# --running-cluster is given: every `placement plan` imports this module, and they were most of its start-up time.
if TYPE_CHECKING:
    from placement.flink.rest import FlinkRest, JobSummary


@dataclass(frozen=True)
class LiveCluster:
    """The :class:`placement.planning.request.ClusterReader` of a real cluster: every other running job measured
    as ``read`` says (:func:`load_cluster`)."""

    read: ClusterRead

    def __call__(
        self, inv: Inventory, planned: Sequence[str], given: Sequence[tuple[str, str]], inventory_path: str
    ) -> RunningPlans:
        return load_cluster(self.read, inv, planned, given, inventory_path)


def running_load(
    paths: Sequence[str], cluster: ClusterReader | None, inv: Inventory, planned: Sequence[str], inventory_path: str
) -> RunningPlans:
    """What the new plan fits around: the ``--running`` plans' predictions and (``--running-cluster``) the jobs
    running now, as ``cluster`` reads them."""
    plans = load_running(paths, inv, planned)
    if cluster is None:
        return plans
    return combined(plans, cluster(inv, planned, plans.jobs, inventory_path))


def others_running(rest: FlinkRest, planned: Sequence[str], given: Sequence[tuple[str, str]]) -> list[JobSummary]:
    """The running jobs other than the planned ones; one also given as ``--running PLAN`` is refused (its load
    would count twice, one of them stale)."""
    jobs = [j for j in rest.running_jobs() if j.name not in planned]
    for j in jobs:
        path = next((p for name, p in given if name == j.name), None)
        if path is not None:
            raise BadInput(
                f"job {j.name!r} runs in the cluster and is given as --running {path}: its load would "
                "count twice; drop one of them",
                field=FIELD,
            )
    return jobs


def labels(jobs: Sequence[JobSummary]) -> dict[str, str]:
    """job id -> the name its load is shown by; two running jobs of one name are told apart by their ids."""
    names = [j.name for j in jobs]
    return {j.id: j.name if names.count(j.name) == 1 else f"{j.name} ({j.id[:8]})" for j in jobs}


def priced_uses(
    label: str,
    profile: JobProfile,
    placed: dict[tuple[str, int], str],
    inv: Inventory,
    inventory_source: str = "inventory",
) -> dict[str, list[RunningUse]]:
    """A running job's profile and where its subtasks run, priced by the cost model as running load (host ->
    uses). Pure: what the offline tests hold to the numbers."""
    problem = build_problem(
        inv, profile, PlanOptions(placement_mode=inv.flink.placement_mode), inventory_source=inventory_source
    )
    cost = running_cost(problem, placed)
    if cost is None:
        missing = sorted(s.label for s in problem.subtasks if s.key not in placed)
        raise BadInput(
            f"running job {label}: where {missing[0]} runs is not known (its profile and its run disagree)", field=FIELD
        )
    return cost_uses(label, cost)


def unknown_taskmanager(label: str, metrics: Path, inv: Inventory) -> tuple[dict[tuple[str, int], str], str | None]:
    """Where the job's subtasks ran (inventory host names), and what to say when one ran on a TaskManager no
    inventory host matches (None: all matched)."""
    from placement.collect.layout import find_manifests
    from placement.profile.rules import subtask_hosts

    placed, unmatched = subtask_hosts(find_manifests(metrics)[-1][1], inv)
    if not unmatched:
        return placed, None
    where = unmatched[0]
    return placed, (
        f"running job {label} has subtasks on TaskManager {where.taskmanager_id} ({where.host}), which the "
        "inventory does not know"
    )


def measured(
    label: str, metrics: Path, read: ClusterRead, inv: Inventory, inventory_path: str, keep: Path | None
) -> tuple[JobProfile, dict[str, list[RunningUse]]] | str:
    """One running job's window: its profile and its priced use of hosts and uplinks; or, on a TaskManager the
    inventory does not know and ``--running-ignore-unknown``, the warning (refused without it)."""
    placed, unknown = unknown_taskmanager(label, metrics, inv)  # before profiling: said at once
    if unknown is not None:
        if not read.ignore_unknown:
            raise BadInput(
                f"{unknown}: add its host to the inventory, or --running-ignore-unknown to plan without "
                "this job's load",
                field=FIELD,
            )
        return f"{unknown}: its load is left out (--running-ignore-unknown)"
    from placement.profile.pipeline import build_profile, write_profile

    try:
        profile = build_profile(metrics, engine="pandas", warmup_s=read.warmup_s, inventory=inventory_path)
    except BadInput as exc:
        raise BadInput(f"running job {label}: {exc}", field=FIELD) from None
    if keep is not None:  # beside its window: what it was priced from, for `placement plan --profile` or a look
        write_profile(profile, keep / f"{metrics.name}.profile.json")
    return profile, priced_uses(label, profile, placed, inv, inventory_path)


def load_cluster(
    read: ClusterRead, inv: Inventory, planned: Sequence[str], given: Sequence[tuple[str, str]], inventory_path: str
) -> RunningPlans:
    """Every other running job's use of hosts and uplinks now, as :class:`RunningPlans` (what ``--running PLAN``
    gives). No other running job: a note, nothing else."""
    from placement.collect.collector import collect_jobs
    from placement.flink.rest import FlinkRest

    url = read.rest_url or inv.flink.rest_url
    jobs = others_running(FlinkRest(url), planned, given)
    # a job being (re)started holds its slots but says nothing yet of its load: named, not guessed
    out = RunningPlans(
        warnings=[
            f"--running-cluster: job {j.name} ({j.id}) is {j.state}, not RUNNING: its load is left out"
            for j in jobs
            if j.state != "RUNNING"
        ]
    )
    jobs = [j for j in jobs if j.state == "RUNNING"]
    if not jobs:
        return replace(out, notes=[f"--running-cluster: no other job runs at {url}: nothing to plan around"])
    if read.keep_dir is not None and read.keep_dir.is_dir() and any(read.keep_dir.iterdir()):
        raise BadInput(
            "is not empty: the windows kept there would mix with earlier ones",
            source=str(read.keep_dir),
            field="--running-keep",
        )
    named = labels(jobs)
    with contextlib.ExitStack() as stack:
        root = read.keep_dir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="placement-running-")))
        dirs = collect_jobs(url, list(named), root, duration_s=read.window_s)
        for jid, metrics in dirs.items():
            got = measured(named[jid], metrics, read, inv, inventory_path, read.keep_dir)
            if isinstance(got, str):
                out.warnings.append(got)
                continue
            profile, uses = got
            out = combined(
                out,
                RunningPlans(
                    uses,
                    [(named[jid], f"cluster {url} job {jid}, measured over {read.window_s:g} s")],
                    vertices=frozenset(k for v in profile.vertices for k in (v.id, v.name)),
                ),
            )
    return out


def combined(plans: RunningPlans, live: RunningPlans) -> RunningPlans:
    """``--running PLAN`` and ``--running-cluster`` together: one set of running load."""
    return RunningPlans(
        merged(plans.uses, live.uses),
        [*plans.jobs, *live.jobs],
        [*plans.warnings, *live.warnings],
        plans.vertices | live.vertices,
        [*plans.notes, *live.notes],
    )
