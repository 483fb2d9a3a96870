"""Planned vs actual placement: one row per (vertex, host) with the subtask counts on each side.

Counts rather than subtask indices: vanilla placement builds one copy of a FORWARD source chain per lane (same vertex
name, see ``deploy/jobs/.../Placement.java``), so "subtask i" of a plan is not "subtask i" of one Flink vertex; the
placement per (vertex name, host) — summed over copies — is what both sides agree on.
"""

from __future__ import annotations

from dataclasses import dataclass

from placement.apply.model import Counts


@dataclass(frozen=True)
class VerifyRow:
    vertex: str
    host: str
    planned: int
    actual: int

    @property
    def ok(self) -> bool:
        return self.planned == self.actual


def compare(planned: Counts, actual: Counts, vertex_order: list[str] | None = None) -> list[VerifyRow]:
    keys = set(planned) | set(actual)
    order = {v: i for i, v in enumerate(vertex_order or [])}
    rows = [VerifyRow(v, h, planned.get((v, h), 0), actual.get((v, h), 0)) for v, h in keys]
    return sorted(rows, key=lambda r: (order.get(r.vertex, len(order)), r.vertex, r.host))


def all_ok(rows: list[VerifyRow]) -> bool:
    return bool(rows) and all(r.ok for r in rows)
