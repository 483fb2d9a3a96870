"""From the ILP's counts to a plan: the parallelism of every vertex and the host of every subtask.

Counts ``n[v, h]`` say all there is to say about a rescalable vertex on its own — its instances are interchangeable.
Along FORWARD edges, instance ``i`` of ``u`` feeds instance ``i`` of ``v``, so the indexes must pair the ``v``
instances on an edge host with ``u`` instances on the same host. A rescalable forward group is a tree (a group where a
vertex has two FORWARD inputs keeps its parallelism, :mod:`placement.costmodel.rescaled`), and on every edge host
``n[v, h] ≤ n[u, h]`` along its edges (:func:`.constraints.no_data_down_to_edge`), so its root has the most instances
on each edge host. Giving each edge host a block of ``n[root, h]`` consecutive indexes (``Σ_h n[root, h] ≤ p``) and
every member the first ``n[v, h]`` indexes of that block pairs as many instances as possible on every host — which is
what the WAN and latency terms of the ILP count. The remaining indexes of each vertex go to servers (traffic between
servers is free).
"""

from __future__ import annotations

from placement.costmodel.model import SubtaskKey
from placement.errors import PlacementError
from placement.solver.rescale.model import RescaleModel, Term


def _value(var: Term) -> float:
    if hasattr(var, "value"):
        return var.value() or 0.0
    return float(var)


def chosen_parallelism(m: RescaleModel) -> dict[str, int]:
    """vertex id -> the parallelism the solution picked."""
    out = {}
    for g in m.space.groups:
        if g.per_subtask:
            out.update(m.space.parallelism_of(g))
            continue
        ps = m.choices[g.id]
        p = ps[0] if len(ps) == 1 else max(ps, key=lambda q: _value(m.y[(g.id, q)]))
        out.update({vid: p for vid in g.members})
    return out


def assignment(m: RescaleModel, parallelism: dict[str, int]) -> dict[SubtaskKey, str]:
    """The host of every subtask at ``parallelism``."""
    out: dict[SubtaskKey, str] = {}
    for key, hosts in m.domain_x.items():
        out[key] = max((_value(m.x[(key, h)]), h) for h in hosts)[1]
    edges = [h.name for h in m.ref.edges]
    servers = [h.name for h in m.ref.servers]
    for g in m.space.groups:
        if g.per_subtask:
            continue
        p = parallelism[g.members[0]]
        counts = {
            vid: {h: round(_value(m.z[(vid, p, h)][0]) * m.z[(vid, p, h)][1]) for h in m.domain_z.get((vid, p), ())}
            for vid in g.members
        }
        for vid, by_host in counts.items():
            if sum(by_host.values()) != p:
                raise PlacementError(
                    f"internal error: {sum(by_host.values())} instances of {vid} placed at parallelism {p}"
                )
        start = 0
        for h in edges:
            block = max(c.get(h, 0) for c in counts.values())
            for vid in g.members:
                for i in range(counts[vid].get(h, 0)):
                    out[(vid, start + i)] = h
            start += block
        if start > p:
            raise PlacementError(
                f"internal error: the edge hosts' instances of group {g.id} need {start} of {p} indexes"
            )
        for vid in g.members:
            free = iter(i for i in range(p) if (vid, i) not in out)
            for h in servers:
                for _ in range(counts[vid].get(h, 0)):
                    out[(vid, next(free))] = h
    return out
