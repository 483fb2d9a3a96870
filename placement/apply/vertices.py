"""Which running job vertex a plan's vertex is: by job vertex id, else by name with the SQL planner's counters removed.

A plan names each vertex by the id and name the profiled job had. A DataStream job resubmitted unchanged keeps both.
A Table/SQL job keeps its vertex ids (a hash of the topology) but not its names: the planner numbers operators with a
counter that lives in the JobManager, so ``Calc[2]`` of one submission is ``Calc[7]`` of the next
(``shared/notes/custom-scheduler.md``). So a planned vertex is found by id first; a plan made from another build of the
job (ids differ) falls back to the name with every ``[<digits>]`` counter removed, where that names exactly one vertex
on each side. Pure functions; preflight and verify share them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from placement.flink.rest import VertexInfo
from placement.writers.planjson import SubtaskAssignment

_COUNTER = re.compile(r"\[\d+\]")


def normalise_vertex_name(name: str) -> str:
    """``Source: readings[6]`` -> ``Source: readings``; ``out_t[10]: Writer`` -> ``out_t: Writer``."""
    return _COUNTER.sub("", name).strip()


@dataclass(frozen=True)
class PlannedVertex:
    id: str
    name: str
    parallelism: int


@dataclass(frozen=True)
class VertexMatch:
    """``matched``: planned vertex id -> running vertex; the rest says what did not match (empty when all did)."""

    matched: dict[str, VertexInfo]
    missing: tuple[PlannedVertex, ...]  # planned, not running
    extra: tuple[VertexInfo, ...]  # running, not planned
    by_name: tuple[str, ...]  # planned vertices found by normalised name (their ids differ)

    @property
    def problems(self) -> list[str]:
        out = []
        if self.missing:
            out.append("not in the running job: " + ", ".join(f"{v.name!r} (id {v.id})" for v in self.missing))
        if self.extra:
            out.append("not in the plan: " + ", ".join(f"{v.name!r} (id {v.id})" for v in self.extra))
        return out


def match_vertices(planned: Iterable[PlannedVertex], running: Sequence[VertexInfo]) -> VertexMatch:
    planned = list(planned)
    by_id = {v.id: v for v in running}
    matched: dict[str, VertexInfo] = {p.id: by_id[p.id] for p in planned if p.id in by_id}
    rest_planned = [p for p in planned if p.id not in matched]
    taken = {v.id for v in matched.values()}
    rest_running = [v for v in running if v.id not in taken]
    planned_names = Counter(normalise_vertex_name(p.name) for p in rest_planned)
    running_names = Counter(normalise_vertex_name(v.name) for v in rest_running)
    by_name = []
    for p in rest_planned:
        key = normalise_vertex_name(p.name)
        if planned_names[key] == 1 and running_names[key] == 1:
            matched[p.id] = next(v for v in rest_running if normalise_vertex_name(v.name) == key)
            by_name.append(p.id)
    taken = {v.id for v in matched.values()}
    return VertexMatch(
        matched=matched,
        missing=tuple(p for p in planned if p.id not in matched),
        extra=tuple(v for v in running if v.id not in taken),
        by_name=tuple(by_name),
    )


def parallelism_differences(match: VertexMatch, planned: Iterable[PlannedVertex]) -> list[str]:
    """``'Calc[2]' plan 2 vs running 3`` for every matched vertex whose parallelism changed."""
    out = []
    for p in planned:
        v = match.matched.get(p.id)
        if v is not None and v.parallelism != p.parallelism:
            out.append(f"{p.name!r} plan {p.parallelism} vs running {v.parallelism}")
    return out


def planned_subtask_hosts(assignment: Iterable[SubtaskAssignment]) -> dict[str, list[str]]:
    """planned vertex id -> host of subtask 0, 1, ... (from a plan's assignment rows)."""
    rows: dict[str, dict[int, str]] = {}
    for a in assignment:
        rows.setdefault(a.vertex_id, {})[a.subtask] = a.host
    return {vid: [hosts[i] for i in sorted(hosts)] for vid, hosts in rows.items()}


def planned_vertices(assignment: Iterable[SubtaskAssignment]) -> list[PlannedVertex]:
    seen: dict[str, PlannedVertex] = {}
    for a in assignment:
        seen.setdefault(a.vertex_id, PlannedVertex(a.vertex_id, a.vertex, a.parallelism))
    return list(seen.values())


def running_subtask_hosts(match: VertexMatch, hosts_by_vertex: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """planned vertex id -> taskmanager-id of each running subtask (by index) of its matched running vertex."""
    return {pid: list(hosts_by_vertex.get(v.id, ())) for pid, v in match.matched.items()}
