"""``placement apply --json``: the apply's result as one document (``placement.apply-summary/v1``).

Built here from what apply hands back as data — the prepared plan, the diff, the steps each runner ran
(:class:`placement.apply.runner.StepRun`), the verify rows and the outcome — so :mod:`placement.apply` prints nothing.
A step the run did not reach (or a dry run, which runs none) is ``skipped``; so are a fleet's jobs' lock and unlock
steps but the first job's lock: the fleet takes that one for the whole change and releases it whatever happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from placement.apply import Prepared
from placement.apply.diff import Move, placement_diff
from placement.apply.model import ApplyPlan, Step
from placement.apply.request import ApplyRequest
from placement.apply.runner import ApplyOutcome, StepRun
from placement.apply.verify import VerifyRow

APPLY_FORMAT = "placement.apply-summary/v1"


def job_json(
    prepared: Prepared,
    *,
    dry_run: bool,
    outcome: ApplyOutcome | None = None,
    rows: Sequence[VerifyRow] = (),
    plan: ApplyPlan | None = None,
) -> dict:
    """One job's part: what it is, what moves, the preflight, every step and roll-back step with how it ended, the
    verify rows and the job's outcome (None: nothing ran). ``plan``: the steps that ran, where they are not the
    prepared plan's (a fleet's jobs install a file they share once)."""
    plan, req = plan or prepared.plan, prepared.request
    ran = outcome.ran if outcome is not None else ()
    return {
        "job": prepared.view.job_name,
        "job_id": None if prepared.view.presumed else plan.job_id,  # a cluster not read: unknown
        "plan_dir": str(req.plan_dir),
        "mode": plan.mode,
        "dry_run": dry_run,
        "diff": diff_json(prepared),
        "preflight": {"problems": [], "unchecked": list(prepared.unchecked)},
        "notes": list(plan.notes),
        "steps": steps_json(plan.steps, ran, "step"),
        "rollback": steps_json(plan.rollback, ran, "rollback"),
        "verify": [verify_json(r) for r in rows],
        "outcome": outcome_json(outcome) if outcome is not None else None,
    }


def diff_json(prepared: Prepared) -> dict | None:
    """Which subtasks move from where to where; None when the cluster could not be read."""
    diff = placement_diff(prepared.request, prepared.view)
    if diff is None:
        return None
    return {"moves": [move_json(m) for m in diff.moves], "unchanged": diff.unchanged, "summary": diff.summary()}


def move_json(m: Move) -> dict:
    # "from" None: a subtask the plan adds; "to" None: one it removes; vanilla mode: the vertex's hosts, subtask None
    return {"vertex": m.vertex, "subtask": m.subtask, "from": m.before, "to": m.after, "subtasks": m.moved}


def steps_json(steps: Sequence[Step], ran: Sequence[StepRun], seq: str) -> list[dict]:
    status = {r.index: r for r in ran if r.seq == seq}
    out = []
    for i, step in enumerate(steps, 1):
        run = status.get(i)
        out.append(
            {
                "index": i,
                "phase": step.phase,
                "description": run.action if run is not None else step.describe(),
                "status": run.status if run is not None else "skipped",
            }
        )
    return out


def verify_json(r: VerifyRow) -> dict:
    """A row of planned vs actual: custom mode's subtask indices, vanilla mode's counts (its lanes renumber)."""
    row: dict = {"vertex": r.vertex, "host": r.host, "planned": r.planned, "actual": r.actual, "ok": r.ok}
    if r.planned_subtasks is not None:
        row.update(planned_subtasks=list(r.planned_subtasks), actual_subtasks=list(r.actual_subtasks or ()))
    return row


def outcome_json(o: ApplyOutcome) -> dict:
    return {
        "status": o.status,
        "message": o.message,
        "job_id": o.job_id,
        "savepoint": o.savepoint,
        "downtime_s": o.downtime_s,
    }


def refused_json(exc: Exception, problems: Sequence[str]) -> dict:
    """The outcome of an apply that preflight refused: nothing changed."""
    return {"status": "refused", "message": str(exc), "error": str(exc), "problems": list(problems)}


def failed_json(exc: Exception, outcome: ApplyOutcome | None = None) -> dict:
    """The outcome of an apply that did not take effect (``outcome``: what the runner left), with its error."""
    said = outcome_json(outcome) if outcome is not None else {"status": "failed", "message": str(exc)}
    return {**said, "error": str(exc)}


def unread_job_json(req: ApplyRequest, dry_run: bool, problems: Sequence[str]) -> dict:
    """A job's part when preflight refused before the cluster was read: what the plan and request say."""
    return {
        "job": req.plan.job,
        "job_id": req.selector.job_id,
        "plan_dir": str(req.plan_dir),
        "mode": req.mode,
        "dry_run": dry_run,
        "diff": None,
        "preflight": {"problems": list(problems), "unchecked": []},
        "notes": [],
        "steps": [],
        "rollback": [],
        "verify": [],
        "outcome": None,
    }


def document(part: dict, outcome: dict) -> dict:
    """One job's document: its part with the apply's outcome."""
    return {"format": APPLY_FORMAT, "fleet": False, **part, "outcome": outcome}


def fleet_document(plan_dir: Path, dry_run: bool, order: dict | None, jobs: list[dict], outcome: dict) -> dict:
    """A fleet's: each job's part (its own outcome inside) and the fleet's outcome."""
    return {
        "format": APPLY_FORMAT,
        "fleet": True,
        "plan_dir": str(plan_dir),
        "dry_run": dry_run,
        "order": order,
        "jobs": jobs,
        "outcome": outcome,
    }
