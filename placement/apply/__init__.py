"""``placement apply``: put a plan into effect on a running Flink job, over SSH and Flink's REST API.

Stages (see each module):

* :mod:`~placement.apply.request` — read the plan directory and inventory (bad input: one line, exit 2);
* :mod:`~placement.apply.preflight` — read the cluster over SSH (host keys verified) and REST; refuse on any problem
  with nothing changed;
* :mod:`~placement.apply.planner` — pure: the ordered steps (lock, stop with savepoint, install, resubmit, verify,
  record, unlock) and the roll back; ``--dry-run`` prints them;
* :mod:`~placement.apply.runner` — runs the steps, writes the audit log, rolls back on failure after the stop.

:func:`prepare` and :func:`execute` are the two halves the CLI (and tests) call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from placement.apply.audit import AuditLog, new_apply_id
from placement.apply.model import ApplyPlan, ClusterView
from placement.apply.planner import plan_apply
from placement.apply.preflight import PreflightFailed, check, observe
from placement.apply.request import ApplyRequest
from placement.apply.runner import ApplyFailed, ApplyOutcome, Runner, holder_string
from placement.flink_rest import FlinkRest
from placement.remote import DryRunExecutor, Executor, ExecutorFactory

__all__ = ["ApplyFailed", "ApplyOutcome", "PreflightFailed", "Prepared", "connect", "execute", "prepare"]


@dataclass
class Prepared:
    request: ApplyRequest
    view: ClusterView
    plan: ApplyPlan
    rest: FlinkRest
    executors: dict[str, Executor]
    factory: ExecutorFactory

    def close(self) -> None:
        self.factory.close()


def connect(req: ApplyRequest, *, dry_run: bool, accept_new_host_keys: bool) -> tuple[dict[str, Executor], ExecutorFactory]:
    """One executor per inventory host; a dry run wraps each so that reads happen and writes are only recorded."""
    factory = ExecutorFactory(req.inventory, accept_new_host_keys=accept_new_host_keys, echo=None)
    executors: dict[str, Executor] = {}
    for host in req.inventory.hosts:
        real = factory.for_host(host)
        executors[host.name] = DryRunExecutor(host.name, echo=None, reader=real) if dry_run else real
    return executors, factory


def prepare(req: ApplyRequest, *, dry_run: bool = False, accept_new_host_keys: bool = False,
            rest: FlinkRest | None = None) -> Prepared:
    """Preflight and plan; raises :class:`PreflightFailed` (nothing changed) when the plan cannot be applied."""
    rest = rest or FlinkRest(req.inventory.flink.rest_url)
    executors, factory = connect(req, dry_run=dry_run, accept_new_host_keys=accept_new_host_keys)
    try:
        view, problems = observe(req, rest, executors)
        if view is not None:
            problems += check(req, view)
        if problems or view is None:
            raise PreflightFailed([p.message for p in problems], bad_input=any(p.stale_input for p in problems))
        plan = plan_apply(req, view, holder=holder_string())
    except BaseException:
        factory.close()
        raise
    return Prepared(req, view, plan, rest, executors, factory)


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
