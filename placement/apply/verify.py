"""Planned vs actual placement: one row per (vertex, host).

Custom mode compares index by index: a row lists the subtask indices planned on the host and those running there,
and is green only when they are the same indices (the vertex found by id, else by its normalised name:
:mod:`placement.apply.vertices`). Vanilla mode compares counts: vanilla placement builds one copy of a FORWARD source
chain per lane (same vertex name, see ``deploy/jobs/.../Placement.java``), so "subtask i" of a plan is not "subtask i"
of one Flink vertex; the placement per (vertex name, host) — summed over copies — is what both sides agree on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placement.apply.model import Counts, PlannedSubtask
from placement.apply.vertices import VertexMatch


@dataclass(frozen=True)
class VerifyRow:
    vertex: str
    host: str
    planned: int
    actual: int
    planned_subtasks: tuple[int, ...] | None = None  # custom mode: which indices (0-based)
    actual_subtasks: tuple[int, ...] | None = None

    @property
    def ok(self) -> bool:
        return self.planned == self.actual and self.planned_subtasks == self.actual_subtasks

    def cells(self) -> tuple[str, str]:
        """(planned, actual) as the table shows them: counts, or ``2: #0 #1`` with the indices."""
        if self.planned_subtasks is None:
            return str(self.planned), str(self.actual)

        def show(n: int, idx: tuple[int, ...] | None) -> str:
            return f"{n}: " + " ".join(f"#{i}" for i in idx) if idx else str(n)

        return show(self.planned, self.planned_subtasks), show(self.actual, self.actual_subtasks)


def compare(planned: Counts, actual: Counts, vertex_order: list[str] | None = None) -> list[VerifyRow]:
    keys = set(planned) | set(actual)
    order = {v: i for i, v in enumerate(vertex_order or [])}
    rows = [VerifyRow(v, h, planned.get((v, h), 0), actual.get((v, h), 0)) for v, h in keys]
    return sorted(rows, key=lambda r: (order.get(r.vertex, len(order)), r.vertex, r.host))


def compare_subtasks(
    planned: Sequence[PlannedSubtask], match: VertexMatch, hosts_by_vertex: Mapping[str, Sequence[str]]
) -> list[VerifyRow]:
    """Index-by-index rows: for each planned vertex and host, the planned indices vs the indices running there.

    ``match`` maps planned vertex ids to the running job's vertices; ``hosts_by_vertex`` is running vertex id ->
    taskmanager-id of subtask 0, 1, ... A planned vertex with no running match shows its subtasks as missing."""
    order: dict[str, int] = {}
    names: dict[str, str] = {}
    want: dict[tuple[str, str], list[int]] = {}
    for s in planned:
        order.setdefault(s.vertex_id, len(order))
        names[s.vertex_id] = s.vertex
        want.setdefault((s.vertex_id, s.host), []).append(s.subtask)
    have: dict[tuple[str, str], list[int]] = {}
    for vid in order:
        running = match.matched.get(vid)
        for i, host in enumerate(hosts_by_vertex.get(running.id, ()) if running else ()):
            have.setdefault((vid, host or "(unassigned)"), []).append(i)
    rows = []
    for vid, host in sorted(set(want) | set(have), key=lambda k: (order[k[0]], k[1])):
        p, a = tuple(sorted(want.get((vid, host), ()))), tuple(sorted(have.get((vid, host), ())))
        label = names[vid]
        running = match.matched.get(vid)
        if running is not None and running.name != label:
            label = f"{label} (now {running.name})"
        rows.append(VerifyRow(label, host, len(p), len(a), p, a))
    return rows


def all_ok(rows: list[VerifyRow]) -> bool:
    return bool(rows) and all(r.ok for r in rows)
