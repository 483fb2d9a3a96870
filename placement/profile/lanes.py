"""A vanilla-placed job's lane copies folded back into the job's own vertices (pure).

Vanilla mode pins a vertex whose subtasks go to different hosts by building one copy of the FORWARD chain per lane,
each copy a vertex of its own under the same name (``deploy/jobs/.../Placement.java``; apply compares such a job by
name, parallelism summed over the copies). A profile is of the job, not of one deployment of it: vertex names are
unique there and the plan places subtasks of the job's vertices. So each name's copies become one vertex again — its
parallelism their sum, subtask ``offset + i`` for subtask ``i`` of a copy, where the offset counts the subtasks of the
lanes before it — and the copies' edges one edge per pair of vertices. Lanes are ordered by the order Flink lists the
first vertex's copies; a copy fed by a FORWARD edge from another copy takes that copy's lane, so a lane's subtasks keep
one index along the chain (FORWARD stays pointwise, subtask ``i`` to subtask ``i``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

import pandas as pd

from placement.collect.layout import EdgeInfo, RunManifest, RunVertex, SubtaskLocation

# copy id -> (the job's vertex id: its name's first-lane copy, subtask offset of the copy)
CopyMap = dict[str, tuple[str, int]]


def has_lane_copies(manifest: RunManifest) -> bool:
    names = [v.name for v in manifest.vertices]
    return len(set(names)) < len(names)


def fold_lane_copies(
    runs: Sequence[RunManifest], aggregates: pd.DataFrame
) -> tuple[list[RunManifest], pd.DataFrame, CopyMap]:
    """The runs and per-subtask aggregates with every vertex name's copies in the newest run folded into one vertex
    (unchanged, and an empty map, when it has none)."""
    if not runs or not has_lane_copies(runs[-1]):
        return list(runs), aggregates, {}
    # the newest run's copies (an earlier run of the same job has the same ids; one of another deployment has its own
    # and stays as it is: the profile takes its vertices from the newest run, as it does without copies)
    copy_map = _copies(runs[-1])
    folded = [_fold(m, copy_map) for m in runs]
    out = aggregates.copy()
    if not out.empty:
        ids = out["vertex_id"].astype(str)
        out["subtask"] = [int(s) + copy_map.get(i, (i, 0))[1] for i, s in zip(ids, out["subtask"], strict=True)]
        out["vertex_id"] = [copy_map.get(i, (i, 0))[0] for i in ids]
    return folded, out, copy_map


def fold_manifest(manifest: RunManifest) -> RunManifest:
    """One run's manifest with its copies folded (itself when it has none)."""
    return _fold(manifest, _copies(manifest)) if has_lane_copies(manifest) else manifest


def _copies(m: RunManifest) -> CopyMap:
    """Copy id -> (the id of its name's first-lane copy in this run, subtask offset)."""
    by_name: dict[str, list[RunVertex]] = defaultdict(list)
    for v in m.vertices:
        by_name[v.name].append(v)
    forward_from = {e.target: e.source for e in m.edges if e.ship_strategy.upper() == "FORWARD"}
    vertex = {v.id: v for v in m.vertices}
    lane: dict[str, int] = {}

    def lane_of(v: RunVertex) -> int:  # the lane of its FORWARD feeder when that is a copy of another name
        if v.id not in lane:
            up = forward_from.get(v.id)
            if up is not None and up in vertex and len(by_name[vertex[up].name]) == len(by_name[v.name]):
                lane[v.id] = lane_of(vertex[up])
            else:
                lane[v.id] = by_name[v.name].index(v)
        return lane[v.id]

    out: CopyMap = {}
    for copies in by_name.values():
        ordered = sorted(copies, key=lambda v: (lane_of(v), copies.index(v)))
        offset = 0
        for v in ordered:
            out[v.id] = (ordered[0].id, offset)
            offset += v.parallelism
    return out


def _fold(m: RunManifest, copy_map: CopyMap) -> RunManifest:
    if not has_lane_copies(m):
        return m

    def job_vertex(vertex_id: str) -> str:
        return copy_map.get(vertex_id, (vertex_id, 0))[0]

    merged: dict[str, list[RunVertex]] = defaultdict(list)
    for v in m.vertices:
        merged[job_vertex(v.id)].append(v)
    vertices = [
        RunVertex(
            id=vid,
            name=copies[0].name,
            parallelism=sum(c.parallelism for c in copies),
            state_bytes=_sum(c.state_bytes for c in copies),
            checkpointed_bytes=_sum(c.checkpointed_bytes for c in copies),
            max_parallelism=copies[0].max_parallelism,
        )
        for vid, copies in merged.items()
    ]
    edges: list[EdgeInfo] = []
    for e in m.edges:
        folded = EdgeInfo(source=job_vertex(e.source), target=job_vertex(e.target), ship_strategy=e.ship_strategy)
        if folded not in edges:
            edges.append(folded)
    locations = [
        SubtaskLocation(
            vertex_id=copy_map[loc.vertex_id][0],
            subtask=loc.subtask + copy_map[loc.vertex_id][1],
            taskmanager_id=loc.taskmanager_id,
            host=loc.host,
            attempt=loc.attempt,
        )
        if loc.vertex_id in copy_map
        else loc
        for loc in m.locations
    ]
    return m.model_copy(update={"vertices": vertices, "edges": edges, "locations": locations})


def _sum(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
