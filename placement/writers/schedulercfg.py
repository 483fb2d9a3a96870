"""schedulercfg — the placement file the scheduler extension (``scheduler/``) reads on stock Flink.

One line per subtask, ``<task name> (<i>/<n>); <TaskManager address>``, i 1-based, in topological vertex order then
subtask order: the seed projects' format (their patched Flinks, flink-placement and CAPSys, read it too).

The extension matches a label exactly first, so a label that is a substring of another task's name (``Map (1/2)``
inside ``FlatMap (1/2)``) places the right subtask; the seed forks match with ``contains()`` and would not:
:func:`label_collisions` finds those for a warning. Two vertices with the same name cannot be told apart by name at
all: their lines carry the job vertex id in place of the name (``<32 hex digits> (<i>/<n>)``), which the extension
understands (the seed forks do not).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from placement.errors import BadInput
from placement.writers.planjson import SubtaskAssignment


def label_collisions(assignment: Sequence[SubtaskAssignment]) -> list[tuple[str, str]]:
    """(label, other task's name) pairs where the label would also match the other task under ``contains()``."""
    labels = [a.label for a in assignment]
    names = set(labels)
    return [(label, other) for label in labels for other in names if other != label and label in other]


def file_labels(assignment: Sequence[SubtaskAssignment]) -> dict[tuple[str, int], str]:
    """(vertex id, subtask) -> the label its line carries: ``Name (i/n)``, or ``<vertex id> (i/n)`` where another
    vertex of the job has the same name."""
    names = Counter(name for _vid, name in {(a.vertex_id, a.vertex) for a in assignment})
    return {
        (a.vertex_id, a.subtask): a.label if names[a.vertex] == 1 else f"{a.vertex_id} ({a.subtask + 1}/{a.parallelism})"
        for a in assignment
    }


def render_schedulercfg(assignment: Sequence[SubtaskAssignment], vertex_order: Sequence[str]) -> str:
    """The schedulercfg text."""
    rank = {vid: n for n, vid in enumerate(vertex_order)}
    labels = file_labels(assignment)
    rows = sorted(assignment, key=lambda a: (rank[a.vertex_id], a.subtask))
    return "".join(f"{labels[(a.vertex_id, a.subtask)]}; {a.address}\n" for a in rows)


def parse_schedulercfg(text: str) -> dict[str, str]:
    """label -> address (for checks and for reading a schedulercfg back); blank lines and ``#`` comments skipped, the
    default line ``*; <TaskManager>`` kept under the label ``*``."""
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        label, sep, address = line.rpartition(";")
        if not sep or not label.strip() or not address.strip() or " " in address.strip():
            raise BadInput(f"line {n} is not '<task name> (<i>/<n>); <address>'", source="schedulercfg")
        if label.strip() in out:
            raise BadInput(f"line {n}: a second line for {label.strip()!r}", source="schedulercfg")
        out[label.strip()] = address.strip()
    return out
