"""schedulercfg — the placement file the patched Flink schedulers (flink-placement, CAPSys) read.

One line per subtask, ``<task name> (<i>/<n>); <TaskManager address>``, i 1-based, in topological vertex order then
subtask order. The scheduler finds a subtask's line with ``getTaskNameWithSubtaskIndex().contains(label)``, so a label
that is a substring of another task's name (``Map (1/2)`` inside ``FlatMap (1/2)``) would place the wrong task:
:func:`label_collisions` finds those, and writing refuses them in ``custom`` mode.
"""

from __future__ import annotations

from collections.abc import Sequence

from placement.errors import BadInput
from placement.writers.planjson import SubtaskAssignment


def label_collisions(assignment: Sequence[SubtaskAssignment]) -> list[tuple[str, str]]:
    """(label, other task's name) pairs where the label would also match the other task."""
    labels = [a.label for a in assignment]
    names = set(labels)
    return [(label, other) for label in labels for other in names if other != label and label in other]


def render_schedulercfg(assignment: Sequence[SubtaskAssignment], vertex_order: Sequence[str], *, strict: bool = True) -> str:
    """The schedulercfg text; ``strict`` raises on a label collision (``custom`` mode needs that)."""
    if strict:
        clashes = label_collisions(assignment)
        if clashes:
            label, other = clashes[0]
            raise BadInput(
                f"label {label!r} is part of task name {other!r}; the patched scheduler matches with contains() and would "
                f"place both by one line — rename one operator", field="schedulercfg",
            )
    rank = {vid: n for n, vid in enumerate(vertex_order)}
    rows = sorted(assignment, key=lambda a: (rank[a.vertex_id], a.subtask))
    return "".join(f"{a.label}; {a.address}\n" for a in rows)


def parse_schedulercfg(text: str) -> dict[str, str]:
    """label -> address (for checks and for reading a schedulercfg back)."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        label, sep, address = line.rpartition(";")
        if not sep or not label.strip() or not address.strip():
            raise BadInput(f"line {n} is not '<task name> (<i>/<n>); <address>'", source="schedulercfg")
        out[label.strip()] = address.strip()
    return out
