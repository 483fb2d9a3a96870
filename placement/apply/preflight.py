"""Preflight: read the cluster (SSH + REST, nothing written) and say whether the plan can be applied.

:func:`observe` connects to every host (host keys verified), reads the job, its placement, the TaskManagers and the
files apply will replace; :func:`check` turns request + view into the list of problems that stop the apply. Nothing
on any host or in Flink changes here: the only SSH commands are ``true``, ``cat``, ``ls`` (of the JobManager's
``lib/``, custom mode) and a writability probe of the savepoint directory (which creates and removes an empty temp
file, the only honest test of "can be written").

Custom mode also asks the JobManager whether the scheduler extension is in effect (:func:`scheduler_fix`) and matches
the plan's vertices to the running job's by id (:mod:`placement.apply.vertices`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import posixpath
import re
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import yaml

from placement.apply.model import (
    ClusterView,
    Counts,
    HostConfigView,
    SchedulerView,
    SubmitterView,
    TaskManagerView,
)
from placement.apply.request import ApplyRequest
from placement.apply.rescale import (
    above_max_parallelism,
    changes,
    job_jar_remote_path,
    needs_submitter,
    submitter_remote_path,
)
from placement.apply.vertices import match_vertices, planned_vertices
from placement.errors import BadInput, PlacementError
from placement.flink.cluster_version import pin_mismatch, reported_version_text
from placement.flink.options import CONFIG_YAML, LEGACY_CONFIG, config_file_names, read_config
from placement.flink.port import FlinkPort
from placement.flink.rest import TERMINAL_STATES, FlinkRestError, VertexInfo
from placement.flink.versions import FlinkVersion, supported_version
from placement.inventory.network import flink_config as network_config
from placement.remote import CommandFailed, Executor, HostUnreachable
from placement.scheduler import (
    extension_active,
    taskmanager_config,
    taskmanager_resource_name,
)
from placement.scheduler import jobmanager_config as extension_jobmanager_config
from placement.scheduler.build import JAR_PREFIX
from placement.submitter import java_launcher

SLOT_CPU_DEFAULT = 0.25  # what the lab jobs' slot sharing groups request per slot (--slot-cpu)
SLOT_HEAP_MB_DEFAULT = 16  # (--slot-heap-mb)


class PreflightFailed(PlacementError):
    """Preflight found problems; nothing was changed. ``problems`` holds one line each."""

    def __init__(self, problems: list[str], *, bad_input: bool = False):
        self.problems = problems
        if bad_input:
            self.exit_code = BadInput.exit_code
        super().__init__("preflight refused, nothing was changed: " + "; ".join(problems))


@dataclass(frozen=True)
class Problem:
    message: str
    stale_input: bool = False  # the plan/inventory does not match the cluster (exit 2)


def planned_counts(req: ApplyRequest) -> Counts:
    return dict(Counter((a.vertex, a.host) for a in req.plan.assignment))


def planned_parallelism(req: ApplyRequest) -> dict[str, int]:
    """Vertex name -> the parallelism the plan gives it."""
    return {a.vertex: a.parallelism for a in req.plan.assignment}


def slots_needed(counts: Counts) -> dict[str, int]:
    """Slots a host needs when subtasks of different vertices share slots: its largest per-vertex count."""
    out: dict[str, int] = {}
    for (_, host), n in counts.items():
        out[host] = max(out.get(host, 0), n)
    return out


def resolve_job(req: ApplyRequest, rest: FlinkPort) -> tuple[str, str, str]:
    """(job id, name, state) of the job to apply to; an unknown id or name is bad input (exit 2)."""
    sel = req.selector
    if sel.job_id:
        try:
            raw = rest.job_raw(sel.job_id)
        except FlinkRestError as exc:
            if exc.status in (400, 404):
                raise BadInput(f"no job {sel.job_id!r} on {rest.url}", field="--job") from None
            raise
        return raw["jid"], raw.get("name", ""), raw["state"]
    name = sel.job_name or req.inventory.job.name
    where = "--job-name" if sel.job_name else "job.name"
    if not name:
        raise BadInput(
            "which job? give --job ID, --job-name NAME or job.name in the inventory", source=str(req.inventory_path)
        )
    jobs = [j for j in rest.jobs() if j.name == name and j.state not in TERMINAL_STATES]
    if not jobs:
        running = sorted({j.name for j in rest.running_jobs()})
        raise BadInput(
            f"no running job named {name!r} on {rest.url} (running: {', '.join(running) or 'none'})", field=where
        )
    if len(jobs) > 1:
        raise BadInput(
            f"{len(jobs)} running jobs named {name!r} ({', '.join(j.id for j in jobs)}); pick one with --job",
            field=where,
        )
    return jobs[0].id, jobs[0].name, jobs[0].state


def probe_writable_argv(path: str) -> list[str]:
    """Is ``path`` (or, when missing, its nearest existing parent) a directory this user can create files in?"""
    script = (
        'p="$1"; while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done; '
        '[ -d "$p" ] || { echo "$p is not a directory" >&2; exit 1; }; '
        't=$(mktemp "$p/.placement-probe.XXXXXX") || { echo "cannot create files in $p" >&2; exit 1; }; rm -f -- "$t"'
    )
    return ["sh", "-c", script, "sh", path]


def observe(
    req: ApplyRequest, rest: FlinkPort, executors: dict[str, Executor]
) -> tuple[ClusterView | None, list[Problem]]:
    """Read everything (SSH to every host, REST); returns the view (None when the job could not be read) and
    problems."""
    problems: list[Problem] = []
    inv = req.inventory
    paths = req.paths
    reachable: set[str] = set()
    for host in inv.hosts:
        try:
            executors[host.name].run(["true"], mutates=False, timeout=30)
            reachable.add(host.name)
        except HostUnreachable as exc:
            problems.append(Problem(str(exc)))
        except CommandFailed as exc:
            problems.append(Problem(f"{host.name}: ssh works but `true` failed: {exc.result.message}"))
    try:
        rest.overview()
    except FlinkRestError as exc:
        problems.append(Problem(f"Flink REST is not up: {exc}"))
        return None, problems

    flink_version = reported_version_text(rest.config())
    version: FlinkVersion | None = None
    if flink_version is not None:
        try:
            version = supported_version(flink_version, f"the JobManager at {rest.url} (GET /config)")
        except PlacementError as exc:
            problems.append(Problem(str(exc)))
    job_id, job_name, job_state = resolve_job(req, rest)  # bad input raises at once
    details = rest.job(job_id)
    vertices: dict[str, int] = {}
    for v in details.vertices:
        vertices[v.name] = vertices.get(v.name, 0) + v.parallelism
    subtask_hosts = read_subtask_hosts(rest, job_id, details.vertices) if job_state == "RUNNING" else {}
    actual = hosts_by_name(details.vertices, subtask_hosts)
    tm_infos = tuple(rest.taskmanagers())
    tms = {
        t.id: TaskManagerView(t.id, t.slots, t.free_slots, dict(t.total_resource), dict(t.free_resource))
        for t in tm_infos
    }
    others = tuple(j.id for j in rest.running_jobs() if j.id != job_id)
    jar_ids = tuple(rest.jar_ids())

    jm = inv.jobmanager_host
    jm_ex = executors[jm.name]
    state_record = schedulercfg = None
    jm_config = None
    installed: tuple[str, ...] | None = None
    tm_configs: dict[str, HostConfigView] = {}
    if jm.name in reachable:
        try:
            for state_path in req.state_paths:
                text = jm_ex.read_text(state_path)
                if not text:
                    continue
                try:
                    record = json.loads(text)
                except ValueError:
                    problems.append(Problem(f"{jm.name}:{state_path}: not JSON (remove it, or fix it by hand)"))
                    break
                if state_record is None or record.get("job_id") == job_id:  # the shared file: only if it is this job's
                    state_record = record
                if record.get("job_id") == job_id:
                    break
            if req.mode == "custom":
                schedulercfg = jm_ex.read_text(paths.schedulercfg_for(job_name))
                jm_config = read_host_config(jm_ex, jm.name, req, version)
                listing = jm_ex.run(
                    ["sh", "-c", 'cd -- "$1" 2>/dev/null && ls -1 || true', "sh", paths.lib], mutates=False, timeout=30
                )
                installed = tuple(
                    n for n in listing.stdout.split() if n.startswith(JAR_PREFIX + "-") and n.endswith(".jar")
                )
            sp = paths.savepoint_path
            if sp is not None:
                probe = jm_ex.run(probe_writable_argv(sp), check=False, mutates=False, timeout=30)
                if not probe.ok:
                    problems.append(
                        Problem(
                            f"savepoint directory {req.inventory.flink.savepoint_dir} on {jm.name} is not "
                            f"writable: {probe.message}"
                        )
                    )
        except CommandFailed as exc:
            problems.append(Problem(str(exc)))
    if req.mode == "vanilla":
        needed = slots_needed(planned_counts(req))
        for name in sorted(needed):
            tm = tms.get(name)
            if tm is not None and tm.extended(name) >= needed[name]:
                continue  # the running TaskManager declares enough of its resource: no config to look at
            if name in reachable:
                try:
                    tm_configs[name] = read_host_config(executors[name], name, req, version)
                except CommandFailed as exc:
                    problems.append(Problem(str(exc)))
    if network_config(inv.flink.network):  # flink.network's keys go into every planned TaskManager's config
        for name in sorted({a.host for a in req.plan.assignment} & reachable - set(tm_configs)):
            try:
                tm_configs[name] = read_host_config(executors[name], name, req, version)
            except CommandFailed as exc:
                problems.append(Problem(str(exc)))
    scheduler = None
    if req.mode == "custom":
        scheduler = SchedulerView(
            active=extension_active(rest),
            settings=rest.jobmanager_config(),
            installed_jars=installed,
            flink_version=flink_version,
        )
    max_parallelism = {
        str(v["id"]): int(v.get("maxParallelism") or 0) for v in rest.job_raw(job_id).get("vertices", [])
    }
    view = ClusterView(
        job_id=job_id,
        job_name=job_name,
        job_state=job_state,
        vertices=vertices,
        actual=actual,
        taskmanagers=tms,
        other_jobs=others,
        jar_ids=jar_ids,
        state_record=state_record,
        schedulercfg=schedulercfg,
        jobmanager_config=jm_config,
        taskmanager_configs=tm_configs,
        running_vertices=tuple(details.vertices),
        subtask_hosts=subtask_hosts,
        taskmanager_infos=tm_infos,
        scheduler=scheduler,
        max_parallelism=max_parallelism,
        flink_version=flink_version,
    )
    if jm.name in reachable and needs_submitter(req, view):
        try:
            view = dataclasses.replace(view, submitter=observe_submitter(req, view, jm_ex))
        except CommandFailed as exc:
            problems.append(Problem(str(exc)))
    return view, problems


def read_host_config(executor: Executor, host: str, req: ApplyRequest, version: FlinkVersion | None) -> HostConfigView:
    """The config file the host's Flink reads (so the one to edit): 1.19/1.20 read ``flink-conf.yaml`` where it exists,
    else ``config.yaml``; 2.x only ``config.yaml``. None as text: neither exists."""
    names = config_file_names(version) if version is not None else (CONFIG_YAML,)
    for name in names:
        path = req.paths.conf_file(name)
        text = executor.read_text(path)
        if text is not None:
            return HostConfigView(host, path, text)
    return HostConfigView(host, req.paths.config, None)


def observe_submitter(req: ApplyRequest, view: ClusterView, jm_ex: Executor) -> SubmitterView:
    """One read-only command on the JobManager host: is the submitter jar there, the job jar, does `java` run."""
    settings = view.scheduler.settings if view.scheduler else {}
    version = view.scheduler.flink_version if view.scheduler else None
    submitter = submitter_remote_path(req, version or "unknown")
    java_home = settings.get("env.java.home") or None
    if req.jar_path is not None:
        candidates = [job_jar_remote_path(req, None)]
    elif req.jar_id:  # uploaded over REST: look where the JobManager keeps uploads
        candidates = upload_candidates(settings, req.jar_id)
    else:
        candidates = []
    out = jm_ex.run(
        submitter_probe_argv(submitter, candidates, java_launcher(java_home)), mutates=False, timeout=60
    ).stdout
    have = {line[5:] for line in out.splitlines() if line.startswith("have ")}
    found = next((c for c in have if c != submitter), None)
    java_error = next((line[11:] for line in out.splitlines() if line.startswith("java-error ")), None)
    return SubmitterView(
        submitter_path=submitter,
        submitter_installed=submitter in have,
        job_jar_path=found or (candidates[0] if req.jar_path is not None else None),
        job_jar_installed=found is not None,
        java_home=java_home,
        java_error=java_error,
    )


def upload_candidates(settings: dict[str, str], jar_id: str) -> list[str]:
    """Where a JobManager keeps a jar uploaded over REST: ``web.upload.dir`` if set, else a ``flink-web-<uuid>`` dir
    under ``web.tmpdir`` (or /tmp). Patterns: the probe lets the host's shell expand them."""
    if settings.get("web.upload.dir"):
        base = settings["web.upload.dir"]
        return [posixpath.join(base, jar_id), posixpath.join(base, "flink-web-upload", jar_id)]
    return [posixpath.join(settings.get("web.tmpdir") or "/tmp", "flink-web-*", "flink-web-upload", jar_id)]


def submitter_probe_argv(submitter: str, candidates: Sequence[str], java: str) -> list[str]:
    """``have <path>`` for each existing file (candidates may hold ``*``), ``java-error <why>`` when java does not
    run."""

    def quoted_glob(path: str) -> str:
        return "*".join(shlex.quote(part) for part in path.split("*"))

    files = " ".join([shlex.quote(submitter), *map(quoted_glob, candidates)])
    script = (
        f'for f in {files}; do [ -f "$f" ] && echo "have $f"; done; '
        'if v=$("$1" -version 2>&1); then :; else echo "java-error $(printf %s "$v" | head -n 1)"; fi; exit 0'
    )
    return ["sh", "-c", script, "sh", java]


def read_subtask_hosts(rest: FlinkPort, job_id: str, vertices: Sequence[VertexInfo]) -> dict[str, tuple[str, ...]]:
    """Running vertex id -> taskmanager-id of subtask 0, 1, ... (REST ``/jobs/<id>/vertices/<vid>``)."""
    return {
        v.id: tuple(s.taskmanager_id for s in sorted(rest.subtasks(job_id, v.id), key=lambda s: s.index))
        for v in vertices
    }


def hosts_by_name(vertices: Sequence[VertexInfo], subtask_hosts: dict[str, tuple[str, ...]]) -> Counts:
    """(vertex name, taskmanager-id) -> subtasks, summed over vertices sharing a name (vanilla lanes)."""
    return dict(Counter((v.name, tm) for v in vertices for tm in subtask_hosts.get(v.id, ())))


def _arg(args: list[str], name: str, default: float) -> float:
    for i, a in enumerate(args[:-1]):
        if a == name:
            try:
                return float(args[i + 1])
            except ValueError:
                return default
    return default


def config_satisfies(current: dict[str, object], wanted: dict[str, object]) -> list[str]:
    """The keys of ``wanted`` that ``current`` (flattened Flink config) does not give; amounts may be larger."""
    missing = []
    for key, value in wanted.items():
        have = current.get(key)
        if key == "external-resources":

            def names(v: object) -> set[str]:
                if isinstance(v, list):
                    return {str(x) for x in v}
                return {s.strip() for s in str(v or "").split(";") if s.strip()}

            if not names(value) <= names(have):
                missing.append(key)
        elif key.endswith(".amount") or key == "taskmanager.numberOfTaskSlots":
            try:
                if have is None or float(have) < float(value):  # type: ignore[arg-type]
                    missing.append(key)
            except (TypeError, ValueError):
                missing.append(key)
        elif have is None or str(have) != str(value):
            missing.append(key)
    return missing


def parse_config(view: HostConfigView) -> dict[str, object]:
    try:
        return read_config(view.text, posixpath.basename(view.path))
    except yaml.YAMLError as exc:
        raise PlacementError(f"{view.host}:{view.path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    except ValueError as exc:
        raise PlacementError(f"{view.host}:{view.path}: {exc}") from None


def check(req: ApplyRequest, view: ClusterView) -> list[Problem]:
    """Problems that stop the apply (pure)."""
    problems: list[Problem] = []
    inv = req.inventory
    mismatch = pin_mismatch(
        inv.flink.version, view.flink_version, where=f"{req.inventory_path}: flink.version", rest_url=inv.flink.rest_url
    )
    if mismatch:
        problems.append(Problem(mismatch, stale_input=True))
    if view.job_state != "RUNNING":
        problems.append(Problem(f"job {view.job_id} ({view.job_name}) is {view.job_state}, not RUNNING"))
    problems += graph_problems(req, view)
    if req.jar_id and req.jar_id not in view.jar_ids:
        problems.append(
            Problem(
                f"--jar-id {req.jar_id}: no such jar on the JobManager (uploaded: {', '.join(view.jar_ids) or 'none'})"
            )
        )
    if not req.jar_id and req.jar_path is None:
        problems.append(Problem("no jar to resubmit: give --jar PATH, --jar-id ID or job.jar in the inventory"))

    # free slots / resources once this job's own are released
    args = list(inv.job.program_args)
    slot_cpu = _arg(args, "--slot-cpu", SLOT_CPU_DEFAULT)
    slot_heap = _arg(args, "--slot-heap-mb", SLOT_HEAP_MB_DEFAULT)
    own = slots_needed(view.actual)
    for host, slots in sorted(slots_needed(planned_counts(req)).items()):
        tm = view.taskmanagers.get(host)
        if tm is None:
            problems.append(
                Problem(
                    f"no TaskManager with resource id {host!r} is registered "
                    f"(registered: {', '.join(sorted(view.taskmanagers)) or 'none'})"
                )
            )
            continue

        def available(key: str, ext: str | None = None, tm: TaskManagerView = tm, host: str = host) -> float:
            total = tm.extended(ext) if ext else float(tm.total.get(key, 0.0))
            free = tm.extended(ext, free=True) if ext else float(tm.free.get(key, 0.0))
            if not view.other_jobs:
                return total  # everything on it is this job's, released by the stop
            # other jobs run there too: what is free now plus what this job's slots hold (released by the stop)
            return free + own.get(host, 0) * ({"cpuCores": slot_cpu, "taskHeapMemory": slot_heap}.get(key, 1.0))

        if req.mode == "vanilla":
            if tm.extended(host) >= slots:  # else the TaskManager config step handles it (or refuses)
                have = available("", host)
                if have < slots:
                    problems.append(
                        Problem(
                            f"TaskManager {host}: {have:g} of external resource {host!r} free, the plan needs {slots}"
                        )
                    )
            cpu, heap = available("cpuCores"), available("taskHeapMemory")
            if cpu + 1e-9 < slots * slot_cpu:
                problems.append(
                    Problem(
                        f"TaskManager {host}: {cpu:g} cpu cores free, the plan's {slots} slot(s) need "
                        f"{slots * slot_cpu:g}"
                    )
                )
            if heap + 1e-9 < slots * slot_heap:
                problems.append(
                    Problem(
                        f"TaskManager {host}: {heap:g} MiB task heap free, the plan's {slots} slot(s) need "
                        f"{slots * slot_heap:g}"
                    )
                )
        else:
            # a placed slot requests one unit of the TaskManager's own resource (and its slot size): units are slots
            resource = taskmanager_resource_name(host)
            if tm.extended(resource) < 1:
                keys = ", ".join(f"{k}: {v}" for k, v in taskmanager_config(host, tm.slots or slots).items())
                problems.append(
                    Problem(
                        f"TaskManager {host} declares no external resource {resource!r}, so no slot can be "
                        f"placed on it: set {keys} in its config and restart it"
                    )
                )
                continue
            have = available("", resource)
            if have + 1e-9 < slots:
                problems.append(Problem(f"TaskManager {host}: {have:g} slot(s) free, the plan needs {slots}"))

    problems += network_problems(req, view)
    if req.mode == "vanilla":
        for host, cfg in sorted(view.taskmanager_configs.items()):
            if not needs_resource(req, view, host):
                continue  # read for flink.network only
            try:
                current = parse_config(cfg)
            except PlacementError as exc:
                problems.append(Problem(str(exc)))
                continue
            missing = config_satisfies(current, req.vanilla_configs.get(host, {}))
            what = (
                f"set {', '.join(missing)} in {host}:{cfg.path} and restart its TaskManager"
                if missing
                else f"restart the TaskManager on {host} (its config has the resource, the running one does not)"
            )
            if not req.consent:
                problems.append(
                    Problem(
                        f"TaskManager {host} does not declare external resource {host!r}: apply must {what}; "
                        "pass --yes to allow the restart"
                    )
                )
    else:
        problems += scheduler_problems(req, view)
        problems += rescale_problems(req, view)
    return problems


def needs_resource(req: ApplyRequest, view: ClusterView, host: str) -> bool:
    """Vanilla mode: does the running TaskManager on ``host`` declare too little of its external resource?"""
    tm = view.taskmanagers.get(host)
    return tm is None or tm.extended(host) < slots_needed(planned_counts(req)).get(host, 0)


def network_missing(req: ApplyRequest, cfg: HostConfigView) -> dict[str, object]:
    """The keys of the inventory's ``flink.network`` (those not Flink's defaults: :mod:`placement.inventory.network`)
    that the TaskManager config ``cfg`` does not give."""
    wanted = network_config(req.inventory.flink.network)
    if not wanted:
        return {}
    current = parse_config(cfg) if cfg.text is not None else {}
    return {k: wanted[k] for k in config_satisfies(current, wanted)}


def network_pending(req: ApplyRequest, view: ClusterView) -> dict[str, dict[str, object]]:
    """TaskManager host -> the ``flink.network`` keys its config lacks (only hosts that lack some)."""
    pending = {}
    for host, cfg in sorted(view.taskmanager_configs.items()):
        with contextlib.suppress(PlacementError):  # a config that does not parse: network_problems names it
            missing = network_missing(req, cfg)
            if missing:
                pending[host] = missing
    return pending


def network_problems(req: ApplyRequest, view: ClusterView) -> list[Problem]:
    """A TaskManager config that does not parse; without --yes, the restarts ``flink.network`` needs (a vanilla
    TaskManager restarted for its resource is refused for that already)."""
    problems = []
    own = [h for h in view.taskmanager_configs if not (req.mode == "vanilla" and needs_resource(req, view, h))]
    for host in own:
        try:
            parse_config(view.taskmanager_configs[host])
        except PlacementError as exc:
            problems.append(Problem(str(exc)))
    pending = {h: keys for h, keys in network_pending(req, view).items() if h in own}
    if pending and not req.consent:
        keys = {k: v for missing in pending.values() for k, v in missing.items()}
        problems.append(
            Problem(
                f"flink.network: the TaskManager config of {', '.join(pending)} lacks "
                f"{', '.join(f'{k}: {v}' for k, v in keys.items())}: apply must write it and restart those "
                "TaskManagers (after the savepoint, before the resubmit); pass --yes to allow the restart"
            )
        )
    return problems


def rescale_problems(req: ApplyRequest, view: ClusterView) -> list[Problem]:
    """Custom mode, resubmitted through the submitter: what can be checked before the stop."""
    problems = [
        Problem(f"{what} (Flink refuses such a job: plan again within it)") for what in above_max_parallelism(req, view)
    ]
    sub = view.submitter
    jm = req.inventory.jobmanager_host.name
    if sub is None:
        if needs_submitter(req, view):
            problems.append(
                Problem(
                    f"the plan changes parallelism, and what the JobManager host {jm} has for the "
                    "JobGraph submitter could not be read"
                )
            )
        return problems
    if sub.java_error is not None:
        java = f"{sub.java_home}/bin/java" if sub.java_home else "`java` on the SSH session's PATH"
        problems.append(
            Problem(
                f"the plan changes parallelism ({'; '.join(changes(req, view)) or 'as applied before'}), "
                f"which apply resubmits through the JobGraph submitter on the JobManager host {jm}, but "
                f"{java} does not run there ({sub.java_error}); set env.java.home in its config.yaml"
            )
        )
    if sub.job_jar_path is None:
        problems.append(
            Problem(
                f"the plan changes parallelism: the submitter on {jm} needs the job's jar there, and jar "
                f"{req.jar_id} is not in the JobManager's upload directory; give --jar PATH (apply "
                "uploads it)"
            )
        )
    if req.mode == "custom" and view.jobmanager_config is not None and view.jobmanager_config.text is None:
        problems.append(
            Problem(
                f"{jm}:{req.paths.config}: no such file (the submitter compiles the job with the "
                "JobManager's config, as a jar run does; flink.home must be the JobManager's Flink home)"
            )
        )
    return problems


def graph_problems(req: ApplyRequest, view: ClusterView) -> list[Problem]:
    """The running job's graph against the plan's. Custom mode finds each planned vertex by id, else by its name
    without the SQL planner's ``[n]`` counters (a SQL job's names change with every submission); vanilla mode compares
    names and parallelism summed over lane copies."""
    if req.mode == "custom":  # a parallelism change is a rescale, resubmitted through the submitter
        planned = planned_vertices(req.plan.assignment)
        diffs = match_vertices(planned, view.running_vertices).problems
    else:
        want = planned_parallelism(req)
        diffs = []
        for name in sorted(set(want) | set(view.vertices)):
            p, r = want.get(name), view.vertices.get(name)
            if p != r:
                diffs.append(
                    f"{name!r} plan {p if p is not None else 'absent'} vs running {r if r is not None else 'absent'}"
                )
        diffs = [f"parallelism: {'; '.join(diffs)}"] if diffs else []
        rescale = req.plan.rescale
        if rescale is not None and rescale.changed and set(want) == set(view.vertices):
            changed = ", ".join(f"{name} {a}→{b}" for name, (a, b) in rescale.changed.items())
            return [
                Problem(
                    f"the plan changes parallelism ({changed}), which vanilla mode cannot apply: it resubmits "
                    "by a REST jar run, which keeps the job's own parallelism; plan it for custom mode "
                    "(placement plan --rescale --mode custom)"
                )
            ]
    if not diffs:
        return []
    return [
        Problem(f"stale plan: the running job's graph differs from the plan's ({'; '.join(diffs)})", stale_input=True)
    ]


def jar_built_for(name: str) -> str | None:
    """The Flink version an extension jar's name records (``placement-scheduler-<version>-<digest>.jar``), or None."""
    match = re.fullmatch(re.escape(JAR_PREFIX) + r"-(\d+\.\d+\.\d+[^-]*)-[0-9a-f]+\.jar", name)
    return match[1] if match else None


@dataclass(frozen=True)
class SchedulerFix:
    """What custom mode must change on the JobManager host before a placed job can run (empty: nothing)."""

    reasons: tuple[str, ...]  # why the extension is not in effect, one clause each
    config: dict[str, object]  # JobManager config keys to set
    install_jar: bool  # the extension jar is missing from <home>/lib
    fixable: bool  # a config change + restart (+ jar upload) can fix it

    @property
    def needed(self) -> bool:
        return bool(self.reasons)


def scheduler_fix(req: ApplyRequest, view: ClusterView) -> SchedulerFix:
    """Is the scheduler extension in effect on the JobManager with the inventory's scheduler dir? (pure)"""
    s = view.scheduler
    if s is None:
        return SchedulerFix((), {}, False, True)
    jm, paths = req.inventory.jobmanager_host.name, req.paths
    reasons: list[str] = []
    fixable = True
    install = s.installed_jars is not None and not s.installed_jars
    if install:
        reasons.append(f"no scheduler extension jar in {jm}:{paths.lib}")
    elif s.installed_jars is not None and len(s.installed_jars) > 1:
        reasons.append(f"several extension jars in {jm}:{paths.lib} ({', '.join(s.installed_jars)}); keep one")
        fixable = False
    elif s.installed_jars and s.flink_version and jar_built_for(s.installed_jars[0]) not in (None, s.flink_version):
        # the extension refuses any Flink but the one it was compiled against: the first job would fail
        reasons.append(
            f"the extension jar in {jm}:{paths.lib} ({s.installed_jars[0]}) was built for Flink "
            f"{jar_built_for(s.installed_jars[0])}, the JobManager runs {s.flink_version}: replace it with one "
            "built for that (`placement scheduler install --flink-home <its Flink home>`, or the Ansible role)"
        )
        fixable = False
    if s.active is None:
        reasons.append("the JobManager does not say whether it loaded the extension (GET /jobmanager/environment)")
        fixable = False
    elif s.active is False and not install:
        reasons.append(
            "the running JobManager's classpath has flink-dist before the extension (start it with "
            "bin/jobmanager.sh, whose bin/config.sh order lets lib/ win)"
        )
    config: dict[str, object] = {}
    for key, value in extension_jobmanager_config(paths.scheduler_dir).items():
        have = s.settings.get(key)
        unset_ok = key == "jobmanager.scheduler" and have is None  # Flink's default scheduler
        if not unset_ok and str(have or "").lower() != str(value).lower():
            config[key] = value
            reasons.append(f"{key} is {have if have is not None else 'unset'}, needs {value}")
    return SchedulerFix(tuple(reasons), config, install, fixable)


def scheduler_problems(req: ApplyRequest, view: ClusterView) -> list[Problem]:
    fix = scheduler_fix(req, view)
    if not fix.needed:
        return []
    inv, paths = req.inventory, req.paths
    jm = inv.jobmanager_host.name
    why = "; ".join(fix.reasons)
    if not fix.fixable:
        return [Problem(f"the JobManager on {jm} does not run the scheduler extension: {why}")]
    problems = []
    if fix.config and view.jobmanager_config is not None and view.jobmanager_config.text is None:
        problems.append(
            Problem(
                f"{jm}:{paths.config}: no such file (flink.home in the inventory must be the JobManager's Flink home)"
            )
        )
    elif fix.config and view.jobmanager_config is not None:
        try:
            parse_config(view.jobmanager_config)
        except PlacementError as exc:
            problems.append(Problem(str(exc)))
    if view.other_jobs:
        problems.append(
            Problem(
                f"the JobManager on {jm} must restart to load the scheduler extension ({why}), which "
                f"would end the other running job(s) {', '.join(view.other_jobs)}: stop them first"
            )
        )
    elif not req.consent:
        todo = (
            " and ".join(
                filter(
                    None,
                    [
                        f"install the extension jar into {jm}:{paths.lib}" if fix.install_jar else "",
                        f"set {', '.join(f'{k}: {v}' for k, v in fix.config.items())} in {jm}:{paths.config}"
                        if fix.config
                        else "",
                    ],
                )
            )
            or "restart it"
        )
        problems.append(
            Problem(
                f"the JobManager on {jm} does not run the scheduler extension ({why}): apply must {todo} "
                "and restart the JobManager (the job is stopped with a savepoint first); pass --yes to "
                "allow the restart"
            )
        )
    return problems


_LEGACY_NOTE = f" (Flink 1.19/1.20: {LEGACY_CONFIG} first, which they read instead where it exists)"


def schedulercfg_to_read(req: ApplyRequest) -> str:
    """The job's schedulercfg on the JobManager host, as far as known offline: a job found by --job ID has its name
    only once REST is read (the placeholder is shown as it is, not as the file name it would encode to)."""
    name = req.selector.job_name or (None if req.selector.job_id else req.inventory.job.name)
    if name:
        return req.paths.schedulercfg_for(name)
    return posixpath.join(req.paths.scheduler_dir, "<job name>.schedulercfg")


def describe_reads(req: ApplyRequest) -> list[str]:
    """The read-only SSH commands and REST calls preflight makes (a dry run makes them too, to see the cluster)."""
    paths = req.paths
    jm = req.inventory.jobmanager_host.name
    lines = [f"ssh {h.name}: true" for h in req.inventory.hosts]
    lines += [f"ssh {jm}: cat {path}" for path in req.state_paths]
    if req.mode == "custom":
        lines += [
            f"ssh {jm}: cat {schedulercfg_to_read(req)}",
            f"ssh {jm}: cat {paths.config}{_LEGACY_NOTE}",
            f"ssh {jm}: ls {paths.lib}  (the scheduler extension's jar)",
        ]
    if paths.savepoint_path:
        lines.append(f"ssh {jm}: {shlex.join(probe_writable_argv(paths.savepoint_path))}")
    lines.append(
        "REST GET /overview, /jobs/overview (or /jobs/<id>), /jobs/<id>, /jobs/<id>/vertices/<vid> per vertex, "
        "/taskmanagers, /jars"
        + (", /jobmanager/environment, /jobmanager/config, /config" if req.mode == "custom" else "")
    )
    if network_config(req.inventory.flink.network):  # observe reads them all then, in either mode
        lines.append(
            f"ssh <host>: cat {paths.config}{_LEGACY_NOTE}  (every TaskManager host of the plan: flink.network "
            "sets keys apart from Flink's defaults)"
        )
    elif req.mode == "vanilla":
        lines.append(
            f"ssh <host>: cat {paths.config}{_LEGACY_NOTE}  (only for a host whose TaskManager lacks its "
            "external resource)"
        )
    return lines
