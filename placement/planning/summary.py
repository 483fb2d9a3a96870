"""The ``--json`` summary of a plan: one function for one job and for several (:func:`summary_json`).

One job's keys are those it always had (``job``, its results beside its baselines); several jobs' are ``jobs`` (each
with its directory and budget), the joint result (with each job's figures under ``jobs``), the running jobs always
and the one-by-one plans under ``compare``. A result's figures are built once for both, paths included.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # several jobs' --compare makes them, and imports the module (start-up time)
    from placement.solver.one_by_one import OneByOne

from placement.costmodel.evaluate import PlanCost
from placement.costmodel.model import PlacementProblem, SubtaskKey
from placement.planning import contingency
from placement.planning.outcome import PlanOutcome
from placement.planning.running import running_json
from placement.solver.result import PlanResult

# what a reader checks before it relies on the keys (plan.json's own is "placement.plan/v1"); v2: the objective's
# latency term is "latency_term_ms"
SUMMARY_FORMAT = "placement.plan-summary/v2"
# The ILP objective's latency term (a sum over the crossing pairs), not a path's latency: beside worst_path_ms its old
# name "latency_ms" read as one. plan.json and fleet.json keep "latency_ms" (apply and older plans read it).
LATENCY_TERM = "latency_term_ms"
RECORDED_LATENCY_TERM = "latency_ms"
# the order of the top-level keys, as each shape has always had them (format and assignment came later)
ONE_JOB_KEYS = (
    "format",
    "job",
    "inventory",
    "results",
    "assignment",
    "parallelism",
    "max_rate",
    "forecast",
    "what_if",
    "running",
    "running_notes",
    "contingencies",
    "out",
)
FLEET_KEYS = (
    "format",
    "jobs",
    "inventory",
    "results",
    "assignment",
    "running",
    "running_notes",
    "compare",
    "max_rate",
    "forecast",
    "what_if",
    "contingencies",
    "out",
)


def summary_json(outcome: PlanOutcome, written: Sequence[Path] | None = None) -> dict:
    """What ``placement plan --json`` prints (``written``: the files :func:`write_outcome` wrote, if any)."""
    several = outcome.several
    runs = outcome.running
    entries: dict = {
        "format": SUMMARY_FORMAT,
        "job": outcome.names[0],
        "jobs": [{"job": n, "dir": outcome.dirs[n], **_budget_json(outcome.budgets.get(n))} for n in outcome.names],
        "inventory": outcome.inventory.name,
        "results": [result_json(r, outcome.parts if several else None) for r in outcome.results],
    }
    if outcome.result.assignment is not None:
        entries["assignment"] = assignment_json(outcome)
    if outcome.rescaled is not None:
        from placement.planning.rescale import result_parallelism  # --rescale's, imported by it (start-up time)

        entries["parallelism"] = result_parallelism(outcome.rescaled)
    if outcome.capped is not None:
        entries["max_rate"] = outcome.capped.json()
    if outcome.forecast is not None:  # added in v2 (a key of its own: readers of v2 ignore it)
        entries["forecast"] = outcome.forecast.json()
    if outcome.what_if:
        entries["what_if"] = outcome.what_if
    if runs.jobs or several:  # several jobs' summary always says what they were planned around
        entries["running"] = running_json(runs)
    if runs.notes:
        entries["running_notes"] = runs.notes
    if outcome.one_by_one:
        entries["compare"] = compare_json(outcome.one_by_one)
    if outcome.contingencies:
        entries["contingencies"] = contingency.summary(outcome.contingencies)
    if written is not None:
        entries["out"] = [str(p) for p in written]
    return {key: entries[key] for key in (FLEET_KEYS if several else ONE_JOB_KEYS) if key in entries}


def assignment_json(outcome: PlanOutcome) -> dict:
    """Where the plan puts each subtask, by the label the scheduler matches (``<task> (<i>/<n>)``) — one job's
    ``{label: host}``, several jobs' ``{job: {label: host}}`` (labels repeat across jobs)."""
    if not outcome.several:  # the problem solved: a rescale's has its own parallelism
        return _placed(outcome.problem, outcome.result.assignment)
    return {job.name: _placed(job.problem, outcome.parts[job.name].assignment) for job in outcome.joint.jobs}


def _placed(problem: PlacementProblem, assignment: Mapping[SubtaskKey, str] | None) -> dict[str, str]:
    assert assignment is not None  # a feasible plan's parts all have theirs
    return {s.label: assignment[s.key] for s in problem.subtasks}


def result_json(r: PlanResult, parts: dict[str, PlanResult] | None = None) -> dict:
    """One result's status and figures; ``parts``: several jobs' joint result, each job's figures under ``jobs``."""
    out: dict = {"strategy": "joint" if parts is not None else r.strategy, "status": r.status, "reason": r.reason}
    if r.cost is not None:
        figures = cost_json(r.cost)
        links = figures.pop("links")
        out.update(figures, feasible=r.cost.feasible, links=links)
        if parts is not None:
            out["jobs"] = {name: cost_json(p.cost) for name, p in parts.items() if p.cost is not None}
        if r.cost.paths:
            out.update(_paths_json(r.cost))
    if r.shortages:
        out["shortages"] = [
            {
                "kind": s.kind,
                "resource": s.resource,
                "needed": s.needed,
                "usable": s.usable,
                "capacity": s.capacity,
                "message": s.message,
            }
            for s in r.shortages
        ]
    if r.causes:
        out["causes"] = list(r.causes)
    return out


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None  # JSON has no infinity: null, a saturated uplink


def _paths_json(cost: PlanCost) -> dict:
    """The worst path's upper bound under the keys it always had, the expected figure beside it, and every path's."""
    worst = cost.worst_path
    assert worst is not None, "only a plan with paths has their figures"
    return {
        "worst_path_ms": _finite(worst.latency_ms),
        "worst_path": worst.name,
        "worst_path_expected_ms": _finite(worst.expected_ms),
        "paths": {p.name: _finite(p.latency_ms) for p in cost.paths},
        "paths_expected": {p.name: _finite(p.expected_ms) for p in cost.paths},
    }


def cost_json(c: PlanCost, term: str = LATENCY_TERM) -> dict:
    """A plan's figures; ``term``: the name of the objective's latency term (fleet.json's is ``latency_ms``)."""
    return {
        "wan_mbit": c.wan_mbit,
        "server_cores": c.server_cores,
        "edge_cores": c.edge_cores,
        term: c.latency_ms,
        "links": {link.name: link.mbit for link in c.links},
    }


def compare_json(others: Sequence[OneByOne], term: str = LATENCY_TERM) -> list[dict]:
    """Several jobs' ``compare``: each way of planning them one by one (also recorded in fleet.json, with
    ``term=RECORDED_LATENCY_TERM``)."""
    return [_one_by_one_json(o, term) for o in others]


def _one_by_one_json(o: OneByOne, term: str) -> dict:
    out: dict = {
        "strategy": o.strategy,
        **({"order": list(o.order)} if o.order else {}),
        "feasible": o.feasible,
        "failed": o.failed,
        "reason": o.reason or None,
        "jobs": {
            name: {"status": r.status, **(cost_json(r.cost, term) if r.cost is not None else {})}
            for name, r in o.results.items()
        },
    }
    if o.cost is not None:
        out.update(
            {
                "wan_mbit": o.cost.wan_mbit,
                "server_cores": o.cost.server_cores,
                term: o.cost.latency_ms,
                "links": {link.name: link.mbit for link in o.cost.links},
            },
            violations=list(o.cost.violations),
        )
    return out


def _budget_json(record) -> dict:
    return {"budget": record.model_dump(mode="json")} if record is not None else {}
