"""Typed values of ``placement apply``: what was observed, and the actions a plan is made of.

Pipeline: :func:`placement.apply.preflight.observe` (reads only) -> :class:`ClusterView` ->
:func:`placement.apply.planner.plan_apply` (pure) -> :class:`ApplyPlan` (steps + rollback) ->
:func:`placement.apply.runner.run_apply` (the only side effects; audit log, roll back).

Every action knows how to describe itself as the SSH command or REST call it makes, which is what ``--dry-run`` prints.
Values only a run can know (the savepoint path, the new job id, the uploaded jar id) are written ``<savepoint>``,
``<new job>``, ``<jar>`` in descriptions and filled in by the runner.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Literal

from placement.flink.jar_run import run_request_body
from placement.flink.rest import TaskManagerInfo, VertexInfo
from placement.remote import install_new_argv, restore_previous_argv
from placement.submitter import SubmitCall

Counts = dict[tuple[str, str], int]  # (vertex name, host) -> subtasks


# ---- what preflight saw ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskManagerView:
    id: str
    slots: int
    free_slots: int
    total: dict
    free: dict

    def extended(self, name: str, *, free: bool = False) -> float:
        return float(((self.free if free else self.total).get("extendedResources") or {}).get(name, 0.0))


@dataclass(frozen=True)
class HostConfigView:
    """A host's Flink config file as read over SSH (None: the file does not exist): the one its Flink version reads
    (``config.yaml``, or 1.x's ``flink-conf.yaml`` where that exists), so the one apply edits."""

    host: str
    path: str
    text: str | None


@dataclass(frozen=True)
class ClusterView:
    """Everything preflight read: the running job, its placement, the TaskManagers, remote files."""

    job_id: str
    job_name: str
    job_state: str
    vertices: dict[str, int]  # vertex name -> parallelism (split copies summed)
    actual: Counts  # (vertex name, taskmanager-id) -> subtasks
    taskmanagers: dict[str, TaskManagerView]
    other_jobs: tuple[str, ...]  # ids of other non-terminal jobs on the cluster
    jar_ids: tuple[str, ...]
    state_record: dict | None  # the state file on the JobManager host (what was last applied)
    schedulercfg: str | None  # this job's schedulercfg in the scheduler dir on the JobManager host (custom mode)
    jobmanager_config: HostConfigView | None  # custom mode
    taskmanager_configs: dict[str, HostConfigView] = field(default_factory=dict)  # vanilla mode, hosts needing a look
    running_vertices: tuple[VertexInfo, ...] = ()  # the job's vertices as REST lists them
    subtask_hosts: dict[str, tuple[str, ...]] = field(
        default_factory=dict
    )  # running vertex id -> TM of subtask 0, 1, ...
    taskmanager_infos: tuple[TaskManagerInfo, ...] = ()  # GET /taskmanagers as read (for taskmanagers.cfg)
    scheduler: SchedulerView | None = None  # custom mode: the extension on the JobManager
    max_parallelism: dict[str, int] = field(default_factory=dict)  # running vertex id -> maxParallelism (REST)
    submitter: SubmitterView | None = None  # custom mode, resubmitted through the JobGraph submitter
    flink_version: str | None = None  # what the JobManager runs (GET /config: flink-version; None: it did not say)
    presumed: bool = False  # a dry run's assumption of a cluster it could not read (placement.apply.presumed_view)


@dataclass(frozen=True)
class SchedulerView:
    """What custom mode needs from the JobManager: the extension loaded (and winning), its config keys."""

    active: bool | None  # GET /jobmanager/environment: the extension's jar before flink-dist (None: cannot tell)
    settings: dict[str, str]  # GET /jobmanager/config: the running JobManager's effective configuration
    installed_jars: tuple[str, ...] | None  # extension jars in <home>/lib on the JobManager host (None: not read)
    flink_version: str | None  # the cluster's Flink version (GET /config)


@dataclass(frozen=True)
class SubmitterView:
    """What the JobManager host has for a resubmission through the JobGraph submitter (custom mode, a plan that
    changes parallelism): the submitter jar, the job jar, and a Java that runs."""

    submitter_path: str  # where the submitter jar for the cluster's Flink is (or goes) on the JobManager host
    submitter_installed: bool
    job_jar_path: str | None  # the job jar on the JobManager host (None: not found there and no local jar to upload)
    job_jar_installed: bool  # False: apply uploads the local jar (--jar / job.jar) to job_jar_path first
    java_home: str | None  # env.java.home in the JobManager's config (else `java` on the SSH session's PATH)
    java_error: str | None  # why `java -version` did not run on the JobManager host (None: it ran)


# ---- actions -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SshCommand:
    host: str
    argv: tuple[str, ...]
    why: str
    privileged: bool = False
    timeout: float = 120.0
    kind: Literal["ssh"] = "ssh"

    def describe(self) -> str:
        return f"ssh {self.host}: {'sudo -n ' if self.privileged else ''}{shlex.join(self.argv)}"


@dataclass(frozen=True)
class UploadFile:
    """Atomic upload: ``<path>.new``, old copy kept as ``<path>.prev``, rename."""

    host: str
    path: str
    content: str | bytes
    why: str
    mode: int = 0o644
    kind: Literal["upload"] = "upload"

    @property
    def size(self) -> int:
        return len(self.content.encode() if isinstance(self.content, str) else self.content)

    def describe(self) -> str:
        return (
            f"ssh {self.host}: sftp put {self.size} bytes -> {self.path}.new; {shlex.join(install_new_argv(self.path))}"
        )


@dataclass(frozen=True)
class RestoreFile:
    host: str
    path: str
    why: str
    kind: Literal["restore"] = "restore"

    def describe(self) -> str:
        return f"ssh {self.host}: {shlex.join(restore_previous_argv(self.path))}"


@dataclass(frozen=True)
class AcquireLock:
    host: str
    path: str
    holder: str
    stale_after_s: float
    kind: Literal["lock"] = "lock"

    def describe(self) -> str:
        return (
            f"ssh {self.host}: sh -c 'set -C; cat > {self.path}'  (holder {self.holder}; a lock older than "
            f"{self.stale_after_s:.0f}s or whose holder process is gone is broken)"
        )


@dataclass(frozen=True)
class ReleaseLock:
    host: str
    path: str
    kind: Literal["unlock"] = "unlock"

    def describe(self) -> str:
        return f"ssh {self.host}: rm -f {self.path}"


@dataclass(frozen=True)
class UploadJar:
    path: str
    kind: Literal["upload-jar"] = "upload-jar"

    def describe(self) -> str:
        return f"REST POST /jars/upload ({self.path}) -> <jar>"


@dataclass(frozen=True)
class StopWithSavepoint:
    job_id: str
    target_directory: str
    timeout: float = 180.0
    kind: Literal["stop"] = "stop"

    def describe(self) -> str:
        body = json.dumps({"targetDirectory": self.target_directory, "drain": False})
        return (
            f"REST POST /jobs/{self.job_id}/stop {body}; poll GET /jobs/{self.job_id}/savepoints/<trigger> "
            f"until COMPLETED -> <savepoint>"
        )


@dataclass(frozen=True)
class SubmitJob:
    jar_id: str | None  # None: the jar uploaded by an earlier UploadJar
    entry_class: str | None
    program_args: tuple[str, ...]
    allow_non_restored_state: bool
    why: str
    kind: Literal["submit"] = "submit"

    def body(self, savepoint: str = "<savepoint>") -> dict:
        return run_request_body(
            entry_class=self.entry_class,
            program_args=self.program_args,
            savepoint_path=savepoint,
            allow_non_restored_state=self.allow_non_restored_state,
        )

    def describe(self) -> str:
        return f"REST POST /jars/{self.jar_id or '<jar>'}/run {json.dumps(self.body())} -> <new job>"


@dataclass(frozen=True)
class SubmitJobGraph:
    """Resubmit through the submitter on the JobManager host: the job's JobGraph compiled there at the planned
    per-vertex parallelism (``pipeline.jobvertex-parallelism-overrides``) from the savepoint, submitted over REST."""

    host: str
    call: SubmitCall
    why: str
    timeout: float = 300.0
    kind: Literal["submit-graph"] = "submit-graph"

    def describe(self) -> str:
        return f"ssh {self.host}: {shlex.join(self.call.argv('<savepoint>'))} -> <new job>"


@dataclass(frozen=True)
class WaitRunning:
    timeout: float = 120.0
    job_id: str | None = None  # None: the job the last SubmitJob started
    kind: Literal["wait"] = "wait"

    def describe(self) -> str:
        job = self.job_id or "<new job>"
        return f"REST GET /jobs/{job} until the job and every vertex are RUNNING (at most {self.timeout:.0f}s)"


@dataclass(frozen=True)
class WaitTaskManagers:
    wanted: tuple[tuple[str, str | None], ...]  # (resource id, external resource or None)
    timeout: float = 120.0
    kind: Literal["wait-tms"] = "wait-tms"

    def describe(self) -> str:
        ids = ", ".join(f"{tm}" + (f" with resource {r}" if r else "") for tm, r in self.wanted)
        return f"REST GET /taskmanagers until {ids} registered"


@dataclass(frozen=True)
class CheckExtension:
    """After a JobManager restart: the extension is loaded before flink-dist and has the scheduler dir."""

    scheduler_dir: str
    kind: Literal["check-extension"] = "check-extension"

    def describe(self) -> str:
        return (
            f"REST GET /jobmanager/environment (the extension's jar before flink-dist) and /jobmanager/config "
            f"(placement.scheduler.dir == {self.scheduler_dir})"
        )


@dataclass(frozen=True)
class PlannedSubtask:
    vertex_id: str  # the plan's vertex id (the running vertex is found by id, else by normalised name)
    vertex: str
    subtask: int  # 0-based
    parallelism: int
    host: str


@dataclass(frozen=True)
class VerifyPlacement:
    """``planned`` counts per (vertex name, host) (vanilla: lanes renumber subtasks); ``subtasks`` (custom mode):
    every subtask index on its planned TaskManager."""

    planned: tuple[tuple[str, str, int], ...]  # (vertex, host, subtasks)
    subtasks: tuple[PlannedSubtask, ...] = ()
    kind: Literal["verify"] = "verify"

    def describe(self) -> str:
        what = (
            "subtask i of each vertex (found by id) on its planned TaskManager"
            if self.subtasks
            else "taskmanager-id == planned host"
        )
        return f"REST GET /jobs/<new job> and /jobs/<new job>/vertices/<id> for each vertex: {what}"


@dataclass(frozen=True)
class WatchStable:
    """The placed job stays RUNNING without a restart for ``seconds``: a placement the cluster cannot carry (a data
    connection that cannot be made, a TaskManager that cannot take the slot) often fails only after RUNNING."""

    seconds: float
    kind: Literal["watch"] = "watch"

    def describe(self) -> str:
        return f"REST GET /jobs/<new job> for {self.seconds:g}s: still RUNNING, no restart"


@dataclass(frozen=True)
class RecordState:
    host: str
    path: str
    record: dict  # job_id / savepoint are added by the runner
    kind: Literal["record"] = "record"

    def describe(self) -> str:
        return (
            f"ssh {self.host}: sftp put the applied state (plan, mapping, <new job>, <savepoint>) -> {self.path} "
            "(atomic)"
        )


Action = (
    SshCommand
    | UploadFile
    | RestoreFile
    | AcquireLock
    | ReleaseLock
    | UploadJar
    | StopWithSavepoint
    | SubmitJob
    | SubmitJobGraph
    | WaitRunning
    | WaitTaskManagers
    | CheckExtension
    | VerifyPlacement
    | WatchStable
    | RecordState
)


@dataclass(frozen=True)
class Step:
    """One action and where it sits: ``after_stop`` steps are undone by the rollback when something fails."""

    action: Action
    phase: Literal["prepare", "stop", "install", "redeploy", "verify", "finish"]

    def describe(self) -> str:
        return self.action.describe()


@dataclass(frozen=True)
class JarFile:
    """A jar an apply may copy onto the JobManager host: its file name, the Flink release it was built for, its
    bytes."""

    name: str
    flink_version: str
    content: bytes


@dataclass(frozen=True)
class JarContents:
    """The jars the planner may put in an upload step, read before it plans (the planner does no I/O): the scheduler
    extension and the JobGraph submitter when built here for a JobManager host that lacks them, and the job's own jar
    when the submitter needs a copy of it there."""

    extension: JarFile | None = None
    submitter: JarFile | None = None
    job: bytes | None = None


@dataclass(frozen=True)
class ApplyPlan:
    """What apply will do. ``noop`` when the plan is already in effect (``steps`` then empty)."""

    job_id: str
    mode: str
    steps: tuple[Step, ...]
    rollback: tuple[Step, ...]
    notes: tuple[str, ...]
    noop: bool = False
    noop_reason: str = ""
    restarts: tuple[str, ...] = ()  # processes the apply restarts (need --yes)
