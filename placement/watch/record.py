"""The decision log: one JSON object per line, every tick's inputs, decision and what came of it.

Two record kinds (``"record"``):

* ``decision`` — one per tick (several jobs watched: one for the set, with each job's window and drifts under
  ``jobs`` and every drift naming its ``job``, or none for an uplink or TaskManager they share): the window (its
  span, job, snapshot directory: ``placement profile <snapshot>`` reproduces its profile; since issue 25 also each
  path's predicted latency and each source → sink pair's measured p50 and bound), the drifts (kind, subject, measured
  and reference figures, message; a ``latency`` drift's ``basis``: predicted or measured), the proposal (running
  placement vs new plan, WAN predicted under the window), the decision and its reason, and — when it applied — the
  apply's outcome (status, downtime, new job id, audit log); ``plan_in_effect``, after the decision: the plan directory
  whose prediction the running placement is held to (the last plan applied, or the last re-plan that kept the placement;
  null until the watch has made one); ``foresight`` (``watch --forecast`` only): the forecast for the tick's time per
  ``job/source`` and its interval, the ``outcome`` (the rates measured then), the decision ahead (``action``: relieve,
  move_back, hold or reactive, and why), the predicted break, the lead time, the scales of the forecast's peak and
  the series' end the forecast was fitted to;
* ``effect`` — once the first usable window after an apply has been profiled: the predicted WAN per uplink of the plan
  that was applied next to what the cost model gives for the placement that then ran under the measured load, and the
  source rates and backpressure measured; ``decision`` names the tick whose apply it follows (several jobs: one per
  job redeployed, naming it in ``job``).

Lines are appended and flushed one by one, so a log cut short by a crash is still valid JSON lines.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from placement.errors import PlacementError
from placement.watch.policy import Decision, Proposal
from placement.watch.signals import Drift, Window

if TYPE_CHECKING:
    from placement.costmodel.evaluate import LinkLoad
    from placement.watch.observing import Seen

FORMAT = "placement.watch/v1"


def _link_json(link: LinkLoad) -> dict[str, Any]:
    """A link as recorded: its pairs (one TCP flow each, issue 45) only where there are any, so a record of an
    uplink to one server reads as before."""
    out = asdict(link)
    pairs = out.pop("pairs")
    return {**out, "pairs": [list(p) for p in pairs]} if pairs else out


def window_json(w: Window, snapshot: str | None) -> dict[str, Any]:
    return {
        "start_ms": w.start_ms,
        "end_ms": w.end_ms,
        "job_id": w.job_id,
        "snapshot": snapshot,
        "source_rates": dict(w.source_rates),
        "fresh_source_rates": dict(w.fresh_source_rates),
        "backpressure_ms": {k: round(v, 1) for k, v in w.backpressure.items()},
        "links": [_link_json(link) for link in w.links],
        "taskmanagers": sorted(w.taskmanagers),
        "violations": list(w.violations),
        # issue 25: predicted latency per path of the running placement, measured p50 and bound per source → sink
        "paths": [
            {
                "path": p.name,
                "latency_ms": finite(p.latency_ms),
                "bound_ms": p.bound_ms,
                "link": p.link,
                "utilisation": p.utilisation,
            }
            for p in w.paths
        ],
        "latency_p50_ms": dict(w.latency),
        "latency_bounds_ms": dict(w.latency_bounds),
    }


def finite(x: float | None) -> float | None:
    """JSON has no infinity (the log is written with ``allow_nan=False``): a latency or a share without a bound (an
    uplink past 99 %) is null, as in plan.json."""
    return x if x is None or math.isfinite(x) else None


def drift_json(d: Drift) -> dict[str, Any]:
    return {
        "kind": d.kind,
        "subject": d.subject,
        "measured": finite(d.measured),
        "reference": finite(d.reference),
        "message": d.message,
        **({"basis": d.basis} if d.basis else {}),
        **({"job": d.job} if d.job else {}),
    }


def proposal_json(p: Proposal) -> dict[str, Any]:
    return {**asdict(p), "current_peak": finite(p.current_peak), "planned_peak": finite(p.planned_peak), "gain": p.gain}


def job_entry(
    job: str, job_id: str | None, window: Window | None, snapshot: str | None, drifts: list[Drift]
) -> dict[str, Any]:
    """Several jobs watched: one job's part of a decision record — its running job, window and own drifts."""
    return {
        "job": job,
        "job_id": job_id,
        "window": window_json(window, snapshot) if window is not None else None,
        "drifts": [drift_json(d) for d in drifts],
    }


def decision_record(
    tick: int,
    at_ms: int,
    window: Window | None,
    snapshot: str | None,
    drifts: list[Drift],
    proposal: Proposal | None,
    decision: Decision,
    *,
    apply: dict[str, Any] | None = None,
    notes: list[str] | None = None,
    plan_in_effect: str | None = None,
    jobs: list[dict[str, Any]] | None = None,
    foresight: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One tick. Several jobs (``jobs``, :func:`job_entry` each): ``window`` is null, each job's is under ``jobs``,
    and ``drifts`` holds every job's (each with its ``job``) and those of what they share (an uplink, TaskManagers)."""
    return {
        "format": FORMAT,
        "record": "decision",
        "tick": tick,
        "at_ms": at_ms,
        "plan_in_effect": plan_in_effect,
        "window": window_json(window, snapshot) if window is not None else None,
        "drifts": [drift_json(d) for d in drifts],
        "proposal": None if proposal is None else proposal_json(proposal),
        "decision": {"action": decision.action, "kind": decision.kind, "reason": decision.reason},
        "apply": apply,
        "notes": notes or [],
        **({"jobs": jobs} if jobs is not None else {}),
        **({"foresight": foresight} if foresight is not None else {}),
    }


def tick_record(
    tick: int,
    at_ms: int,
    seen: Sequence[Seen],
    drifts: list[Drift],
    proposal: Proposal | None,
    decision: Decision,
    *,
    apply: dict[str, Any] | None,
    notes: list[str],
    plan_in_effect: str | None,
    foresight: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The decision record of a tick from what each job's part of it showed: one job's as ever (its window at the
    top); several jobs' with the set's drifts and decision, and each job's window and drifts under ``jobs``."""

    def snapshot(s: Seen) -> str | None:
        return str(s.snapshot) if s.snapshot else None

    if not any(s.track.named for s in seen):
        (s,) = seen
        return decision_record(
            tick,
            at_ms,
            s.window,
            snapshot(s),
            drifts,
            proposal,
            decision,
            apply=apply,
            notes=notes,
            plan_in_effect=plan_in_effect,
            foresight=foresight,
        )
    jobs = [job_entry(s.track.name, s.track.job_id, s.window, snapshot(s), s.drifts) for s in seen]
    return decision_record(
        tick,
        at_ms,
        None,
        None,
        drifts,
        proposal,
        decision,
        apply=apply,
        notes=notes,
        plan_in_effect=plan_in_effect,
        jobs=jobs,
        foresight=foresight,
    )


def effect_record(
    decision_tick: int, at_ms: int, predicted: dict[str, float], window: Window, snapshot: str | None
) -> dict[str, Any]:
    """``predicted``: uplink host -> Mbit/s the applied plan predicted (under the window it was planned on)."""
    measured = {link.host: link.mbit for link in window.links}
    return {
        "format": FORMAT,
        "record": "effect",
        "decision": decision_tick,
        "at_ms": at_ms,
        "links": {
            h: {
                "predicted_mbit": predicted[h],
                "measured_mbit": measured.get(h),
                "error": (predicted[h] / measured[h] - 1) if measured.get(h) else None,
            }
            for h in sorted(predicted)
        },
        "window": window_json(window, snapshot),
    }


class DecisionLog:
    """Appends records to a JSON-lines file (or nowhere, with ``path=None``); keeps the last few in memory."""

    def __init__(self, path: Path | None, keep: int = 50):
        self.path = path
        self.recent: list[dict[str, Any]] = []
        self.keep = keep
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8"):
                    pass
            except OSError as exc:
                raise PlacementError(f"{path}: --log: cannot write: {exc.strerror or exc}") from None

    def write(self, record: dict[str, Any]) -> None:
        self.recent = [*self.recent[-(self.keep - 1) :], record]
        if self.path is None:
            return
        line = json.dumps(record, separators=(",", ":"), allow_nan=False, default=str)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


def read_log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
