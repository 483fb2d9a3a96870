"""The thin executor of an :class:`~placement.apply.model.ApplyPlan`: runs its steps, logs each, rolls back.

Failure handling, by where it happens:

* before the stop (lock, jar upload): nothing was changed but the lock, which is released; the job runs untouched.
* the stop with savepoint itself: Flink keeps the job (it may restart it from its last checkpoint: a failed
  stop-with-savepoint triggers a failover); the runner waits until it is RUNNING again and says so.
* after the stop (install, resubmit, wait, verify): a job the apply started is cancelled, the plan's roll back runs
  (files back from ``.prev``, restarts, the previous arguments resubmitted from the same savepoint) and the state file
  records the rolled-back job. If the roll back fails too, the outcome says exactly what is stopped and where the
  savepoint is.

The lock is released whatever happens once it was taken.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone

from placement.apply.audit import AuditLog
from placement.apply.model import (
    AcquireLock,
    Action,
    ApplyPlan,
    CheckExtension,
    RecordState,
    ReleaseLock,
    RestoreFile,
    SshCommand,
    Step,
    StopWithSavepoint,
    SubmitJob,
    SubmitJobGraph,
    UploadFile,
    UploadJar,
    VerifyPlacement,
    WaitRunning,
    WaitTaskManagers,
    WatchStable,
)
from placement.apply.preflight import read_subtask_hosts
from placement.apply.verify import VerifyRow, all_ok, compare, compare_subtasks
from placement.apply.vertices import PlannedVertex, match_vertices
from placement.clock import SYSTEM_CLOCK, Clock
from placement.errors import PlacementError
from placement.flink.port import FlinkPort
from placement.flink.rest import TERMINAL_STATES
from placement.polling import poll
from placement.remote import CommandFailed, Executor
from placement.scheduler import SCHEDULER_DIR_KEY, extension_active
from placement.submitter import job_id_from


class LockHeld(PlacementError):
    """Another apply holds the lock."""


class StopFailed(PlacementError):
    pass


class VerifyFailed(PlacementError):
    def __init__(self, rows: list[VerifyRow]):
        self.rows = rows
        wrong = [f"{r.vertex}@{r.host} planned {r.planned} actual {r.actual}" for r in rows if not r.ok]
        super().__init__("verify failed: " + "; ".join(wrong))


class ApplyFailed(PlacementError):
    """The apply did not put the plan into effect; ``outcome`` says what state things are in."""

    def __init__(self, outcome: ApplyOutcome):
        self.outcome = outcome
        super().__init__(outcome.message)


@dataclass
class RunContext:
    jar_id: str | None = None
    savepoint: str | None = None
    new_job_id: str | None = None
    stopped: bool = False
    lock: tuple[str, str] | None = None  # (host, path) while held
    lock_note: str | None = None
    uploaded: set[tuple[str, str]] = field(default_factory=set)  # (host, path) this run replaced: only these go back


@dataclass(frozen=True)
class StepRun:
    """One step as it ran, for the caller to report (``apply --json``): ``seq`` "step" or "rollback", ``index`` as
    the steps are numbered (from 1), the action described with the run's savepoint, job and jar filled in."""

    seq: str
    index: int
    phase: str
    action: str
    status: str  # done | failed


@dataclass(frozen=True)
class ApplyOutcome:
    status: str  # applied | noop | failed-before-stop | stop-failed | rolled-back | rollback-failed
    message: str
    job_id: str | None  # the job running now (None when none is)
    savepoint: str | None = None
    rows: tuple[VerifyRow, ...] = ()
    downtime_s: float | None = None  # stop requested -> RUNNING again
    notes: tuple[str, ...] = field(default_factory=tuple)
    ran: tuple[StepRun, ...] = ()  # every step this job's runner ran, in order, with how it ended


def holder_string() -> str:
    return f"{os.environ.get('USER') or os.getuid()}@{socket.gethostname()} pid {os.getpid()}"


def lock_argv(path: str, content: str) -> list[str]:
    # set -C: the redirection fails if the file exists (O_EXCL): two applies cannot both create it
    return ["sh", "-c", 'set -C; mkdir -p -- "$(dirname -- "$1")" && printf "%s\\n" "$2" > "$1"', "sh", path, content]


def lock_is_stale(record: dict, *, now: float, stale_after_s: float, machine: str) -> str | None:
    """Why an existing lock may be broken, or None when it must be respected."""
    since = record.get("since_epoch")
    if not isinstance(since, (int, float)):
        return "its content is unreadable"
    if now - since > stale_after_s:
        return f"it is {now - since:.0f}s old (stale after {stale_after_s:.0f}s)"
    if record.get("machine") == machine and isinstance(record.get("pid"), int):
        try:
            os.kill(record["pid"], 0)
        except ProcessLookupError:
            return f"its holder (pid {record['pid']} on {machine}) is gone"
        except PermissionError:
            pass
    return None


# A task that took the synchronous savepoint fails within an RPC round trip of the abort; seconds are plenty.
QUIET_AFTER_FAILED_STOP_S = 5.0


class Runner:
    def __init__(
        self,
        plan: ApplyPlan,
        rest: FlinkPort,
        executors: dict[str, Executor],
        audit: AuditLog,
        echo: Callable[[str], None] = print,
        *,
        jar_id: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ):
        self.plan = plan
        self.rest = rest
        self.clock = clock  # every wait, duration and date of the run: a fake one runs a test in simulated time
        self.executors = executors
        self.audit = audit
        self.echo = echo
        self.ctx = RunContext(jar_id=jar_id)
        self.stop_requested_at: float | None = None
        self.stop_requested_at_jm_ms: int | None = (
            None  # the JobManager's clock, to tell a later restart from an earlier one
        )
        self.running_again_at: float | None = None
        self.rows: list[VerifyRow] = []
        self.ran: list[StepRun] = []

    # ---- one step -------------------------------------------------------------------------------------------------

    def _step(self, index: int, step: Step, label: str) -> None:
        a = step.action
        self.echo(f"[{label} {index}] {step.phase}: {self._describe(a)}")
        self.audit.write("start", step=index, seq=label, phase=step.phase, kind=a.kind, action=self._describe(a))
        t0 = self.clock.monotonic()
        try:
            detail = self._do(a)
        except Exception as exc:
            self.ran.append(StepRun(label, index, step.phase, self._describe(a), "failed"))
            self.audit.write(
                "failed",
                step=index,
                seq=label,
                kind=a.kind,
                seconds=round(self.clock.monotonic() - t0, 3),
                error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            )
            raise
        self.ran.append(StepRun(label, index, step.phase, self._describe(a), "done"))
        self.audit.write(
            "ok", step=index, seq=label, kind=a.kind, seconds=round(self.clock.monotonic() - t0, 3), **(detail or {})
        )

    def _describe(self, a: Action) -> str:
        text = a.describe()
        for placeholder, value in (
            ("<savepoint>", self.ctx.savepoint),
            ("<new job>", self.ctx.new_job_id),
            ("<jar>", self.ctx.jar_id),
        ):
            if value:
                text = text.replace(placeholder, value)
        return text

    def _do(self, a: Action) -> dict | None:
        if isinstance(a, SshCommand):
            self.executors[a.host].run(list(a.argv), privileged=a.privileged, timeout=a.timeout)
        elif isinstance(a, UploadFile):
            self.executors[a.host].upload_atomic(a.path, a.content, mode=a.mode)
            self.ctx.uploaded.add((a.host, a.path))
            return {"bytes": a.size}
        elif isinstance(a, RestoreFile):
            self.executors[a.host].restore_previous(a.path)
        elif isinstance(a, AcquireLock):
            self._lock(a)
            return {"note": self.ctx.lock_note} if self.ctx.lock_note else None
        elif isinstance(a, ReleaseLock):
            self._unlock()
        elif isinstance(a, UploadJar):
            self.ctx.jar_id = self.rest.upload_jar(a.path)
            return {"jar_id": self.ctx.jar_id}
        elif isinstance(a, StopWithSavepoint):
            self._stop(a)
            return {"savepoint": self.ctx.savepoint}
        elif isinstance(a, SubmitJob):
            jar = a.jar_id or self.ctx.jar_id
            if not jar:
                raise PlacementError("no jar id to resubmit")
            self.ctx.new_job_id = self.rest.run_jar(
                jar,
                entry_class=a.entry_class,
                program_args=list(a.program_args),
                savepoint_path=self.ctx.savepoint,
                allow_non_restored_state=a.allow_non_restored_state,
            )
            return {"job_id": self.ctx.new_job_id}
        elif isinstance(a, SubmitJobGraph):
            if not self.ctx.savepoint:
                raise PlacementError("no savepoint to resubmit from")
            result = self.executors[a.host].run(a.call.argv(self.ctx.savepoint), check=False, timeout=a.timeout)
            self.ctx.new_job_id = job_id_from(result.stdout, result.stderr, result.returncode)
            return {"job_id": self.ctx.new_job_id}
        elif isinstance(a, WaitRunning):
            job = a.job_id or self.ctx.new_job_id
            assert job
            self.rest.wait_until_running(job, timeout=a.timeout)
            self.running_again_at = self.clock.monotonic()
        elif isinstance(a, WaitTaskManagers):
            self.rest.wait_for_taskmanagers(dict(a.wanted), timeout=a.timeout)
        elif isinstance(a, CheckExtension):
            self._check_extension(a)
        elif isinstance(a, VerifyPlacement):
            assert self.ctx.new_job_id
            self.rows = self._verify(a, self.ctx.new_job_id)
            if not all_ok(self.rows):
                raise VerifyFailed(self.rows)
        elif isinstance(a, WatchStable):
            assert self.ctx.new_job_id
            self._watch_stable(self.ctx.new_job_id, a.seconds)
        elif isinstance(a, RecordState):
            self._record(a.host, a.path, a.record)
        else:  # pragma: no cover - every action kind is handled above
            raise TypeError(f"unknown action {a!r}")
        return None

    def _verify(self, a: VerifyPlacement, job_id: str) -> list[VerifyRow]:
        if not a.subtasks:  # vanilla: counts per (vertex name, host)
            planned = {(v, h): n for v, h, n in a.planned}
            return compare(planned, self.rest.placement_counts(job_id), list(dict.fromkeys(v for v, _, _ in a.planned)))
        vertices = self.rest.job(job_id).vertices
        wanted = list({s.vertex_id: PlannedVertex(s.vertex_id, s.vertex, s.parallelism) for s in a.subtasks}.values())
        match = match_vertices(wanted, vertices)
        return compare_subtasks(a.subtasks, match, read_subtask_hosts(self.rest, job_id, list(match.matched.values())))

    def _watch_stable(self, job_id: str, seconds: float) -> None:
        job, left_running = poll(
            lambda: self.rest.job(job_id),
            lambda job: job.state != "RUNNING" or job.restarting_since_ms > 0,
            timeout=seconds,
            every=0.5,
            clock=self.clock,
        )
        if left_running:
            cause = self.rest.root_exception(job_id) or "no exception recorded"
            raise PlacementError(
                f"job {job_id} did not stay RUNNING after it was placed (now {job.state}"
                f"{', it restarted' if job.restarting_since_ms else ''}): {cause}"
            )

    def _check_extension(self, a: CheckExtension) -> None:
        active = extension_active(self.rest)
        if active is not True:
            raise PlacementError(
                "the restarted JobManager does not run the scheduler extension "
                + (
                    "(its classpath has flink-dist before the extension)"
                    if active is False
                    else "(GET /jobmanager/environment does not say)"
                )
            )
        have = self.rest.jobmanager_config().get(SCHEDULER_DIR_KEY)
        if have != a.scheduler_dir:
            raise PlacementError(
                f"the restarted JobManager has {SCHEDULER_DIR_KEY}: {have or '(unset)'}, not {a.scheduler_dir}"
            )

    def _lock(self, a: AcquireLock) -> None:
        ex = self.executors[a.host]
        machine = socket.gethostname()
        for attempt in (1, 2):
            now = self.clock.now()
            content = json.dumps(
                {
                    "holder": a.holder,
                    "machine": machine,
                    "pid": os.getpid(),
                    "apply": self.audit.apply_id,
                    "since": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
                    "since_epoch": now,
                    "job": self.plan.job_id,
                }
            )
            result = ex.run(lock_argv(a.path, content), check=False)
            if result.ok:
                self.ctx.lock = (a.host, a.path)
                return
            existing = ex.read_text(a.path)
            if existing is None:
                if attempt == 2:
                    raise CommandFailed(result)
                continue  # released between our try and our look
            try:
                record = json.loads(existing)
            except ValueError:
                record = {}
            stale = lock_is_stale(record, now=now, stale_after_s=a.stale_after_s, machine=machine)
            if stale is None or attempt == 2:
                raise LockHeld(
                    f"another apply holds the lock {a.host}:{a.path}: {record.get('holder', '?')} since "
                    f"{record.get('since', '?')} (job {record.get('job', '?')}); nothing was changed"
                )
            self.ctx.lock_note = (
                f"broke a stale lock held by {record.get('holder', '?')} since {record.get('since', '?')}: {stale}"
            )
            self.echo(f"  {self.ctx.lock_note}")
            ex.run(["rm", "-f", "--", a.path])

    def _unlock(self) -> None:
        if self.ctx.lock is None:
            return
        host, path = self.ctx.lock
        self.executors[host].run(["rm", "-f", "--", path])
        self.ctx.lock = None

    def _stop(self, a: StopWithSavepoint) -> None:
        self.stop_requested_at = self.clock.monotonic()
        self.stop_requested_at_jm_ms = self.rest.job(a.job_id).now_ms
        trigger = self.rest.trigger_stop_with_savepoint(a.job_id, a.target_directory)
        (_, location, failure), completed = poll(
            lambda: self.rest.savepoint_status(a.job_id, trigger),
            lambda status: status[0] == "COMPLETED",
            timeout=a.timeout,
            every=0.2,
            clock=self.clock,
        )
        if completed:
            if failure or not location:
                raise StopFailed(f"stop-with-savepoint of job {a.job_id} failed: {failure}")
            self.ctx.savepoint = location
            self.ctx.stopped = True
            return
        raise StopFailed(f"stop-with-savepoint of job {a.job_id} did not complete within {a.timeout:.0f}s")

    def _record(self, host: str, path: str, record: dict) -> None:
        full = {
            **record,
            "job_id": self.ctx.new_job_id,
            "savepoint": self.ctx.savepoint,
            "applied_at": datetime.fromtimestamp(self.clock.now(), timezone.utc).isoformat(timespec="seconds"),
            "apply": self.audit.apply_id,
        }
        self.executors[host].upload_atomic(path, json.dumps(full, indent=2) + "\n")

    # ---- the whole plan -------------------------------------------------------------------------------------------

    def run(self) -> ApplyOutcome:
        self.audit.write("apply", job=self.plan.job_id, mode=self.plan.mode, steps=len(self.plan.steps))
        try:
            return self._run()
        finally:
            self.release_lock()

    def _downtime(self) -> float | None:
        if self.stop_requested_at is None or self.running_again_at is None:
            return None
        return self.running_again_at - self.stop_requested_at

    def _run(self) -> ApplyOutcome:
        return self.run_steps(range(len(self.plan.steps))) or self.applied()

    def run_steps(self, indices: Iterable[int]) -> ApplyOutcome | None:
        """Run these steps of the plan (0-based, in order; numbered as in the whole plan); None when all of them
        succeeded, else the outcome of the failure (rolled back where the stop was done). A fleet of jobs runs each
        job's plan in parts: its stop, then later its redeploy (:mod:`placement.apply.fleet`)."""
        for i in indices:
            step = self.plan.steps[i]
            try:
                self._step(i + 1, step, "step")
            except (PlacementError, OSError, KeyboardInterrupt) as exc:  # Ctrl-C after the stop rolls back too
                return self._with_runs(self._failed(step, exc if str(exc) else PlacementError("interrupted")))
        return None

    def _with_runs(self, outcome: ApplyOutcome) -> ApplyOutcome:
        return replace(outcome, ran=tuple(self.ran))

    def applied(self) -> ApplyOutcome:
        """Every step ran: the outcome, recorded in the audit log."""
        self.audit.write("done", status="applied", job=self.ctx.new_job_id)
        return ApplyOutcome(
            "applied",
            f"applied: job {self.ctx.new_job_id} runs every subtask on its planned TaskManager",
            self.ctx.new_job_id,
            self.ctx.savepoint,
            tuple(self.rows),
            self._downtime(),
            self.plan.notes,
            tuple(self.ran),
        )

    def roll_back(self, reason: str) -> ApplyOutcome:
        """Undo this job's apply after its stop (another job of a fleet failed): cancel the job it started, run the
        plan's roll back from the savepoint the stop took."""
        assert self.ctx.stopped, "only a stopped job is rolled back"
        return self._with_runs(self._roll_back(reason))

    def release_lock(self) -> None:
        try:
            self._unlock()
        except PlacementError as exc:
            self.echo(f"warning: could not release the lock: {exc}")
            self.audit.write("failed", kind="unlock", error=str(exc))

    def _failed(self, step: Step, exc: BaseException) -> ApplyOutcome:
        reason = str(exc)
        old = self.plan.job_id
        if not self.ctx.stopped:
            if isinstance(step.action, StopWithSavepoint):
                state, restarted = self._settle(old)
                how = " again (Flink restarted it from its last checkpoint)" if restarted and state == "RUNNING" else ""
                outcome = ApplyOutcome(
                    "stop-failed",
                    f"the stop with savepoint failed ({reason}); nothing was installed; job {old} is {state}{how}",
                    old if state == "RUNNING" else None,
                )
            else:
                outcome = ApplyOutcome(
                    "failed-before-stop", f"{reason}; nothing was changed, job {old} runs untouched", old
                )
            self.audit.write("done", status=outcome.status, job=outcome.job_id, error=reason)
            return outcome
        if isinstance(step.action, RecordState):  # the job runs as planned; only the record is missing
            outcome = ApplyOutcome(
                "applied",
                f"applied, but the state file could not be written ({reason}): the next apply "
                "will not know this job's arguments",
                self.ctx.new_job_id,
                self.ctx.savepoint,
                tuple(self.rows),
                self._downtime(),
                self.plan.notes,
            )
            self.audit.write("done", status="applied", job=self.ctx.new_job_id, warning=reason)
            return outcome
        return self._roll_back(reason)

    def _settle(
        self, job_id: str, timeout: float = 120.0, quiet: float = QUIET_AFTER_FAILED_STOP_S
    ) -> tuple[str, bool]:
        """After a failed stop: the job's state once Flink is done with it, and whether it restarted meanwhile.

        Flink fails every task that took the synchronous savepoint when the savepoint is aborted, and restarts the job
        from its last checkpoint -- a moment *after* the REST status reports the failure, so a RUNNING read at once
        may be about to restart. Settled: the job and all its vertices RUNNING, and either a restart that began after
        the stop was triggered is over, or none began within ``quiet`` seconds.
        """
        quiet_until = self.clock.monotonic() + quiet
        since = self.stop_requested_at_jm_ms or 0
        state, restarted = "unknown (REST unreachable)", False

        def done() -> bool:
            nonlocal state, restarted
            try:
                job = self.rest.job(job_id)
            except PlacementError:
                return True
            state = job.state
            restarted = restarted or job.restarting_since_ms >= since > 0
            settled = job.all_running and (restarted or self.clock.monotonic() >= quiet_until)
            return settled or state in TERMINAL_STATES

        poll(done, bool, timeout=timeout, every=0.25, clock=self.clock)
        return state, restarted

    def _roll_back(self, reason: str) -> ApplyOutcome:
        self.echo(f"failed after the stop: {reason}")
        self.echo(f"rolling back from savepoint {self.ctx.savepoint}")
        self.audit.write("rollback", reason=reason, savepoint=self.ctx.savepoint)
        failed_job = self.ctx.new_job_id
        if failed_job:
            try:
                if self.rest.job_raw(failed_job)["state"] not in TERMINAL_STATES:
                    self.rest.cancel(failed_job)
                    self.rest.wait_for_state(failed_job, ("CANCELED", "FAILED", "FINISHED"), timeout=60)
                self.audit.write("ok", kind="cancel", job=failed_job)
            except PlacementError as exc:
                self.audit.write("failed", kind="cancel", job=failed_job, error=str(exc))
        self.ctx.new_job_id = None
        restored: list[str] = []
        for i, step in enumerate(self.plan.rollback, 1):
            if isinstance(step.action, RestoreFile) and (step.action.host, step.action.path) not in self.ctx.uploaded:
                continue  # this run never replaced it: its .prev is an earlier apply's, not what ran before this one
            try:
                self._step(i, step, "rollback")
            except (PlacementError, OSError) as exc:
                state = (
                    f"ROLL BACK FAILED at `{self._describe(step.action)}`: {exc}. State: job {self.plan.job_id} is "
                    f"stopped; its savepoint is {self.ctx.savepoint}; files restored: {', '.join(restored) or 'none'}"
                    + (
                        f"; job {self.ctx.new_job_id} was submitted"
                        if self.ctx.new_job_id
                        else "; no job is running for it"
                    )
                    + ". Resubmit by hand from the savepoint (see redeploy.sh in the plan directory)."
                )
                self.audit.write("done", status="rollback-failed", error=str(exc), savepoint=self.ctx.savepoint)
                return ApplyOutcome(
                    "rollback-failed",
                    f"apply failed ({reason}); {state}",
                    self.ctx.new_job_id,
                    self.ctx.savepoint,
                    tuple(self.rows),
                    None,
                    self.plan.notes,
                )
            if isinstance(step.action, RestoreFile):
                restored.append(f"{step.action.host}:{step.action.path}")
        self._record_rollback()
        message = (
            f"apply failed ({reason}); rolled back: job {self.ctx.new_job_id} RUNNING from savepoint "
            f"{self.ctx.savepoint} with the previous placement"
            + (f"; restored {', '.join(restored)} from .prev" if restored else "")
        )
        self.audit.write("done", status="rolled-back", job=self.ctx.new_job_id, savepoint=self.ctx.savepoint)
        return ApplyOutcome(
            "rolled-back", message, self.ctx.new_job_id, self.ctx.savepoint, tuple(self.rows), None, self.plan.notes
        )

    def _record_rollback(self) -> None:
        record_step = next((s for s in self.plan.steps if isinstance(s.action, RecordState)), None)
        submit = next((s.action for s in self.plan.rollback if isinstance(s.action, (SubmitJob, SubmitJobGraph))), None)
        if record_step is None or submit is None:
            return
        a = record_step.action
        assert isinstance(a, RecordState)
        args = submit.call.program_args if isinstance(submit, SubmitJobGraph) else submit.program_args
        overrides = dict(submit.call.overrides) if isinstance(submit, SubmitJobGraph) else None
        record = {
            **a.record,
            "plan": None,
            "program_args": list(args),
            "mapping": None,
            "rolled_back": True,
            "parallelism_overrides": overrides,
        }
        try:
            self._record(a.host, a.path, record)
        except PlacementError as exc:
            self.audit.write("failed", kind="record", error=str(exc))
