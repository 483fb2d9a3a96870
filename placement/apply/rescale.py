"""Rescaling at resubmission (custom mode): when apply must go through the JobGraph submitter, and with what.

A REST jar run resubmits a job at the parallelism its own program gives (Flink 2.3 ignores
``pipeline.jobvertex-parallelism-overrides`` there), so a plan whose parallelism differs from the running job's is
resubmitted by the submitter (:mod:`placement.submitter`) on the JobManager host instead: the job's JobGraph is
compiled there with the plan's parallelism as per-vertex overrides and the savepoint, and submitted over REST. The
same holds for a job that an earlier apply started that way (a plain jar run would put it back at the program's
parallelism), and for the roll back: it resubmits the previous job at the parallelism it ran at.

Pure: what preflight read (:class:`~placement.apply.model.ClusterView`) and the request in, decisions out.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping

from placement.apply.model import ClusterView, SubmitterView
from placement.apply.request import ApplyRequest
from placement.apply.vertices import (
    match_vertices,
    parallelism_differences,
    planned_vertices,
)
from placement.submitter import SubmitCall, java_launcher, submitter_jar_name

RECORD_KEY = "parallelism_overrides"  # in the state file: the overrides the recorded job was submitted with


def changes(req: ApplyRequest, view: ClusterView) -> list[str]:
    """``'Parse' plan 3 vs running 2`` for every planned vertex whose parallelism the plan changes."""
    planned = planned_vertices(req.plan.assignment)
    return parallelism_differences(match_vertices(planned, view.running_vertices), planned)


def started_with_overrides(view: ClusterView) -> bool:
    """Did an earlier apply start the running job through the submitter (so a jar run would not keep its
    parallelism)?"""
    record = view.state_record or {}
    return record.get("job_id") == view.job_id and bool(record.get(RECORD_KEY))


def needs_submitter(req: ApplyRequest, view: ClusterView) -> bool:
    return req.mode == "custom" and (bool(changes(req, view)) or started_with_overrides(view))


def new_overrides(req: ApplyRequest, view: ClusterView) -> dict[str, int]:
    """Running job vertex id -> the plan's parallelism, for every planned vertex (found by id, else by name: the
    resubmitted graph is the running job's build, so its ids are the running ones)."""
    planned = planned_vertices(req.plan.assignment)
    match = match_vertices(planned, view.running_vertices)
    return {match.matched[p.id].id: p.parallelism for p in planned if p.id in match.matched}


def previous_overrides(view: ClusterView) -> dict[str, int]:
    """Every running vertex at the parallelism it runs at: what the roll back resubmits."""
    return {v.id: v.parallelism for v in view.running_vertices}


def above_max_parallelism(req: ApplyRequest, view: ClusterView) -> list[str]:
    """Planned vertices above the max parallelism the running job has (REST ``maxParallelism``): Flink refuses such a
    job, and keyed state has exactly max-parallelism key groups to spread."""
    out = []
    for vid, p in new_overrides(req, view).items():
        limit = view.max_parallelism.get(vid)
        if limit is not None and limit > 0 and p > limit:
            name = next((v.name for v in view.running_vertices if v.id == vid), vid)
            out.append(f"{name!r}: the plan's parallelism {p} is above its max parallelism {limit}")
    return out


def job_jar_remote_path(req: ApplyRequest, content: bytes | None) -> str:
    """Where apply puts the local job jar on the JobManager host: named by its content, so one upload serves again."""
    assert req.jar_path is not None
    digest = hashlib.sha256(content if content is not None else req.jar_path.read_bytes()).hexdigest()[:16]
    return posixpath.join(req.paths.state_dir, "jars", f"{digest}-{req.jar_path.name}")


def submitter_remote_path(req: ApplyRequest, flink_version: str) -> str:
    return posixpath.join(req.paths.state_dir, "submitter", submitter_jar_name(flink_version))


def submit_call(
    req: ApplyRequest,
    view: ClusterView,
    sub: SubmitterView,
    overrides: Mapping[str, int],
    program_args: list[str],
    *,
    allow_non_restored_state: bool = False,
) -> SubmitCall:
    inv = req.inventory
    assert sub.job_jar_path is not None  # preflight refuses a parallelism change without the job's jar on the host
    return SubmitCall(
        java=java_launcher(sub.java_home),
        submitter_jar=sub.submitter_path,
        flink_home=req.paths.home,
        conf_dir=posixpath.dirname(req.paths.config),
        rest_url=inv.flink.rest_url.rstrip("/"),
        job_jar=sub.job_jar_path,
        entry_class=inv.job.entry_class,
        program_args=tuple(program_args),
        overrides=tuple(sorted(overrides.items())),
        allow_non_restored_state=allow_non_restored_state,
    )
