"""What the plan changes against what runs, as ``apply --dry-run`` shows it: each subtask that moves, from where to
where; the ones that stay are counted, not listed (pure).

Custom mode compares subtask by subtask (the plan's vertex found in the running job by id, else by its normalised
name: :mod:`placement.apply.vertices`); a plan that changes parallelism adds or removes subtasks. Vanilla mode
compares the hosts of each vertex as counts, since its lanes renumber subtasks (:mod:`placement.apply.verify`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from placement.apply.model import ClusterView
from placement.apply.request import ApplyRequest
from placement.apply.vertices import match_vertices, planned_subtask_hosts, planned_vertices, running_subtask_hosts

UNASSIGNED = "(unassigned)"  # a running subtask REST names no TaskManager for (still being deployed)


@dataclass(frozen=True)
class Move:
    """One subtask (custom mode) or one vertex's hosts (vanilla mode) that the plan changes; ``before`` None: a
    subtask the plan adds, ``after`` None: one it removes."""

    vertex: str
    subtask: int | None
    before: str | None
    after: str | None
    moved: int = 1  # subtasks it moves (vanilla: of the vertex)

    @property
    def sign(self) -> str:
        return "+" if self.before is None else "-" if self.after is None else "~"

    def line(self) -> str:
        what = self.vertex if self.subtask is None else f"{self.vertex}[{self.subtask}]"
        if self.before is None:
            return f"+ {what}: -> {self.after} (a new subtask)"
        if self.after is None:
            return f"- {what}: {self.before} -> (removed)"
        return f"~ {what}: {self.before} -> {self.after}"


@dataclass(frozen=True)
class PlacementDiff:
    moves: tuple[Move, ...]
    unchanged: int  # subtasks that run where the plan puts them

    def summary(self) -> str:
        if not self.moves:
            return f"nothing moves: all {self.unchanged} subtasks run where the plan puts them"
        counts = Counter({"~": 0, "+": 0, "-": 0})
        for m in self.moves:
            counts[m.sign] += m.moved
        figures = ((counts["~"], "to move"), (counts["+"], "to add"), (counts["-"], "to remove"))
        said = [f"{n} {word}" for n, word in figures if n]
        return f"subtasks: {', '.join(said)}, {self.unchanged} unchanged"


def placement_diff(req: ApplyRequest, view: ClusterView) -> PlacementDiff | None:
    """The plan against the running job ``view`` shows; None when the view is presumed (the cluster was not read)."""
    if view.presumed:
        return None
    return _by_subtask(req, view) if req.mode == "custom" else _by_count(req, view)


def _by_subtask(req: ApplyRequest, view: ClusterView) -> PlacementDiff:
    planned = planned_vertices(req.plan.assignment)
    match = match_vertices(planned, view.running_vertices)
    want = planned_subtask_hosts(req.plan.assignment)
    have = running_subtask_hosts(match, view.subtask_hosts)
    moves: list[Move] = []
    unchanged = 0
    for vertex in planned:
        after, before = want[vertex.id], have.get(vertex.id, [])
        for i in range(max(len(after), len(before))):
            a = after[i] if i < len(after) else None
            b = (before[i] or UNASSIGNED) if i < len(before) else None
            if a == b:
                unchanged += 1
            else:
                moves.append(Move(vertex.name, i, b, a))
    return PlacementDiff(tuple(moves), unchanged)


def _by_count(req: ApplyRequest, view: ClusterView) -> PlacementDiff:
    moves: list[Move] = []
    unchanged = 0
    for vertex in dict.fromkeys(a.vertex for a in req.plan.assignment):
        after = Counter(a.host for a in req.plan.assignment if a.vertex == vertex)
        before = Counter({host: n for (v, host), n in view.actual.items() if v == vertex})
        unchanged += sum((after & before).values())
        if after != before:
            moved = sum((after - before).values())
            moves.append(Move(vertex, None, _hosts(before) or "nowhere", _hosts(after), moved))
    return PlacementDiff(tuple(moves), unchanged)


def _hosts(counts: Counter[str]) -> str:
    """``rpi1, server ×2``: the hosts of one vertex's subtasks, in name order."""
    return ", ".join(f"{h} ×{n}" if n > 1 else h for h, n in sorted(counts.items()) if n > 0)
