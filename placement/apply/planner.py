"""The apply planner: request + what preflight saw -> the ordered steps and their roll back (pure, no I/O).

Order (custom | vanilla)::

    prepare   lock on the JobManager host; upload the jar
    stop      stop with savepoint                         <- a failure up to here leaves the job running untouched
    install   custom: taskmanagers.cfg and the job's schedulercfg in the scheduler dir (atomic, .prev kept); where
                      the extension is not in effect (--yes): its jar into lib/, the JobManager config, a restart
              vanilla: TaskManager config + restart where its external resource is missing (--yes)
              both: TaskManager config + restart where it lacks the inventory's flink.network keys (--yes)
    redeploy  resubmit from the savepoint (raw REST body: entryClass, programArgsList [+ --placement in vanilla
              mode; custom mode resubmits the job unchanged]); wait RUNNING. Custom mode with a plan that changes
              parallelism (or a job an earlier apply rescaled): the JobGraph submitter on the JobManager host
              instead (per-vertex parallelism overrides + the savepoint; its jar and the job's jar uploaded there in
              ``prepare`` when missing; see :mod:`placement.apply.rescale`)
    verify    every subtask on its planned TaskManager (taskmanager-id == host name; custom mode index by index);
              then the job stays RUNNING without a restart for a settle time (--settle)
    finish    record what was applied (state file on the JobManager host); unlock

The roll back (run on any failure after the stop) restores every file the install step replaced from its ``.prev``,
restarts what was restarted, and resubmits the previous program arguments from the same savepoint (through the
submitter at the previous job's parallelism, vertex by vertex, when the apply used it).
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field

from placement.apply import rescale
from placement.apply.model import (
    AcquireLock,
    ApplyPlan,
    CheckExtension,
    ClusterView,
    HostConfigView,
    JarContents,
    JarFile,
    PlannedSubtask,
    RecordState,
    ReleaseLock,
    RestoreFile,
    SshCommand,
    Step,
    StopWithSavepoint,
    SubmitJob,
    SubmitJobGraph,
    SubmitterView,
    UploadFile,
    UploadJar,
    VerifyPlacement,
    WaitRunning,
    WaitTaskManagers,
    WatchStable,
)
from placement.apply.preflight import (
    SchedulerFix,
    config_satisfies,
    needs_resource,
    network_pending,
    parse_config,
    planned_counts,
    scheduler_fix,
)
from placement.apply.request import ApplyRequest
from placement.apply.vertices import (
    match_vertices,
    planned_subtask_hosts,
    planned_vertices,
    running_subtask_hosts,
)
from placement.flink.options import read_config, update_config
from placement.inventory.failure_detection import flink_config as failure_detection_config
from placement.inventory.network import flink_config as network_config
from placement.scheduler import render_taskmanagers
from placement.writers.vanilla import placement_args

STATE_FORMAT = "placement.apply-state/v1"


def new_program_args(req: ApplyRequest) -> list[str]:
    args = list(req.inventory.job.program_args)
    if req.mode == "vanilla":
        args += placement_args(req.plan)
    return args


def previous_program_args(req: ApplyRequest, view: ClusterView) -> tuple[list[str], str | None]:
    """The arguments the running job was started with, as far as apply knows, and a note when it does not know."""
    record = view.state_record or {}
    if record.get("job_id") == view.job_id and isinstance(record.get("program_args"), list):
        return [str(a) for a in record["program_args"]], None
    return list(req.inventory.job.program_args), (
        f"no apply record for job {view.job_id}: a roll back resubmits it with the inventory's job.program_args "
        f"{json.dumps(list(req.inventory.job.program_args))}"
    )


def planned_subtasks(req: ApplyRequest) -> tuple[PlannedSubtask, ...]:
    """Every subtask of the plan with its host, in the plan's vertex order then index order."""
    order = {v: i for i, v in enumerate(dict.fromkeys(a.vertex_id for a in req.plan.assignment))}
    return tuple(
        PlannedSubtask(a.vertex_id, a.vertex, a.subtask, a.parallelism, a.host)
        for a in sorted(req.plan.assignment, key=lambda a: (order[a.vertex_id], a.subtask))
    )


def placement_matches(req: ApplyRequest, view: ClusterView) -> bool:
    """Does the running job run as planned? Custom mode: every subtask index on its host; vanilla: the counts."""
    if req.mode != "custom":
        return view.actual == planned_counts(req)
    match = match_vertices(planned_vertices(req.plan.assignment), view.running_vertices)
    return not match.missing and running_subtask_hosts(match, view.subtask_hosts) == planned_subtask_hosts(
        req.plan.assignment
    )


def in_effect(req: ApplyRequest, view: ClusterView) -> tuple[bool, str]:
    """Is the plan already what runs? (the placement matches and apply itself started this job with this plan)"""
    if not placement_matches(req, view):
        return False, "the running placement differs from the plan"
    record = view.state_record or {}
    if record.get("job_id") != view.job_id or record.get("plan") != req.plan_fingerprint:
        return False, (
            "the placement matches, but this job was not started by `placement apply` with this plan "
            "(redeploying pins it)"
        )
    if record.get("program_args") != new_program_args(req):
        return False, "the job runs with other program arguments than this plan needs"
    if req.mode == "custom" and view.schedulercfg != req.schedulercfg:
        return False, "the job's schedulercfg on the JobManager host differs from the plan's"
    if req.mode == "custom" and scheduler_fix(req, view).needed:
        return False, "the scheduler extension is not in effect on the JobManager"
    pending = network_pending(req, view)
    if pending:
        return False, f"the TaskManager config of {', '.join(pending)} lacks keys of flink.network"
    return (
        True,
        f"plan already in effect: job {view.job_id} runs every subtask on its planned TaskManager; nothing to do",
    )


def _resource_names(value: object) -> list[str]:
    """``external-resources`` as names: a YAML list, or Flink's ``a;b`` string."""
    if isinstance(value, list):
        return [str(v) for v in value]
    return [name.strip() for name in str(value or "").split(";") if name.strip()]


def _merge_keys(cfg: HostConfigView | None, path: str, wanted: dict[str, object]) -> str:
    """The config file at ``path`` (as read: ``cfg``) with ``wanted`` set, in that file's own format; an external
    resource joins the ones declared already."""
    text = cfg.text if cfg is not None else None
    name = posixpath.basename(path)
    current = read_config(text, name)
    updates: dict[str, object] = {}
    for key, value in wanted.items():
        if key == "external-resources":
            names = _resource_names(current.get(key))
            updates[key] = names + [n for n in _resource_names(value) if n not in names]
        else:
            updates[key] = value
    return update_config(text, updates, name)


def failure_detection_missing(
    req: ApplyRequest, cfg: HostConfigView | None, *, taskmanager: bool = False
) -> dict[str, object]:
    """The keys of the inventory's ``flink.failure_detection`` (one mapping for every writer:
    :func:`placement.inventory.failure_detection.flink_config`) that the config file ``cfg`` does not give yet; a
    TaskManager's also those of ``flink.network`` that differ from Flink's (:mod:`placement.inventory.network`)."""
    wanted = failure_detection_config(req.inventory.flink.failure_detection)
    if taskmanager:
        wanted |= network_config(req.inventory.flink.network)
    current = parse_config(cfg) if cfg is not None and cfg.text is not None else {}
    return {k: v for k, v in wanted.items() if k in config_satisfies(current, {k: v})}


def submitter_graph(req: ApplyRequest, view: ClusterView) -> SubmitterView | None:
    """The JobGraph submitter's view when this apply resubmits through it (a rescale), else None (a REST jar run)."""
    return view.submitter if rescale.needs_submitter(req, view) else None


def uploads_job_jar(req: ApplyRequest, view: ClusterView) -> bool:
    """Does the plan copy the job's jar onto the JobManager host (for the submitter, which has no copy there)?"""
    graph = submitter_graph(req, view)
    return graph is not None and not graph.job_jar_installed


def plan_apply(req: ApplyRequest, view: ClusterView, *, holder: str, jars: JarContents = JarContents()) -> ApplyPlan:
    """The steps and roll back. ``jars``: the bytes of the jars it may upload (:func:`placement.apply.read_jars`):
    the scheduler extension when the JobManager host has none (custom mode), the JobGraph submitter and the job's jar
    when a rescale needs them there and they are missing."""
    done, why = in_effect(req, view)
    if done:
        return ApplyPlan(job_id=view.job_id, mode=req.mode, steps=(), rollback=(), notes=(), noop=True, noop_reason=why)
    graph = submitter_graph(req, view)
    steps, prepare_notes = prepare_steps(req, view, graph, jars, holder)
    notes = [*([] if view.presumed else [why]), *prepare_notes]  # presumed: the running placement is not known
    steps.append(Step(StopWithSavepoint(view.job_id, req.inventory.flink.savepoint_dir), "stop"))
    install = custom_install(req, view, jars.extension) if req.mode == "custom" else vanilla_install(req, view)
    jar_reuploaded = install.close(req, graph)
    steps += install.steps
    notes += install.notes

    allow_nrs = req.mode == "vanilla"  # lane copies of a split chain get new uids when the mapping changes
    if allow_nrs:
        notes.append(
            "vanilla mode resubmits with allowNonRestoredState: a source chain split into other lanes gets new "
            "operator uids (its split state restarts); keyed state after the first all-to-all edge is restored"
        )
    jar_id = None if jar_reuploaded else req.jar_id
    args = new_program_args(req)
    overrides = rescale.new_overrides(req, view) if graph is not None else {}
    prev_args, unknown = previous_program_args(req, view)
    steps += redeploy_steps(req, view, graph, jar_id, args, overrides, allow_nrs)
    steps += verify_steps(req)
    steps += finish_steps(req, state_record(req, view, args, overrides, prev_args))
    if unknown:
        notes.append(unknown)
    rollback = rollback_steps(
        req, view, graph, install, jar_id, prev_args, allow_nrs=allow_nrs, args_unknown=unknown is not None
    )
    return ApplyPlan(
        job_id=view.job_id,
        mode=req.mode,
        steps=tuple(steps),
        rollback=tuple(rollback),
        notes=tuple(notes),
        restarts=tuple(install.restarts),
    )


def prepare_steps(
    req: ApplyRequest, view: ClusterView, graph: SubmitterView | None, jars: JarContents, holder: str
) -> tuple[list[Step], list[str]]:
    """Before the stop: the lock, then the jars the redeploy needs (the submitter's, or the job's by REST)."""
    jm = req.inventory.jobmanager_host.name
    steps = [Step(AcquireLock(jm, req.paths.lock, holder, req.stale_lock_after_s), "prepare")]
    notes: list[str] = []
    if graph is not None:
        steps += submitter_uploads(req, graph, jars)
        notes.append(
            "parallelism changes ("
            + ("; ".join(rescale.changes(req, view)) or "kept as an earlier apply set it")
            + f"): resubmitted through the JobGraph submitter on {jm} (a REST jar run keeps the job's own)"
        )
    elif req.jar_id is None and req.jar_path is not None:
        steps.append(Step(UploadJar(str(req.jar_path)), "prepare"))
    return steps, notes


@dataclass
class Install:
    """The install phase: its steps, the Flink processes it restarts (the roll back restarts them again after
    restoring the files), the TaskManagers to wait for (host, resource id or None), and its notes."""

    steps: list[Step] = field(default_factory=list)
    restarts: list[str] = field(default_factory=list)
    undo_restarts: list[Step] = field(default_factory=list)
    wait_tms: list[tuple[str, str | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def restart(self, host: str, script: str, why: str, process: str) -> None:
        restart = [
            Step(SshCommand(host, (script, "stop"), why), "install"),
            Step(SshCommand(host, (script, "start"), why), "install"),
        ]
        self.steps += restart
        self.undo_restarts += restart
        self.restarts.append(process)

    def close(self, req: ApplyRequest, graph: SubmitterView | None) -> bool:
        """The steps after the restarts: wait for the TaskManagers, check the extension loaded, upload the job's jar
        again where the JobManager restart forgot it. True when it does the last (the redeploy then has no jar id)."""
        if self.wait_tms:
            self.steps.append(Step(WaitTaskManagers(tuple(self.wait_tms)), "install"))
        if req.mode == "custom" and self.restarts:
            self.steps.append(Step(CheckExtension(req.paths.scheduler_dir), "install"))
        if (
            graph is None
            and req.jar_path is not None
            and any(s.action.kind == "ssh" and "jobmanager" in str(s.action.argv[0]) for s in self.steps)
        ):
            self.steps.append(Step(UploadJar(str(req.jar_path)), "install"))
            return True
        return False


def custom_install(req: ApplyRequest, view: ClusterView, extension: JarFile | None) -> Install:
    """Custom mode: the TaskManager table and the job's schedulercfg for the extension; where the extension is not
    in effect, its jar and keys on the JobManager host and a JobManager restart."""
    inv, paths = req.inventory, req.paths
    jm = inv.jobmanager_host.name
    assert req.schedulercfg is not None
    out = Install()
    table = render_taskmanagers(view.taskmanager_infos, {h.name: [h.address] for h in inv.hosts})
    out.steps.append(
        Step(
            UploadFile(
                jm,
                paths.taskmanagers_table,
                table,
                "the TaskManager table (addresses, slot sizes) the extension places by",
            ),
            "install",
        )
    )
    out.steps.append(
        Step(
            UploadFile(
                jm,
                paths.schedulercfg_for(view.job_name),
                req.schedulercfg,
                f"the plan's schedulercfg for job {view.job_name!r}",
            ),
            "install",
        )
    )
    fix = scheduler_fix(req, view)
    if fix.needed:
        out.steps += extension_uploads(req, view, fix, extension)
        out.restart(jm, paths.daemon("jobmanager"), "restart the JobManager", f"JobManager on {jm}")
        out.wait_tms += [(h, None) for h in sorted({a.host for a in req.plan.assignment})]
        out.notes.append(
            f"the JobManager on {jm} is restarted to load the scheduler extension ({'; '.join(fix.reasons)})"
        )
        if req.jar_path is None:
            out.notes.append("the JobManager restart forgets uploaded jars: give --jar so apply can upload it again")
    for host, keys in network_pending(req, view).items():
        taskmanager_restart(req, view, out, host, {}, None)
        settings = ", ".join(f"{k}: {v}" for k, v in keys.items())
        out.notes.append(f"the TaskManager on {host} is restarted for flink.network ({settings})")
    out.wait_tms = list(dict.fromkeys(out.wait_tms))
    return out


def extension_uploads(req: ApplyRequest, view: ClusterView, fix: SchedulerFix, extension: JarFile | None) -> list[Step]:
    """The extension's jar into lib/ where it is missing, and the JobManager config with the keys it lacks."""
    paths = req.paths
    jm = req.inventory.jobmanager_host.name
    steps = []
    if fix.install_jar:
        assert extension is not None, "preflight builds the extension when the JobManager host has none"
        steps.append(
            Step(
                UploadFile(
                    jm,
                    posixpath.join(paths.lib, extension.name),
                    extension.content,
                    f"the scheduler extension for Flink {extension.flink_version}",
                ),
                "install",
            )
        )
    # the JobManager restarts anyway: its config file gets the inventory's failure detection too (it reads
    # it at start); an absent file is left to preflight, which refuses one the extension's keys must go into
    cfg = view.jobmanager_config
    failure = failure_detection_missing(req, cfg) if cfg is None or cfg.text is not None else {}
    if fix.config or failure:
        path = cfg.path if cfg is not None else paths.config
        why = ", ".join(f"{k}: {v}" for k, v in fix.config.items())
        if failure:
            why += ("; " if why else "") + f"{len(failure)} key(s) of flink.failure_detection"
        steps.append(Step(UploadFile(jm, path, _merge_keys(cfg, path, {**fix.config, **failure}), why), "install"))
    return steps


def vanilla_install(req: ApplyRequest, view: ClusterView) -> Install:
    """Vanilla mode: each TaskManager's config with its external resource (and the failure detection and
    flink.network keys it lacks), and a restart of it; one whose resource is in effect only for flink.network."""
    out = Install()
    pending = network_pending(req, view)
    for host in sorted(view.taskmanager_configs):
        if needs_resource(req, view, host):
            taskmanager_restart(req, view, out, host, req.vanilla_configs.get(host, {}), host)
        elif host in pending:
            taskmanager_restart(req, view, out, host, {}, host)
    return out


def taskmanager_restart(
    req: ApplyRequest, view: ClusterView, out: Install, host: str, resource: dict[str, object], resource_id: str | None
) -> None:
    """The TaskManager config on ``host`` with ``resource`` and the failure detection and flink.network keys it lacks
    (it reads them all at start), then its restart; ``resource_id``: what to wait for it to register as."""
    cfg = view.taskmanager_configs[host]
    failure = failure_detection_missing(req, cfg, taskmanager=True)
    if config_satisfies(parse_config(cfg), resource) or failure:
        why = f"TaskManager {host}" + (f" declares external resource {host!r}" if resource else "")
        if failure:
            why += f"; {len(failure)} key(s) of flink.failure_detection and flink.network"
        out.steps.append(
            Step(UploadFile(host, cfg.path, _merge_keys(cfg, cfg.path, {**resource, **failure}), why), "install")
        )
    out.restart(host, req.paths.daemon("taskmanager"), f"restart the TaskManager on {host}", f"TaskManager on {host}")
    out.wait_tms.append((host, resource_id))


def redeploy_steps(
    req: ApplyRequest,
    view: ClusterView,
    graph: SubmitterView | None,
    jar_id: str | None,
    args: list[str],
    overrides: dict[str, int],
    allow_nrs: bool,
) -> list[Step]:
    """Resubmit from the savepoint (through the submitter when ``graph``, else a REST jar run) and wait RUNNING."""
    if graph is not None:
        submit = Step(
            SubmitJobGraph(
                req.inventory.jobmanager_host.name,
                rescale.submit_call(req, view, graph, overrides, args),
                "the planned parallelism and placement",
            ),
            "redeploy",
        )
    else:
        submit = Step(
            SubmitJob(jar_id, req.inventory.job.entry_class, tuple(args), allow_nrs, "the planned placement"),
            "redeploy",
        )
    return [submit, Step(WaitRunning(), "redeploy")]


def verify_steps(req: ApplyRequest) -> list[Step]:
    """Every subtask on its planned TaskManager, then (``--settle``) the job stays RUNNING without a restart."""
    order = {v: i for i, v in enumerate(dict.fromkeys(a.vertex for a in req.plan.assignment))}
    planned = tuple(sorted(((v, h, n) for (v, h), n in planned_counts(req).items()), key=lambda t: (order[t[0]], t[1])))
    steps = [Step(VerifyPlacement(planned, planned_subtasks(req) if req.mode == "custom" else ()), "verify")]
    if req.settle_s > 0:
        steps.append(Step(WatchStable(req.settle_s), "verify"))
    return steps


def finish_steps(req: ApplyRequest, record: dict[str, object]) -> list[Step]:
    """Record what was applied in the state file on the JobManager host, then unlock."""
    jm = req.inventory.jobmanager_host.name
    return [
        Step(RecordState(jm, req.state_paths[0], record), "finish"),
        Step(ReleaseLock(jm, req.paths.lock), "finish"),
    ]


def state_record(
    req: ApplyRequest, view: ClusterView, args: list[str], overrides: dict[str, int], prev_args: list[str]
) -> dict[str, object]:
    """What the state file on the JobManager host records of this apply (the next apply and the roll back read it)."""
    inv = req.inventory
    return {
        "format": STATE_FORMAT,
        "plan": req.plan_fingerprint,
        "plan_dir": str(req.plan_dir.resolve()),
        "inventory_digest": inv.digest(),
        "mode": req.mode,
        "job_name": view.job_name,
        "entry_class": inv.job.entry_class,
        "program_args": args,
        "mapping": req.plan.mapping(),
        "previous": {
            "job_id": view.job_id,
            "program_args": prev_args,
            "parallelism": {v.name: v.parallelism for v in view.running_vertices},
        },
        rescale.RECORD_KEY: overrides or None,
    }


def rollback_steps(
    req: ApplyRequest,
    view: ClusterView,
    graph: SubmitterView | None,
    install: Install,
    jar_id: str | None,
    prev_args: list[str],
    *,
    allow_nrs: bool,
    args_unknown: bool,
) -> list[Step]:
    """Every file the install replaced restored from its ``.prev``, the restarts again, the previous job resubmitted
    from the same savepoint."""
    rollback: list[Step] = []
    for s in reversed(install.steps):
        if isinstance(s.action, UploadFile):
            rollback.append(Step(RestoreFile(s.action.host, s.action.path, f"undo: {s.action.why}"), "install"))
    rollback += install.undo_restarts
    if install.wait_tms:
        rollback.append(Step(WaitTaskManagers(tuple((h, None) for h, _ in install.wait_tms)), "install"))
    # Unknown previous arguments may build other operator uids than the savepoint has: better the job running with
    # its keyed state (stable uids) than stopped for a source split's state.
    if graph is not None:  # the previous job at the parallelism it ran at, vertex by vertex
        call = rescale.submit_call(
            req, view, graph, rescale.previous_overrides(view), prev_args, allow_non_restored_state=args_unknown
        )
        rollback.append(
            Step(
                SubmitJobGraph(
                    req.inventory.jobmanager_host.name, call, "roll back: the previous parallelism and placement"
                ),
                "redeploy",
            )
        )
    else:
        rollback.append(
            Step(
                SubmitJob(
                    jar_id,
                    req.inventory.job.entry_class,
                    tuple(prev_args),
                    allow_nrs or args_unknown,
                    "roll back: the previous placement",
                ),
                "redeploy",
            )
        )
    rollback.append(Step(WaitRunning(), "redeploy"))
    return rollback


def submitter_uploads(req: ApplyRequest, graph: SubmitterView, jars: JarContents) -> list[Step]:
    """Before the stop: the submitter's jar and the job's jar onto the JobManager host where missing (named by their
    contents, so they stay for the roll back and the next apply)."""
    jm = req.inventory.jobmanager_host.name
    steps = []
    if not graph.submitter_installed:
        assert jars.submitter is not None, "preflight builds the submitter when the JobManager host has none"
        steps.append(
            Step(
                UploadFile(
                    jm,
                    graph.submitter_path,
                    jars.submitter.content,
                    f"the JobGraph submitter for Flink {jars.submitter.flink_version}",
                ),
                "prepare",
            )
        )
    if not graph.job_jar_installed:
        assert req.jar_path is not None and graph.job_jar_path is not None and jars.job is not None
        steps.append(
            Step(
                UploadFile(jm, graph.job_jar_path, jars.job, f"the job's jar {req.jar_path.name} for the submitter"),
                "prepare",
            )
        )
    return steps
