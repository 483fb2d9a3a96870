"""Preflight: read the cluster (SSH + REST, nothing written) and say whether the plan can be applied.

:func:`observe` connects to every host (host keys verified), reads the job, its placement, the TaskManagers and the
files apply will replace; :func:`check` turns request + view into the list of problems that stop the apply. Nothing
on any host or in Flink changes here: the only SSH commands are ``true``, ``cat`` and a writability probe of the
savepoint directory (which creates and removes an empty temp file, the only honest test of "can be written").
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from dataclasses import dataclass

import yaml

from placement.apply.model import ClusterView, Counts, HostConfigView, TaskManagerView
from placement.apply.request import ApplyRequest
from placement.flink_config import flatten
from placement.errors import BadInput, PlacementError
from placement.flink_rest import TERMINAL_STATES, FlinkRest, FlinkRestError
from placement.remote import CommandFailed, Executor, HostUnreachable

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


def planned_vertices(req: ApplyRequest) -> dict[str, int]:
    return {a.vertex: a.parallelism for a in req.plan.assignment}


def slots_needed(counts: Counts) -> dict[str, int]:
    """Slots a host needs when subtasks of different vertices share slots: its largest per-vertex count."""
    out: dict[str, int] = {}
    for (_, host), n in counts.items():
        out[host] = max(out.get(host, 0), n)
    return out


def resolve_job(req: ApplyRequest, rest: FlinkRest) -> tuple[str, str, str]:
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
        raise BadInput("which job? give --job ID, --job-name NAME or job.name in the inventory", source=str(req.inventory_path))
    jobs = [j for j in rest.jobs() if j.name == name and j.state not in TERMINAL_STATES]
    if not jobs:
        running = sorted({j.name for j in rest.running_jobs()})
        raise BadInput(f"no running job named {name!r} on {rest.url} (running: {', '.join(running) or 'none'})", field=where)
    if len(jobs) > 1:
        raise BadInput(f"{len(jobs)} running jobs named {name!r} ({', '.join(j.id for j in jobs)}); pick one with --job", field=where)
    return jobs[0].id, jobs[0].name, jobs[0].state


def probe_writable_argv(path: str) -> list[str]:
    """Is ``path`` (or, when missing, its nearest existing parent) a directory this user can create files in?"""
    script = (
        'p="$1"; while [ ! -e "$p" ]; do p=$(dirname -- "$p"); done; '
        '[ -d "$p" ] || { echo "$p is not a directory" >&2; exit 1; }; '
        't=$(mktemp "$p/.placement-probe.XXXXXX") || { echo "cannot create files in $p" >&2; exit 1; }; rm -f -- "$t"'
    )
    return ["sh", "-c", script, "sh", path]


def observe(req: ApplyRequest, rest: FlinkRest, executors: dict[str, Executor]) -> tuple[ClusterView | None, list[Problem]]:
    """Read everything (SSH to every host, REST); returns the view (None when the job could not be read) and problems."""
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

    job_id, job_name, job_state = resolve_job(req, rest)  # bad input raises at once
    details = rest.job(job_id)
    vertices: dict[str, int] = {}
    for v in details.vertices:
        vertices[v.name] = vertices.get(v.name, 0) + v.parallelism
    actual = rest.placement_counts(job_id) if job_state == "RUNNING" else {}
    tms = {t.id: TaskManagerView(t.id, t.slots, t.free_slots, dict(t.total_resource), dict(t.free_resource)) for t in rest.taskmanagers()}
    others = tuple(j.id for j in rest.running_jobs() if j.id != job_id)
    jar_ids = tuple(rest.jar_ids())

    jm = inv.jobmanager_host
    jm_ex = executors[jm.name]
    state_record = schedulercfg = None
    jm_config = None
    tm_configs: dict[str, HostConfigView] = {}
    if jm.name in reachable:
        try:
            text = jm_ex.read_text(paths.state)
            if text:
                try:
                    state_record = json.loads(text)
                except ValueError:
                    problems.append(Problem(f"{jm.name}:{paths.state}: not JSON (remove it, or fix it by hand)"))
            if req.mode == "custom":
                schedulercfg = jm_ex.read_text(paths.schedulercfg)
                jm_config = HostConfigView(jm.name, paths.config, jm_ex.read_text(paths.config))
            sp = paths.savepoint_path
            if sp is not None:
                probe = jm_ex.run(probe_writable_argv(sp), check=False, mutates=False, timeout=30)
                if not probe.ok:
                    problems.append(Problem(f"savepoint directory {req.inventory.flink.savepoint_dir} on {jm.name} is not "
                                            f"writable: {probe.message}"))
        except CommandFailed as exc:
            problems.append(Problem(str(exc)))
    if req.mode == "vanilla":
        needed = slots_needed(planned_counts(req))
        for host in sorted(needed):
            tm = tms.get(host)
            if tm is not None and tm.extended(host) >= needed[host]:
                continue  # the running TaskManager declares enough of its resource: no config to look at
            if host in reachable:
                try:
                    tm_configs[host] = HostConfigView(host, paths.config, executors[host].read_text(paths.config))
                except CommandFailed as exc:
                    problems.append(Problem(str(exc)))
    view = ClusterView(
        job_id=job_id, job_name=job_name, job_state=job_state, vertices=vertices, actual=actual, taskmanagers=tms,
        other_jobs=others, jar_ids=jar_ids, state_record=state_record, schedulercfg=schedulercfg,
        jobmanager_config=jm_config, taskmanager_configs=tm_configs,
    )
    return view, problems


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
    if view.text is None:
        return {}
    try:
        data = yaml.safe_load(view.text) or {}
    except yaml.YAMLError as exc:
        raise PlacementError(f"{view.host}:{view.path}: not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise PlacementError(f"{view.host}:{view.path}: expected a mapping of Flink config keys")
    return flatten(data)


def jobmanager_scheduler(view: HostConfigView | None) -> str | None:
    if view is None:
        return None
    return str(parse_config(view).get("jobmanager.scheduler", "") or "") or None


def check(req: ApplyRequest, view: ClusterView) -> list[Problem]:
    """Problems that stop the apply (pure)."""
    problems: list[Problem] = []
    inv = req.inventory
    if view.job_state != "RUNNING":
        problems.append(Problem(f"job {view.job_id} ({view.job_name}) is {view.job_state}, not RUNNING"))
    digest = inv.digest()
    if req.plan.inventory.digest != digest:
        problems.append(Problem(
            f"stale plan: {req.plan_dir / 'plan.json'} was made from inventory {req.plan.inventory.digest[:19]}…, but "
            f"{req.inventory_path} is {digest[:19]}… (the inventory changed since `placement plan`; plan again)",
            stale_input=True))
    planned = planned_vertices(req)
    if planned != view.vertices:
        diffs = []
        for name in sorted(set(planned) | set(view.vertices)):
            p, r = planned.get(name), view.vertices.get(name)
            if p != r:
                diffs.append(f"{name!r} plan {p if p is not None else 'absent'} vs running {r if r is not None else 'absent'}")
        problems.append(Problem(f"stale plan: the running job's graph differs from the plan's (parallelism: {'; '.join(diffs)})",
                                stale_input=True))
    if req.jar_id and req.jar_id not in view.jar_ids:
        problems.append(Problem(f"--jar-id {req.jar_id}: no such jar on the JobManager (uploaded: {', '.join(view.jar_ids) or 'none'})"))
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
            problems.append(Problem(f"no TaskManager with resource id {host!r} is registered "
                                    f"(registered: {', '.join(sorted(view.taskmanagers)) or 'none'})"))
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
                    problems.append(Problem(f"TaskManager {host}: {have:g} of external resource {host!r} free, the plan needs {slots}"))
            cpu, heap = available("cpuCores"), available("taskHeapMemory")
            if cpu + 1e-9 < slots * slot_cpu:
                problems.append(Problem(f"TaskManager {host}: {cpu:g} cpu cores free, the plan's {slots} slot(s) need {slots * slot_cpu:g}"))
            if heap + 1e-9 < slots * slot_heap:
                problems.append(Problem(f"TaskManager {host}: {heap:g} MiB task heap free, the plan's {slots} slot(s) need {slots * slot_heap:g}"))
        else:
            free_slots = tm.slots if not view.other_jobs else tm.free_slots + own.get(host, 0)
            if free_slots < slots:
                problems.append(Problem(f"TaskManager {host}: {free_slots} slot(s) free, the plan needs {slots}"))

    if req.mode == "vanilla":
        for host, cfg in sorted(view.taskmanager_configs.items()):
            try:
                current = parse_config(cfg)
            except PlacementError as exc:
                problems.append(Problem(str(exc)))
                continue
            missing = config_satisfies(current, req.vanilla_configs.get(host, {}))
            what = (f"set {', '.join(missing)} in {host}:{cfg.path} and restart its TaskManager" if missing
                    else f"restart the TaskManager on {host} (its config has the resource, the running one does not)")
            if not req.consent:
                problems.append(Problem(f"TaskManager {host} does not declare external resource {host!r}: apply must {what}; "
                                        "pass --yes to allow the restart"))
    else:
        try:
            scheduler = jobmanager_scheduler(view.jobmanager_config)
        except PlacementError as exc:
            problems.append(Problem(str(exc)))
            scheduler = "?"
        if view.jobmanager_config is not None and view.jobmanager_config.text is None:
            problems.append(Problem(f"{inv.jobmanager_host.name}:{view.jobmanager_config.path}: no such file "
                                    "(flink.home in the inventory must be the JobManager's Flink home)"))
        elif (scheduler or "").lower() != "custom" and not req.consent:
            problems.append(Problem(
                f"the JobManager config {inv.jobmanager_host.name}:{req.paths.config} has jobmanager.scheduler: "
                f"{scheduler or '(unset)'}, not Custom: apply must set it and restart the JobManager (the job is stopped "
                "with a savepoint first); pass --yes to allow the restart"))
    return problems


def describe_reads(req: ApplyRequest) -> list[str]:
    """The read-only SSH commands and REST calls preflight makes (a dry run makes them too, to see the cluster)."""
    paths = req.paths
    jm = req.inventory.jobmanager_host.name
    lines = [f"ssh {h.name}: true" for h in req.inventory.hosts]
    lines.append(f"ssh {jm}: cat {paths.state}")
    if req.mode == "custom":
        lines += [f"ssh {jm}: cat {paths.schedulercfg}", f"ssh {jm}: cat {paths.config}"]
    if paths.savepoint_path:
        lines.append(f"ssh {jm}: {shlex.join(probe_writable_argv(paths.savepoint_path))}")
    lines.append("REST GET /overview, /jobs/overview (or /jobs/<id>), /jobs/<id>, /jobs/<id>/vertices/<vid> per vertex, "
                 "/taskmanagers, /jars")
    if req.mode == "vanilla":
        lines.append(f"ssh <host>: cat {paths.config}  (only for a host whose TaskManager lacks its external resource)")
    return lines
