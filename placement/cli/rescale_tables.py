"""What ``placement plan --rescale`` prints beside its plan: the targets and the parallelism table (presentation
only; the plan is :mod:`placement.planning.rescale`)."""

from __future__ import annotations

from collections import Counter

from rich.table import Table

from placement.costmodel.rescaled import RescaleSpace
from placement.planning.rescale import RescalePlan
from placement.solver.rescale import ds2_parallelism


def targets_line(space: RescaleSpace) -> str:
    parts = []
    for vid, rate in space.targets.items():
        v = space.profile.vertex(vid)
        measured = v.records_out_per_s
        scale = f" ({rate / measured:.3g}× measured)" if measured > 0 else ""
        parts.append(f"{v.name} {rate:,.0f} records/s{scale}")
    return "target: " + "; ".join(parts)


def parallelism_table(plan: RescalePlan) -> Table:
    """Per vertex: today's parallelism, DS2's, the joint plan's, and where the joint plan puts the instances."""
    space = plan.space
    t = Table(title="Parallelism")
    for col in ("vertex", "today", "DS2", "joint", "joint hosts", "why fixed"):
        t.add_column(col, justify="right" if col in ("today", "DS2", "joint") else "left")
    ds2 = ds2_parallelism(space)
    joint = plan.joint
    for vid in space.vertex_order:
        group = space.group_of[vid]
        where = ""
        if joint.plan.assignment is not None and joint.problem is not None:
            counts = Counter(joint.plan.assignment[s.key] for s in joint.problem.by_vertex[vid])
            where = ", ".join(f"{h} ×{n}" if n > 1 else h for h, n in counts.items())
        planned = str(joint.parallelism[vid]) if joint.parallelism else "–"
        t.add_row(
            space.profile.vertex(vid).name,
            str(space.profiled(vid)),
            str(ds2.get(group.id, space.profiled(vid))),
            planned,
            where,
            group.reason or "",
        )
    return t
