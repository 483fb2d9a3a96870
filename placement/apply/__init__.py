"""``placement apply``: put a plan into effect on a running Flink job, over SSH and Flink's REST API.

Stages (see each module):

* :mod:`~placement.apply.request` — read the plan directory and inventory (bad input: one line, exit 2), checked
  offline against each other by :mod:`~placement.apply.plan_checks`;
* :mod:`~placement.apply.preflight` — read the cluster over SSH (host keys verified) and REST; refuse on any problem
  with nothing changed;
* :mod:`~placement.apply.planner` — pure: the ordered steps (lock, stop with savepoint, install, resubmit, verify,
  record, unlock) and the roll back; ``--dry-run`` prints them, after what moves against the running job
  (:mod:`~placement.apply.diff`, pure);
* :mod:`~placement.apply.runner` — runs the steps, writes the audit log, rolls back on failure after the stop;
* :mod:`~placement.apply.rescale` — custom mode, a plan that changes parallelism: resubmitted through the JobGraph
  submitter on the JobManager host (:mod:`placement.submitter`), the roll back too.
* :mod:`~placement.apply.fleet` — several jobs (``placement plan`` with several profiles) as one change: every job's
  preflight first, the order from :mod:`~placement.apply.fleet_order` (pure), each job's own steps and roll back.

:func:`prepare` and :func:`execute` are the two halves the CLI (and tests) call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from placement.apply.audit import AuditLog, new_apply_id
from placement.apply.model import ApplyPlan, ClusterView, JarContents, JarFile
from placement.apply.planner import plan_apply, uploads_job_jar
from placement.apply.preflight import (
    PreflightFailed,
    Problem,
    check,
    observe,
    scheduler_fix,
)
from placement.apply.request import ApplyRequest
from placement.apply.runner import ApplyFailed, ApplyOutcome, Runner, holder_string
from placement.errors import PlacementError
from placement.flink.distribution import flink_home_for
from placement.flink.home import FlinkHome, find_flink_home
from placement.flink.port import FlinkPort
from placement.flink.rest import FlinkRest
from placement.remote import DryRunExecutor, Executor, ExecutorFactory
from placement.scheduler import ExtensionJar, build_extension
from placement.submitter import SubmitterJar, build_submitter

__all__ = ["ApplyFailed", "ApplyOutcome", "PreflightFailed", "Prepared", "connect", "execute", "prepare", "read_jars"]


@dataclass
class Prepared:
    request: ApplyRequest
    view: ClusterView
    plan: ApplyPlan
    rest: FlinkPort
    executors: dict[str, Executor]
    factory: ExecutorFactory
    # a dry run against a cluster it could not read: what preflight could not check (the steps are then planned on
    # presumed_view's assumptions); empty when preflight read everything
    unchecked: tuple[str, ...] = ()

    def close(self) -> None:
        self.factory.close()


def connect(
    req: ApplyRequest, *, dry_run: bool, accept_new_host_keys: bool
) -> tuple[dict[str, Executor], ExecutorFactory]:
    """One executor per inventory host; a dry run wraps each so that reads happen and writes are only recorded."""
    factory = ExecutorFactory(req.inventory, accept_new_host_keys=accept_new_host_keys, echo=None)
    executors: dict[str, Executor] = {}
    for host in req.inventory.hosts:
        real = factory.for_host(host)
        executors[host.name] = DryRunExecutor(host.name, echo=None, reader=real) if dry_run else real
    return executors, factory


def prepare(
    req: ApplyRequest, *, dry_run: bool = False, accept_new_host_keys: bool = False, rest: FlinkPort | None = None
) -> Prepared:
    """Preflight and plan; raises :class:`PreflightFailed` (nothing changed) when the plan cannot be applied."""
    rest = rest or FlinkRest(req.inventory.flink.rest_url)
    executors, factory = connect(req, dry_run=dry_run, accept_new_host_keys=accept_new_host_keys)
    try:
        view, problems = observe(req, rest, executors)
        extension = submitter = None
        if view is not None:
            problems += check(req, view)
            if not problems:
                extension, problem = extension_to_install(req, view)
                problems += [problem] if problem else []
            if not problems:
                submitter, problem = submitter_to_install(view)
                problems += [problem] if problem else []
        if view is None and dry_run:  # the cluster could not be read: show the steps anyway, on stated assumptions
            view = presumed_view(req)
            plan = plan_apply(req, view, holder=holder_string(), jars=read_jars(req, view))
            return Prepared(req, view, plan, rest, executors, factory, unchecked=tuple(p.message for p in problems))
        if problems or view is None:
            raise PreflightFailed([p.message for p in problems], bad_input=any(p.stale_input for p in problems))
        plan = plan_apply(req, view, holder=holder_string(), jars=read_jars(req, view, extension, submitter))
    except BaseException:
        factory.close()
        raise
    return Prepared(req, view, plan, rest, executors, factory)


def read_jars(
    req: ApplyRequest, view: ClusterView, extension: ExtensionJar | None = None, submitter: SubmitterJar | None = None
) -> JarContents:
    """The bytes of the jars the plan uploads, read here so that :func:`plan_apply` does no I/O: the extension and
    the submitter built for a JobManager host that lacks them, and the job's jar when the submitter needs a copy."""
    job = req.jar_path.read_bytes() if req.jar_path is not None and uploads_job_jar(req, view) else None
    return JarContents(extension=_jar_file(extension), submitter=_jar_file(submitter), job=job)


def _jar_file(jar: ExtensionJar | SubmitterJar | None) -> JarFile | None:
    return None if jar is None else JarFile(jar.path.name, jar.flink_version, jar.path.read_bytes())


def presumed_view(req: ApplyRequest) -> ClusterView:
    """What a dry run assumes of a cluster it cannot read: the job runs (id unknown) with the plan's vertices, its
    placement differs from the plan, no earlier apply, the TaskManagers are the inventory's hosts and the scheduler
    extension is in place. Every step planned on it is marked as not checked, and nothing is said of what the plan
    changes against what runs."""
    vertices: dict[str, int] = {}
    for a in req.plan.assignment:
        vertices[a.vertex] = vertices.get(a.vertex, 0) + 1
    return ClusterView(
        job_id=req.selector.job_id or "<job id>",
        # by --job ID alone the name is unknown: the plan's job's (a placeholder would name a file of its own)
        job_name=req.selector.job_name or (None if req.selector.job_id else req.inventory.job.name) or req.plan.job,
        job_state="RUNNING",
        vertices=vertices,
        actual={},
        taskmanagers={},
        other_jobs=(),
        jar_ids=(),
        state_record=None,
        schedulercfg=None,
        jobmanager_config=None,
        presumed=True,
    )


def extension_to_install(req: ApplyRequest, view: ClusterView) -> tuple[ExtensionJar | None, Problem | None]:
    """The scheduler extension to upload when the JobManager host has none, built here with javac against the
    cluster's own release (the extension refuses any other): this machine's Flink when it is that release, else the
    release's jars fetched once into the cache (:func:`placement.flink.distribution.flink_home_for`)."""
    if req.mode != "custom" or not scheduler_fix(req, view).install_jar:
        return None, None
    cluster = view.scheduler.flink_version if view.scheduler else None
    try:
        return build_extension(_home_of(cluster)), None
    except PlacementError as exc:
        return None, Problem(f"the JobManager host has no scheduler extension and it cannot be built here: {exc}")


def submitter_to_install(view: ClusterView) -> tuple[SubmitterJar | None, Problem | None]:
    """The JobGraph submitter to upload when a rescale needs it and the JobManager host lacks it, built here against
    the cluster's own release as the extension is (the jar's name carries version and digest)."""
    if view.submitter is None or view.submitter.submitter_installed:
        return None, None
    cluster = view.scheduler.flink_version if view.scheduler else None
    where = view.submitter.submitter_path
    if not cluster:
        return None, Problem(
            f"the JobManager host has no JobGraph submitter ({where}) and the cluster's Flink version "
            "is unknown: build it where the cluster's Flink is "
            "(python -m placement.submitter --flink-version <its release>) and copy it to that path"
        )
    try:
        return build_submitter(_home_of(cluster)), None
    except PlacementError as exc:
        return None, Problem(
            f"the JobManager host has no JobGraph submitter ({where}) and it cannot be built here: {exc}"
        )


def _home_of(cluster: str | None) -> FlinkHome:
    """The Flink home to compile against for a cluster of release ``cluster`` (None: unknown, this machine's own)."""
    if cluster is None:
        return find_flink_home()
    return flink_home_for(cluster, where="the JobManager's Flink version")


def execute(prepared: Prepared, *, audit_path: Path | None, echo: Callable[[str], None] = print) -> ApplyOutcome:
    """Run a prepared plan; raises :class:`ApplyFailed` (with the outcome) when it did not take effect."""
    audit = AuditLog(audit_path, new_apply_id())
    if prepared.plan.noop:
        audit.write("done", status="noop", job=prepared.plan.job_id, reason=prepared.plan.noop_reason)
        return ApplyOutcome("noop", prepared.plan.noop_reason, prepared.plan.job_id)
    runner = Runner(prepared.plan, prepared.rest, prepared.executors, audit, echo, jar_id=prepared.request.jar_id)
    outcome = runner.run()
    if outcome.status != "applied":
        raise ApplyFailed(outcome)
    return outcome
