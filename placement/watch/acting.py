"""The watch's actor: a plan the policy chose, applied through ``placement apply``'s public functions (one job's
request / prepare / execute, or a fleet's as one change), its outcome returned as a record, never raised.

:class:`Actor` is what the loop calls: it honours ``--apply never`` / ``ask`` and says which jobs were redeployed;
``apply`` (one job: :func:`apply_plan`, several: :func:`apply_fleet_plan`) can be swapped for a decision test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from placement.errors import PlacementError
from placement.flink.port import FlinkPort
from placement.watch.options import AskFn, WatchOptions
from placement.watch.policy import Decision, Proposal

ApplyFn = Callable[[Path], dict[str, Any]]  # a plan directory -> the apply's outcome record


class Actor:
    def __init__(
        self,
        options: WatchOptions,
        names: Sequence[str],
        rest: FlinkPort,
        ask_fn: AskFn | None = None,
        apply: ApplyFn | None = None,
    ):
        self.o, self.names, self.ask_fn = options, tuple(names), ask_fn
        self.apply = apply or (
            (lambda plan_dir: apply_plan(plan_dir, options, rest))
            if len(self.names) == 1
            else (lambda fleet_dir: apply_fleet_plan(fleet_dir, options))
        )

    def refusal(self, decision: Decision, proposal: Proposal) -> dict[str, Any] | None:
        """Why the proposal is not applied (``--apply never``, declined at the prompt); None: it is."""
        if self.o.apply == "never":
            return {"status": "not-applied", "message": "--apply never: recorded only"}
        if self.o.apply == "ask" and not (self.ask_fn and self.ask_fn(decision, proposal)):
            return {"status": "declined", "message": "declined at the prompt"}
        return None

    def redeployed(self, outcome: dict[str, Any]) -> set[str]:
        """The jobs an applied change redeployed (a job whose plan was in effect already keeps its job)."""
        return set(outcome["jobs"]) if len(self.names) > 1 else set(self.names)


def apply_fleet_plan(fleet_dir: Path, options: WatchOptions) -> dict[str, Any]:
    """``placement apply --plan FLEET_DIR --inventory INV`` through its public load, prepare and execute: every job's
    preflight before anything changes, one lock, the order (or stop-all), any failure rolling every stopped job back;
    audit log in FLEET_DIR/apply-audit.jsonl. Never raises for an apply that did not take effect: the outcome says
    what happened, ``changed`` whether any job was redeployed, ``jobs`` each redeployed job's outcome."""
    from placement.apply import PreflightFailed
    from placement.apply.fleet import (
        FleetFailed,
        execute_fleet,
        load_fleet,
        prepare_fleet,
    )

    audit = fleet_dir / "apply-audit.jsonl"
    try:
        prepared = prepare_fleet(load_fleet(fleet_dir, options.inventory_path, settle_s=options.settle_s))
    except PreflightFailed as exc:
        return {"status": "refused", "message": str(exc), "changed": False, "jobs": {}, "audit": str(audit)}
    except PlacementError as exc:
        return {"status": "error", "message": str(exc), "changed": False, "jobs": {}, "audit": str(audit)}
    try:
        result = execute_fleet(prepared, audit_path=audit, echo=lambda s: None)
    except FleetFailed as exc:
        result = exc.outcome
    except PlacementError as exc:
        return {"status": "error", "message": str(exc), "changed": True, "jobs": {}, "audit": str(audit)}
    finally:
        prepared.close()
    return {
        "status": result.status,
        "message": result.message,
        "jobs": {
            name: {"status": o.status, "job_id": o.job_id, "savepoint": o.savepoint, "downtime_s": o.downtime_s}
            for name, o in result.outcomes.items()
        },
        "changed": result.status not in ("noop", "failed-before-stop"),
        "seconds": round(result.seconds, 1),
        "audit": str(audit),
    }


def apply_plan(plan_dir: Path, options: WatchOptions, rest: FlinkPort) -> dict[str, Any]:
    """``placement apply PLAN_DIR --inventory INV --job-name NAME`` through its public request, prepare and execute
    (same preflight, lock, savepoint, verify, roll back, audit log in PLAN_DIR/apply-audit.jsonl). Never raises for
    an apply that did not take effect: the outcome says what happened, ``changed`` whether the job was redeployed."""
    from placement.apply import ApplyFailed, PreflightFailed, execute, prepare
    from placement.apply.request import load_request

    audit = plan_dir / "apply-audit.jsonl"
    try:
        req = load_request(plan_dir, options.inventory_path, job_name=options.job_name, settle_s=options.settle_s)
        prepared = prepare(req, rest=rest)
    except PreflightFailed as exc:
        return {"status": "refused", "message": str(exc), "changed": False, "audit": str(audit)}
    except PlacementError as exc:
        return {"status": "error", "message": str(exc), "changed": False, "audit": str(audit)}
    try:
        result = execute(prepared, audit_path=audit, echo=lambda s: None)
    except ApplyFailed as exc:
        result = exc.outcome
    except PlacementError as exc:
        return {"status": "error", "message": str(exc), "changed": True, "audit": str(audit)}
    finally:
        prepared.close()
    return {
        "status": result.status,
        "message": result.message,
        "job_id": result.job_id,
        "savepoint": result.savepoint,
        "downtime_s": result.downtime_s,
        "changed": result.status not in ("noop", "failed-before-stop"),
        "audit": str(audit),
    }
